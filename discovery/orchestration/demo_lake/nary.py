"""Multi-column-key joins: a query table with a 2- or 3-column key and lake tables sharing part of its key tuples.

Each lake table of a group holds a chosen fraction of the query's key tuples, decoy tuples that agree with a query
tuple on all but one key column (homonymous cities, the same flight on another day, a namesake born in another
year: rows a single-column index would count but an n-ary join must not), and unrelated tuples.  Key cells are
sometimes re-cased or padded with spaces, which ``discovery.ground.normalize`` undoes, as MATE's equi-join semantics
need.

The expected joinability is not taken from the plan but computed exhaustively after writing (:func:`joinability`):
J = max over injective column mappings of |distinct query key tuples ∩ lake tuples| (MATE, Eq. 2), over every good
table of the lake, so ``nary.csv`` is the exact answer a top-k search must reproduce.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from collections.abc import Callable

import numpy as np

from ...ground.normalize import normalize_values
from . import entities as E
from . import vocab as V
from .builder import LakeBuilder

Key = tuple[str, ...]


@dataclass(frozen=True)
class NaryKind:
    kind: str
    query: tuple[str, str, tuple[str, ...]]
    lakes: tuple[tuple[str, str, tuple[str, ...]], ...]
    make: Callable[[np.random.Generator], Key]
    decoy: Callable[[np.random.Generator, Key], Key]
    extras: Callable[[np.random.Generator, int], list[tuple[str, list[str], str]]]


_HOMONYMS: dict[str, list[str]] = {}
for _city, _country in V.CITIES:
    _HOMONYMS.setdefault(_city, []).append(_country)


def _geo_decoy(rng, key):
    country, city = key
    others = [c for c in _HOMONYMS[city] if c != country]
    if others and rng.random() < 0.7:
        return (E.pick(rng, others), city)
    return (country, E.pick(rng, [c for c, k in V.CITIES if k != country]))


def _person(rng):
    return (E.pick(rng, V.FIRST_NAMES), E.pick(rng, V.LAST_NAMES), str(int(rng.integers(1940, 2006))))


def _flight(rng):
    return (E.pick(rng, ("Pacific Airways", "Air Nordic", "Alpine Airways", "Air Sahara")),
            E.code(rng, 2) + str(int(rng.integers(100, 999))), E.dates(rng, 1, "2024-03-01", 30)[0])


def _station(rng):
    return (E.pick(rng, ("Harbor Point", "Hill Observatory", "North Field", "Airport East", "Old Town")),
            E.dates(rng, 1, "2023-01-01", 365)[0])


def _team_season(rng):
    year = int(rng.integers(2005, 2024))
    return (f"{E.pick(rng, V.CITIES[:40])[0]} {E.pick(rng, V.TEAM_MASCOTS[:8])}", f"{year}-{(year + 1) % 100:02d}")


def _shift_last(rng, key, values):
    return key[:-1] + (E.pick(rng, [v for v in values if v != key[-1]]),)


def _other_date(rng, key):
    return key[:-1] + (E.dates(rng, 1, "2023-01-01", 400)[0],)


def _season_decoy(rng, key):
    year = int(key[1][:4]) + int(rng.choice([-2, -1, 1, 2]))
    return (key[0], f"{year}-{(year + 1) % 100:02d}")


NARY_KINDS = (
    NaryKind("geo", ("retail/stores", "store_locations", ("country", "city")),
             (("retail/sales", "regional_sales", ("Country", "City")),
              ("geo/air", "air_quality", ("nation", "town")),
              ("travel/tourism", "tourism_arrivals", ("destination country", "destination city"))),
             lambda r: tuple(reversed(E.pick(r, V.CITIES))), _geo_decoy,
             lambda r, n: [("value", E.lognormal_ints(r, n, 8, 1), "int"),
                           ("hub city", [E.pick(r, V.CITIES)[0] for _ in range(n)], "str")]),
    NaryKind("person", ("clubs", "club_members", ("first name", "last name", "birth year")),
             (("events", "marathon_results", ("FirstName", "LastName", "YearOfBirth")),
              ("civic", "voter_roll", ("given_name", "surname", "yob")),
              ("health", "patient_index", ("forename", "family name", "born"))),
             _person, lambda r, k: _shift_last(r, k, [str(y) for y in range(1940, 2006)]),
             lambda r, n: [("city", [E.pick(r, V.CITIES)[0] for _ in range(n)], "str"),
                           ("score", E.floats(r, n, 0, 100), "float")]),
    NaryKind("flight", ("travel/bookings", "booked_flights", ("airline", "flight", "date")),
             (("travel/ops", "flight_delays", ("carrier", "flight no", "flight date")),
              ("travel/crew", "crew_roster", ("Operator", "Flight Number", "Duty Date")),),
             _flight, _other_date,
             lambda r, n: [("delay_min", E.ints(r, n, 0, 180), "int"), ("gate", [E.code(r, 1) + str(int(v))
                                                                                 for v in r.integers(1, 40, n)],
                                                                        "str")]),
    NaryKind("weather", ("weather/sensors", "sensor_readings", ("station", "date")),
             (("weather/official", "station_observations", ("Station Name", "Observation Date")),
              ("agri", "field_conditions", ("nearest station", "day"))),
             _station, _other_date,
             lambda r, n: [("temp_c", E.floats(r, n, -10, 35), "float"), ("reported", E.dates(r, n, "2023-01-01",
                                                                                             365), "date")]),
    NaryKind("team", ("sports/finance", "team_payroll", ("team", "season")),
             (("sports/results", "season_standings", ("club", "Season")),
              ("sports/media", "broadcast_deals", ("franchise", "season"))),
             _team_season, _season_decoy,
             lambda r, n: [("points", E.ints(r, n, 10, 100), "int"), ("rival", [f"{E.pick(r, V.CITIES)[0]} "
                                                                                f"{E.pick(r, V.TEAM_MASCOTS)}"
                                                                                for _ in range(n)], "str")]),
)


def _unique_keys(rng, n, make, exclude) -> list[Key]:
    seen, out = set(exclude), list[Key]()
    for _ in range(50 * n + 100):
        if len(out) == n:
            break
        k = make(rng)
        norm = tuple(normalize_values(list(k)))
        if norm not in seen:
            seen.add(norm)
            out.append(k)
    return out


def _messy(rng: np.random.Generator, value: str) -> str:
    """The same key value as another system writes it (case, padding): equal after normalisation."""
    how = int(rng.integers(5))
    return (value.upper(), value.lower(), f" {value} ", value.replace(" ", "  "), value)[how]


def write_group(lake: LakeBuilder, spec: NaryKind, group: str) -> tuple[str, list[str], list[str]]:
    """Write one query table and its lake tables; returns the query path, its key headers and the planted tables'
    paths."""
    rng = lake.rng
    n_query = int(rng.integers(30, 61))
    query = _unique_keys(rng, n_query, spec.make, set())
    q_norm = {tuple(normalize_values(list(k))) for k in query}
    q_folder, q_stem, q_headers = spec.query
    extras = spec.extras(rng, len(query))
    q_path = lake.add_table(q_folder, q_stem, list(q_headers) + [h for h, _, _ in extras],
                            [[k[i] for k in query] for i in range(len(q_headers))] +
                            [lake.with_missing(c, 0.02) for _, c, _ in extras],
                            ["str"] * len(q_headers) + [k for _, _, k in extras], role="nary", group=group)
    planted = []
    for (folder, stem, headers), share in zip(spec.lakes, (rng.uniform(0.6, 0.9), rng.uniform(0.2, 0.5),
                                                          rng.uniform(0.02, 0.12))):
        hit = [query[i] for i in rng.permutation(n_query)[:max(1, int(round(share * n_query)))]]
        decoys = []
        for k in (query[i] for i in rng.permutation(n_query)[:n_query // 2]):
            d = spec.decoy(rng, k)
            if tuple(normalize_values(list(d))) not in q_norm:
                decoys.append(d)
        fillers = _unique_keys(rng, n_query // 3, spec.make, q_norm)
        keys = hit + [hit[i] for i in rng.integers(len(hit), size=len(hit) // 4)] + decoys + fillers
        keys = [keys[i] for i in rng.permutation(len(keys))]
        key_cols = [[_messy(rng, k[i]) if rng.random() < 0.2 else k[i] for k in keys] for i in range(len(headers))]
        key_cols = [lake.with_missing(c, 0.02) for c in key_cols]
        extras = spec.extras(rng, len(keys))
        cols = [(h, c, "str") for h, c in zip(headers, key_cols)] + extras
        order = rng.permutation(len(cols))
        cols = [cols[i] for i in order]
        path = lake.add_table(folder, stem, [h for h, _, _ in cols], [c for _, c, _ in cols],
                              [k for _, _, k in cols], role="nary", group=group)
        planted.append(path)
    return q_path, list(q_headers), planted


def joinability(query_norm: list[list[str | None]], lake_header: list[str],
                lake_norm: list[list[str | None]]) -> tuple[int, list[str]]:
    """Exact MATE joinability J of normalised key columns and the lake columns of the best injective mapping.

    Only lake columns sharing at least one value with a key column can take its place, which prunes the factorial
    mapping space to a handful of candidates without changing the maximum.  Ties keep the first mapping in column
    order, so the answer is deterministic.
    """
    q_tuples = {t for t in zip(*query_norm) if None not in t}
    if not q_tuples:
        return 0, []
    cands = []
    for i in range(len(query_norm)):
        domain = {t[i] for t in q_tuples}
        cands.append([j for j, col in enumerate(lake_norm) if not domain.isdisjoint(col)])
    best, best_map = 0, []
    for mapping in itertools.product(*cands):
        if len(set(mapping)) < len(mapping):
            continue
        found = len(q_tuples.intersection(zip(*(lake_norm[j] for j in mapping))))
        if found > best:
            best, best_map = found, [lake_header[j] for j in mapping]
    return best, best_map
