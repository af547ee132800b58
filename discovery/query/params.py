"""Search parameters, checked the same way everywhere: the domains the searches are sound on, and their checks.

Every parameter a user can give a union, semantic-join or n-ary search is checked before an index is read, with a
one-line :class:`ParameterError` that names the parameter; the checks are the functions here, and each search kind
(:mod:`discovery.orchestration.searches`) names the ones its parameters take.  The domains:

* union ``tau`` in (0, 1]: Definition 5 counts a column pair only when its similarity reaches tau, and the
  refinement and pruning bounds (Algorithm 3, Lemmas 1-3) assume a positive threshold; with tau <= 0 every pair
  qualifies, including dissimilar ones, and the bounds no longer hold.  ``phi_c`` >= 1 (at least one centroid is
  probed), ``phi_ref`` and ``phi_r`` >= k (fewer candidates than answers cannot hold the top-k);
* join ``tau`` in (0, 1) for a text column (a fraction of the metric's maximum distance,
  :func:`discovery.indexes.join.metric.chord_threshold`; 1 would match every value with every value), a finite distance
  >= 0 in the column's units for a numerical join (numbers, coordinates in metres, vectors), refused with one
  message naming both halves (:data:`JOIN_TAU_DOMAIN`); ``T`` in [0, 1] (threshold search; T = 0: any column with
  a match) or ``top_k`` >= 1 (top-k search), not both;
* n-ary ``key``: two or more distinct column names (one column is a unary join), ``bits`` one of the XASH sizes.

Numbers must be finite and of their kind (a bool is not a number here, NaN and infinities are refused).  Counts of
results or candidates larger than the lake are capped at its number of indexed tables (columns for join results and
Starmie's k'), which returns the same answer: a top-k with k above the number of tables is every table.  Column names
are checked against the query table once the query is resolved
(:meth:`discovery.orchestration.searches.SearchKind.plan`).
"""
from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass
from collections.abc import Callable

from .resolve import QueryError, QueryTable, from_arrow, is_data

#: Largest snapshot or lake table id (ids are int64).
MAX_ID = 2 ** 63 - 1
#: Results of a union or n-ary search when k is not given.
DEFAULT_K = 10


class ParameterError(QueryError):
    """A search parameter outside its domain; ``param`` names it and the message is one line."""

    def __init__(self, param: str | None, message: str):
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Param:
    """How one parameter is checked: ``check(name, value)`` returns the value to search with or raises."""

    check: Callable[[str, object], object]
    required: bool = False
    capped: str = ""            # a count of "tables" or "columns": capped at how many the snapshot indexes


def shown(value) -> str:
    """A parameter's value as an error message shows it: scalars and short lists by their repr, cut at 80
    characters; anything else (a DataFrame, an array) by its type alone, never its content."""
    if not isinstance(value, (str, numbers.Number, bool, type(None), list, tuple)):
        return f"a {type(value).__name__}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def count(name: str, value) -> int:
    """A positive integer (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(name, f"{name} must be a positive integer, got {shown(value)}")
    if value < 1:
        raise ParameterError(name, f"{name} must be at least 1, got {int(value)}")
    return int(value)


def interval(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False) -> Callable[[str, object], float]:
    """A finite real number in the interval from ``lo`` to ``hi`` (each end open or closed)."""
    domain = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"

    def check(name: str, value) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ParameterError(name, f"{name} must be a number in {domain}, got {shown(value)}")
        v = float(value)
        if not math.isfinite(v) or v < lo or v > hi or (lo_open and v == lo) or (hi_open and v == hi):
            raise ParameterError(name, f"{name} must be a number in {domain}, got {shown(value)}")
        return v

    return check


def choice(options: tuple) -> Callable[[str, object], object]:
    """One of ``options`` (strings, or integers: then an integral value of any integer type, never a bool/float)."""
    def check(name: str, value):
        for option in options:
            same_kind = isinstance(value, str) if isinstance(option, str) else (
                isinstance(value, numbers.Integral) and not isinstance(value, bool))
            if same_kind and value == option:
                return option
        raise ParameterError(name, f"{name} must be one of {', '.join(map(str, options))}, got {shown(value)}")

    return check


def column_name(name: str, value) -> str:
    """A query column name: a non-blank string (matched against the query table when the search is planned)."""
    if not isinstance(value, str):
        raise ParameterError(name, f"{name} must be a column name (a string), got {shown(value)}")
    if not value.strip():
        raise ParameterError(name, f"{name} must name a column of the query, got {shown(value)}")
    return value


def optional(check: Callable[[str, object], object]) -> Callable[[str, object], object]:
    return lambda name, value: None if value is None else check(name, value)


def key_columns(name: str, value) -> list[str]:
    """An n-ary key: a list of two or more distinct column names, or one string of them separated by commas."""
    if isinstance(value, str):
        names = [part.strip() for part in value.split(",")]
    elif isinstance(value, (list, tuple)):
        names = [column_name(name, v).strip() for v in value]
    else:
        raise ParameterError(name, f"{name} must be a list of column names or 'COL1,COL2[,...]', got {shown(value)}")
    if any(not n for n in names):
        raise ParameterError(name, f"{name} {shown(value)} has an empty column name; give it as COL1,COL2[,...]")
    if len(names) < 2:
        raise ParameterError(name, f"{name} {shown(value)} names one column: that is a unary join, use the semantic "
                                   "join (`lakescout join`); an n-ary key needs two or more columns")
    if len(set(names)) != len(names):
        raise ParameterError(name, f"{name} columns must be distinct, got {names}")
    return names


#: The domain of a join's ``tau``, said the same way whichever end of it a value misses: which half applies is known
#: only once the query column is read (text or numbers).
JOIN_TAU_DOMAIN = ("a fraction in (0, 1) of the maximum distance for a text column, or a distance >= 0 in the "
                   "column's units for numbers, coordinates (metres) and vectors")


def join_tau_error(value, why: str = "") -> ParameterError:
    """The one refusal of a join ``tau`` outside :data:`JOIN_TAU_DOMAIN` (``why``: which half it missed, when known)."""
    return ParameterError("tau", f"tau must be {JOIN_TAU_DOMAIN}, got {shown(value)}{why}")


def join_tau(name: str, value) -> float:
    """A join ``tau`` that lies in one half of :data:`JOIN_TAU_DOMAIN` (checked against the column's half later)."""
    try:
        return interval(0.0, math.inf)(name, value)
    except ParameterError:
        raise join_tau_error(value) from None


def check_id(name: str, value) -> int:
    """A snapshot or lake table id: an integer in int64's non-negative range (ids are stored as int64, and a larger
    Python int cannot even be compared with them)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(name, f"{name} must be an integer id, got {shown(value)}")
    if not 0 <= int(value) <= MAX_ID:
        raise ParameterError(name, f"{name} must be an id between 0 and {MAX_ID}, got {shown(value)}")
    return int(value)


def check_query(query) -> str | int | QueryTable:
    """A query as a file path, a catalogued lake path, a lake table id (non-negative int64) or a table already
    resolved (a server resolves queries under its own rules, :func:`discovery.query.resolve.resolve_query`)."""
    if isinstance(query, QueryTable):
        return query
    if is_data(query):
        return from_arrow(query, f"({type(query).__name__})")
    if isinstance(query, os.PathLike):
        query = os.fspath(query)
    if isinstance(query, bool) or not isinstance(query, (str, numbers.Integral)):
        raise ParameterError("query", f"query must be a file path, a catalogued lake path, a table id, a pandas "
                                      f"DataFrame or a pyarrow Table, got {shown(query)}")
    if isinstance(query, str):
        if not query.strip():
            raise ParameterError("query", "query must name a file, a catalogued lake path or a table id, got ''")
        if not query.isdigit():
            return query
        if not query.isdecimal():
            raise ParameterError("query", f"query {shown(query)} is neither a table id nor a usable file name")
        check_id("query", int(query))
        return query
    return check_id("query", query)


def comma_hint(missing: str, table: QueryTable) -> str:
    """What to add to "no column ``missing``" when ``missing`` is a piece of a query column whose name has a comma.

    A key given as one string (``--key`` on the command line) is split on commas, so such a column cannot be named
    that way; a key given as a list (Python API, batch spec) can name it.
    """
    for c in table.names:
        if "," in c and missing.strip().casefold() in (p.strip().casefold() for p in c.split(",")):
            return (f"; column {c!r} has a comma in its name, and a comma-separated key (--key) is split at commas: "
                    "name it in a key given as a list (Python API or batch spec)")
    return ""


def check_ordinals(param: str, names: list[str], table: QueryTable) -> list[int]:
    """The ordinals of the distinct query columns ``names`` (the value of parameter ``param``) in ``table``."""
    ordinals = []
    for n in names:
        try:
            ordinals.append(table.ordinal(n))
        except QueryError as exc:
            raise ParameterError(param, str(exc) + comma_hint(n, table)) from None
    if len(set(ordinals)) != len(ordinals):
        raise ParameterError(param, f"key columns must be distinct, got {names}")
    return ordinals
