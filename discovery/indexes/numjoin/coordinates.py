"""Which two number columns of a table are a place: a latitude and a longitude column, found by names or by values.

Pairs are found in two passes over the number columns, each column in one pair at most:

1. **Names, in any common form.**  A column names a latitude or a longitude (:func:`coordinate_role`) when one of
   its tokens (:func:`discovery.transforms.quantities.tokens`, with a trailing number split off: ``lat1``, ``lon1``) is
   a latitude or longitude word in English or another language (:data:`LATITUDE`, :data:`LONGITUDE`; ``long`` only as
   the last token, where it cannot be an adjective).  The tokens left after that word and the decorations
   (:data:`DECORATIONS`: units and axis words such as ``deg``, ``dd``, ``wgs84``, ``n``, ``e``, ``x``, ``y``) are the
   column's *key*, and a latitude and a longitude of one key pair up: ``lat,lng``, ``start_lat,start_lng``,
   ``pickup_latitude,pickup_longitude``, ``lat1,lon1``, ``Latitude (deg),Longitude (deg)``, ``Breitengrad,Längengrad``.
2. **Neighbours whose values are coordinates.**  Two adjacent columns, each named as its role (keys may differ) or
   named nothing (:func:`says_nothing`: no header, a generated one, an axis letter, ``coord``, ``point``, ``gps``,
   ...), neither naming another quantity (:func:`discovery.transforms.quantities.name_quantity`), whose values look as
   written positions do (:func:`looks_like_coordinates`): at least :data:`MIN_POINTS` distinct points, neither column
   integral, the median count of decimals of their written values at least :data:`MIN_DECIMALS` (a position is
   written to about 10 m, 4 decimals; counts, scores and percentages carry 0 to 2), latitude within ±90 and
   longitude within ±180, and not every point within :data:`SHARE_BOUND` of 0 on both axes: shares and
   probabilities written to many decimals (``0.213771839671``, a headerless file's columns) lie there, and no land
   does (the nearest, São Tomé, lies 6.5° east of 0°, 0°).  A named column keeps its role; otherwise ``x`` is the
   longitude and ``y`` the latitude, a column with values beyond ±90 is the longitude, and else the first column is
   the latitude (the order of ``lat,lng``, the common one).

A pair of percentages, scores or shares is therefore never a place: their names say what they are, their values
carry too few decimals, or they are fractions of one.  Every pair must then still lie in range on
:data:`~.columns.AGREEMENT` of its rows (:func:`.columns.coordinates_group`).  A user may always name two columns
as a pair at query time, whatever this rule says (:func:`.columns.query_group`).
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...transforms.quantities import name_quantity, tokens

LATITUDE = frozenset({"lat", "latitude", "latitud", "latitudine", "breite", "breitengrad", "breedtegraad",
                      "szerokosc", "широта", "纬度"})
LONGITUDE = frozenset({"lng", "lon", "longitude", "longitud", "longitudine", "laenge", "länge", "laengengrad",
                       "längengrad", "lengtegraad", "dlugosc", "долгота", "经度"})
DECORATIONS = frozenset({"deg", "degree", "degrees", "dd", "decimal", "dec", "wgs84", "wgs", "n", "e", "s", "w",
                         "north", "east", "x", "y", "coord", "coords", "coordinate", "coordinates", "gps", "geo"})
#: Tokens of a name that says nothing about its column (with digits, a generated or pandas index header).
SAYS_NOTHING = frozenset({"x", "y", "coord", "coords", "coordinate", "coordinates", "point", "position", "pos",
                          "location", "loc", "gps", "geo", "unnamed", "column", "col", "field"})
MIN_POINTS = 10
MIN_DECIMALS = 4
#: Points whose latitude and longitude all lie within this many degrees of 0 are fractions, not places.
SHARE_BOUND = 1.0
_TRAILING_DIGITS = re.compile(r"^(\D+?)(\d+)$")


def _split_digits(toks: list[str]) -> list[str]:
    out: list[str] = []
    for t in toks:
        m = _TRAILING_DIGITS.match(t)
        out += [m.group(1), m.group(2)] if m else [t]
    return out


def coordinate_role(name: str) -> tuple[str, str] | None:
    """``("lat" | "lon", key)`` when ``name`` names a latitude or longitude column, else None."""
    toks = _split_digits(tokens(name))
    for i, t in enumerate(toks):
        role = "lat" if t in LATITUDE else "lon" if t in LONGITUDE or (t == "long" and i == len(toks) - 1) else None
        if role:
            rest = [r for j, r in enumerate(toks) if j != i and r not in DECORATIONS]
            return role, "_".join(rest)
    return None


def says_nothing(name: str | None) -> bool:
    """Whether a header names nothing a reader could go by: empty, generated, a pandas index, an axis letter."""
    return all(t in SAYS_NOTHING or t.isdigit() for t in _split_digits(tokens(name)))


def names_pairs(names: list[str]) -> list[tuple[int, int]]:
    """(latitude ordinal, longitude ordinal) of every latitude / longitude pair of one key, in column order."""
    roles: dict[str, dict[str, int]] = {}
    for i, n in enumerate(names):
        r = coordinate_role(n)
        if r is not None:
            roles.setdefault(r[1], {}).setdefault(r[0], i)
    return sorted((r["lat"], r["lon"]) for r in roles.values() if "lat" in r and "lon" in r)


def _decimals(col: pa.Array) -> float:
    """Median count of digits after the decimal point over the distinct written values of a column."""
    text = pc.unique(pc.utf8_trim_whitespace(col.cast(pa.string()) if col.type != pa.string() else col))
    text = pc.drop_null(text)
    if len(text) == 0:
        return 0.0
    mantissa = pc.replace_substring_regex(text, pattern=r"[eE].*$", replacement="")
    dot = pc.find_substring(mantissa, ".").to_numpy(zero_copy_only=False)
    length = pc.utf8_length(mantissa).to_numpy(zero_copy_only=False)
    return float(np.median(np.where(dot >= 0, length - dot - 1, 0)))


def looks_like_coordinates(lat_cells: pa.Array, lon_cells: pa.Array, lat: np.ndarray, lon: np.ndarray) -> bool:
    """Whether two parsed columns look as written positions do (the module docstring, pass 2)."""
    both = np.isfinite(lat) & np.isfinite(lon)
    if not both.any():
        return False
    la, lo = lat[both], lon[both]
    if (np.abs(la) > 90).any() or (np.abs(lo) > 180).any():
        return False
    if np.all(la == np.round(la)) or np.all(lo == np.round(lo)):
        return False
    if (np.abs(la) <= SHARE_BOUND).all() and (np.abs(lo) <= SHARE_BOUND).all():
        return False
    if np.unique(np.column_stack([la, lo]), axis=0).shape[0] < MIN_POINTS:
        return False
    return _decimals(lat_cells) >= MIN_DECIMALS and _decimals(lon_cells) >= MIN_DECIMALS


def _free(name: str, role: str | None) -> bool:
    """A column that may take ``role`` by its values: named as that role, or naming nothing at all."""
    r = coordinate_role(name)
    if r is not None:
        return role is None or r[0] == role
    q = name_quantity(name)
    return says_nothing(name) and (q is None or q[0] in ("latitude", "longitude"))


def _orient(names: list[str], a: int, b: int, numbers: dict[int, np.ndarray]) -> tuple[int, int] | None:
    """(latitude, longitude) of the neighbours a < b, or None when their names contradict each other."""
    ra, rb = coordinate_role(names[a]), coordinate_role(names[b])
    if ra and rb:
        return (a, b) if (ra[0], rb[0]) == ("lat", "lon") else (b, a) if (ra[0], rb[0]) == ("lon", "lat") else None
    role = ra or rb
    if role:
        named, other = (a, b) if ra else (b, a)
        return (named, other) if role[0] == "lat" else (other, named)
    ta, tb = set(tokens(names[a])), set(tokens(names[b]))
    if "x" in ta and "y" in tb:
        return b, a
    if "y" in ta and "x" in tb:
        return a, b
    wide_a = np.nanmax(np.abs(numbers[a])) > 90 if np.isfinite(numbers[a]).any() else False
    return (b, a) if wide_a else (a, b)


def coordinate_pairs(names: list[str], columns: list[pa.Array] | None = None,
                     numbers: dict[int, np.ndarray] | None = None) -> list[tuple[int, int]]:
    """(latitude ordinal, longitude ordinal) of every coordinate pair of a table: by names, then (given the cells
    ``columns`` and the parsed ``numbers`` of its number columns) neighbours by values."""
    pairs = names_pairs(names)
    if columns is None or numbers is None:
        return pairs
    used = {i for p in pairs for i in p}
    for a in sorted(numbers):
        b = a + 1
        if b not in numbers or a in used or b in used or not (_free(names[a], None) and _free(names[b], None)):
            continue
        oriented = _orient(names, a, b, numbers)
        if oriented is None:
            continue
        lat, lon = oriented
        if looks_like_coordinates(columns[lat], columns[lon], numbers[lat], numbers[lon]):
            pairs.append((lat, lon))
            used.update((a, b))
    return sorted(pairs)
