"""Optional backend: a sentence-transformers model from a local directory (never downloaded at run time).

``sentence-transformers`` is an optional extra and is imported only when this encoder is created.  Vectors are
computed with one torch thread so that a Spark task and a query run the same kernels, then rounded to float32.  The
version hashes the model directory's files, so a changed model is a new version.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa

from .base import ColumnConfig, Encoder
from .hash_encoder import prepare_strings


def _directory_digest(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=8)
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


class SentenceTransformerEncoder(Encoder):
    """Values encoded by a local sentence-transformers model; columns and tables as for every encoder."""

    kind = "sentence-transformers"

    def __init__(self, model_dir: str | Path, column: ColumnConfig = ColumnConfig(), batch_size: int = 256):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ImportError("the sentence-transformers backend needs the optional package "
                              "'sentence-transformers' installed") from exc
        self.model_dir = Path(model_dir)
        if not self.model_dir.is_dir():
            raise FileNotFoundError(f"sentence-transformers model directory not found: {self.model_dir}")
        self.model = SentenceTransformer(str(self.model_dir), device="cpu", local_files_only=True)
        self.batch_size = batch_size
        self.digest = _directory_digest(self.model_dir)
        super().__init__(int(self.model.get_sentence_embedding_dimension()), column)

    def _state(self) -> tuple[dict, dict[str, np.ndarray]]:
        return {"sentence_transformers": {"model_dir": str(self.model_dir), "digest": self.digest}}, {}

    @classmethod
    def from_state(cls, config: dict, arrays: dict[str, np.ndarray]) -> "SentenceTransformerEncoder":
        return cls(config["sentence_transformers"]["model_dir"], ColumnConfig(**config["column"]))

    def encode_values(self, values: list[str] | pa.Array) -> np.ndarray:
        import torch

        strings = prepare_strings(values, canonicalize=True)
        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            vecs = self.model.encode(strings, batch_size=self.batch_size, convert_to_numpy=True,
                                     normalize_embeddings=False, show_progress_bar=False)
        finally:
            torch.set_num_threads(previous)
        vecs = vecs.astype(np.float64)
        vecs[[not s for s in strings]] = 0.0
        norm = np.sqrt(np.add.reduce(vecs * vecs, axis=1, keepdims=True))
        return np.divide(vecs, norm, out=np.zeros_like(vecs), where=norm > 0).astype(np.float32)
