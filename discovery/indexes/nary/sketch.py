"""HyperLogLog sketch of a set of distinct normalised values: the unique-value count ``C_unique`` of Eq. 5.

Why a sketch and not an exact count: the XASH stage is incremental, so the corpus count must be assembled from
per-table parts kept between refreshes.  Exact counting would need every table's distinct values stored (or the
whole postings table scanned on every refresh); a HyperLogLog register array per table is a few hundred bytes
compressed, merges by element-wise maximum (so a value shared by many tables is counted once) and is exact enough for
its only use: alpha of Eq. 5 changes at ``C(|a|, alpha)`` thresholds that are more than an order of magnitude apart
(8,128 / 341,376 / 10,668,000 at 128 bits), and with ``2**12`` registers the standard error is 1.6 %.  A value near
a threshold may get the neighbouring alpha; that changes the false-positive rate of the filter, never a result, since
the index and every query hash with the same stored model.

Registers follow Flajolet et al. (2007) on the first 64 bits of the BLAKE2b digest the index already computes for
every value: the top ``P`` bits pick the register, the rank is the position of the first one-bit in the rest; the
estimate uses linear counting below ``2.5 m`` (no large-range correction is needed with 64-bit hashes).
"""
from __future__ import annotations

import zlib
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from discovery.indexes.nary.bloom import value_digests

P = 12
M = 1 << P
_REST = 64 - P


def registers(values: pa.Array) -> np.ndarray:
    """``uint8[M]`` HyperLogLog registers of the distinct non-null strings of ``values``."""
    out = np.zeros(M, dtype=np.uint8)
    distinct = pc.unique(pc.drop_null(values))
    if len(distinct) == 0:
        return out
    h = value_digests(distinct.to_pylist())[:, 0]
    index = (h >> np.uint64(_REST)).astype(np.int64)
    rest = (h & np.uint64((1 << _REST) - 1)).astype(np.float64)  # < 2**52: exact in float64
    _, exponent = np.frexp(rest)  # rest = m * 2**e, 0.5 <= m < 1: the highest one-bit is bit e - 1
    rank = (_REST + 1 - exponent).astype(np.uint8)  # 1 + leading zeros of the 52-bit remainder (53 when it is 0)
    np.maximum.at(out, index, rank)
    return out


def merge(parts: Iterable[np.ndarray]) -> np.ndarray:
    """Registers of the union of the sets the parts describe."""
    out = np.zeros(M, dtype=np.uint8)
    for part in parts:
        np.maximum(out, part, out=out)
    return out


def estimate(regs: np.ndarray) -> int:
    """Estimated number of distinct values behind ``regs``."""
    alpha_m = 0.7213 / (1.0 + 1.079 / M)
    raw = alpha_m * M * M / float(np.sum(np.ldexp(1.0, -regs.astype(np.int64))))
    zeros = int(np.count_nonzero(regs == 0))
    if raw <= 2.5 * M and zeros:
        return int(round(M * np.log(M / zeros)))
    return int(round(raw))


def to_bytes(regs: np.ndarray) -> bytes:
    """Compressed form for the ``xash_stats`` table (a small table's registers are mostly zero)."""
    return zlib.compress(regs.astype(np.uint8).tobytes(), 6)


def from_bytes(data: bytes) -> np.ndarray:
    regs = np.frombuffer(zlib.decompress(data), dtype=np.uint8)
    if regs.size != M:
        raise ValueError(f"HyperLogLog sketch has {regs.size} registers, expected {M}")
    return regs
