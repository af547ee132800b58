"""XASH (MATE §5): parameters of Eq. 5/6, the encoding against a direct per-value transcription of the paper, the
stored super keys against the same transcription, super-key soundness on real rows and the model's versioned
serialisation."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from discovery.ground.normalize import normalize_values
from discovery.ground.xash import (ALPHABET, XashModel, alpha_for, char_counts, length_segment_width, segment_width,
                                   superkey_covers)
from discovery.indexes.nary.postings import binary_to_superkeys, build_postings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "mate_queries"
CHARS = "abcdefghijklmnopqrstuvwxyz0123456789 äöüßé-./,"


def random_strings(rng: random.Random, n: int, max_len: int = 24) -> list[str]:
    """Random values that survive normalisation (no null tokens)."""
    out = []
    while len(out) < n:
        value = "".join(rng.choice(CHARS) for _ in range(rng.randint(1, max_len)))
        if normalize_values([value])[0] is not None:
            out.append(value)
    return out


def reference_xash(value: str, model: XashModel) -> int:
    """The paper's encoding for one value, written as plainly as possible (a Python int of ``bits`` bits)."""
    freq = dict(model.char_frequencies)
    beta, length_bits = model.beta, model.length_bits
    region = 37 * beta
    l_v = len(value)
    chosen = sorted(set(value), key=lambda ch: (freq.get(ch, 0), ord(ch)))[:model.alpha - 1]
    char_part = 0
    for ch in chosen:
        positions = [i + 1 for i, c in enumerate(value) if c == ch]
        segment = ALPHABET.index(ch) if ch in ALPHABET else ord(ch) % 37
        area = min(beta, max(1, math.ceil(sum(positions) * beta / (len(positions) * l_v))))
        char_part |= 1 << ((segment * beta + area - 1 + l_v) % region)  # rotated by l_v inside the region
    return (char_part << length_bits) | (1 << (l_v % length_bits))


def as_int(words: np.ndarray) -> int:
    return sum(int(w) << (64 * i) for i, w in enumerate(words))


def test_segmentation_matches_paper_sizes():
    assert (segment_width(128), length_segment_width(128)) == (3, 17)
    assert (segment_width(512), length_segment_width(512)) == (13, 31)
    for bits in (128, 256, 512):
        beta = segment_width(bits)
        assert 37 * beta < bits <= 37 * (beta + 1)


def test_alpha_is_smallest_count_with_enough_combinations():
    assert alpha_for(700_000_000, 128) == 6  # the DWTC example of §5.3.1
    rng = random.Random(3)
    for _ in range(200):
        bits = rng.choice((128, 256, 512))
        n = rng.choice([rng.randint(0, 10**4), rng.randint(0, 10**9), rng.randint(0, 10**13)])
        alpha = alpha_for(n, bits)
        assert math.comb(bits, alpha) > n
        assert alpha == 2 or math.comb(bits, alpha - 1) <= n


@pytest.mark.parametrize("bits", [128, 256, 512])
def test_vectorised_hash_equals_reference(bits):
    rng = random.Random(bits)
    corpus = normalize_values(random_strings(rng, 400))
    model = XashModel.from_counts(char_counts(corpus), n_unique_values=rng.choice([50, 10**6, 10**10]), bits=bits)
    values = normalize_values(random_strings(rng, 300) + ["aaaa", "abab", "ß", "münchen", "x" * 70])
    hashes = model.hash_values(values)
    assert hashes.shape == (len(values), bits // 64) and hashes.dtype == np.uint64
    for value, words in zip(values, hashes):
        assert as_int(words) == reference_xash(value, model), value


def test_bit_budget_and_length_segment():
    rng = random.Random(5)
    values = normalize_values(random_strings(rng, 300))
    model = XashModel.from_counts(char_counts(values), 10**8)
    for value, words in zip(values, model.hash_values(values)):
        h = as_int(words)
        length_segment = h & ((1 << model.length_bits) - 1)
        assert length_segment == 1 << (len(value) % model.length_bits)
        assert 1 <= bin(h >> model.length_bits).count("1") <= min(model.alpha - 1, len(set(value)))


def test_least_frequent_characters_with_lexicographic_ties():
    model = XashModel(bits=128, alpha=3, char_frequencies=(("a", 100), ("b", 5), ("c", 5), ("d", 1)))
    beta, lb = model.beta, model.length_bits
    # "abcd": d (freq 1) then b (freq 5, before c by code point); "zz" has an unseen, hence rarest, character
    h = as_int(model.hash_values(["abcd"])[0])
    for ch, pos in (("d", 4), ("b", 2)):
        area = math.ceil(pos * beta / 4)
        assert h >> (lb + (ALPHABET.index(ch) * beta + area - 1 + 4) % (37 * beta)) & 1
    c_bit = lb + (ALPHABET.index("c") * beta + math.ceil(3 * beta / 4) - 1 + 4) % (37 * beta)
    assert not h >> c_bit & 1


def test_rotation_separates_lengths():
    model = XashModel.from_counts({"q": 1, "z": 1}, 10**6)
    a, b = (as_int(w) >> model.length_bits for w in model.hash_values(["qz", "q z"]))
    assert a != b  # same rare characters and areas, different lengths -> rotated apart


def test_nulls_hash_to_zero_and_chunked_input():
    model = XashModel.from_counts({"a": 3}, 10)
    out = model.hash_values(pa.chunked_array([["a", None], [None, "ab"]]))
    assert not out[1].any() and not out[2].any() and out[0].any() and out[3].any()


def super_key(model: XashModel, row: list[str]) -> np.ndarray:
    return np.bitwise_or.reduce(model.hash_values(row), axis=0)


def as_words(value: int, words: int) -> list[int]:
    return [(value >> (64 * i)) & (2**64 - 1) for i in range(words)]


@pytest.mark.parametrize("bits", [128, 256, 512])
def test_stored_super_keys_are_the_or_of_the_paper_encoding_of_the_row(bits):
    """The super key the postings store on every cell (MATE §5.1) equals the OR of the paper's per-value encoding
    (:func:`reference_xash`, computed value by value) over that row's non-empty normalised cells, nulls contributing
    nothing; and it covers the key of any subset of the row's values built the same independent way."""
    rng = random.Random(bits + 1)
    n_rows, n_cols = 150, 5
    columns = [[None if rng.random() < 0.2 else v for v in random_strings(rng, n_rows)] for _ in range(n_cols)]
    model = XashModel.from_counts(char_counts([v for c in columns for v in c if v is not None]), 10**7, bits=bits)
    postings = build_postings(7, [pa.array(c, pa.string()) for c in columns], model)
    stored = binary_to_superkeys(postings.column("superkey"), model.words)
    cells = [normalize_values(c) for c in columns]
    row_values = [[cells[c][r] for c in range(n_cols) if cells[c][r]] for r in range(n_rows)]
    expected = [0] * n_rows
    for r, values in enumerate(row_values):
        for v in values:
            expected[r] |= reference_xash(v, model)
    rows = postings.column("row").to_pylist()
    assert sorted(set(rows)) == [r for r in range(n_rows) if any(cells[c][r] is not None for c in range(n_cols))]
    for p, r in enumerate(rows):
        assert as_int(stored[p]) == expected[r], (p, r)
    picked = [p for p, r in enumerate(rows) if row_values[r]]
    queries = []
    for p in picked:
        subset = rng.sample(row_values[rows[p]], rng.randint(1, len(row_values[rows[p]])))
        key = 0
        for v in subset:
            key |= reference_xash(v, model)
        queries.append(as_words(key, model.words))
    assert superkey_covers(stored[picked], np.array(queries, dtype=np.uint64)).all()


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/benchmarks/mate_queries is not available")
def test_super_key_has_no_false_negatives_on_real_rows():
    import csv
    rows = []
    for path in sorted((SHARED / "opendata" / "1000" / "sampled_final").glob("*.csv"))[:15]:
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            rows.extend(r for r in csv.reader(fh) if len(r) >= 2)
    rows = [[v for v in normalize_values(r) if v] for r in rows[:3000]]
    rows = [r for r in rows if len(r) >= 2]
    model = XashModel.from_counts(char_counts([v for r in rows for v in r]), len({v for r in rows for v in r}))
    rng = random.Random(11)
    keys = np.stack([super_key(model, r) for r in rows])
    queries = np.stack([super_key(model, rng.sample(r, 2)) for r in rows])
    assert superkey_covers(keys, queries).all()


def test_superkey_covers_equals_bitwise_definition():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**63, size=(500, 4), dtype=np.uint64) | rng.integers(0, 2**63, size=(500, 4),
                                                                                   dtype=np.uint64)
    queries = keys & rng.integers(0, 2**63, size=(500, 4), dtype=np.uint64)
    flip = rng.random(500) < 0.5
    queries[flip, rng.integers(0, 4, flip.sum())] |= np.uint64(1) << rng.integers(0, 64, flip.sum()).astype(np.uint64)
    expected = ((queries | keys) == keys).all(axis=1)
    assert (superkey_covers(keys, queries) == expected).all()
    assert expected.any() and not expected.all()
    rows, picks = rng.integers(0, 500, 2000), rng.integers(0, 500, 2000)
    indexed = superkey_covers(keys, queries, rows, picks)
    assert (indexed == ((queries[picks] | keys[rows]) == keys[rows]).all(axis=1)).all()


def test_model_round_trip_and_version():
    model = XashModel.from_counts(char_counts(["Berlin", "Hamburg", "München"]), 3, bits=256)
    payload = json.loads(json.dumps(model.to_dict()))
    again = XashModel.from_dict(payload)
    assert again == model and again.version == model.version
    assert XashModel.from_counts(dict(model.char_frequencies), 3, bits=512).version != model.version
    assert XashModel.from_counts({**dict(model.char_frequencies), "b": 99}, 3, bits=256).version != model.version
    payload["alpha"] += 1
    with pytest.raises(ValueError, match="version"):
        XashModel.from_dict(payload)
    with pytest.raises(ValueError):
        XashModel.from_counts({}, 1, bits=64)


def test_char_counts_normalise_and_sum_over_chunks():
    counts = char_counts(pa.array(["  AB  a", None, "N/A", "ß"]))
    assert counts == {"a": 2, "b": 1, " ": 1, "ß": 1}
    both = char_counts(pa.chunked_array([pa.array(["  AB  a", None, "N/A", "ß"]), pa.array(["aaa", "z"])]))
    assert both == {"a": 5, "b": 1, " ": 1, "ß": 1, "z": 1}


def test_drift():
    model = XashModel.from_counts({"a": 10, "b": 10}, 1000)
    assert model.drift({"a": 1, "b": 1}, 1000) == 0.0
    assert model.drift({"c": 5}, 1000) == 1.0
    assert model.drift({"a": 10, "b": 10}, 10**12) == 1.0
    assert 0.0 < model.drift({"a": 3, "b": 1}, 1000) < 1.0
