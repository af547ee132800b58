"""Seed tables of the unionable families: one schema per family, each a distinct set of attributes.

Every family is cut from one seed table, so two tables are unionable exactly when they come from the same seed.
Schemas are kept pairwise different in attribute set on purpose (airports and cities share ``city`` and ``country``,
teams and players share ``team``): those are the hard negatives a union search must reject.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

import numpy as np

from . import entities as E
from . import vocab as V

Columns = dict[str, list[str]]

#: Attribute value types, used to write Parquet columns with real types and decimal commas in ';' files.
INT_ATTRS = frozenset({"founded_year", "employees", "population", "elevation_m", "birth_year", "capacity", "age",
                       "height_cm", "goals", "release_year", "runtime_min", "pages", "delay_min", "runways",
                       "students", "beds", "quantity", "volume", "tracks", "salary", "customer_id", "year"})
FLOAT_ATTRS = frozenset({"area_km2", "gdp_busd", "price", "weight_kg", "rating", "box_office_musd", "temp_max_c",
                         "temp_min_c", "precipitation_mm", "humidity_pct", "wind_kmh", "open", "close"})
DATE_ATTRS = frozenset({"hire_date", "date", "order_date"})


@dataclass(frozen=True)
class SeedSchema:
    """A family's seed: where its tables live, how they are named, and how its rows are drawn."""

    name: str
    folder: str
    stems: tuple[str, ...]
    subject: str
    anchor: str
    make: Callable[[np.random.Generator, int], Columns]


def _cities(rng, n):
    return [E.pick(rng, V.CITIES) for _ in range(n)]


def _companies(rng, n):
    places = _cities(rng, n)
    return {"company": E.unique(rng, n, E.company), "industry": E.picks(rng, V.INDUSTRIES, n),
            "city": [c for c, _ in places], "country": [k for _, k in places],
            "founded_year": E.ints(rng, n, 1890, 2021), "employees": E.lognormal_ints(rng, n, 6.0, 1.5),
            "ceo": [E.person(rng) for _ in range(n)]}


def _entity_years(rng, n, n_entities, first_year, n_years):
    """``n`` distinct (entity index, year) pairs: statistics tables repeat entities over reference years."""
    flat = rng.permutation(n_entities * n_years)[:n]
    return [int(f) // n_years for f in flat], [str(first_year + int(f) % n_years) for f in flat]


def _city_table(rng, n):
    idx, years = _entity_years(rng, n, len(V.CITIES), 1995, 30)
    cont = {c[0]: c[2] for c in V.COUNTRIES}
    zone = {i: E.pick(rng, V.TIMEZONES[cont[V.CITIES[i][1]]]) for i in sorted(set(idx))}
    return {"city": [V.CITIES[i][0] for i in idx], "country": [V.CITIES[i][1] for i in idx], "year": years,
            "population": E.lognormal_ints(rng, n, 13.0, 1.0), "area_km2": E.floats(rng, n, 40, 3000),
            "elevation_m": E.ints(rng, n, 0, 2800), "timezone": [zone[i] for i in idx]}


def _country_table(rng, n):
    idx, years = _entity_years(rng, n, len(V.COUNTRIES), 1990, 34)
    rows = [V.COUNTRIES[i] for i in idx]
    return {"country": [r[0] for r in rows], "iso_code": [r[1] for r in rows], "year": years,
            "continent": [r[2] for r in rows], "population": E.lognormal_ints(rng, n, 16.5, 1.2),
            "currency": [r[4] for r in rows], "gdp_busd": E.floats(rng, n, 20, 9000)}


def _products(rng, n):
    names = E.unique(rng, n, E.product)
    return {"product": names, "category": [V.PRODUCT_NOUNS[" ".join(p.split()[2:])] for p in names],
            "brand": [E.pick(rng, V.COMPANY_STEMS) for _ in range(n)], "price": E.floats(rng, n, 3, 400, 2),
            "weight_kg": E.floats(rng, n, 0.1, 12, 2), "color": E.picks(rng, V.COLORS, n),
            "sku": E.unique(rng, n, lambda r: E.code(r, 2, 5))}


def _employees(rng, n):
    return {"first_name": E.picks(rng, V.FIRST_NAMES, n), "last_name": E.picks(rng, V.LAST_NAMES, n),
            "department": E.picks(rng, V.DEPARTMENTS, n), "job_title": E.picks(rng, V.JOB_TITLES, n),
            "hire_date": E.dates(rng, n, "2005-01-01", 6500), "salary": E.ints(rng, n, 32000, 185000),
            "city": [c for c, _ in _cities(rng, n)]}


def _customers(rng, n):
    firsts, lasts = E.picks(rng, V.FIRST_NAMES, n), E.picks(rng, V.LAST_NAMES, n)
    places = _cities(rng, n)
    emails = [f"{f.lower()}.{last.lower().replace(' ', '').replace(chr(39), '')}{int(k)}"
              f"@{E.pick(rng, V.EMAIL_DOMAINS)}"
              for f, last, k in zip(firsts, lasts, rng.integers(1, 99, size=n))]
    return {"customer_id": [str(100000 + int(i)) for i in rng.permutation(900000)[:n]],
            "full_name": [f"{f} {last}" for f, last in zip(firsts, lasts)], "email": emails,
            "birth_year": E.ints(rng, n, 1940, 2006), "city": [c for c, _ in places],
            "country": [k for _, k in places], "loyalty_tier": E.picks(rng, V.LOYALTY_TIERS, n)}


def _teams(rng, n):
    names = E.unique(rng, n, E.team)
    return {"team": names, "league": E.picks(rng, V.LEAGUES, n), "city": [t.rsplit(" ", 1)[0] for t in names],
            "founded_year": E.ints(rng, n, 1878, 2015),
            "stadium": [f"{E.pick(rng, V.LAST_NAMES)} {E.pick(rng, V.STADIUM_WORDS)}" for _ in range(n)],
            "capacity": E.ints(rng, n, 4000, 90000), "head_coach": [E.person(rng) for _ in range(n)]}


def _players(rng, n):
    return {"player": E.unique(rng, n, E.person), "team": [E.team(rng) for _ in range(n)],
            "position": E.picks(rng, V.POSITIONS, n), "age": E.ints(rng, n, 17, 39),
            "height_cm": E.ints(rng, n, 160, 205), "goals": [str(int(g)) for g in rng.poisson(4, size=n)]}


def _movies(rng, n):
    return {"title": E.unique(rng, n, E.title), "release_year": E.ints(rng, n, 1950, 2024),
            "director": [E.person(rng) for _ in range(n)], "genre": E.picks(rng, V.MOVIE_GENRES, n),
            "runtime_min": E.ints(rng, n, 78, 190), "rating": E.floats(rng, n, 2.0, 9.6),
            "box_office_musd": E.floats(rng, n, 0.2, 900)}


def _books(rng, n):
    return {"title": E.unique(rng, n, E.title), "author": [E.person(rng) for _ in range(n)],
            "publisher": E.picks(rng, V.PUBLISHERS, n), "release_year": E.ints(rng, n, 1900, 2024),
            "pages": E.ints(rng, n, 90, 900), "isbn": [f"978{int(v):010d}" for v in rng.integers(10 ** 10, size=n)],
            "genre": E.picks(rng, V.BOOK_GENRES, n)}


def _weather(rng, n):
    stations = [f"{c} {w}" for c, w in zip((c for c, _ in _cities(rng, 6)), ("Central", "Airport", "Harbor",
                                                                             "North", "Observatory", "Hill"))]
    tmax = rng.uniform(-5, 36, size=n)
    return {"station": E.picks(rng, stations, n), "date": E.dates(rng, n, "2022-01-01", 730),
            "temp_max_c": [f"{v:.1f}" for v in tmax],
            "temp_min_c": [f"{v - d:.1f}" for v, d in zip(tmax, rng.uniform(2, 14, size=n))],
            "precipitation_mm": [f"{v:.1f}" for v in rng.exponential(2.0, size=n)],
            "humidity_pct": E.floats(rng, n, 20, 100), "wind_kmh": E.floats(rng, n, 0, 70)}


def _flights(rng, n):
    airports = [E.code(rng, 3) for _ in range(12)]
    airlines = [E.airline(rng) for _ in range(5)]
    origin = E.picks(rng, airports, n)
    dest = [airports[(airports.index(o) + int(k)) % len(airports)] for o, k in zip(origin, rng.integers(1, 11, n))]
    return {"airline": E.picks(rng, airlines, n), "flight_number": [E.code(rng, 2) + str(int(v))
                                                                   for v in rng.integers(100, 9999, n)],
            "origin": origin, "destination": dest, "date": E.dates(rng, n, "2023-01-01", 365),
            "departure_time": [f"{int(h):02d}:{int(m) * 5:02d}" for h, m in zip(rng.integers(5, 23, n),
                                                                                rng.integers(12, size=n))],
            "delay_min": [str(max(0, int(v))) for v in rng.normal(8, 25, size=n)]}


def _airports(rng, n):
    names = E.unique(rng, n, E.airport)
    city_country = {c: k for c, k in V.CITIES}
    cities = [next(c for c, _ in V.CITIES if a.startswith(c + " ")) for a in names]
    return {"airport": names, "iata": E.unique(rng, n, lambda r: E.code(r, 3)), "city": cities,
            "country": [city_country[c] for c in cities], "runways": E.ints(rng, n, 1, 6),
            "elevation_m": E.ints(rng, n, 0, 2400)}


def _universities(rng, n):
    names = E.unique(rng, n, E.university)
    city_country = {c: k for c, k in V.CITIES}
    cities = [next(c for c, _ in V.CITIES if u.startswith(c + " ") or u.endswith(" of " + c)) for u in names]
    return {"university": names, "city": cities, "country": [city_country[c] for c in cities],
            "founded_year": E.ints(rng, n, 1100, 2010), "students": E.lognormal_ints(rng, n, 9.5, 0.8),
            "ownership": E.picks(rng, ("public", "private"), n)}


def _hospitals(rng, n):
    return {"hospital": E.unique(rng, n, E.hospital), "city": [c for c, _ in _cities(rng, n)],
            "beds": E.ints(rng, n, 20, 1500), "hospital_type": E.picks(rng, V.HOSPITAL_TYPES, n)}


def _restaurants(rng, n):
    return {"restaurant": E.unique(rng, n, E.restaurant), "cuisine": E.picks(rng, V.CUISINES, n),
            "city": [c for c, _ in _cities(rng, n)], "rating": E.floats(rng, n, 2.5, 5.0),
            "price_range": E.picks(rng, V.PRICE_RANGES, n)}


def _orders(rng, n):
    return {"order_id": [f"SO-{int(v):07d}" for v in rng.permutation(10 ** 6)[:n]],
            "order_date": E.dates(rng, n, "2022-01-01", 700), "full_name": [E.person(rng) for _ in range(n)],
            "product": [E.product(rng) for _ in range(n)], "quantity": E.ints(rng, n, 1, 40),
            "price": E.floats(rng, n, 3, 400, 2), "region": E.picks(rng, V.REGIONS, n)}


def _stocks(rng, n):
    tickers = [E.code(rng, 4) for _ in range(8)]
    opens = rng.lognormal(4.0, 0.8, size=n)
    return {"ticker": E.picks(rng, tickers, n), "date": E.dates(rng, n, "2021-01-04", 900),
            "open": [f"{v:.2f}" for v in opens],
            "close": [f"{v * (1 + d):.2f}" for v, d in zip(opens, rng.normal(0, 0.02, size=n))],
            "volume": E.lognormal_ints(rng, n, 13.0, 1.0)}


def _albums(rng, n):
    return {"artist": [E.band(rng) for _ in range(n)], "album": E.unique(rng, n, E.title),
            "release_year": E.ints(rng, n, 1960, 2024), "genre": E.picks(rng, V.MUSIC_GENRES, n),
            "label": E.picks(rng, V.RECORD_LABELS, n), "tracks": E.ints(rng, n, 6, 22)}


SEEDS: tuple[SeedSchema, ...] = (
    SeedSchema("companies", "finance/registers", ("company_register", "firms", "business_directory", "companies"),
               "company", "industry", _companies),
    SeedSchema("cities", "geo/cities", ("world_cities", "city_stats", "municipalities", "urban_areas"),
               "city", "country", _city_table),
    SeedSchema("countries", "geo/countries", ("countries", "country_facts", "nations", "country_profiles"),
               "country", "continent", _country_table),
    SeedSchema("products", "sales/catalog", ("product_catalog", "items", "sku_master", "assortment"),
               "product", "category", _products),
    SeedSchema("employees", "hr/people", ("employees", "staff_list", "personnel", "headcount_report"),
               "last_name", "department", _employees),
    SeedSchema("customers", "sales/crm", ("customers", "crm_contacts", "client_accounts", "customer_master"),
               "full_name", "loyalty_tier", _customers),
    SeedSchema("teams", "sports/clubs", ("teams", "club_registry", "franchises", "league_members"),
               "team", "league", _teams),
    SeedSchema("players", "sports/rosters", ("rosters", "player_stats", "squad_list", "athletes"),
               "player", "position", _players),
    SeedSchema("movies", "media/film", ("movies", "film_catalogue", "box_office", "releases"),
               "title", "genre", _movies),
    SeedSchema("books", "media/books", ("books", "library_catalog", "titles_in_print", "reading_list"),
               "title", "publisher", _books),
    SeedSchema("weather", "weather/daily", ("daily_weather", "station_obs", "climate_readings", "wx_daily"),
               "station", "station", _weather),
    SeedSchema("flights", "travel/flights", ("flights", "departures", "flight_log", "ops_schedule"),
               "flight_number", "airline", _flights),
    SeedSchema("airports", "travel/airports", ("airports", "aerodromes", "airport_list", "airfields"),
               "airport", "country", _airports),
    SeedSchema("universities", "education", ("universities", "higher_ed_institutions", "campus_list", "colleges"),
               "university", "ownership", _universities),
    SeedSchema("hospitals", "health", ("hospitals", "care_facilities", "hospital_beds", "provider_directory"),
               "hospital", "hospital_type", _hospitals),
    SeedSchema("restaurants", "food", ("restaurants", "dining_guide", "eateries", "venue_reviews"),
               "restaurant", "cuisine", _restaurants),
    SeedSchema("orders", "sales/orders", ("sales_orders", "order_lines", "webshop_orders", "orders"),
               "order_id", "region", _orders),
    SeedSchema("stocks", "finance/markets", ("stock_prices", "eod_quotes", "equity_prices", "market_data"),
               "ticker", "ticker", _stocks),
    SeedSchema("albums", "media/music", ("albums", "discography", "record_releases", "music_catalog"),
               "album", "genre", _albums),
)
