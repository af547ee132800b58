"""Stable, vectorised hashing of word tokens and character n-grams (the fastText subword features).

Python's ``hash()`` is salted per process, so every hash here is computed with fixed 64-bit integer arithmetic in
numpy (FNV-1a over Unicode code points, finished with the splitmix64 mixer): the same string yields the same features
in a Spark task, in a query process and on another machine.  All values of a batch are processed together as one
code-point array, so the per-value cost is a few numpy passes rather than a Python loop over n-grams.

Each value is wrapped in boundary markers ``<`` and ``>`` (as fastText does), so prefixes and suffixes get their own
n-grams.  Optionally, the characters of a *qualifier* (text inside parentheses, or after the first comma, as in
"tom elliott (politician)" or "national stadium, singapore") are hashed in a separate namespace, so that a trained
model can learn how much such trailing detail should count.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import overload

import numpy as np

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_WORD_NAMESPACE = np.uint64(0x5744)
_QUALIFIER_NAMESPACE = np.uint64(0x51A1)
#: Characters of a word beyond this are not hashed (the word is still one feature); bounds the hashing loop.
MAX_WORD_CHARS = 32
#: Prefix length hashed for the whole-value feature (per-value pseudo-random numbers); longer values rarely share it.
MAX_WHOLE_VALUE_CHARS = 256


@overload
def splitmix64(x: np.ndarray) -> np.ndarray: ...


@overload
def splitmix64(x: np.uint64) -> np.uint64: ...


def splitmix64(x: np.ndarray | np.uint64) -> np.ndarray | np.uint64:
    """The splitmix64 finaliser: a bijective, well-mixing map of uint64 arrays, or of one uint64 (wrapping
    arithmetic)."""
    with np.errstate(over="ignore"):
        x = np.asarray(x, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def stable_uniform(values: list[str], seed: int) -> np.ndarray:
    """A deterministic pseudo-random number in [0, 1) per string (same string, same number, in any process)."""
    feats = extract_features(values, ngram_sizes=(), word_weight=0.0, seed=seed, whole_value=True)
    out = np.zeros(len(values), dtype=np.float64)
    out[feats.rows] = (feats.hashes >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    return out


@dataclass(frozen=True)
class Features:
    """Hashed features of a batch of values: feature ``i`` belongs to value ``rows[i]`` with weight ``weights[i]``.

    Rows are non-decreasing, so the features of one value are contiguous (``offsets`` marks where each value's run
    starts, with a final entry equal to the number of features).
    """

    rows: np.ndarray
    hashes: np.ndarray
    weights: np.ndarray
    offsets: np.ndarray


def _codepoints(values: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Code points of ``<v1><v2>...``, the owning value of each position, and each value's start position."""
    lengths = np.fromiter((len(v) + 2 for v in values), dtype=np.int64, count=len(values))
    joined = "<" + "><".join(values) + ">" if values else ""
    cps = np.frombuffer(joined.encode("utf-32-le"), dtype="<u4").astype(np.uint64)
    owner = np.repeat(np.arange(len(values), dtype=np.int64), lengths)
    starts = np.zeros(len(values), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return cps, owner, starts


def _qualifier_mask(cps: np.ndarray, owner: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """True where a character lies inside parentheses or after the first comma of its value."""
    if cps.size == 0:
        return np.zeros(0, dtype=bool)
    delta = (cps == ord("(")).astype(np.int64) - (cps == ord(")")).astype(np.int64)
    depth = np.cumsum(delta)
    depth -= (depth[starts] - delta[starts])[owner]
    commas = np.cumsum(cps == ord(","))
    commas -= (commas[starts] - (cps[starts] == ord(",")))[owner]
    return (depth > 0) | (cps == ord(")")) | (commas > 0)


def _alnum_mask(cps: np.ndarray) -> np.ndarray:
    uniq, inverse = np.unique(cps, return_inverse=True)
    table = np.fromiter((chr(int(c)).isalnum() for c in uniq), dtype=bool, count=uniq.size)
    return table[inverse]


def _hash_runs(cps: np.ndarray, starts: np.ndarray, lengths: np.ndarray, seed: np.uint64) -> np.ndarray:
    """FNV-1a of the code-point runs ``cps[s:s+l]`` (l capped by the caller), finished with splitmix64."""
    h = np.full(starts.size, _FNV_OFFSET ^ seed, dtype=np.uint64)
    h ^= lengths.astype(np.uint64)
    if starts.size and lengths.min() == lengths.max():
        for k in range(int(lengths[0])):
            h ^= cps[starts + k]
            h *= _FNV_PRIME
        return splitmix64(h)
    for k in range(int(lengths.max(initial=0))):
        active = lengths > k
        idx = starts[active] + k
        h[active] = (h[active] ^ cps[idx]) * _FNV_PRIME
    return splitmix64(h)


def extract_features(
    values: list[str],
    ngram_sizes: tuple[int, ...] = (3, 4, 5),
    word_weight: float = 1.0,
    seed: int = 0,
    mark_qualifiers: bool = False,
    whole_value: bool = False,
) -> Features:
    """Hash the word tokens and character n-grams of every value.

    ``word_weight`` is the weight of a word token relative to one character n-gram (0 drops words).  With
    ``whole_value`` the whole string (without markers) is one more feature of weight 1, used for per-value
    pseudo-random numbers.
    """
    n = len(values)
    cps, owner, starts = _codepoints(values)
    qualifier = _qualifier_mask(cps, owner, starts) if mark_qualifiers else None
    base_seed = splitmix64(np.uint64(seed))
    rows, hashes, weights = [], [], []

    for size in ngram_sizes:
        count = cps.size - size + 1
        if count <= 0:
            continue
        pos = np.arange(count, dtype=np.int64)
        valid = owner[:count] == owner[size - 1:]
        pos = pos[valid]
        seed_n = base_seed ^ np.uint64(size)
        h = _hash_runs(cps, pos, np.full(pos.size, size, dtype=np.int64), seed_n)
        if qualifier is not None:
            h = np.where(qualifier[pos], splitmix64(h ^ _QUALIFIER_NAMESPACE), h)
        rows.append(owner[pos])
        hashes.append(h)
        weights.append(np.ones(pos.size))

    if word_weight > 0 and cps.size:
        alnum = _alnum_mask(cps)
        prev = np.concatenate(([False], alnum[:-1]))
        nxt = np.concatenate((alnum[1:], [False]))
        w_start = np.flatnonzero(alnum & ~prev)
        w_end = np.flatnonzero(alnum & ~nxt) + 1
        lengths = np.minimum(w_end - w_start, MAX_WORD_CHARS)
        h = _hash_runs(cps, w_start, lengths, base_seed ^ _WORD_NAMESPACE)
        if qualifier is not None:
            h = np.where(qualifier[w_start], splitmix64(h ^ _QUALIFIER_NAMESPACE), h)
        rows.append(owner[w_start])
        hashes.append(h)
        weights.append(np.full(w_start.size, float(word_weight)))

    if whole_value and n:
        lengths = np.fromiter((min(len(v), MAX_WHOLE_VALUE_CHARS) for v in values), dtype=np.int64, count=n)
        h = _hash_runs(cps, starts + 1, lengths, base_seed ^ np.uint64(0xA11))
        rows.append(np.arange(n, dtype=np.int64))
        hashes.append(h)
        weights.append(np.ones(n))

    if not rows:
        empty = np.zeros(0)
        return Features(empty.astype(np.int64), empty.astype(np.uint64), empty, np.zeros(n + 1, dtype=np.int64))
    row = np.concatenate(rows)
    order = np.argsort(row, kind="stable")
    row = row[order]
    offsets = np.searchsorted(row, np.arange(n + 1), side="left").astype(np.int64)
    return Features(row, np.concatenate(hashes)[order], np.concatenate(weights)[order], offsets)
