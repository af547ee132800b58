"""The two-table matcher over a lake column held by Spark (``spark_jobs.match``) gives exactly the pairs, scores,
rules and estimate it gives in one process, on random columns split into many blocks; the pieces that make that
possible hold on their own: a block's vectors are the whole column's rows, bit for bit, and the configuration chosen
on a sample, applied value by value, is what the greedy union resolves."""
from __future__ import annotations

import numpy as np
import pytest

from discovery.ground.normalize import normalize_values
from discovery.transforms.match import match_values
from discovery.transforms.match.autoconfig import apply, select
from discovery.transforms.match.blocking import Weights, featurise, weigh
from discovery.transforms.match.matcher import sample
from discovery.transforms.match.tokens import qgrams

WORDS = ["north", "south", "river", "stone", "field", "harbor", "ridge", "maple", "cedar", "lake", "grove", "summit",
         "berg", "sato", "lopez", "smith", "quantum", "beacon", "acme", "globex"]


def _columns(seed: int, n_lake: int = 120, n_query: int = 50):
    """A lake column of two- and three-word names and a query of variants: typos, dropped and swapped words,
    abbreviations, values of the lake, and strangers."""
    rng = np.random.default_rng(seed)
    lake = sorted({" ".join(rng.choice(WORDS, int(rng.integers(2, 4)))) + ("" if rng.random() < 0.7 else
                   f" {int(rng.integers(1, 40))}") for _ in range(n_lake)})
    query = []
    for v in rng.choice(lake, n_query):
        w = v.split()
        kind = int(rng.integers(0, 5))
        if kind == 0 and len(w[0]) > 3:
            i = int(rng.integers(1, len(w[0]) - 1))
            w[0] = w[0][:i] + w[0][i + 1:]                       # a letter dropped
        elif kind == 1:
            w = w[::-1]                                          # words reordered
        elif kind == 2 and len(w) > 2:
            w = w[:-1]                                           # a word left out
        elif kind == 3:
            w[-1] = w[-1][:3] + "."                              # an abbreviation
        query.append(" ".join(w))
    query += ["nowhere at all", "zzz qqq"]
    return normalize_values(query), normalize_values(lake)


def _same(a, b):
    assert a.query == b.query and a.lake == b.lake and a.rule == b.rule
    assert np.array_equal(a.distance, b.distance) and np.array_equal(a.score, b.score)
    assert (a.precision, a.rules, a.views, a.values) == (b.precision, b.rules, b.views, b.values)


@pytest.mark.parametrize("seed", range(3))
def test_a_lake_column_on_spark_is_matched_exactly_as_in_one_process(spark, monkeypatch, seed):
    from spark_jobs import match

    monkeypatch.setattr(match, "BLOCK_VALUES", 17)                # many blocks: every merge is exercised
    query, lake = _columns(seed)
    frame = spark.createDataFrame([(v,) for v in lake + lake[:5]], "value string")  # repeated values are one
    target = [0.9, 0.95, 0.8][seed]
    here = match_values(query, lake, target, keys=seed == 2)
    there = match_values(query, match.SparkLake(spark, frame), target, keys=seed == 2)
    assert len(here.query) > 10
    _same(here, there)


def test_views_and_one_to_one_on_spark_are_the_ones_in_process(spark):
    from spark_jobs import match

    query = normalize_values(["John Adams; 1797 \u2013 1801", "John Quincy Adams; 1825 \u2013 1829",
                              "Thomas Jefferson; 1801 \u2013 1809", "James Madison; 1809 \u2013 1817",
                              "James Monroe; 1817 \u2013 1825", "Solaris; 1972"])
    lake = normalize_values(["John Adams (Federalist)", "John Quincy Adams (Democratic-Republican)",
                             "Thomas Jefferson (Democratic-Republican)", "James Madison (Democratic-Republican)",
                             "James Monroe (Democratic-Republican)", "Solaris (film)", "Solaris (novel)"])
    here = match_values(query, lake)
    there = match_values(query, match.SparkLake(spark, spark.createDataFrame([(v,) for v in lake], "value string")))
    assert here.views is not None and "solaris; 1972" not in here.query
    _same(here, there)


def test_a_block_of_the_values_gets_the_very_vectors_the_whole_column_does():
    query, lake = _columns(7)
    whole = featurise(query, lake)
    split = query + lake
    weights = Weights(weigh(whole.words), weigh([qgrams(t) for t in whole.text]), len(split))
    block = lake[10:40]
    part = featurise(query[:5], block, weights)
    for name in ("word_vectors", "gram_vectors"):
        a, b = getattr(whole, name), getattr(part, name)
        for i_part, i_whole in [(i, i) for i in range(5)] + [(5 + j, len(query) + 10 + j) for j in range(len(block))]:
            ra, rb = a[i_whole], b[i_part]
            assert np.array_equal(np.sort(ra.data), np.sort(rb.data))                      # the same float32s
        product_whole = (a[:5] @ a[len(query) + 10:len(query) + 40].T).toarray()
        assert np.array_equal(product_whole, (b[:5] @ b[5:].T).toarray())                # and the same cosines


@pytest.mark.parametrize("seed", range(8))
def test_configurations_applied_value_by_value_are_what_the_greedy_union_resolves(seed):
    from test_match import _random_inputs

    rng = np.random.default_rng(seed)
    inputs = _random_inputs(rng)
    sel = select(*inputs, [0.5, 0.7, 0.9][seed % 3], int(rng.integers(0, 5)), thresholds=8)
    lake, score, config = apply(sel.configs, *inputs)
    assert np.array_equal(lake, sel.lake) and np.array_equal(config, sel.config)
    assert np.array_equal(score, sel.score)


def test_the_sample_is_chosen_by_hash_not_by_position():
    values = [f"value {i}" for i in range(500)]
    picked = {values[i] for i in sample(values, 50)}
    shuffled = values[::-1]
    assert {shuffled[i] for i in sample(shuffled, 50)} == picked and len(picked) == 50
    assert list(sample(values, 600)) == list(range(500))
