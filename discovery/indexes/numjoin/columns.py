"""What the numerical join indexes in a table: its column groups, as sets of vectors (PEXESO 003 §II-A).

One function, :func:`column_groups`, used by the ``numeric`` refresh stage on lake tables and by the query on the
query table, so both sides are read by the same rules:

* ``number``: every column whose cells are numbers (declared int / float, or inferred so), as 1-d values; metric
  ``absolute``, in the column's own units.
* ``coordinates``: a latitude column and a longitude column, paired by their names in any common form or, as
  neighbours, by values written as positions are (:mod:`.coordinates`), whose values lie in range (|lat| <= 90,
  |lon| <= 180) on at least :data:`AGREEMENT` of the rows with both; metric ``haversine``, in metres.
* ``vector``: a column of fixed-length numeric lists (embeddings; the reader renders ``list<float>`` cells as JSON
  lists), length at least 2; metrics ``euclidean`` and ``angular`` (radians).

A group's set is its **distinct** values (rows where every member column parses; a zero vector has no direction and
is left out of the angular set), at most ``max_values`` of them and :data:`MAX_NUMBERS` numbers (a seeded sample
beyond, reported through ``total``): joinability counts distinct query values, as the semantic join does.  Each
group records its ``unit`` and ``spread`` -- the range of a number column, the great-circle diagonal of a coordinate
group's bounding box, the
diagonal of a vector group's bounding box (pi for angular) -- so a tau can be given in the data's units or as a
fraction of the query's spread.  A number group also records its ``quantity`` (:mod:`discovery.transforms.quantities`):
a number column joins only columns of a compatible quantity.

:data:`GROUP_RULE` names the version of these rules (and of the quantity rule): rows of ``numeric_sets`` written
under another version are read again.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...transforms.quantities import RULE as QUANTITY_RULE
from ...transforms.quantities import cells_quantity
from .coordinates import coordinate_pairs, coordinate_role
from .metric import METRICS

#: Share of the present cells that must parse for a column to be numeric / a vector column, and share of the
#: rows with both coordinates that must lie in range.
AGREEMENT = 0.95
#: Distinct values kept per group (a seeded sample beyond), and numbers: a group of long vectors keeps
#: ``MAX_NUMBERS // dim`` of them at most (32 MB of float64 per group).
MAX_VALUES = 100_000
MAX_NUMBERS = 4_000_000
#: Version of what ``numeric_sets`` rows hold: the group rules here and in :mod:`.coordinates`, and the quantity rule.
GROUP_RULE = f"groups3-{QUANTITY_RULE}"
#: Metric of each kind's index; a vector group is indexed under both.
KIND_METRICS = {"number": ("absolute",), "coordinates": ("haversine",), "vector": ("euclidean", "angular")}
_NUMBER = r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$"
_LIST = re.compile(r"^\s*\[(.*)\]\s*$", re.S)


@dataclass
class ColumnGroup:
    kind: str                   # number | coordinates | vector
    ordinals: list[int]         # (lat, lon) for coordinates
    names: list[str]
    values: np.ndarray          # (n, dim) distinct values, float64
    total: int                  # distinct values before the cap
    spread: float               # in the units of the group's first metric
    quantity: str = ""          # what a number column measures (discovery.transforms.quantities); "" for the
                                # other kinds

    @property
    def dim(self) -> int:
        return int(self.values.shape[1])

    @property
    def label(self) -> str:
        return ",".join(self.names)

    def units(self, metric: str) -> str:
        return METRICS[metric].units if self.kind != "number" else "column units"


def parse_number_column(col: pa.Array) -> np.ndarray:
    """Each cell as a float64 (thousands separators, currency and percent signs dropped); NaN when not a number."""
    col = col.cast(pa.string()) if col.type != pa.string() else col
    cleaned = pc.replace_substring_regex(pc.utf8_trim_whitespace(col), pattern=r"[,$€£%]", replacement="")
    ok = pc.fill_null(pc.match_substring_regex(cleaned, pattern=_NUMBER), False).to_numpy(zero_copy_only=False)
    out = np.full(len(col), np.nan)
    if ok.any():
        out[ok] = pc.cast(pc.filter(cleaned, pa.array(ok)), pa.float64()).to_numpy(zero_copy_only=False)
    out[~np.isfinite(out)] = np.nan
    return out


def _list_cells(cells: list) -> list[np.ndarray | None]:
    """Each cell as a numeric list (finite numbers), else None."""
    rows: list = []
    for c in cells:
        row = None
        m = _LIST.match(c) if c else None
        if m and m.group(1).strip():
            try:
                row = np.array([float(x) for x in m.group(1).split(",")], dtype=np.float64)
            except ValueError:
                row = None
            if row is not None and not np.isfinite(row).all():
                row = None
        rows.append(row)
    return rows


def _as_rows(rows: list[np.ndarray | None], dim: int) -> np.ndarray:
    out = np.full((len(rows), dim), np.nan)
    for i, r in enumerate(rows):
        if r is not None and r.size == dim:
            out[i] = r
    return out


def parse_vector_column(col: pa.Array) -> np.ndarray | None:
    """Cells as rows of a fixed-length numeric list (NaN rows where a cell is not one), or None when the column is
    not a vector column (fewer than :data:`AGREEMENT` of its present cells parse, or lengths differ, or length < 2)."""
    cells = col.to_pylist()
    present = [c for c in cells if c is not None and c.strip()]
    if not present or not present[0].lstrip().startswith("["):
        return None
    rows = _list_cells(cells)
    lengths: dict[int, int] = {}
    for row in rows:
        if row is not None:
            lengths[row.size] = lengths.get(row.size, 0) + 1
    if not lengths:
        return None
    dim, count = max(lengths.items(), key=lambda kv: (kv[1], kv[0]))
    if dim < 2 or count < AGREEMENT * len(present):
        return None
    return _as_rows(rows, dim)


def vector_rows(col: pa.Array, dim: int) -> np.ndarray:
    """Cells as rows of ``dim`` numbers, NaN rows where a cell is no such list (the cells of a column already known
    to be a vector column, as :func:`parse_vector_column` reads them)."""
    return _as_rows(_list_cells(col.to_pylist()), dim)


def _numeric(values: np.ndarray, present: int) -> bool:
    return present > 0 and int(np.isfinite(values).sum()) >= AGREEMENT * present


#: Query column kinds the semantic join takes (text and dates); number columns go to the numerical join.
TEXT_KINDS = ("string", "date", "datetime")


def joinable_columns(table) -> str:
    """The columns of a query table (:class:`discovery.query.resolve.QueryTable`) a join can take, for messages: text
    and number columns, vector columns, coordinate pairs."""
    kinds = table.kinds()
    out = [n for n, k in zip(table.names, kinds) if k in TEXT_KINDS + ("int", "float")]
    out += [f"{table.names[a]},{table.names[b]}" for a, b in coordinate_pairs(table.names)
            if kinds[a] in ("int", "float") and kinds[b] in ("int", "float")]
    return ", ".join(out) or "none"


def distinct_rows(rows: np.ndarray, max_values: int = MAX_VALUES, seed: int = 0) -> tuple[np.ndarray, int]:
    """Distinct finite rows in ascending order (at most ``max_values``, a seeded sample beyond) and their count."""
    rows = rows[np.isfinite(rows).all(axis=1)]
    rows = rows + 0.0  # -0.0 and 0.0 are one value
    uniq = np.unique(rows, axis=0) if rows.shape[0] else rows.reshape(0, rows.shape[1])
    total = int(uniq.shape[0])
    if total > max_values:
        keep = np.sort(np.random.default_rng(seed).choice(total, max_values, replace=False))
        uniq = uniq[keep]
    return np.ascontiguousarray(uniq), total


def spread(kind: str, values: np.ndarray) -> float:
    """The group's extent in its first metric's units (see the module docstring)."""
    if values.shape[0] == 0:
        return 0.0
    lo, hi = values.min(axis=0), values.max(axis=0)
    if kind == "coordinates":
        return float(METRICS["haversine"].distance(lo[None, :], hi[None, :])[0])
    return float(np.sqrt(np.sum((hi - lo) ** 2)))


def _group(kind, ordinals, names, rows, max_values, seed, quantity: str = "") -> ColumnGroup | None:
    values, total = distinct_rows(rows, min(max_values, max(1, MAX_NUMBERS // rows.shape[1])), seed)
    if values.shape[0] == 0:
        return None
    return ColumnGroup(kind, list(ordinals), [names[i] for i in ordinals], values, total, spread(kind, values),
                       quantity)


def coordinates_group(names, columns, lat: int, lon: int, numbers: dict | None = None,
                      max_values: int = MAX_VALUES, seed: int = 0) -> ColumnGroup | None:
    """The coordinate group of columns ``lat`` and ``lon``, or None when their values are not in range."""
    numbers = numbers or {}
    la = numbers[lat] if lat in numbers else parse_number_column(columns[lat])
    lo = numbers[lon] if lon in numbers else parse_number_column(columns[lon])
    both = np.isfinite(la) & np.isfinite(lo)
    if not both.any():
        return None
    ok = both & (np.abs(la) <= 90) & (np.abs(lo) <= 180)
    if ok.sum() < AGREEMENT * both.sum():
        return None
    return _group("coordinates", (lat, lon), names, np.column_stack([la[ok], lo[ok]]), max_values, seed)


def column_groups(names: list[str], columns: list[pa.Array], max_values: int = MAX_VALUES,
                  seed: int = 0) -> list[ColumnGroup]:
    """Every numeric, coordinate and vector group of a table (number groups first, in column order)."""
    groups: list[ColumnGroup] = []
    numbers: dict[int, np.ndarray] = {}
    for i, col in enumerate(columns):
        present = len(col) - col.null_count
        if present == 0:
            continue
        parsed = parse_number_column(col)
        if _numeric(parsed, present):
            numbers[i] = parsed
            g = _group("number", (i,), names, parsed[:, None], max_values, seed, cells_quantity(names[i], col))
            if g is not None:
                groups.append(g)
            continue
        vec = parse_vector_column(col)
        if vec is not None:
            g = _group("vector", (i,), names, vec, max_values, seed)
            if g is not None:
                groups.append(g)
    for lat, lon in coordinate_pairs(names, columns, numbers):
        if lat in numbers and lon in numbers:
            g = coordinates_group(names, columns, lat, lon, numbers, max_values, seed)
            if g is not None:
                groups.append(g)
    return groups


def query_group(names: list[str], columns: list[pa.Array], ordinals: list[int], max_values: int = MAX_VALUES,
                seed: int = 0) -> ColumnGroup | str:
    """The group the query names by ``ordinals`` (one column, or a latitude and a longitude column in either
    order), or the reason it is none (a one-line message naming the columns that can be joined)."""
    if len(ordinals) == 2:
        a, b = ordinals
        ra, rb = coordinate_role(names[a]), coordinate_role(names[b])
        if ra and rb and {ra[0], rb[0]} == {"lat", "lon"}:
            lat, lon = (a, b) if ra[0] == "lat" else (b, a)
        else:
            lat, lon = a, b  # as given: latitude first
        g = coordinates_group(names, columns, lat, lon, max_values=max_values, seed=seed)
        return g if g is not None else (f"columns {names[lat]!r}, {names[lon]!r} are not latitude, longitude pairs "
                                        "in degrees")
    if len(ordinals) != 1:
        return "a numerical join takes one column, or a latitude and a longitude column"
    i = ordinals[0]
    col = columns[i]
    present = len(col) - col.null_count
    parsed = parse_number_column(col)
    if _numeric(parsed, present):
        g = _group("number", (i,), names, parsed[:, None], max_values, seed, cells_quantity(names[i], col))
        return g if g is not None else f"column {names[i]!r} has no values"
    vec = parse_vector_column(col) if present else None
    if vec is not None:
        g = _group("vector", (i,), names, vec, max_values, seed)
        return g if g is not None else f"column {names[i]!r} has no values"
    return f"column {names[i]!r} is neither numbers, coordinates nor a fixed-length numeric list"
