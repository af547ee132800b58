"""Encoders by name and from stored bytes: what the warehouse and the query side use to get "the" encoder."""
from __future__ import annotations

from pathlib import Path

from .base import KINDS, Encoder, encoder_from_bytes
from .hash_encoder import HashEncoder
from .join_encoder import JoinEncoder
from .sentence import SentenceTransformerEncoder
from .table_encoder import TableEncoder

#: Every encoder class (importing them registers their kinds in :data:`~.base.KINDS`).
CLASSES = (HashEncoder, JoinEncoder, TableEncoder, SentenceTransformerEncoder)
#: File name of a serialised encoder inside a model directory.
MODEL_FILE = "encoder.bin"


def save_encoder(encoder: Encoder, directory: str | Path) -> Path:
    """Write the encoder's bytes to ``directory/encoder.bin``; returns the file path."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    target = path / MODEL_FILE
    target.write_bytes(encoder.to_bytes())
    return target


def load_encoder(name: str = "hash", model: str | Path | bytes | None = None) -> Encoder:
    """The encoder called ``name``: "hash" (needs no model), "join" / "table" (bytes, a file or a directory holding
    ``encoder.bin``), or "sentence-transformers" (a local model directory)."""
    if name == "hash" and model is None:
        return HashEncoder()
    if name == "sentence-transformers":
        if model is None or isinstance(model, bytes):
            raise ValueError("the sentence-transformers encoder needs a local model directory")
        return SentenceTransformerEncoder(model)
    if name not in KINDS:
        raise ValueError(f"unknown encoder {name!r}; expected one of {sorted(KINDS)}")
    if model is None:
        raise ValueError(f"the {name!r} encoder is trained: pass its bytes or model directory")
    if not isinstance(model, bytes):
        path = Path(model)
        model = (path / MODEL_FILE if path.is_dir() else path).read_bytes()
    encoder = encoder_from_bytes(model)
    if encoder.kind != name:
        raise ValueError(f"stored encoder is {encoder.kind!r}, not {name!r}")
    return encoder
