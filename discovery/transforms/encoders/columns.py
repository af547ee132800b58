"""From a column's cells to the inputs of a column vector: distinct values, frequencies, a bounded sample, numbers.

A column vector is the frequency-weighted mean of its value vectors (TACTUS Eq. 7) over a bounded sample of distinct
values.  The sample is TACTUS's priority sampling (§4.2: weight TF(w) / h(w), h in [0.8, 1]) with h derived from a
stable hash of the value instead of a random draw, so that the sample, and therefore the vector, is a pure function of
the column's multiset of values, independent of row order, process and machine.

Numeric columns also get distribution features in the spirit of Sherlock and D3L: a smoothed histogram of signed
log-magnitudes plus the shares of integral, negative and numeric cells.  Two columns of years, of prices or of small
counts get similar histograms whatever their exact values, which the character n-grams of digits cannot express.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from discovery.ground.normalize import normalize_array

from .ngrams import stable_uniform

NUMERIC_KINDS = frozenset({"int", "integer", "float", "double", "decimal", "number", "numeric", "bigint"})
#: Centres of the log-magnitude histogram: sign(x) * log10(1 + |x|) from -10 to 10 in steps of 0.5.
_HIST_CENTRES = np.arange(-10.0, 10.0 + 1e-9, 0.5)
NUMERIC_FEATURES = _HIST_CENTRES.size + 4
_NUMBER = r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$"
_PRIORITY_SEED = 0x7AC7


@dataclass(frozen=True)
class ColumnProfile:
    """Distinct normalised values of a column (sorted), their frequencies, and each row's index into them (-1: null)."""

    values: list[str]
    counts: np.ndarray
    row_codes: np.ndarray


def profile_column(values: pa.Array | pa.ChunkedArray | list) -> ColumnProfile:
    """Normalise a column and count its distinct values; null tokens are dropped."""
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.array([None if v is None else str(v) for v in values], type=pa.string())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    normalized = normalize_array(values)
    encoded = pc.dictionary_encode(normalized)
    dictionary = encoded.dictionary
    order = np.asarray(pc.sort_indices(dictionary), dtype=np.int64)
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    row_codes = np.where(codes >= 0, rank[np.maximum(codes, 0)] if rank.size else -1, -1)
    counts = np.bincount(row_codes[row_codes >= 0], minlength=order.size).astype(np.float64)
    sorted_values = dictionary.take(pa.array(order)).to_pylist()
    keep = counts > 0
    if not keep.all():
        remap = np.cumsum(keep) - 1
        row_codes = np.where(row_codes >= 0, remap[np.maximum(row_codes, 0)], -1)
        sorted_values = [v for v, k in zip(sorted_values, keep) if k]
        counts = counts[keep]
    return ColumnProfile(sorted_values, counts, row_codes)


def priority_sample(values: list[str], counts: np.ndarray, max_values: int) -> np.ndarray:
    """Indices of at most ``max_values`` distinct values, chosen by TACTUS priority sampling with a stable h(w).

    Returned indices are ascending, so the sample keeps the (sorted) order of ``values`` and sums over it always run
    in the same order.
    """
    if len(values) <= max_values:
        return np.arange(len(values))
    return priority_sample_of(priority_weights(values), counts, max_values)


def priority_weights(values: list[str]) -> np.ndarray:
    """The stable h(w) of each value that :func:`priority_sample` divides its count by (one string at a time, so a
    subset's weights are the same rows of the whole column's)."""
    return 0.8 + 0.2 * stable_uniform(values, _PRIORITY_SEED)


def priority_sample_of(h: np.ndarray, counts: np.ndarray, max_values: int) -> np.ndarray:
    """:func:`priority_sample` from the values' :func:`priority_weights` ``h``."""
    if len(h) <= max_values:
        return np.arange(len(h))
    priority = counts / h
    chosen = np.lexsort((np.arange(len(h)), -priority))[:max_values]
    return np.sort(chosen)


def parse_numbers(values: list[str]) -> np.ndarray:
    """Numeric value of each normalised string (thousands separators, currency and percent signs ignored);
    NaN if none."""
    arr = pa.array(values, type=pa.string())
    cleaned = pc.replace_substring_regex(arr, pattern=r"[,$€£%\s]", replacement="")
    is_number = pc.match_substring_regex(cleaned, pattern=_NUMBER)
    out = np.full(len(values), np.nan)
    mask = is_number.to_numpy(zero_copy_only=False).astype(bool)
    if mask.any():
        numbers = pc.cast(pc.filter(cleaned, is_number), pa.float64())
        out[mask] = numbers.to_numpy(zero_copy_only=False)
    return out


def numeric_features(numbers: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Distribution features of a numeric column, L2-normalised; zero if no value is numeric.

    Soft (linearly interpolated) histogram of sign(x) log10(1 + |x|) weighted by frequency, followed by the shares of
    integral and negative numbers among the numeric cells, the share of numeric cells, and the share of distinct
    values among numeric cells (1 for keys, small for categorical codes).
    """
    ok = np.isfinite(numbers)
    out = np.zeros(NUMERIC_FEATURES)
    total = counts.sum()
    if not ok.any() or total <= 0:
        return out
    x, w = numbers[ok], counts[ok]
    t = np.clip(np.sign(x) * np.log10(1.0 + np.abs(x)), _HIST_CENTRES[0], _HIST_CENTRES[-1])
    pos = (t - _HIST_CENTRES[0]) / 0.5
    lo = np.minimum(np.floor(pos).astype(np.int64), _HIST_CENTRES.size - 2)
    frac = pos - lo
    hist = np.bincount(lo, weights=w * (1.0 - frac), minlength=_HIST_CENTRES.size)
    hist += np.bincount(lo + 1, weights=w * frac, minlength=_HIST_CENTRES.size)
    wsum = w.sum()
    out[: _HIST_CENTRES.size] = hist / wsum
    out[-4] = w[x == np.round(x)].sum() / wsum
    out[-3] = w[x < 0].sum() / wsum
    out[-2] = wsum / total
    out[-1] = ok.sum() / wsum
    return out / np.linalg.norm(out)


def numeric_projection(dim: int, seed: int) -> np.ndarray:
    """A fixed seeded Gaussian (NUMERIC_FEATURES, dim) projection scaled by 1/sqrt(dim).

    Plain Gaussian rather than orthonormalised: no LAPACK call, so the matrix is bit-identical in every process, and
    with dim >= 32 it keeps cosines of the short feature vectors close (Johnson-Lindenstrauss).
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    return rng.standard_normal((NUMERIC_FEATURES, dim)) / np.sqrt(dim)


def project(features: np.ndarray, projection: np.ndarray) -> np.ndarray:
    """``features @ projection`` for one feature vector, summed in a fixed order without BLAS."""
    return np.add.reduce(features[:, None] * projection, axis=0)
