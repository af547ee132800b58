"""The n-ary kind: the lake tables joinable with the query on a multi-column key (MATE;
:mod:`discovery.indexes.nary`)."""
from __future__ import annotations

from ...query.params import (DEFAULT_K, Param, ParameterError, check_ordinals, choice, column_name, count, key_columns,
                             optional)
from ...query.resolve import QueryTable
from .kind import Plan, SearchKind


def _methods() -> tuple[str, ...]:
    from ...indexes.nary.search import METHODS

    return METHODS


def _parameters() -> dict[str, Param]:
    from ...ground.xash import SUPPORTED_BITS

    return {"key": Param(key_columns, required=True), "k": Param(count, capped="tables"),
            "method": Param(choice(_methods())),
            "bits": Param(optional(choice(tuple(SUPPORTED_BITS)))), "initial_column": Param(optional(column_name))}


def _initial_in_key(checked: dict) -> None:
    if checked.get("initial_column") is not None:
        folded = {n.casefold(): n for n in checked["key"]}
        if checked["initial_column"].casefold() not in folded:
            raise ParameterError("initial_column", f"initial column {checked['initial_column']!r} is not one of the "
                                                   f"key columns {checked['key']}")


def _answer(snapshot, table, **params) -> dict:
    from ...indexes.nary.service import nary_search

    return nary_search(snapshot, table, **params)


def _plan(checked: dict, table: QueryTable, config) -> Plan:
    ordinals = check_ordinals("key", list(checked["key"]), table)
    return Plan("nary", table, {"k": DEFAULT_K, "method": _methods()[0], **checked}, _answer, ordinals)


NARY = SearchKind("nary", _parameters, _methods, _plan, _initial_in_key)
