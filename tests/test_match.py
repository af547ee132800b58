"""The two-table matcher (``discovery.transforms.match``): its label-free configuration choice equals a direct
transcription of Auto-FuzzyJoin's greedy union on random inputs, it keeps different entities apart (shared surnames,
codes one digit apart, words the lake column's own values differ by) while joining typos, reorderings, abbreviations and
a value inside a longer cell, and its stated precision is the estimate its pairs add up to."""
from __future__ import annotations

import numpy as np
import pytest

from discovery.ground.normalize import normalize_values
from discovery.transforms.match import match_values
from discovery.transforms.match.align import align, consistent
from discovery.transforms.match.autoconfig import select


def _reference(dist, lid, lid_rows, lr_sorted, ll_sorted, target, equal, thresholds=50, patience=0.05):
    """Auto-FuzzyJoin's single-column greedy union, written as its paper states it, one query value at a time."""
    n, nf = dist.shape
    configs = []
    for f in range(nf):
        finite = [d for d in dist[:, f] if np.isfinite(d)]
        if not finite:
            continue
        for theta in np.unique(np.linspace(min(finite), max(finite), thresholds)):
            prec = {}
            for r in range(n):
                if dist[r, f] <= theta:
                    ll = sum(1 for d in ll_sorted[f][lid_rows[r, f]] if d <= 2 * theta)
                    lr = max(sum(1 for d in lr_sorted[f][r] if d <= theta) - 1, 0)
                    prec[r] = (int(lid[r, f]), 1.0 / (1.0 + max(ll, lr)))
            if prec:
                configs.append(((f, float(theta)), prec))
    cands, local, chosen, chosen_config = {}, {}, {}, {}
    tp, joins = float(equal), equal
    kept = ({}, {}, [], 1.0 if equal else None)
    remaining, taken = list(range(len(configs))), []
    while remaining:
        best = None
        for c in remaining:
            t, j = tp, joins
            for r, (lake, p) in configs[c][1].items():
                if r in cands:
                    t += max(local[r], p) - local[r]
                    j += 0 if lake in cands[r] else 1
                else:
                    t, j = t + p, j + 1
            if j == joins:
                continue
            profit = t / (j - t + 1e-9)
            if best is None or profit > best[0]:
                best = (profit, c, t, j)
        if best is None:
            break
        _, c, tp, joins = best
        for r, (lake, p) in configs[c][1].items():
            if r not in cands or p > local[r]:
                local[r], chosen[r], chosen_config[r] = p, lake, c
            cands.setdefault(r, set()).add(lake)
        remaining.remove(c)
        taken.append(c)
        if tp / joins > target:
            kept = (dict(chosen), {r: local[r] for r in chosen}, [configs[x][0] for x in taken], tp / joins)
        if tp / joins < target - patience:
            break
    return kept


def _random_inputs(rng, n=30, nf=3, lake=12):
    dist = np.round(rng.uniform(0, 1, (n, nf)), 2)
    dist[rng.random((n, nf)) < 0.2] = np.inf
    lid = np.where(np.isfinite(dist), rng.integers(0, lake, (n, nf)), -1)
    lid_rows = np.maximum(lid, 0)
    lr_sorted = [np.sort(np.r_[[dist[:, f]], np.round(rng.uniform(0, 1, (4, n)), 2)].T, axis=1) for f in range(nf)]
    ll_sorted = [np.sort(np.round(rng.uniform(0, 1, (lake, 5)), 2), axis=1) for _ in range(nf)]
    return dist, lid, lid_rows, lr_sorted, ll_sorted


@pytest.mark.parametrize("seed", range(12))
def test_the_greedy_union_equals_autofj_written_one_value_at_a_time(seed):
    rng = np.random.default_rng(seed)
    inputs = _random_inputs(rng)
    target, equal = [0.5, 0.7, 0.9][seed % 3], int(rng.integers(0, 5))
    got = select(*inputs, target, equal, thresholds=8)
    lake, score, configs, precision = _reference(*inputs, target, equal, thresholds=8)
    assert got.configs == configs
    assert {r: int(got.lake[r]) for r in np.flatnonzero(got.lake >= 0)} == lake
    assert {r: float(got.score[r]) for r in np.flatnonzero(got.lake >= 0)} == pytest.approx(score)
    assert (got.precision is None) == (precision is None)
    if precision is not None:
        assert got.precision == pytest.approx(precision)


def _match(query, lake, target=0.95):
    m = match_values(normalize_values(query), normalize_values(lake), target)
    return dict(zip(m.query, m.lake)), m


STAFF = ["Ben Berg", "Hiro Sato", "Sven Berg", "Brightwater Ltd", "Quantum Chemicals", "Beacon Partners", "Gray Davis",
         "Pankaj K. Agarwal", "A1234", "Jon Smith", "Jane Smith", "Maria Lopez", "Acme Corp", "Globex Inc"]


def test_different_entities_are_not_joined_and_spellings_of_one_are():
    got, m = _match(["Sven Berg", "Aiko Sato", "Sven Ber", "Brughtwater Ltd", "Quantum Chemicls", "Beaocn Partners",
                     "Gov. Gray Davis", "Agarwal Pankaj K.", "A1235", "John Smith"], STAFF)
    assert got == {"sven berg": "sven berg", "sven ber": "sven berg", "brughtwater ltd": "brightwater ltd",
                   "quantum chemicls": "quantum chemicals", "beaocn partners": "beacon partners",
                   "gov. gray davis": "gray davis", "agarwal pankaj k.": "pankaj k. agarwal",
                   "john smith": "jon smith"}
    assert "aiko sato" not in got and "a1235" not in got          # a shared surname; a code one digit apart
    rules = dict(zip(m.query, m.rule))
    assert rules["sven berg"] == "equal" and all(r != "equal" for q, r in rules.items() if q != "sven berg")
    assert m.describe()["precision_target"] == 0.95 and m.describe()["query_values"] == 10


def test_alignment_leftovers_and_the_consistency_rule():
    idf = {}
    soft, left_a, left_b = align(["sven", "berg"], ["ben", "berg"], idf, 1.0)
    assert (left_a, left_b) == (["sven"], ["ben"]) and 0 < soft < 1
    assert not consistent(left_a, left_b)
    soft, left_a, left_b = align(["gov", "gray", "davis"], ["gray", "davis"], idf, 1.0)
    assert (left_a, left_b) == (["gov"], []) and soft == pytest.approx(0.8)
    assert consistent(left_a, left_b)
    assert align(["mumbai", "intl", "apt"], ["mumbai", "international", "airport"], idf, 1.0)[1:] == ([], [])
    assert align(["case", "2019"], ["case", "2020"], idf, 1.0)[1:] == (["2019"], ["2020"])
    # a word one value writes as two or three: aligned whole, weights of both sides counted
    assert align(["ruger", "sp101"], ["ruger", "sp", "101"], idf, 1.0) == (1.0, [], [])
    assert align(["org", "12", "962"], ["org", "12962"], {"org": 1.0, "12962": 3.0}, 2.0) == (1.0, [], [])
    assert align(["sp", "102"], ["sp101"], idf, 1.0)[1:] == (["sp", "102"], ["sp101"])   # no run writes it


def test_stated_precision_is_the_estimate_the_pairs_add_up_to():
    rng = np.random.default_rng(3)
    words = ["north", "south", "river", "stone", "field", "harbor", "ridge", "maple", "cedar", "lake", "grove",
             "summit"]
    lake = sorted({f"{words[i]} {words[j]} {k}" for i, j, k in zip(rng.integers(0, 12, 300), rng.integers(0, 12, 300),
                                                                 ["inc", "ltd", "group"] * 100)})
    query = [v[:3] + v[4:] if i % 3 == 0 else v.upper() for i, v in enumerate(lake[:60])] + ["nowhere at all"]
    m = match_values(normalize_values(query), lake, 0.9)
    # true positives over joins, where a query value two configurations join to two lake values counts twice
    joins = float(np.sum(m.score)) / m.precision
    assert joins >= len(m.query) - 1e-9 and joins == pytest.approx(round(joins))
    assert m.precision > 0.9 and all(0 < s <= 1 for s in m.score)
    assert "nowhere at all" not in m.query


def test_nothing_to_match_is_an_empty_answer():
    assert match_values([], ["a"]).query == [] and match_values(["a"], []).query == []
    m = match_values(["zzz qqq"], ["alpha", "beta"])
    assert m.query == [] and m.precision is None and m.describe()["matched_values"] == 0


@pytest.mark.parametrize("seed", range(6))
def test_blocking_keeps_each_rows_m_largest_cosines_ties_to_the_lower_column(seed):
    import scipy.sparse as sp

    from discovery.transforms.match import blocking

    rng = np.random.default_rng(seed)
    a = sp.random(40, 30, density=0.2, random_state=seed, format="csr", dtype=np.float32)
    b = sp.random(70, 30, density=0.2, random_state=seed + 100, format="csr", dtype=np.float32)
    a.data, b.data = np.round(a.data * 4) / 4, np.round(b.data * 4) / 4      # many equal products: ties
    old, blocking.BLOCK_ENTRIES = blocking.BLOCK_ENTRIES, int(rng.integers(70, 400))  # several blocks
    try:
        i, j = blocking.nearest(a, b, 5)
    finally:
        blocking.BLOCK_ENTRIES = old
    dense = (a @ b.T).toarray()
    want = set()
    for r in range(dense.shape[0]):
        order = sorted((c for c in range(dense.shape[1]) if dense[r, c] > 0), key=lambda c: (-dense[r, c], c))
        want |= {(r, c) for c in order[:5]}
    assert set(zip(i.tolist(), j.tolist())) == want and len(i) == len(want)


def test_when_both_columns_are_keys_a_lake_value_is_one_query_values():
    query, lake = ["jon smith", "john smith", "ann lee"], ["john smith", "ann lee", "bo chen", "cy dune"]
    many = match_values(query, lake, 0.5)
    assert sorted(zip(many.query, many.lake)) == [("ann lee", "ann lee"), ("john smith", "john smith"),
                                                  ("jon smith", "john smith")]
    one = match_values(query, lake, 0.5, keys=True)
    assert sorted(zip(one.query, one.lake)) == [("ann lee", "ann lee"), ("john smith", "john smith")]


# -- views: the part of a cell that names the entity ------------------------------------------------------------------
def test_a_view_is_the_first_part_or_the_swapped_comma_and_a_bare_value_is_its_own():
    from discovery.transforms.match.views import WHOLE, View, candidates

    assert View("; ", 0).apply("john adams; 1797 \u2013 1801") == "john adams"
    assert View(" (", 0).apply("abraham lincoln (1861 - 1865)") == "abraham lincoln"
    assert View(", ", "swap").apply("adams, john quincy") == "john quincy adams"
    assert View(", ", "swap").apply("a, b, c") == "a, b, c"                 # not two parts: left whole
    assert View(" (", 0).apply("boston") == "boston" and WHOLE.apply("x (y)") == "x (y)"
    # a column-wide shape, not the qualifier a few values carry
    assert candidates(["a (1)", "b (2)", "c"]) == [WHOLE, View(" (", 0)]
    assert candidates(["a (film)", "b", "c"]) == [WHOLE]


def test_two_columns_decorated_each_its_own_way_join_on_the_entity_they_name():
    query = normalize_values(["John Adams; 1797 \u2013 1801", "John Quincy Adams; 1825 \u2013 1829",
                              "Thomas Jefferson; 1801 \u2013 1809", "James Madison; 1809 \u2013 1817",
                              "James Monroe; 1817 \u2013 1825", "Andrew Jackson; 1829 \u2013 1837",
                              "Ada Lovelace; 1843 \u2013 1852"])
    lake = normalize_values(["John Adams (Federalist)", "John Quincy Adams (Democratic-Republican)",
                             "Thomas Jefferson (Democratic-Republican)", "James Madison (Democratic-Republican)",
                             "James Monroe (Democratic-Republican)", "Andrew Jackson (Democratic)",
                             "Martin Van Buren (Democratic)", "William Henry Harrison (Whig)"])
    m = match_values(query, lake)
    got = dict(zip(m.query, m.lake))
    assert got == {q: value for q, value in zip(query[:6], lake[:6])}              # Ada Lovelace names none of them
    assert m.describe()["views"] == {"query": "part before the first ';'", "lake": "part before the first '('"}
    assert all(r.endswith("on part before the first ';' ~ part before the first '('") for r in m.rule)
    assert m.precision >= 0.95


def test_a_view_two_lake_values_share_joins_neither_and_later_parts_are_no_key():
    query = normalize_values(["Solaris; 1972", "Stalker; 1979", "Mirror; 1975", "Nostalghia; 1983", "Ivan; 1962"])
    lake = normalize_values(["Solaris (film)", "Solaris (novel)", "Stalker (film)", "Mirror (film)",
                             "Nostalghia (film)", "Ivan (film)"])
    m = match_values(query, lake)
    got = dict(zip(m.query, m.lake))
    assert "solaris; 1972" not in got                                       # film or novel: the view cannot say
    assert got["stalker; 1979"] == "stalker (film)" and len(got) == 4
    # the same years after different people are no evidence: only the first part of a cell is a view
    people = normalize_values(["Ann Lee; 1797", "Bo Diaz; 1801", "Cy Young; 1809", "Di Fox; 1817", "Ed Ray; 1825"])
    others = normalize_values(["Fay Wu (1797)", "Gil Tan (1801)", "Hal Orr (1809)", "Ida Poe (1817)",
                               "Jo Kim (1825)"])
    assert match_values(people, others).query == []
