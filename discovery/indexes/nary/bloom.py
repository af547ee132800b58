"""Bloom-filter super keys: the hash baseline of MATE §7.1.2 ("BF"), same size as the XASH key.

Each value sets ``H`` bits chosen uniformly by double hashing (Kirsch-Mitzenmacher, ``g_i = h1 + i * h2``) of a
128-bit BLAKE2b digest; the paper uses Murmur3, any uniform hash family behaves the same for this purpose.  The
number of hash functions follows the paper: ``H = (|a| / V) ln 2`` with ``V`` the average number of columns of the
corpus tables (the values OR-ed into one super key).
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np


def value_digests(values: Sequence[str]) -> np.ndarray:
    """128-bit BLAKE2b digest of each string as ``(n, 2)`` uint64 (``h1``, ``h2``)."""
    if len(values) == 0:
        return np.zeros((0, 2), dtype=np.uint64)
    raw = b"".join(hashlib.blake2b(v.encode("utf-8"), digest_size=16).digest() for v in values)
    return np.frombuffer(raw, dtype="<u8").reshape(len(values), 2).astype(np.uint64)


def bloom_hash_count(bits: int, avg_columns: float) -> int:
    """``H = (|a| / V) ln 2`` (at least 1), the false-positive-optimal count for ``V`` values per key."""
    return max(1, int(round(bits / max(avg_columns, 1.0) * math.log(2))))


def bloom_keys(digests: np.ndarray, bits: int, n_hashes: int) -> np.ndarray:
    """Bloom filter of each single value, ``(n, bits // 64)`` uint64, from its digests."""
    n = digests.shape[0]
    out = np.zeros((n, bits // 64), dtype=np.uint64)
    if n == 0:
        return out
    steps = np.arange(n_hashes, dtype=np.uint64)
    with np.errstate(over="ignore"):
        positions = (digests[:, :1] + steps[None, :] * (digests[:, 1:] | np.uint64(1))) % np.uint64(bits)
    rows = np.repeat(np.arange(n), n_hashes)
    positions = positions.ravel().astype(np.int64)
    np.bitwise_or.at(out, (rows, positions >> 6), np.left_shift(np.uint64(1), (positions & 63).astype(np.uint64)))
    return out
