"""The default encoder: normalised, canonicalised values -> hashed word and character n-gram features -> d dims.

A fastText-like subword encoder without trained weights: every word token and character n-gram (3-5 by default) is
hashed with a stable hash into one of ``buckets`` buckets, and each bucket owns a fixed sparse random projection row
(``nnz`` entries of +-1/sqrt(nnz) at hashed positions, Achlioptas-style).  The projection matrix is never
materialised: its entries are recomputed from the bucket id with splitmix64, so the encoder is a few kilobytes of
config, identical on every machine.  Sums run through ``np.bincount`` (sequential) in float64.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import cast

import numpy as np
import pyarrow as pa

from discovery.ground.normalize import normalize_array

from .base import ColumnConfig, Encoder
from .canonical import canonicalize_array
from .deterministic import unit
from .ngrams import extract_features, splitmix64
from .spans import canonicalize_span_values

_CHUNK = 4096


@dataclass(frozen=True)
class HashEncoderConfig:
    """Parameters of the hash encoder; all of them enter its version."""

    dim: int = 256
    ngram_sizes: tuple[int, ...] = (3, 4, 5)
    word_weight: float = 1.0
    buckets: int = 1 << 21
    nnz: int = 4
    seed: int = 0
    canonicalize: bool = True


def prepare_strings(values: list[str] | pa.Array | pa.ChunkedArray, canonicalize: bool,
                    spans: bool = False) -> list[str]:
    """Project-wide normalisation, then the encoders' canonicalisation (with ``spans``, also the dates and spans of
    :mod:`.spans`); nulls become empty strings.  Build and query paths both encode through here."""
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(
        [None if v is None else str(v) for v in values], type=pa.string())
    out = normalize_array(arr)
    if canonicalize:
        out = canonicalize_array(out)
    strings: list[str] = out.fill_null("").to_pylist()
    # no value is None here, so none comes back None
    return cast(list[str], canonicalize_span_values(strings)) if canonicalize and spans else strings


class HashEncoder(Encoder):
    """Hashed subword features projected to ``config.dim`` dimensions."""

    kind = "hash"

    def __init__(self, config: HashEncoderConfig = HashEncoderConfig(), column: ColumnConfig = ColumnConfig()):
        super().__init__(config.dim, column)
        self.config = config

    def _state(self) -> tuple[dict, dict[str, np.ndarray]]:
        return {"hash": asdict(self.config)}, {}

    @classmethod
    def from_state(cls, config: dict, arrays: dict[str, np.ndarray]) -> HashEncoder:
        cfg = dict(config["hash"])
        cfg["ngram_sizes"] = tuple(cfg["ngram_sizes"])
        return cls(HashEncoderConfig(**cfg), ColumnConfig(**config["column"]))

    def encode_values(self, values: list[str] | pa.Array) -> np.ndarray:
        strings = prepare_strings(values, self.config.canonicalize)
        out = np.zeros((len(strings), self.dim), dtype=np.float32)
        for start in range(0, len(strings), _CHUNK):
            block = strings[start:start + _CHUNK]
            out[start:start + len(block)] = self._project(block)
        return out

    def _project(self, strings: list[str]) -> np.ndarray:
        cfg = self.config
        feats = extract_features(strings, cfg.ngram_sizes, cfg.word_weight, cfg.seed)
        bucket = feats.hashes % np.uint64(cfg.buckets)
        scale = 1.0 / np.sqrt(cfg.nnz)
        flat, weights = [], []
        for j in range(cfg.nnz):
            r = splitmix64(bucket * np.uint64(cfg.nnz) + np.uint64(j)
                           + np.uint64(cfg.seed) * np.uint64(cfg.buckets * cfg.nnz))
            flat.append(feats.rows * self.dim + (r % np.uint64(self.dim)).astype(np.int64))
            weights.append(np.where(r >> np.uint64(63), -scale, scale) * feats.weights)
        acc = np.bincount(np.concatenate(flat), weights=np.concatenate(weights), minlength=len(strings) * self.dim)
        return unit(acc.reshape(len(strings), self.dim)).astype(np.float32)
