"""XASH: the syntactic hash of MATE (§5) whose OR-aggregate over a row is the row's super key.

A value's hash has alpha one-bits: one in the *length segment* (bit ``l_v mod |a_l|``, §5.3.4) and one per each of
the ``alpha - 1`` least frequent characters of the value (corpus frequencies, ties by code point, §5.3.2), placed in
that character's segment of beta bits at the relative position of the character in the value (§5.3.3), after which
the character region is rotated by the value length (§5.3.5).

Layout of a ``bits``-wide hash, stored as ``bits // 64`` little-endian uint64 words, bit ``b`` in word ``b // 64``:

* bits ``[0, |a_l|)``: the length segment.  It comes first so that the super-key subset test, which compares word 0
  before the others, rejects most rows on the length bit alone (the short-circuit of §5.3.4).
* bits ``[|a_l|, |a|)``: 37 character segments of beta bits, beta from Eq. 6 (``37 * beta < |a|`` maximal), for the
  alphabet space, 0-9, a-z.  Rotation by ``l_v`` is cyclic inside this region only.

Choices where the paper is silent:

* Characters outside the 37-symbol alphabet (umlauts, punctuation, CJK, ...) are not dropped but folded onto a
  segment by ``code point mod 37``.  They are ranked by their own corpus frequency like any other character, so a
  rare ``ß`` or ``é`` still distinguishes a value; dropping them would leave values written only in such characters
  with nothing but a length bit.
* A character never seen in the corpus has frequency 0, i.e. it is the rarest.
* Location ``λ`` is the 1-based mean position of the character's occurrences; the bit inside the segment is
  ``ceil(λ·β / l_v)`` (1..β), i.e. the string is split into β equal areas from left to right.
* Rotation moves bit ``o`` of the character region to ``(o + l_v) mod 37β``.
* alpha is Eq. 5 (smallest alpha with ``C(|a|, alpha) > C_unique``) but at least 2: the paper reserves one bit for
  the length and alpha - 1 for the content, and a hash without any content bit could not tell apart two values of
  the same length.
* ``l_v`` is the number of Unicode code points of the normalised value.

Values are hashed after :func:`discovery.ground.normalize.normalize_array`; :meth:`XashModel.hash_values` expects values
that are already normalised (the posting builder and the query path both normalise once and reuse the result), while
:func:`char_counts` normalises its input itself because the Spark stage feeds it raw column values.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from discovery.ground.normalize import normalize_array

ALPHABET = " 0123456789abcdefghijklmnopqrstuvwxyz"
N_SEGMENTS = len(ALPHABET)
SUPPORTED_BITS = (128, 256, 512)
_CP_BITS = 21  # Unicode code points are < 2**21

_ASCII_SEGMENT = np.array([ALPHABET.index(chr(c)) if chr(c) in ALPHABET else c % N_SEGMENTS for c in range(128)],
                          dtype=np.int64)


def segment_width(bits: int) -> int:
    """beta of Eq. 6: the largest segment width with ``37 * beta < bits``."""
    return (bits - 1) // N_SEGMENTS


def length_segment_width(bits: int) -> int:
    """``|a_l| = |a| - 37 * beta``: the bits left for the one-hot length."""
    return bits - N_SEGMENTS * segment_width(bits)


def alpha_for(n_unique_values: int, bits: int) -> int:
    """Eq. 5: the fewest one-bits whose combinations over ``bits`` outnumber the corpus's unique values (min. 2)."""
    alpha = 2
    while math.comb(bits, alpha) <= n_unique_values and alpha < bits:
        alpha += 1
    return alpha


def as_string_array(values: pa.Array | pa.ChunkedArray | Sequence[str | None]) -> pa.Array:
    """One contiguous ``string`` array from an Arrow array, chunked array or Python sequence."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    elif not isinstance(values, pa.Array):
        values = pa.array(list(values), type=pa.string())
    if values.type != pa.string():
        values = pc.cast(values, pa.string())
    return values


def code_points(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Code points of all non-null values of a string array, concatenated, and the per-value lengths.

    The UTF-8 data buffer is decoded once and re-encoded as UTF-32, so no Python-level loop runs per value.  Null
    entries have length 0.
    """
    values = as_string_array(values)
    n = len(values)
    if n == 0:
        return np.zeros(0, np.uint32), np.zeros(0, np.int64)
    lengths = pc.fill_null(pc.utf8_length(values), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if values.null_count:
        values = pc.drop_null(values)  # a null slot may still span bytes in the data buffer
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32, count=values.offset + len(values) + 1)
    offsets = offsets[values.offset:]
    data = values.buffers()[2]
    raw = b"" if data is None else data.to_pybytes()[offsets[0]:offsets[-1]]
    cps = np.frombuffer(raw.decode("utf-8").encode("utf-32-le"), dtype=np.uint32)
    return cps, lengths


def char_counts(values: pa.Array | pa.ChunkedArray | Iterable[str | None]) -> dict[str, int]:
    """Character occurrence counts over the normalised non-null values: the statistics :meth:`XashModel.from_counts`
    takes (the refresh's ``xash`` stage sums the same counts per table, from its one normalisation pass)."""
    normalised = normalize_array(as_string_array(values if isinstance(values, (pa.Array, pa.ChunkedArray))
                                                 else list(values)))
    cps, _ = code_points(as_string_array(normalised))
    if cps.size == 0:
        return {}
    uniq, counts = np.unique(cps, return_counts=True)
    return {chr(int(c)): int(n) for c, n in zip(uniq, counts)}


@dataclass(frozen=True)
class XashModel:
    """The versioned XASH parameters: hash size, alpha and the corpus character frequency table."""

    bits: int
    alpha: int
    char_frequencies: tuple[tuple[str, int], ...]
    version: str = field(default="", compare=False)
    _cps: np.ndarray = field(init=False, repr=False, compare=False)
    _priority: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.bits not in SUPPORTED_BITS:
            raise ValueError(f"XASH size must be one of {SUPPORTED_BITS}, got {self.bits}")
        if not 2 <= self.alpha < self.bits:
            raise ValueError(f"alpha must be in [2, {self.bits}), got {self.alpha}")
        table = tuple(sorted((str(c), int(n)) for c, n in self.char_frequencies))
        if any(len(c) != 1 for c, _ in table):
            raise ValueError("character frequency keys must be single characters")
        object.__setattr__(self, "char_frequencies", table)
        expected = self._content_hash()
        if self.version and self.version != expected:
            raise ValueError(f"XASH model version {self.version!r} does not match its parameters ({expected!r})")
        object.__setattr__(self, "version", expected)
        # selection priority of a character: its code point when unseen (frequency 0: rarest, ties by code
        # point), else 2**21 + its rank by (frequency, code point) among the seen characters
        seen = [(n, ord(c)) for c, n in table if n > 0]
        by_code = np.array(sorted(cp for _, cp in seen), dtype=np.int64)
        rank = {cp: r for r, (_, cp) in enumerate(sorted(seen))}
        object.__setattr__(self, "_cps", by_code)
        object.__setattr__(self, "_priority", np.array([(1 << _CP_BITS) + rank[cp] for cp in by_code.tolist()],
                                                       dtype=np.int64))

    def _content_hash(self) -> str:
        payload = json.dumps({"bits": self.bits, "alpha": self.alpha, "chars": self.char_frequencies},
                             ensure_ascii=False, separators=(",", ":"))
        return "xash-" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    @classmethod
    def from_counts(cls, char_counts: dict[str, int], n_unique_values: int, bits: int = 128) -> XashModel:
        """Model from summed character counts and the corpus's unique-value count (alpha by Eq. 5)."""
        if n_unique_values < 0:
            raise ValueError("n_unique_values must be non-negative")
        return cls(bits=bits, alpha=alpha_for(n_unique_values, bits),
                   char_frequencies=tuple((c, int(n)) for c, n in char_counts.items()))

    def to_dict(self) -> dict:
        """JSON-able form, stored in the warehouse as the versioned model."""
        return {"version": self.version, "bits": self.bits, "alpha": self.alpha,
                "char_counts": dict(self.char_frequencies)}

    @classmethod
    def from_dict(cls, data: dict) -> XashModel:
        """Inverse of :meth:`to_dict`; rejects a payload whose version does not match its parameters."""
        return cls(bits=int(data["bits"]), alpha=int(data["alpha"]),
                   char_frequencies=tuple(data["char_counts"].items()), version=data.get("version", ""))

    @property
    def words(self) -> int:
        """uint64 words per hash."""
        return self.bits // 64

    @property
    def beta(self) -> int:
        return segment_width(self.bits)

    @property
    def length_bits(self) -> int:
        return length_segment_width(self.bits)

    def drift(self, char_counts: dict[str, int], n_unique_values: int) -> float:
        """How far new corpus statistics are from this model: 1.0 if Eq. 5 gives another alpha, else the total
        variation distance between the two character distributions (0 = identical, 1 = disjoint)."""
        if alpha_for(n_unique_values, self.bits) != self.alpha:
            return 1.0
        old = dict(self.char_frequencies)
        old_total = sum(old.values()) or 1
        new_total = sum(char_counts.values()) or 1
        chars = set(old) | set(char_counts)
        return 0.5 * sum(abs(old.get(c, 0) / old_total - char_counts.get(c, 0) / new_total) for c in chars)

    def hash_values(self, values: pa.Array | pa.ChunkedArray | Sequence[str | None]) -> np.ndarray:
        """XASH of every (already normalised) value: ``uint64`` array ``(n, bits // 64)``; null/empty -> zeros.

        Distinct values are hashed once (dictionary encoding), so columns with repeated values cost little more
        than their distinct values.
        """
        arr = as_string_array(values)
        out = np.zeros((len(arr), self.words), dtype=np.uint64)
        if len(arr) == 0 or arr.null_count == len(arr):
            return out
        encoded = pc.dictionary_encode(arr)
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        distinct = self._hash_distinct(encoded.dictionary)
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        out[valid] = distinct[indices[valid].astype(np.int64)]
        return out

    def _hash_distinct(self, values: pa.Array) -> np.ndarray:
        """XASH of a null-free string array, fully vectorised over (value, character) pairs."""
        n = len(values)
        out = np.zeros((n, self.words), dtype=np.uint64)
        cps, lengths = code_points(values)
        if cps.size == 0:
            return out
        value_of = np.repeat(np.arange(n, dtype=np.int64), lengths)
        starts = np.cumsum(lengths) - lengths
        position = np.arange(cps.size, dtype=np.int64) - np.repeat(starts, lengths) + 1
        # one entry per distinct (value, character): occurrence count and summed 1-based positions
        key = (value_of << _CP_BITS) | cps.astype(np.int64)
        order = np.argsort(key, kind="stable")
        key = key[order]
        first = np.ones(key.size, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        group_start = np.flatnonzero(first)
        pair_key = key[group_start]
        occurrences = np.diff(np.append(group_start, key.size))
        position_sum = np.add.reduceat(position[order], group_start)
        pair_value = pair_key >> _CP_BITS
        pair_cp = pair_key & ((1 << _CP_BITS) - 1)
        # the alpha - 1 characters of least corpus frequency (ties by code point) of each value
        priority = pair_cp.copy()
        if self._cps.size:
            slot = np.minimum(np.searchsorted(self._cps, pair_cp), self._cps.size - 1)
            known = self._cps[slot] == pair_cp
            priority[known] = self._priority[slot[known]]
        order = np.argsort((pair_value << (_CP_BITS + 1)) | priority, kind="stable")
        pair_value, pair_cp = pair_value[order], pair_cp[order]
        position_sum, occurrences = position_sum[order], occurrences[order]
        starts_here = np.ones(pair_value.size, dtype=bool)
        starts_here[1:] = pair_value[1:] != pair_value[:-1]
        first = np.maximum.accumulate(np.where(starts_here, np.arange(pair_value.size), 0))
        keep = (np.arange(pair_value.size) - first) < (self.alpha - 1)
        pair_value, pair_cp = pair_value[keep], pair_cp[keep]
        position_sum, occurrences = position_sum[keep], occurrences[keep]
        length = lengths[pair_value]
        beta = self.beta
        segment = np.where(pair_cp < 128, _ASCII_SEGMENT[np.minimum(pair_cp, 127)], pair_cp % N_SEGMENTS)
        # x = ceil(mean_position * beta / l_v) in exact integer arithmetic, mean = position_sum / occurrences
        numerator = position_sum * beta
        denominator = occurrences * length
        area = np.clip((numerator + denominator - 1) // denominator, 1, beta)
        region = N_SEGMENTS * beta
        char_bit = self.length_bits + (segment * beta + area - 1 + length) % region
        present = lengths > 0
        rows = np.concatenate([pair_value, np.flatnonzero(present)])
        bit = np.concatenate([char_bit, lengths[present] % self.length_bits])
        np.bitwise_or.at(out, (rows, bit >> 6), np.left_shift(np.uint64(1), (bit & 63).astype(np.uint64)))
        return out


def superkey_covers(superkeys: np.ndarray, query_keys: np.ndarray, rows: np.ndarray | None = None,
                    queries: np.ndarray | None = None) -> np.ndarray:
    """Subset test ``q | sk == sk`` for pairs (``superkeys[rows[p]]``, ``query_keys[queries[p]]``), aligned rows
    when no indices are given.  Word 0 (the length segment) is compared first and a pair rejected by a word is
    neither gathered nor compared on later words: the vectorised form of the short-circuit of §5.3.4.
    """
    if rows is None:
        rows = np.arange(superkeys.shape[0])
    if queries is None:
        queries = np.arange(query_keys.shape[0])
    alive = np.flatnonzero((query_keys[queries, 0] & ~superkeys[rows, 0]) == 0)
    for w in range(1, superkeys.shape[1]):
        if alive.size == 0:
            break
        alive = alive[(query_keys[queries[alive], w] & ~superkeys[rows[alive], w]) == 0]
    passed = np.zeros(rows.size, dtype=bool)
    passed[alive] = True
    return passed
