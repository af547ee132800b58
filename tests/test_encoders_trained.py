"""Trained encoders: TACTUS table encoder (Eq. 1-6) and the join value encoder, on small seeded instances."""
from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from discovery.transforms.encoders import (HashEncoder, HashEncoderConfig, JoinEncoderConfig, TableEncoderConfig,  # noqa: E402
                                encoder_from_bytes, load_encoder, save_encoder, train_join_encoder,
                                train_table_encoder)
from discovery.transforms.encoders.table_encoder import two_pronged_loss, prepare_tables  # noqa: E402
from discovery.transforms.encoders.variations import (VARIATIONS, LakeVocabulary, acronym, added_word,  # noqa: E402
                                           dropped_word, qualifier, vary)

ROOT = Path(__file__).resolve().parent.parent
WORDS = ["river", "stadium", "county", "north", "saint", "lake", "museum", "park", "george", "national",
         "league", "prize", "church", "election", "station", "valley", "tower", "bridge", "market", "college"]


def _lake(seed: int, n_tables: int = 12) -> list[list[list[str]]]:
    rng = random.Random(seed)
    tables = []
    for _ in range(n_tables):
        topic = rng.sample(WORDS, 3)
        columns = [[f"{rng.choice(topic)} {rng.choice(WORDS)}" for _ in range(12)] for _ in range(rng.randint(2, 4))]
        columns.append([str(rng.randint(1900, 2020)) for _ in range(12)])
        tables.append(columns)
    return tables


@pytest.fixture(scope="module")
def table_encoder():
    return train_table_encoder(_lake(0), HashEncoder(HashEncoderConfig(dim=32)),
                               TableEncoderConfig(out_dim=16, heads=4, hidden=32, epochs=3, batch_size=6))


def _brute_force_loss(emb: np.ndarray, partner: np.ndarray, gamma: float, tau: float) -> float:
    sim = emb @ emb.T
    losses = []
    for i in range(len(emb)):
        rem = [j for j in range(len(emb)) if j != i and j != partner[i] and sim[i, j] <= gamma]
        hard = sorted(rem, key=lambda j: (-sim[i, j], j))[: math.ceil(len(rem) / 2)]
        if hard:
            neg = np.log(np.sum(np.exp(sim[i, hard] / tau)))
            losses.append(neg - sim[i, partner[i]] / tau)
    return float(np.mean(losses))


@pytest.mark.parametrize("seed", range(6))
def test_two_pronged_loss_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 2 * int(rng.integers(2, 9))
    base = rng.normal(size=(n // 2, 8))
    emb = np.concatenate([base, base + 0.3 * rng.normal(size=base.shape)])
    emb[rng.integers(0, n)] = emb[0] + 0.01 * rng.normal(size=8)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    partner = np.concatenate([np.arange(n // 2, n), np.arange(n // 2)])
    got = two_pronged_loss(torch.from_numpy(emb), torch.from_numpy(partner), 0.9, 0.07)
    assert got is not None
    assert math.isclose(float(got), _brute_force_loss(emb, partner, 0.9, 0.07), rel_tol=1e-9, abs_tol=1e-9)


def test_two_pronged_loss_without_negatives_is_none():
    emb = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    assert two_pronged_loss(emb, torch.tensor([2, 3, 0, 1]), 0.9, 0.07) is None


def test_numpy_inference_equals_torch_attention(table_encoder):
    w = table_encoder.weights
    d = table_encoder.dim
    attn = torch.nn.MultiheadAttention(d, table_encoder.config.heads, batch_first=True).double()
    with torch.no_grad():
        attn.in_proj_weight.copy_(torch.from_numpy(w["in_proj_weight"]))
        attn.in_proj_bias.copy_(torch.from_numpy(w["in_proj_bias"]))
        attn.out_proj.weight.copy_(torch.from_numpy(w["out_proj_weight"]))
        attn.out_proj.bias.copy_(torch.from_numpy(w["out_proj_bias"]))
    rng = np.random.default_rng(5)
    for c in (1, 3, 7):
        cols = rng.normal(size=(c, d)).astype(np.float32)
        with torch.no_grad():
            q = torch.from_numpy(w["query"].astype(np.float64)).view(1, 1, d)
            kv = torch.from_numpy(cols.astype(np.float64) * math.sqrt(d)).unsqueeze(0)
            z = attn(q, kv, kv, need_weights=False)[0][0, 0].numpy()
        hidden = np.maximum(z @ w["w1"] + w["b1"], 0)
        out = hidden @ w["w2"] + w["b2"]
        assert np.allclose(table_encoder.encode_table(cols), out / np.linalg.norm(out), atol=1e-5)
        perm = rng.permutation(c)
        assert np.allclose(table_encoder.encode_table(cols[perm]), table_encoder.encode_table(cols), atol=1e-6)


def test_row_subset_vectors_equal_encoding_the_subset(table_encoder):
    tables = _lake(1, 3)
    enc = table_encoder.base
    prepared = prepare_tables(enc, tables, None, max_rows=1000)
    rng = np.random.default_rng(0)
    for table, prep in zip(tables, prepared):
        rows = np.sort(rng.choice(12, 7, replace=False))
        columns = np.array([0, len(table) - 1])
        got = prep.column_vectors(rows, columns)
        for j, c in enumerate(columns):
            expected = enc.encode_column([table[c][r] for r in rows])
            assert got[j].tobytes() == expected.tobytes()


def test_table_encoder_round_trip_and_seeded_training(table_encoder, tmp_path):
    again = load_encoder("table", save_encoder(table_encoder, tmp_path))
    assert again.version == table_encoder.version
    cols = np.random.default_rng(0).normal(size=(4, 32)).astype(np.float32)
    assert again.encode_table(cols).tobytes() == table_encoder.encode_table(cols).tobytes()
    assert again.encode_values(["a b"]).tobytes() == table_encoder.encode_values(["a b"]).tobytes()
    retrained = train_table_encoder(_lake(0), HashEncoder(HashEncoderConfig(dim=32)),
                                    TableEncoderConfig(out_dim=16, heads=4, hidden=32, epochs=3, batch_size=6))
    assert retrained.version == table_encoder.version
    other = train_table_encoder(_lake(0), HashEncoder(HashEncoderConfig(dim=32)),
                                TableEncoderConfig(out_dim=16, heads=4, hidden=32, epochs=3, batch_size=6, seed=1))
    assert other.version != table_encoder.version
    assert table_encoder.encode_table(cols).shape == (16,)


def _vocabulary_values(seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(60):
        value = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        kind = rng.randrange(4)
        if kind == 0:
            value += f" ({rng.choice(WORDS)})"
        elif kind == 1:
            value += f", {rng.choice(WORDS[:5])}"
        elif kind == 2:
            value += f", {rng.randint(1990, 2020)}"
        out.append(value)
    return sorted(set(out))


@pytest.mark.parametrize("seed", range(4))
def test_lake_vocabulary_counts_document_frequencies_and_qualifiers(seed):
    values = _vocabulary_values(seed)
    vocab = LakeVocabulary.from_values(values)
    for word in WORDS:
        expected = sum(word in v.replace("(", " ").replace(")", " ").replace(",", " ").split() for v in values)
        assert vocab.document_frequency.get(word, 0) == expected
    expected_quals = {}
    for v in values:
        if v.endswith(")"):
            q = v[v.rindex("("):]
        elif ", " in v and not v.rsplit(", ", 1)[1].isdigit():
            q = ", " + v.rsplit(", ", 1)[1]
        else:
            continue
        expected_quals[q] = expected_quals.get(q, 0) + 1
    assert set(vocab.qualifiers) == set(expected_quals)
    counts = np.diff((0,) + vocab.qualifier_cumulative)
    assert dict(zip(vocab.qualifiers, counts.tolist())) == expected_quals
    rng = random.Random(seed)
    drawn = [vocab.frequent_word(rng) for _ in range(4000)]
    most = max(vocab.document_frequency, key=lambda w: (vocab.document_frequency[w], w))
    least = min(vocab.document_frequency, key=lambda w: (vocab.document_frequency[w], w))
    assert drawn.count(most) > drawn.count(least)


def test_variations_are_reproducible_and_keep_numbers():
    values = ["tom elliott (politician)", "2008 cyprus four nations football tournament", "holberg prize", "x",
              "scottish parliament election, 2003", "national labor relations board"]
    vocab = LakeVocabulary.from_values(values + _vocabulary_values(0))
    a, b = random.Random(7), random.Random(7)
    for v in values * 20:
        out = vary(a, v, vocab)
        assert out and out == vary(b, v, vocab)
    rng = random.Random(1)
    for fn in VARIATIONS:
        assert isinstance(fn(rng, "national stadium, singapore", vocab), str)
    for _ in range(200):
        assert "2008" in dropped_word(rng, "2008 cyprus four nations football tournament", vocab)
        assert "2003" in qualifier(rng, "scottish parliament election, 2003", vocab)
        assert len(added_word(rng, "holberg prize", vocab).split()) == 3
        assert dropped_word(rng, "holberg", vocab) == "holberg"
    assert qualifier(random.Random(0), "tom elliott (politician)", vocab) in (
        {"tom elliott"} | {f"tom elliott{'' if q.startswith(',') else ' '}{q}" for q in vocab.qualifiers})
    shortened = {acronym(random.Random(s), "national labor relations board", vocab) for s in range(50)}
    assert "nlrb" in shortened
    assert all(len(s.split()) < 4 for s in shortened)


@pytest.fixture(scope="module")
def join_encoder():
    rng = random.Random(0)
    values = sorted({" ".join(rng.sample(WORDS, rng.randint(1, 3))) + f" {rng.randint(1, 99)}" for _ in range(400)})
    config = JoinEncoderConfig(dim=16, embed_dim=16, hidden=32, buckets=1 << 12, steps=60, batch_size=64)
    return values, train_join_encoder(values, config)


def test_join_encoder_pulls_variations_together(join_encoder):
    values, enc = join_encoder
    rng = random.Random(3)
    vecs = enc.encode_values(values)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    vocab = LakeVocabulary.from_values(values)
    varied = enc.encode_values([vary(rng, v, vocab) for v in values])
    positive = np.linalg.norm(vecs - varied, axis=1)
    shuffled = np.linalg.norm(vecs - np.roll(varied, 1, axis=0), axis=1)
    assert np.median(positive) < 0.5 * np.median(shuffled)


def test_join_encoder_with_infonce_alone_ranks_variations_first():
    """The documented alternative setting (no alignment or margin term) still trains to a usable encoder: each
    value's variation is, among all variations, the nearest to it for most values."""
    rng = random.Random(1)
    values = sorted({" ".join(rng.sample(WORDS, rng.randint(1, 3))) + f" {rng.randint(1, 99)}" for _ in range(400)})
    enc = train_join_encoder(values, JoinEncoderConfig(dim=16, embed_dim=16, hidden=32, buckets=1 << 12, steps=60,
                                                       batch_size=64, alignment_weight=0, margin_weight=0))
    vocab = LakeVocabulary.from_values(values)
    vecs, varied = enc.encode_values(values), enc.encode_values([vary(rng, v, vocab) for v in values])
    distances = np.linalg.norm(vecs[:, None] - varied[None], axis=2)
    assert np.mean(distances.argmin(axis=1) == np.arange(len(values))) > 0.5


def test_join_encoder_is_bit_identical_in_another_process(join_encoder):
    values, enc = join_encoder
    sample = values[:25] + ["Tom Elliott (politician)", ""]
    script = (
        "import sys\nfrom discovery.transforms.encoders import encoder_from_bytes\n"
        "enc = encoder_from_bytes(sys.stdin.buffer.read())\n"
        f"sys.stdout.buffer.write(enc.encode_values({sample!r}).tobytes() + enc.version.encode())\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, input=enc.to_bytes(), capture_output=True,
                         check=True, env={"OMP_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"}).stdout
    assert out == enc.encode_values(sample).tobytes() + enc.version.encode()
    single = np.concatenate([enc.encode_values([v]) for v in sample])
    assert single.tobytes() == enc.encode_values(sample).tobytes()
    assert encoder_from_bytes(enc.to_bytes()).version == enc.version


def test_join_encoder_ignores_punctuation_that_spellings_disagree_on(join_encoder):
    _, enc = join_encoder
    plain = enc.encode_values(["anzhi arena", "mens health", "2000 guineas stakes", "tom elliott (politician)"])
    marked = enc.encode_values(["Anzhi-Arena", "Men's Health", "2,000 Guineas Stakes!", "Tom Elliott (politician)"])
    assert plain.tobytes() == marked.tobytes()
    importance = enc.weights["importance"]
    assert importance.shape == (enc.config.buckets,)
    assert np.all(importance > 0) and np.all(np.isfinite(importance))
    assert not np.all(importance == importance[0])


def test_mined_pairs_pull_real_spellings_together_that_variations_do_not_produce():
    """Two spellings of one entity that no generated variation produces (each side carries its own rare words) are
    pulled together only when the training mines them from the lake (``mined_share``)."""
    rng = random.Random(2)
    syllables = ["ka", "lo", "mi", "ru", "te", "zo", "pa", "ve", "ni", "so", "du", "fe"]

    def word() -> str:
        return "".join(rng.sample(syllables, 3))

    values, pairs = set(), []
    for _ in range(40):
        base = f"{word()} {word()} {word()}"
        other = f"{base} {word()} {word()}"
        values.update((base, other))
        pairs.append((base, other))
    values |= {" ".join(rng.sample(WORDS, rng.randint(1, 3))) + f" {rng.randint(1, 99)}" for _ in range(300)}
    values = sorted(values)
    distances = {}
    for share in (0.0, 0.25):
        enc = train_join_encoder(values, JoinEncoderConfig(dim=16, embed_dim=16, hidden=32, buckets=1 << 12, steps=80,
                                                           batch_size=64, mined_share=share))
        a, b = enc.encode_values([p[0] for p in pairs]), enc.encode_values([p[1] for p in pairs])
        distances[share] = float(np.median(np.linalg.norm(a - b, axis=1)))
    assert distances[0.25] < 0.7 * distances[0.0]


def test_join_encoder_gives_last_first_names_the_vector_of_first_last(join_encoder):
    _, enc = join_encoder
    reordered = enc.encode_values(["Obama, Barack", "King, Martin Luther, Jr.", "Lizmark, Jr.", "Smith, J. R."])
    plain = enc.encode_values(["Barack Obama", "Martin Luther King Jr.", "Lizmark Jr.", "J. R. Smith"])
    assert reordered.tobytes() == plain.tobytes()
    qualified = enc.encode_values(["Manor Ground, Plumstead"])
    assert qualified.tobytes() != enc.encode_values(["Plumstead Manor Ground"]).tobytes()


def test_join_encoder_encodes_spans_written_differently_alike(join_encoder):
    _, enc = join_encoder
    one = enc.encode_values(["Jul 1 1801; Jul 1 1804", "January 20 2015 \u2013 January 15 2019", "(2000\u20132015)"])
    other = enc.encode_values(["July 1 1801; \u2013; July 1 1804", "2015-01-20 - 2019-01-15", "(2000 to 2015)"])
    assert one.tobytes() == other.tobytes()


def test_join_encoder_stored_before_span_rules_encodes_without_them(join_encoder):
    import dataclasses
    _, enc = join_encoder
    config, arrays = enc._state()
    del config["join"]["spans"]
    config["column"] = dataclasses.asdict(enc.column)
    old = type(enc).from_state(config, arrays)
    assert old.config.spans is False
    assert old.encode_values(["July 1801 to 1804"]).tobytes() != enc.encode_values(["July 1801 to 1804"]).tobytes()
    assert old.encode_values(["1801-07-01 - 1804-07-01"]).tobytes() == enc.encode_values(
        ["1801-07-01 - 1804-07-01"]).tobytes()


def test_hard_negatives_push_near_duplicates_of_one_column_apart():
    """Values one column holds side by side ("kalomi rute 1993 season", "kalomi rute 1994 season") are different
    entities; with same-column hard negatives (``hard_share``) training pushes them further apart than in-batch
    negatives drawn from the whole lake do."""
    rng = random.Random(4)
    syllables = ["ka", "lo", "mi", "ru", "te", "zo", "pa", "ve", "ni", "so", "du", "fe"]
    columns, pairs = [], []
    for _ in range(30):
        name = " ".join("".join(rng.sample(syllables, 3)) for _ in range(2))
        years = sorted(rng.sample(range(1950, 2020), 4))
        columns.append([f"{name} {y} season" for y in years])
        pairs += [(f"{name} {a} season", f"{name} {b} season") for a, b in zip(years, years[1:])]
    filler = sorted({" ".join(rng.sample(WORDS, rng.randint(1, 3))) + f" {rng.randint(1, 99)}" for _ in range(300)})
    columns.append(filler)
    values = sorted({v for c in columns for v in c})
    distances = {}
    for share in (0.0, 0.25):
        enc = train_join_encoder(values, JoinEncoderConfig(dim=16, embed_dim=16, hidden=32, buckets=1 << 12, steps=80,
                                                           batch_size=64, hard_share=share), columns=columns)
        a, b = enc.encode_values([p[0] for p in pairs]), enc.encode_values([p[1] for p in pairs])
        distances[share] = float(np.median(np.linalg.norm(a - b, axis=1)))
    assert distances[0.25] > 1.5 * distances[0.0]
