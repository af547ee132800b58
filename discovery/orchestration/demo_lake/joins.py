"""Semantically joinable pairs: a column of one table and a column of another name the same entities, written
differently (see :mod:`.variants`).

The query table is a master list (one row per entity); the lake table is a transaction-like table that references
a fraction of those entities (written as variants, one to four rows each) plus entities the query does not have.
Variants are kept distinct from every query value and from each other after normalisation, so each lake value has
exactly one intended partner and the value-level ground truth is unambiguous.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

import numpy as np

from ...ground.normalize import normalize_values
from . import entities as E
from . import vocab as V
from .builder import LakeBuilder
from .variants import vary

Extras = Callable[[np.random.Generator, int], list[tuple[str, list[str], str]]]


@dataclass(frozen=True)
class JoinKind:
    kind: str
    make: E.Maker
    query: tuple[str, str, str]
    lake: tuple[str, str, str]
    query_extras: Extras
    lake_extras: Extras


def _money(rng, n):
    return E.floats(rng, n, 50, 25000, 2)


JOIN_KINDS = (
    JoinKind("company", E.company, ("partners", "vendor_master", "Vendor"), ("finance/payables", "purchase_orders",
                                                                             "supplier name"),
             lambda r, n: [("Country", [E.pick(r, V.COUNTRIES)[0] for _ in range(n)], "str"),
                           ("Industry", E.picks(r, V.INDUSTRIES, n), "str")],
             lambda r, n: [("po_number", [f"PO-{int(v):06d}" for v in r.permutation(10 ** 6)[:n]], "str"),
                           ("amount", _money(r, n), "float"), ("order_date", E.dates(r, n, "2023-01-01", 365),
                                                               "date")]),
    JoinKind("person", E.person, ("hr/directory", "staff_directory", "employee"), ("finance/expenses",
                                                                                  "expense_claims", "claimant"),
             lambda r, n: [("department", E.picks(r, V.DEPARTMENTS, n), "str"),
                           ("extension", E.ints(r, n, 1000, 9999), "int")],
             lambda r, n: [("category", E.picks(r, V.EXPENSE_CATEGORIES, n), "str"), ("amount_eur", _money(r, n),
                                                                                       "float"),
                           ("submitted", E.dates(r, n, "2023-01-01", 365), "date")]),
    JoinKind("title", E.title, ("media/catalog", "film_catalog", "title"), ("media/streaming", "weekly_views",
                                                                           "show"),
             lambda r, n: [("year", E.ints(r, n, 1950, 2024), "int"), ("genre", E.picks(r, V.MOVIE_GENRES, n),
                                                                       "str")],
             lambda r, n: [("week", E.dates(r, n, "2024-01-01", 364), "date"), ("views", E.lognormal_ints(r, n, 9, 1),
                                                                                "int")]),
    JoinKind("university", E.university, ("education/rankings", "university_rankings", "institution"),
             ("research", "grants_awarded", "grantee"),
             lambda r, n: [("rank", [str(int(v) + 1) for v in r.permutation(n)], "int"),
                           ("score", E.floats(r, n, 40, 100), "float")],
             lambda r, n: [("field", E.picks(r, V.RESEARCH_FIELDS, n), "str"),
                           ("amount_usd", E.lognormal_ints(r, n, 12, 1), "int")]),
    JoinKind("airport", E.airport, ("travel/reference", "airport_codes", "airport"), ("travel/contracts",
                                                                                     "ground_handling", "facility"),
             lambda r, n: [("iata", [E.code(r, 3) for _ in range(n)], "str"), ("runways", E.ints(r, n, 1, 6), "int")],
             lambda r, n: [("handler", E.picks(r, V.GROUND_HANDLERS, n), "str"), ("annual_fee", _money(r, n),
                                                                                  "float")]),
    JoinKind("hospital", E.hospital, ("health/registry", "hospital_registry", "hospital"), ("health/ems",
                                                                                           "ambulance_dispatch",
                                                                                           "destination facility"),
             lambda r, n: [("beds", E.ints(r, n, 20, 1500), "int"), ("type", E.picks(r, V.HOSPITAL_TYPES, n), "str")],
             lambda r, n: [("incident_id", [f"INC{int(v):07d}" for v in r.permutation(10 ** 7)[:n]], "str"),
                           ("dispatched", E.dates(r, n, "2024-01-01", 200), "date"),
                           ("priority", E.picks(r, ("P1", "P2", "P3"), n), "str")]),
    JoinKind("team", E.team, ("sports/registry", "team_registry", "club"), ("sports/tickets", "ticket_sales",
                                                                           "home team"),
             lambda r, n: [("league", E.picks(r, V.LEAGUES, n), "str"), ("founded", E.ints(r, n, 1878, 2015), "int")],
             lambda r, n: [("match_date", E.dates(r, n, "2023-08-01", 280), "date"),
                           ("tickets_sold", E.ints(r, n, 800, 60000), "int")]),
)


def _variants(query: list[str], matched: list[str], kind: str, rng: np.random.Generator) -> dict[str, tuple[str, str]]:
    """A variant for each matched value (those whose variations all collide are left unmatched)."""
    norms = normalize_values(query)
    taken = set(norms)
    own_norm = dict(zip(query, norms))
    out: dict[str, tuple[str, str]] = {}
    for value in matched:
        for _ in range(20):
            got = vary(value, kind, rng)
            if got is None:
                continue
            key = normalize_values([got[0]])[0]
            if key == own_norm[value] or key not in taken:
                taken.add(key)
                out[value] = got
                break
    return out


def write_pair(lake: LakeBuilder, spec: JoinKind, pair: str) -> tuple[dict, list[dict]]:
    """Write one planted pair; returns its ``join.csv`` row and its ``join_values.csv`` rows."""
    rng = lake.rng
    n_query = int(rng.integers(30, 81))
    query = E.unique(rng, n_query, spec.make)
    n_match = int(round(n_query * rng.uniform(0.5, 0.9)))
    matched = [query[i] for i in np.sort(rng.permutation(n_query)[:n_match])]
    variants = _variants(query, matched, spec.kind, rng)
    exclude = set(query) | {v for v, _ in variants.values()}
    norm_taken = set(normalize_values(list(exclude)))
    distractors = [d for d in E.unique(rng, max(5, n_match // 2), spec.make, exclude=exclude)
                   if normalize_values([d])[0] not in norm_taken]
    lake_entities = [v for v, _ in variants.values()] + distractors
    repeats = rng.integers(1, 5, size=len(lake_entities))
    lake_col = [e for e, k in zip(lake_entities, repeats) for _ in range(int(k))]
    lake_col = [lake_col[i] for i in rng.permutation(len(lake_col))]

    q_folder, q_stem, q_header = spec.query
    extras = spec.query_extras(rng, n_query)
    q_path = lake.add_table(q_folder, q_stem, [q_header] + [h for h, _, _ in extras],
                            [query] + [lake.with_missing(c, 0.02) for _, c, _ in extras],
                            ["str"] + [k for _, _, k in extras], role="join", group=pair)
    l_folder, l_stem, l_header = spec.lake
    extras = spec.lake_extras(rng, len(lake_col))
    order = rng.permutation(len(extras) + 1)
    cols = [(l_header, lake_col, "str")] + [(h, lake.with_missing(c, 0.02), k) for h, c, k in extras]
    cols = [cols[i] for i in order]
    l_path = lake.add_table(l_folder, l_stem, [h for h, _, _ in cols], [c for _, c, _ in cols],
                            [k for _, _, k in cols], role="join", group=pair)
    values = [{"query_table": q_path, "query_column": q_header, "query_value": q, "lake_table": l_path,
               "lake_column": l_header, "lake_value": v, "variation": how} for q, (v, how) in variants.items()]
    row = {"query_table": q_path, "query_column": q_header, "lake_table": l_path, "lake_column": l_header,
           "kind": spec.kind, "matched_values": len(variants), "query_distinct": n_query,
           "containment": round(len(variants) / n_query, 4)}
    return row, values
