"""Which answer to act on: the search's own results, picked by rank, score or table.

A union is written from the top-k answer (``k``), or the tables of it at or above ``min_score`` (``k`` doubled
until the answer's last score falls below it, so none at or above is left out), or the tables the user names
(scored and aligned as a search reporting them would, :func:`discovery.union.service.union_scores`).

A join is written from the result at ``rank`` of the search the parameters describe, or from a lake table the user
names: through the lake column(s) given, else through its most joinable one (the column or column group with the
most matched query values, ties by the search's order: fewer distinct values, then ordinal) for the semantic and
numerical joins, and through the key mapping the n-ary search finds for it.
"""
from __future__ import annotations

from ..query import QueryTable
from .plans import PlanError, lake_columns, table_id_of


def union_results(ls, query: QueryTable, tables: list | None, k: int, min_score: float | None, method: str,
                  params: dict) -> list[dict]:
    """Union results to write (see the module docstring)."""
    from ..union.search import DEFAULT_TAU
    from ..union.service import union_scores

    if tables:
        ids = [table_id_of(ls.snapshot, t) for t in tables]
        found = union_scores(ls.snapshot, query, ids, params.get("tau", DEFAULT_TAU))
        missing = sorted(set(ids) - {r["table_id"] for r in found})
        if missing:
            raise PlanError(f"lake table {missing[0]} has no column similar enough to one of query "
                            f"{query.label!r} (tau {params.get('tau', DEFAULT_TAU)}): it aligns nothing to union")
        return found
    limit = ls.snapshot.counts.get("tables_ok") or 10 ** 9
    while True:
        results = ls.union(query, k=k, method=method, **params)["results"]
        if min_score is None:
            return results
        if len(results) < k or results[-1]["score"] < min_score or k >= limit:
            return [r for r in results if r["score"] >= min_score]
        k *= 2


def join_result(ls, query: QueryTable, column: str, rank: int, table, lake_column: str | None,
                search: dict) -> tuple[str, list[int], dict, dict]:
    """``(kind, query column ordinals, result, search parameters)`` of the join to write; kind is text or
    numeric."""
    from ..numjoin.service import join_target

    target = join_target({"column": column, **search}, query)
    kind = "numeric" if target.numeric else "text"
    if table is None:
        answer = ls.join(query, column, top_k=rank, **search)
        results = answer["results"]
        if len(results) < rank:
            raise PlanError(f"the join of {query.label!r} on {column!r} has {len(results)} result(s); there is no "
                            f"rank {rank}")
        return kind, target.ordinals, results[rank - 1], _used(answer)
    table_id = table_id_of(ls.snapshot, table)
    names, _ = lake_columns(ls.snapshot, table_id)
    if lake_column is not None:
        parts = [c.strip() for c in lake_column.split(",")] if lake_column not in names else [lake_column]
        missing = [c for c in parts if c not in names]
        if missing:
            raise PlanError(f"lake table {table_id} has no column {missing[0]!r} (columns: {', '.join(names)})")
        if kind == "text":
            from ..config import load_config

            search = {"tau": load_config().join.tau, **{k: v for k, v in search.items() if v is not None}}
        return kind, target.ordinals, {"table_id": table_id, "column": lake_column}, _used(search)
    answer = ls.join(query, column, T=0.0, **search)
    mine = [r for r in answer["results"] if r["table_id"] == table_id]
    if not mine:
        raise PlanError(f"no column of lake table {table_id} joins any value of {query.label!r} column {column!r}")
    return kind, target.ordinals, mine[0], _used(answer)


def _used(answer: dict) -> dict:
    """The parameters the search ran with, as the value mapping needs them."""
    return {k: answer.get(k) for k in ("tau", "tau_share", "metric") if answer.get(k) is not None}


def nary_result(ls, query: QueryTable, key: list[str], rank: int, table, lake_key: list[str] | None,
                search: dict) -> dict:
    """The n-ary result to write: at ``rank``, or the named table's (with ``lake_key``, or the mapping the search
    finds for it)."""
    if table is not None:
        table_id = table_id_of(ls.snapshot, table)
        if lake_key is not None:
            if len(lake_key) != len(key):
                raise PlanError(f"lake_key names {len(lake_key)} column(s) for a key of {len(key)}")
            return {"table_id": table_id, "mapping": dict(zip(key, lake_key))}
        limit = ls.snapshot.counts.get("tables_ok") or 10 ** 6
        results = ls.nary(query, key, k=max(limit, 1), **search)["results"]
        mine = [r for r in results if r["table_id"] == table_id]
        if not mine:
            raise PlanError(f"lake table {table_id} holds none of {query.label!r}'s key tuples")
        return mine[0]
    results = ls.nary(query, key, k=rank, **search)["results"]
    if len(results) < rank:
        raise PlanError(f"the n-ary join of {query.label!r} on {key} has {len(results)} result(s); there is no rank "
                        f"{rank}")
    return results[rank - 1]
