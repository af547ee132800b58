"""Encoders: stable hashing, canonicalisation, column vectors, determinism across processes, serialisation."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from discovery.transforms.encoders import ColumnConfig, HashEncoder, HashEncoderConfig, encoder_from_bytes, load_encoder
from discovery.transforms.encoders.canonical import canonicalize_text, canonicalize_values, reorder_names
from discovery.transforms.encoders.columns import numeric_features, parse_numbers, priority_sample, profile_column
from discovery.transforms.encoders.deterministic import matmul, segment_sum
from discovery.transforms.encoders.mined import mine_negatives, mine_number_negatives, mine_pairs, word_matrix
from discovery.transforms.encoders.ngrams import extract_features, stable_uniform
from discovery.transforms.encoders.spans import canonicalize_span_values

ROOT = Path(__file__).resolve().parent.parent


def _random_words(rng: random.Random, n: int) -> list[str]:
    alphabet = "abcdefghijklmnopqrstuvwxyzé0123456789 .-("
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 30))) for _ in range(n)]


def test_ngram_features_match_a_per_value_reference():
    rng = random.Random(3)
    values = _random_words(rng, 200)
    batch = extract_features(values, (3, 4), word_weight=1.5, seed=5, mark_qualifiers=True)
    for i, v in enumerate(values):
        single = extract_features([v], (3, 4), word_weight=1.5, seed=5, mark_qualifiers=True)
        lo, hi = batch.offsets[i], batch.offsets[i + 1]
        assert sorted(batch.hashes[lo:hi].tolist()) == sorted(single.hashes.tolist())
        n_ngrams = sum(max(len(v) + 2 - n + 1, 0) for n in (3, 4))
        n_words = sum(1 for w in "".join(c if c.isalnum() else " " for c in v).split())
        assert hi - lo == n_ngrams + n_words
        assert np.isclose(batch.weights[lo:hi].sum(), n_ngrams + 1.5 * n_words)


def test_qualifier_namespace_only_changes_qualifier_features():
    plain = extract_features(["tom elliott"], (3,), 1.0, 0, mark_qualifiers=True)
    qualified = extract_features(["tom elliott (politician)"], (3,), 1.0, 0, mark_qualifiers=True)
    unmarked = extract_features(["tom elliott (politician)"], (3,), 1.0, 0, mark_qualifiers=False)
    shared = set(plain.hashes.tolist()) & set(qualified.hashes.tolist())
    assert len(shared) >= len(plain.hashes) - 2
    assert set(qualified.hashes.tolist()) != set(unmarked.hashes.tolist())


def test_stable_uniform_is_a_function_of_the_string():
    u = stable_uniform(["a", "b", "a", "ccc"], seed=1)
    assert u[0] == u[2] and u[0] != u[1] and ((u >= 0) & (u < 1)).all()


def test_canonicalisation_of_dates_and_abbreviations():
    out = canonicalize_values(["march 5, 2021", "5 mar 2021", "03/05/2021", "2021/3/5", "25/12/2021",
                               "12 main st.", "acme mfg. co. & sons", None, "long march"])
    assert out[:4] == ["2021-03-05"] * 4
    assert out[4] == "2021-12-25"
    assert out[5] == "12 main street"
    assert out[6] == "acme manufacturing company and sons"
    assert out[7] is None and out[8] == "long march"


@pytest.mark.parametrize("written, canonical", [
    ("Jul 1 1801; Jul 1 1804", "1801-07-01 - 1804-07-01"),            # a term as two cells
    ("July 1 1801; \u2013; June 30 1804", "1801-07-01 - 1804-06-30"),  # a dash cell between them
    ("January 20 2015 - January 15 2019", "2015-01-20 - 2019-01-15"),
    ("(2000 - 2015)", "(2000 - 2015)"),
    ("(2000\u20132015)", "(2000 - 2015)"),
    ("2000 to 2015", "2000 - 2015"),
    ("George Clinton (1777 \u2013 1795)", "george clinton (1777 - 1795)"),
    ("George Washington; February 22 1732 \u2013 December 14 1799; (aged 67);",
     "george washington; 1732-02-22 - 1799-12-14; (aged 67);"),
    ("1861\u201365", "1861 - 1865"),                                 # a two-digit end after an en dash
    ("2015 \u2014 present", "2015 - present"),
    ("July 1801", "1801-07"),
    ("10\u201320 km", "10 - 20 km"), ("1.5 to 2", "1.5 - 2"),
    # left alone: a month, a date, a score or code, two listed years, an end before the start
    ("2010-12", "2010-12"), ("2021-03-05", "2021-03-05"), ("10-20", "10-20"), ("555-1234", "555-1234"),
    ("1801; 1804", "1801; 1804"), ("2019\u201312", "2019 - 12"),
])
def test_dates_and_spans_in_cells_get_one_canonical_form(written, canonical):
    from discovery.transforms.encoders.hash_encoder import prepare_strings
    out = prepare_strings([written], True, spans=True)
    assert out == [canonical]
    assert canonicalize_span_values(out) == out, "the rules are a fixed point"
    assert prepare_strings([written], True) == prepare_strings([written], True, spans=False)  # other encoders


def test_span_rules_do_not_cross_values():
    values = ["1801", "- 1804", None, "jul 1 1801", "jul 1 1804"]
    assert canonicalize_span_values(values) == values


def test_last_first_names_are_reordered_and_qualifiers_kept():
    values = ["obama, barack", "king, martin luther, jr.", "lizmark, jr.", "smith, j. r.", "o'neil, shaquille",
              "manor ground, plumstead", "indian general election, 2004", "tom elliott (politician)",
              "barack obama", "a, b, c"]
    out = reorder_names(canonicalize_text("\n".join(values))).split("\n")
    assert out == ["barack obama", "martin luther king junior", "lizmark junior", "j. r. smith", "shaquille o'neil",
                   "manor ground, plumstead", "indian general election, 2004", "tom elliott (politician)",
                   "barack obama", "a, b, c"]


def test_mined_pairs_are_mutual_best_lexical_partners_with_equal_numbers():
    rng = random.Random(0)
    filler = [" ".join(rng.choice("bcdfghjklmnpqrstvwxz") * 3 + str(i) for _ in range(2)) for i in range(200)]
    values = sorted(set(filler) | {
        "indian general election in arunachal pradesh 2004", "indian general election 2004 arunachal pradesh",
        "1893 lsu football team", "1894 lsu football team",
        "mexican burrowing treefrogs", "mexican treefrogs",
        "john paton politician", "john paton uk politician", "john paton british politician"})
    pairs = {(values[i], values[j]) for i, j in mine_pairs(values, min_similarity=0.5)}
    assert ("indian general election 2004 arunachal pradesh", "indian general election in arunachal pradesh 2004") \
        in pairs
    assert ("mexican burrowing treefrogs", "mexican treefrogs") in pairs
    assert not any("lsu" in a for a, _ in pairs), "different numbers are different entities"
    # "john paton politician" has two equally good partners: ambiguous, so none of the three is paired with it.
    assert not any("john paton politician" in p for p in pairs)
    mined = mine_pairs(values, min_similarity=0.5)
    assert mined.dtype == np.int64 and np.all(mined[:, 0] < mined[:, 1])
    assert mine_pairs(values, min_similarity=0.5).tobytes() == mined.tobytes()
    assert mine_pairs(["only one"]).shape == (0, 2)


def test_values_of_one_column_sharing_their_numbers_under_other_words_are_negatives():
    values = ["2012 korea open", "2012 kings cup", "2012 qatar open", "2013 korea open", "landsat 8", "luna 8",
              "zebra", "open 2012 korea", "luna 9", "2012 davis cup"]
    columns = [np.array([0, 1, 2, 3, 7]), np.array([4, 5, 6, 8]), np.array([9])]
    pairs = {(values[i], values[j]) for i, j in mine_number_negatives(columns, word_matrix(values))}
    # A ring over each column's values of one number set: 2012 (0, 1, 2, 7) and 8 (4, 5).  "open 2012 korea" holds
    # the words of "2012 korea open": one value spelled twice.  No pair crosses columns ("2012 davis cup"), and a
    # value without numbers ("zebra") or alone with its numbers ("2013 korea open", "luna 9") is in none.
    assert pairs == {("2012 korea open", "2012 kings cup"), ("2012 kings cup", "2012 qatar open"),
                     ("2012 qatar open", "open 2012 korea"), ("landsat 8", "luna 8")}
    assert mine_number_negatives([np.array([6]), np.array([3])], word_matrix(values)).shape == (0, 2)
    assert mine_number_negatives([np.array([6])], word_matrix(values)).shape == (0, 2)  # no value with numbers
    assert mine_number_negatives([np.array([6]), np.array([0])], word_matrix(values)).shape == (0, 2)


def test_mined_negatives_are_the_closest_other_value_of_the_same_column():
    values = ["1893 lsu football team", "1894 lsu football team", "john smith", "john smithson junior",
              "kalo miru", "kalo miru tepa", "smith john", "zebra crossing"]
    columns = [np.array([0, 1, 2, 3, 6]), np.array([4, 7]), np.array([5])]
    pairs = {(values[i], values[j]) for i, j in mine_negatives(values, columns, min_similarity=0.1)}
    # Years apart, and the closest other name; "john smith" / "smith john" hold the same words: one value spelled
    # twice, not two entities.  "kalo miru" / "kalo miru tepa" are close but never share a column.
    assert pairs == {("1893 lsu football team", "1894 lsu football team"), ("john smith", "john smithson junior"),
                     ("john smithson junior", "smith john")}
    assert mine_negatives(values, columns, min_similarity=0.1).tobytes() == mine_negatives(
        values, columns, min_similarity=0.1).tobytes()
    assert mine_negatives(values, [np.array([4]), np.array([5])]).shape == (0, 2)


def test_hash_vectors_are_unit_normalised_and_invariant_to_normalisation():
    enc = HashEncoder()
    v = enc.encode_values(["Palmate  Newt", "palmate newt", "Tiger Salamander", None, "n/a"])
    assert v.dtype == np.float32 and v.shape == (5, 256)
    assert np.allclose(np.linalg.norm(v[:3], axis=1), 1, atol=1e-6)
    assert np.array_equal(v[0], v[1])
    assert not v[3].any() and not v[4].any()
    assert float(v[0] @ v[2]) < 0.5


def test_hash_vector_of_a_value_does_not_depend_on_its_batch():
    rng = random.Random(11)
    values = _random_words(rng, 300)
    enc = HashEncoder(HashEncoderConfig(dim=64))
    batch = enc.encode_values(values)
    for i in rng.sample(range(len(values)), 30):
        assert enc.encode_values([values[i]])[0].tobytes() == batch[i].tobytes()


def test_profile_and_priority_sample():
    profile = profile_column(pa.array(["b", "A", "a", None, "n/a", " b ", "c"]))
    assert profile.values == ["a", "b", "c"]
    assert profile.counts.tolist() == [2, 2, 1]
    assert profile.row_codes.tolist() == [1, 0, 0, -1, -1, 1, 2]
    rng = np.random.default_rng(0)
    values = [f"v{i}" for i in range(500)]
    counts = rng.integers(1, 50, 500).astype(float)
    chosen = priority_sample(values, counts, 100)
    assert len(chosen) == 100 and (np.diff(chosen) > 0).all()
    # priority count / h with h in [0.8, 1]: anything 1.25x more frequent than a chosen value is chosen too
    assert counts[np.setdiff1d(np.arange(500), chosen)].max() <= 1.25 * counts[chosen].min()


def test_column_vector_is_the_frequency_weighted_mean():
    enc = HashEncoder(HashEncoderConfig(dim=64))
    col = ["x", "y", "y", "z", "z", "z"]
    vecs = enc.encode_values(["x", "y", "z"]).astype(np.float64)
    expected = vecs.T @ np.array([1, 2, 3]) / 6
    expected /= np.linalg.norm(expected)
    assert np.allclose(enc.encode_column(col), expected, atol=1e-6)
    rng = random.Random(0)
    shuffled = col[:]
    rng.shuffle(shuffled)
    assert enc.encode_column(shuffled).tobytes() == enc.encode_column(col).tobytes()


def test_column_sample_is_bounded():
    enc = HashEncoder(HashEncoderConfig(dim=32), ColumnConfig(max_values=50))
    values = [f"value {i}" for i in range(400)]
    full = HashEncoder(HashEncoderConfig(dim=32), ColumnConfig(max_values=1000))
    assert not np.array_equal(enc.encode_column(values), full.encode_column(values))
    profile = profile_column(values)
    chosen = priority_sample(profile.values, profile.counts, 50)
    sample = [profile.values[i] for i in chosen]
    assert np.array_equal(enc.encode_column(values), enc.column_vector(sample, profile.counts[chosen], "string"))


def test_numeric_features_bring_same_kind_columns_together():
    rng = np.random.default_rng(4)
    enc = HashEncoder()
    years_a = [str(y) for y in rng.integers(1900, 2020, 200)]
    years_b = [str(y) for y in rng.integers(1950, 2024, 200)]
    prices = [f"{p:.2f}" for p in rng.uniform(0, 5, 200)]
    ya, yb, pr = (enc.encode_column(c, "int") for c in (years_a, years_b, prices))
    assert ya @ yb > ya @ pr + 0.2
    feats = numeric_features(parse_numbers(["1", "2", "abc", "3.5"]), np.ones(4))
    assert np.isclose(np.linalg.norm(feats), 1)
    assert np.isnan(parse_numbers(["abc"])[0]) and parse_numbers(["$1,200", "-3e2", "7%"]).tolist() == [1200, -300, 7]


def test_table_fallback_is_the_normalised_mean():
    enc = HashEncoder(HashEncoderConfig(dim=16))
    cols = np.random.default_rng(1).normal(size=(5, 16)).astype(np.float32)
    mean = cols.astype(np.float64).mean(axis=0)
    assert np.allclose(enc.encode_table(cols), mean / np.linalg.norm(mean), atol=1e-6)


def test_fixed_order_reductions_match_numpy():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(37, 19)), rng.normal(size=(19, 7))
    assert np.allclose(matmul(a, b), a @ b)
    assert matmul(a[5:6], b).tobytes() == matmul(a, b)[5:6].tobytes()
    offsets = np.array([0, 3, 3, 10, 37])
    expected = np.stack([a[s:e].sum(axis=0) for s, e in zip(offsets[:-1], offsets[1:])])
    assert np.allclose(segment_sum(a, offsets), expected)


def test_serialisation_round_trip_and_version():
    enc = HashEncoder(HashEncoderConfig(dim=128, seed=3))
    again = encoder_from_bytes(enc.to_bytes())
    assert again.version == enc.version and again.to_bytes() == enc.to_bytes()
    assert HashEncoder().version != enc.version
    assert load_encoder("hash").version == HashEncoder().version
    with pytest.raises(ValueError):
        encoder_from_bytes(b"not an encoder")
    with pytest.raises(ValueError):
        load_encoder("join")


def test_bit_identical_vectors_in_another_process(tmp_path):
    values = ["Palmate newt", "2021-03-05", "12 Main St.", "Hollister v. Benedict & Burnham Mfg. Co.", "ü 42"]
    column = ["1", "2", "2", "17.5", "x"]
    enc = HashEncoder()
    script = (
        "import sys, numpy as np\n"
        "from discovery.transforms.encoders import HashEncoder\n"
        f"enc = HashEncoder()\nv = enc.encode_values({values!r})\nc = enc.encode_column({column!r}, 'float')\n"
        "sys.stdout.buffer.write(v.tobytes() + c.tobytes() + enc.version.encode())\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, check=True,
                         env={"PYTHONHASHSEED": "123", "OMP_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"}).stdout
    local = enc.encode_values(values).tobytes() + enc.encode_column(column, "float").tobytes() + enc.version.encode()
    assert out == local


def test_sentence_transformers_backend_is_optional(tmp_path):
    pytest.importorskip("sentence_transformers")
    with pytest.raises(FileNotFoundError):
        load_encoder("sentence-transformers", tmp_path / "missing")
