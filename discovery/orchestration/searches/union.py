"""The union kind: the lake tables unionable with the query table (PGTUS, TACTUS, Starmie, exact;
:mod:`discovery.indexes.union`)."""
from __future__ import annotations

import inspect

from ...query.params import DEFAULT_K, Param, ParameterError, choice, count, interval, optional
from ...query.resolve import QueryTable
from .kind import Plan, SearchKind, at_least_k


def _methods() -> tuple[str, ...]:
    from ...indexes.union.search import METHODS

    return METHODS


def _parameters() -> dict[str, Param]:
    """The union parameters with a check here that :meth:`UnionIndex.search` still takes from a user (not the ones
    the service fills in): a parameter the search drops stops being accepted."""
    from ...indexes.union.search import ARRIVALS, UnionIndex
    from ...indexes.union.widths import SCORES

    spec = {"k": Param(count, capped="tables"), "method": Param(choice(_methods())),
            "tau": Param(interval(0.0, 1.0, lo_open=True)), "phi_c": Param(count),
            "phi_ref": Param(optional(count), capped="tables"), "phi_r": Param(optional(count), capped="tables"),
            "k_prime": Param(optional(count), capped="columns"),
            "tau_abs": Param(interval(-1.0, 1.0)), "tau_drop": Param(interval(0.0, 2.0)),
            "arrival": Param(choice(tuple(ARRIVALS))), "score": Param(choice(SCORES)),
            "lexical": Param(interval(0.0, 1.0))}
    sig = inspect.signature(UnionIndex.search)
    taken = {p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY} - {
        "exclude_table_id", "query_table_vector", "query_quantities", "lexical_cosines"}
    return {n: p for n, p in spec.items() if n in taken | {"k", "method"}}


def _answer(snapshot, table, **params) -> dict:
    from ...indexes.union.service import union_search

    return union_search(snapshot, table, **params)


def _plan(checked: dict, table: QueryTable, config) -> Plan:
    from ...indexes.union.search import EXACT_METHODS

    params = {"k": DEFAULT_K, "method": _methods()[0], **checked}
    if params.get("score", "sum") != "sum" and params["method"] not in EXACT_METHODS:
        raise ParameterError("score", f"score {params['score']!r} is answered by {', '.join(EXACT_METHODS)}, "
                                      f"not by method {params['method']!r}")
    return Plan("union", table, params, _answer)


UNION = SearchKind("union", _parameters, _methods, _plan, at_least_k)
