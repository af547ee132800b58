"""The one interface every encoder offers, and the column and table vectors built on top of value vectors.

An encoder maps values to L2-normalised float32 vectors (``encode_values``); column vectors (``encode_column``) and the
fallback table vector (``encode_table``: the normalised mean of column vectors, TACTUS's ablation baseline) are
derived from them identically for every encoder, so that the Spark embed stage and a query get the same bytes.
All reductions run in float64 in a fixed order without BLAS and are rounded to float32 once at the end.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from .columns import (NUMERIC_KINDS, numeric_features, numeric_projection, parse_numbers, priority_sample,
                      profile_column, project)
from .deterministic import unit, weighted_mean
from .header import header_vectors
from .serialization import content_version, pack, unpack


@dataclass(frozen=True)
class ColumnConfig:
    """How value vectors become a column vector.

    ``max_values`` bounds the distinct values encoded per column (priority sample); ``numeric_weight`` is the weight
    of the projected distribution features relative to the unit text mean for numeric kinds (0 disables them).
    ``header_weight`` is the share w of the column name's channel (:mod:`.header`, ``header_dim`` dimensions) in the
    cosine of two column vectors; 0 (the default here, and what bytes stored without the field mean) leaves the
    name out and the vector values-only.  The configured default lives in ``[embed] header_weight``.
    ``header_model``: "" reads names by hashed words and n-grams (:mod:`.header`); a pretrained model's spec
    (:mod:`.sentence`, ``[embed] header_encoder``) reads them by that model, whose dimension is then ``header_dim``.
    """

    max_values: int = 1000
    numeric_weight: float = 1.0
    seed: int = 17
    header_weight: float = 0.0
    header_dim: int = 128
    header_model: str = ""


#: Encoder classes by kind, each registered when its class is defined (:mod:`.registry` imports them all).
KINDS: dict[str, type[Encoder]] = {}


class Encoder(ABC):
    """Values -> vectors, columns -> vectors, column vectors -> table vector; versioned by content."""

    kind: str = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.kind:
            KINDS[cls.kind] = cls

    def __init__(self, dim: int, column: ColumnConfig):
        self.dim = dim
        self.column = column

    @abstractmethod
    def encode_values(self, values: list[str] | pa.Array) -> np.ndarray:
        """L2-normalised float32 vectors (n, dim); values that normalise to null get the zero vector."""

    @classmethod
    @abstractmethod
    def from_state(cls, config: dict, arrays: dict[str, np.ndarray]) -> Encoder:
        """The encoder :meth:`_state` described (what :meth:`to_bytes` stores and :func:`encoder_from_bytes` reads)."""

    @abstractmethod
    def _state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """JSON-able config and named weight arrays that fully determine the encoder."""

    def to_bytes(self) -> bytes:
        """Deterministic serialisation (see :mod:`discovery.transforms.encoders.serialization`)."""
        config, arrays = self._state()
        config = {**config, "dim": self.dim, "column": asdict(self.column)}
        if self.column.header_model:  # the names' vectors are the model's: a changed model is a new version
            from .pretrained import model_digest

            config["header_digest"] = model_digest(self.column.header_model)
        return pack(self.kind, config, arrays)

    @cached_property
    def version(self) -> str:
        """``<kind>-<content hash>`` of config and weights: equal versions give equal vectors."""
        return content_version(self.kind, self.to_bytes())

    @cached_property
    def _numeric_projection(self) -> np.ndarray:
        return numeric_projection(self.dim, self.column.seed)

    @property
    def column_dim(self) -> int:
        """Dimension of column vectors: the value channel, plus the header channel when it is switched on."""
        return self.dim + (self.column.header_dim if self.column.header_weight > 0 else 0)

    def header_vectors(self, names: list[str | None]) -> np.ndarray | None:
        """Header-channel vectors (len(names), header_dim) of column names; None when the channel is off."""
        if self.column.header_weight <= 0:
            return None
        if self.column.header_model:
            from .pretrained import sentence_header_vectors

            return sentence_header_vectors(names, self.column.header_model)
        return header_vectors(names, self.column.header_dim, seed=self.column.seed)

    def column_vector(self, values: list[str], counts: np.ndarray, kind: str,
                      value_vectors: np.ndarray | None = None, header: np.ndarray | None = None,
                      numbers: np.ndarray | None = None) -> np.ndarray:
        """Column vector (column_dim,) from a column's sampled distinct values and their frequencies (Eq. 7 + numeric
        features) and, when the header channel is on, its name's vector ``header`` (from :meth:`header_vectors`;
        None: no name): ``unit([sqrt(w) * header, sqrt(1 - w) * values])``.  ``numbers``: the values'
        :func:`parse_numbers`, when the caller has them."""
        if value_vectors is None:
            value_vectors = self.encode_values(values)
        vec = unit(weighted_mean(value_vectors, counts))
        if kind in NUMERIC_KINDS and self.column.numeric_weight > 0 and len(values):
            feats = numeric_features(parse_numbers(values) if numbers is None else numbers, counts)
            vec = vec + self.column.numeric_weight * project(feats, self._numeric_projection)
        w = self.column.header_weight
        if w > 0:
            head = np.zeros(self.column.header_dim) if header is None else np.asarray(header, dtype=np.float64)
            vec = np.concatenate([np.sqrt(w) * head, np.sqrt(1.0 - w) * unit(vec)])
        return unit(vec).astype(np.float32)

    def encode_column(self, values: pa.Array | pa.ChunkedArray | list[str], kind: str = "string",
                      name: str | None = None) -> np.ndarray:
        """Column vector (column_dim,) over a bounded, deterministic sample of the column's distinct values, with
        the header channel of ``name`` when it is on."""
        profile = profile_column(values)
        chosen = priority_sample(profile.values, profile.counts, self.column.max_values)
        sample = [profile.values[i] for i in chosen]
        header = self.header_vectors([name])
        return self.column_vector(sample, profile.counts[chosen], kind,
                                  header=None if header is None else header[0])

    def encode_table(self, column_vectors: np.ndarray) -> np.ndarray:
        """Fallback table vector: the L2-normalised mean of the column vectors."""
        cols = np.asarray(column_vectors, dtype=np.float64).reshape(-1, self.table_input_dim)
        return unit(weighted_mean(cols, np.ones(cols.shape[0]))).astype(np.float32)

    @property
    def table_input_dim(self) -> int:
        """Dimension of the column vectors ``encode_table`` expects."""
        return self.column_dim

    @property
    def table_dim(self) -> int:
        """Dimension of the vectors ``encode_table`` returns."""
        return self.column_dim


def encoder_from_bytes(data: bytes) -> Encoder:
    """Rebuild any encoder from :meth:`Encoder.to_bytes` output.  Here, below every encoder class, so an encoder
    holding another (the table encoder's base) rebuilds it without importing the registry above it."""
    kind, config, arrays = unpack(data)
    if kind not in KINDS:
        raise ValueError(f"unknown encoder kind {kind!r} in stored bytes")
    return KINDS[kind].from_state(config, arrays)
