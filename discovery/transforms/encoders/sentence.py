"""Optional backend: a pretrained sentence-transformers model as the encoder of values (:mod:`.pretrained` finds and
loads the model, and reads column names for the header channel of any encoder)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from .base import ColumnConfig, Encoder
from .hash_encoder import prepare_strings
from .pretrained import PACKAGED_MODEL, encode_texts, model_digest, model_dim


class SentenceTransformerEncoder(Encoder):
    """Values encoded by a pretrained sentence-transformers model; columns and tables as for every encoder."""

    kind = "sentence-transformers"

    def __init__(self, model_dir: str | Path = PACKAGED_MODEL, column: ColumnConfig = ColumnConfig(),
                 batch_size: int = 256):
        self.model_dir = str(model_dir)
        self.batch_size = batch_size
        self.digest = model_digest(self.model_dir)
        super().__init__(model_dim(self.model_dir), column)

    def _state(self) -> tuple[dict, dict[str, np.ndarray]]:
        return {"sentence_transformers": {"model_dir": self.model_dir, "digest": self.digest}}, {}

    @classmethod
    def from_state(cls, config: dict, arrays: dict[str, np.ndarray]) -> SentenceTransformerEncoder:
        return cls(config["sentence_transformers"]["model_dir"], ColumnConfig(**config["column"]))

    def encode_values(self, values: list[str] | pa.Array) -> np.ndarray:
        return encode_texts(self.model_dir, prepare_strings(values, canonicalize=True), self.batch_size)
