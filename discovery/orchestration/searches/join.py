"""The join kind: lake columns joinable with one query column, semantically when it holds text (PEXESO over value
vectors, :mod:`discovery.indexes.join`) and by distance when it holds numbers, a latitude / longitude pair or
fixed-length numeric lists (PEXESO over the values, :mod:`discovery.indexes.numjoin`).

Which join a column takes is decided once per search, here (:func:`route`), and the parameters are checked against
it: ``tau`` is a fraction in (0, 1) of the maximum distance for text and a distance in the column's units for
numbers; ``tau_share``, ``similarity`` and ``metric`` are the numerical join's; each join has its own methods.  The
defaults then follow the route: ``top_k`` from ``[join]`` or ``[numjoin]``, text's ``tau`` and context margin from
``[join]``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...config import Config
from ...query.params import (Param, ParameterError, choice, column_name, comma_hint, count, interval, join_tau,
                             join_tau_error, optional)
from ...query.resolve import QueryError, QueryTable
from .kind import Plan, SearchKind

#: Parameters only the numerical join takes.
NUMERIC_ONLY = ("tau_share", "similarity", "metric")


def _text_methods() -> tuple[str, ...]:
    from ...indexes.join.search import METHODS

    return METHODS


def _numeric_methods() -> tuple[str, ...]:
    from ...indexes.numjoin.service import METHODS

    return METHODS


def _methods() -> tuple[str, ...]:
    return tuple(dict.fromkeys(_text_methods() + _numeric_methods()))


def _parameters() -> dict[str, Param]:
    """Both joins take these; which join a column goes to, and the domain of ``tau`` there, is checked against the
    query by :func:`route`."""
    return {"column": Param(column_name, required=True), "tau": Param(optional(join_tau)),
            "T": Param(optional(interval(0.0, 1.0))), "top_k": Param(optional(count), capped="columns"),
            "method": Param(choice(_methods())), "tau_share": Param(optional(interval(0.0, 1.0, lo_open=True))),
            "similarity": Param(optional(choice(("hit", "all")))),
            "metric": Param(optional(choice(("euclidean", "angular"))))}


def _one_mode(checked: dict) -> None:
    if checked.get("T") is not None and checked.get("top_k") is not None:
        raise ParameterError("T", "give either top_k (the k most joinable columns) or T (every column whose "
                                  "joinability reaches T), not both")


@dataclass(frozen=True)
class Route:
    """Where a join goes: ``numeric`` (numbers, coordinates, vectors) or text, and the query columns it reads."""

    numeric: bool
    ordinals: list[int]


def _columns(column: str, table: QueryTable) -> list[int]:
    """The ordinals ``column`` names: one column, or a coordinate pair ``LAT,LNG`` when it is not a column but
    splits at commas into two number columns."""
    from ...indexes.numjoin.columns import joinable_columns

    try:
        return [table.ordinal(column)]
    except QueryError as exc:
        parts = [p.strip() for p in column.split(",")]
        if len(parts) < 2:
            raise ParameterError("column", str(exc) + comma_hint(column, table)) from None
        if len(parts) != 2:
            raise ParameterError("column", f"column {column!r}: a numerical join takes one column, or a latitude "
                                           "and a longitude column (LAT,LNG)") from None
    try:
        ordinals = [table.ordinal(p) for p in parts]
    except QueryError as inner:
        raise ParameterError("column", str(inner)) from None
    if ordinals[0] == ordinals[1]:
        raise ParameterError("column", f"column {column!r} names one column twice; give LAT,LNG")
    kinds = table.kinds()
    if any(kinds[i] not in ("int", "float") for i in ordinals):
        raise ParameterError("column", f"query {table.label!r} has no column {column!r}, and its parts are not a "
                                       f"latitude and a longitude column (columns that can be joined: "
                                       f"{joinable_columns(table)})")
    return ordinals


def route(params: dict, table: QueryTable) -> Route:
    """Which join ``params["column"]`` of ``table`` takes, with the parameters checked against it.

    A number column, a coordinate pair or a column of numeric lists goes to the numerical join; text (and dates) to
    the semantic join; anything else is refused with the columns that can be joined."""
    from ...indexes.numjoin.columns import TEXT_KINDS, joinable_columns, parse_vector_column

    ordinals = _columns(params["column"], table)
    numeric = True
    if len(ordinals) == 1:
        kind, name = table.kinds()[ordinals[0]], table.names[ordinals[0]]
        if kind == "empty":
            raise QueryError(f"column {name!r} of query {table.label!r} is empty")
        numeric = kind in ("int", "float") or (kind == "string"
                                               and parse_vector_column(table.columns[ordinals[0]]) is not None)
        if not numeric and kind not in TEXT_KINDS:
            raise QueryError(f"column {name!r} of query {table.label!r} is {kind}, neither text nor numbers: "
                             f"columns that can be joined: {joinable_columns(table)}")
    method, tau = params.get("method"), params.get("tau")
    if numeric:
        if method is not None and method not in _numeric_methods():
            raise ParameterError("method", f"method {method!r} is a semantic-join method; the numerical join takes "
                                           f"{', '.join(_numeric_methods())}")
    else:
        column = table.names[ordinals[0]]
        given = [p for p in NUMERIC_ONLY if params.get(p) is not None]
        if given:
            raise ParameterError(given[0], f"{given[0]} is a parameter of the numerical join; column {column!r} "
                                           "is text")
        if method is not None and method not in _text_methods():
            raise ParameterError("method", f"method {method!r} is a numerical-join method; the semantic join "
                                           f"takes {', '.join(_text_methods())}")
        if tau is not None and not 0 < tau < 1:
            raise join_tau_error(tau, f" (column {column!r} is text)")
    if tau is not None and params.get("tau_share") is not None:
        raise ParameterError("tau", "give tau (in the column's units) or tau_share (a fraction of its spread), not "
                                    "both")
    return Route(numeric, ordinals)


def text_tau(params: dict, cfg: Config) -> float:
    """The semantic join's tau: the one ``params`` give, else ``[join] tau`` of ``cfg``.  The one place its default
    is filled in, for a search and for the writes that pair a join's values (:mod:`discovery.surfaces.materialize`); its
    range is checked where it is given (:func:`discovery.query.params.join_tau`, and :func:`route` once the column is
    known to be text)."""
    tau = params.get("tau")
    return cfg.join.tau if tau is None else float(tau)


def _numeric_answer(snapshot, table, *, ordinals, **params) -> dict:
    from ...indexes.numjoin.service import numeric_join_search

    return numeric_join_search(snapshot, table, ordinals, **params)


def _text_answer(snapshot, table, **params) -> dict:
    from ...indexes.join.service import join_search

    return join_search(snapshot, table, **params)


def _plan(checked: dict, table: QueryTable, cfg: Config) -> Plan:
    where = route(checked, table)
    params = {k: v for k, v in checked.items() if v is not None}
    if checked.get("top_k") is None and checked.get("T") is None:
        params["top_k"] = cfg.numjoin.top_k if where.numeric else cfg.join.top_k
    if where.numeric:
        params["method"] = params.get("method", _numeric_methods()[0])
        params["config"] = cfg.numjoin  # max_values and the default tau: the planner's, on whatever machine it runs
        params.pop("column")
        return Plan("join", table, {"ordinals": where.ordinals, **params}, _numeric_answer, where.ordinals,
                    "numeric")
    params["tau"] = text_tau(params, cfg)
    params.setdefault("method", _text_methods()[0])
    params["context_margin"] = cfg.join.context_margin
    params["category_margin"] = cfg.join.category_margin
    return Plan("join", table, params, _text_answer, where.ordinals, "text")


JOIN = SearchKind("join", _parameters, _methods, _plan, _one_mode)
