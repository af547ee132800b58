"""The other columns of both rows as evidence: a pair whose rows disagree on what both tables say is two entities.

Two tables joined on a name often both hold more about each entity: a party, a year of birth, a country.  A name
alone cannot tell ``George W. Bush`` from the lake's only Bush, ``George H. W. Bush``; their years of birth can.
Which lake column says what which query column says is read off the two tables, without labels, in the manner of
the matcher's own estimate (:mod:`.autoconfig`):

* the *sure pairs* are the pairs of equal values when there are at least ``MIN_PAIRS`` of them, else every matched
  pair (two tables that write every name differently, ``Adams, John`` against ``John Adams``: the pairs at the
  matcher's precision target are the surest there are);
* for a query column ``c`` and a lake column ``d`` other than the join's, a sure pair *agrees* when some cell of
  ``c`` in its query rows equals some cell of ``d`` in its lake rows (both normalised), among the sure pairs where
  both have a cell;
* ``(c, d)`` is *evidence* when at least ``MIN_PAIRS`` sure pairs have cells in both, at least ``AGREEMENT`` of
  them agree, and two different entities would agree at most ``CHANCE`` of the time (the chance that a value drawn
  from the sure pairs' query cells equals one drawn from their lake cells): a column that agrees for one entity
  and not across entities, so its disagreement means something (a column of two values agrees across entities
  half the time).

A pair joined by any rule but equal values (a fuzzy measure, a view, a program) whose rows disagree on an evidence
column (both have cells, none equal) is refused.  Agreement adds nothing to a pair's estimated precision; the
written join's estimate is the mean of the pairs that remain.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

MIN_PAIRS = 10
AGREEMENT = 0.95
CHANCE = 0.5

#: Per column name: each join value's cells (normalised, non-null) in the rows holding that value.
Cells = dict[str, dict[str, set[str]]]


@dataclass(frozen=True)
class Evidence:
    """A query column and a lake column that say the same of one entity: the sure pairs it was read from, their
    agreement, the agreement across entities, and the pairs it refused."""

    query_column: str
    lake_column: str
    pairs: int
    agreement: float
    chance: float
    refused: int

    def describe(self) -> dict:
        return {"query_column": self.query_column, "lake_column": self.lake_column, "sure_pairs": self.pairs,
                "agreement": round(self.agreement, 4), "chance": round(self.chance, 4), "refused": self.refused}


def _agree(a: set[str], b: set[str]) -> bool:
    return not a.isdisjoint(b)


def _chance(both: list[tuple[set[str], set[str]]]) -> float:
    """How often a value drawn from the pairs' query cells equals one drawn from their lake cells (each pair's cells
    weighing one pair): the agreement of two entities that are not one."""
    shares: list[dict[str, float]] = [defaultdict(float), defaultdict(float)]
    for side, counts in enumerate(shares):
        for cells in both:
            for v in cells[side]:
                counts[v] += 1.0 / len(cells[side])
    n = len(both)
    return sum(w * shares[1][v] for v, w in shares[0].items()) / (n * n)


def evidence_columns(sure: list[tuple[str, str]], query: Cells, lake: Cells
                     ) -> list[tuple[str, str, int, float, float]]:
    """``(query column, lake column, sure pairs read, agreement, chance)`` of every column pair that is evidence
    (module docstring), for the ``sure`` (query value, lake value) pairs."""
    out = []
    for c, q_cells in query.items():
        for d, l_cells in lake.items():
            both = [(q_cells[q], l_cells[lk]) for q, lk in sure if q_cells.get(q) and l_cells.get(lk)]
            if len(both) < MIN_PAIRS:
                continue
            agreement = sum(_agree(a, b) for a, b in both) / len(both)
            chance = _chance(both)
            if agreement >= AGREEMENT and chance <= CHANCE:
                out.append((c, d, len(both), agreement, chance))
    return out


def judge(pairs: list[tuple[str, str, str]], query: Cells, lake: Cells) -> tuple[list[bool], list[Evidence]]:
    """Which of ``pairs`` (query value, lake value, rule) stand, and the evidence that decided: a pair of equal
    values stands; any other falls when its rows disagree on an evidence column."""
    equal = [(q, lk) for q, lk, rule in pairs if rule == "equal"]
    sure = equal if len(equal) >= MIN_PAIRS else [(q, lk) for q, lk, _ in pairs]
    found = evidence_columns(sure, query, lake)
    keep = [True] * len(pairs)
    refused = [0] * len(found)
    for i, (q, lk, rule) in enumerate(pairs):
        if rule == "equal":
            continue
        for e, (c, d, *_) in enumerate(found):
            a, b = query[c].get(q), lake[d].get(lk)
            if a and b and not _agree(a, b):
                keep[i] = False
                refused[e] += 1
                break
    return keep, [Evidence(c, d, n, agreement, chance, r) for (c, d, n, agreement, chance), r in zip(found, refused)]
