"""Which answer to act on: the search's own results, picked by rank, score or table.

A union is written from the top-k answer (``k``), or the tables of it at or above ``min_score`` (``k`` doubled
until the answer's last score falls below it, so none at or above is left out), or the tables the user names
(scored and aligned as a search reporting them would, :func:`discovery.indexes.union.service.union_scores`).

A join is written from the result at ``rank`` of the search the parameters describe (no rank: the first, or for a
category column the first that is a lookup of its values, :func:`partner`), or from a lake table the user names: through
the lake column(s) given, else through its most joinable one (the column or column group with the
most matched query values, ties by the search's order: fewer distinct values, then ordinal) for the semantic and
numerical joins, and through the key mapping the n-ary search finds for it.
"""
from __future__ import annotations

import pyarrow.compute as pc

from ...query.resolve import QueryTable
from .sources import PlanError, lake_columns, table_id_of


def union_results(ls, query: QueryTable, tables: list | None, k: int, min_score: float | None, method: str,
                  params: dict) -> list[dict]:
    """Union results to write (see the module docstring)."""
    from ...indexes.union.lexical import DEFAULT_WEIGHT
    from ...indexes.union.search import DEFAULT_TAU
    from ...indexes.union.service import union_scores

    if tables:
        ids = [table_id_of(ls.snapshot, t) for t in tables]
        found = [r for r in union_scores(ls.snapshot, query, ids, params.get("tau", DEFAULT_TAU),
                                         params.get("score", "sum"), params.get("lexical", DEFAULT_WEIGHT))
                 if r["alignment"]]  # a table sharing words but no column has nothing to stack
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


#: A lake column holds one row per value (a lookup a category joins) when this share of its cells are distinct.
KEY_SHARE = 0.9
#: How many of the search's results the default partner of a category column is chosen among.
PARTNER_DEPTH = 10


def _key_like(snapshot, table_id: int, column: str) -> bool:
    cols = snapshot.cached("columns", ["table_id", "name", "non_null", "distinct_count"])
    hit = cols.filter(pc.and_(pc.equal(cols["table_id"], table_id), pc.equal(cols["name"], column))).to_pylist()
    return bool(hit) and hit[0]["non_null"] > 0 and hit[0]["distinct_count"] >= KEY_SHARE * hit[0]["non_null"]


def partner(snapshot, query: QueryTable, route: str, ordinals: list[int], results: list[dict]) -> dict:
    """The result a join writes when no rank is named: the first result, unless the query column is a category
    (:func:`discovery.indexes.join.context.is_category`: each value on many rows), whose partner is a lookup of its
    values, so the first result whose lake column holds one row per value (:data:`KEY_SHARE`).  A category joined to a
    column that repeats its values (another table of the same employees' countries) gives each query row an
    arbitrary one of many rows; the search ranks such a column by how many values it matches, not by what writing
    it would mean."""
    from ...indexes.join.context import is_category

    if route == "text" and is_category(query.columns[ordinals[0]]):
        for r in results:
            if _key_like(snapshot, r["table_id"], r["column"]):
                why = "the query column is a category; this is the first result whose column holds one row per value"
                return {**r, "chosen": why}
    return results[0]


def join_result(ls, query: QueryTable, column: str, rank: int | None, table, lake_column: str | None,
                search: dict) -> tuple[str, list[int], dict, dict]:
    """``(kind, query column ordinals, result, search parameters)`` of the join to write (``rank`` None: the
    :func:`partner`); kind is text or numeric.  Several text columns join a named table's named column only: the
    search finds partners of one column."""
    from ...orchestration.searches.join import route, text_tau

    several = _text_columns(column, query)
    if several is not None and (table is None or lake_column is None):
        raise PlanError(f"a join on several query columns ({column}) is written to a lake column you name: give "
                        "table and lake_column (the join search finds partners of one column)")
    if table is None:
        plan = ls.plan("join", query, column=column, top_k=rank or PARTNER_DEPTH,
                       **{k: v for k, v in search.items() if v is not None})
        answer = plan.run(ls.snapshot)
        results = answer["results"]
        if rank is None:
            if not results:
                raise PlanError(f"the join of {query.label!r} on {column!r} has no result")
            return plan.route, plan.ordinals, partner(ls.snapshot, query, plan.route, plan.ordinals, results), \
                _used(answer)
        if len(results) < rank:
            raise PlanError(f"the join of {query.label!r} on {column!r} has {len(results)} result(s); there is no "
                            f"rank {rank}")
        return plan.route, plan.ordinals, results[rank - 1], _used(answer)
    if several is not None:
        target_ordinals, kind = several, "text"
    else:
        target = route({"column": column, **search}, query)
        target_ordinals, kind = target.ordinals, ("numeric" if target.numeric else "text")
    table_id = table_id_of(ls.snapshot, table)
    names, _ = lake_columns(ls.snapshot, table_id)
    if lake_column is not None:
        parts = [c.strip() for c in lake_column.split(",")] if lake_column not in names else [lake_column]
        missing = [c for c in parts if c not in names]
        if missing:
            raise PlanError(f"lake table {table_id} has no column {missing[0]!r} (columns: {', '.join(names)})")
        if kind == "text":
            search = {**{k: v for k, v in search.items() if v is not None}, "tau": text_tau(search, ls.config)}
        return kind, target_ordinals, {"table_id": table_id, "column": lake_column}, _used(search)
    answer = ls.join(query, column, T=0.0, **search)
    mine = [r for r in answer["results"] if r["table_id"] == table_id]
    if not mine:
        raise PlanError(f"no column of lake table {table_id} joins any value of {query.label!r} column {column!r}")
    return kind, target_ordinals, mine[0], _used(answer)


def _text_columns(column: str, query: QueryTable) -> list[int] | None:
    """The ordinals of the several text columns ``column`` names comma-joined (``first,last``: a person written
    in two columns, joined to one lake column by :func:`discovery.transforms.match.match_rows`), or None when it names
    one column, or columns that are not all text (a coordinate pair is the numerical join's)."""
    from ...indexes.numjoin.columns import TEXT_KINDS

    if column in query.names or "," not in column:
        return None
    parts = [p.strip() for p in column.split(",")]
    if any(p not in query.names for p in parts) or len(set(parts)) != len(parts):
        return None
    ordinals = [query.names.index(p) for p in parts]
    kinds = query.kinds()
    return ordinals if all(kinds[i] in TEXT_KINDS for i in ordinals) else None


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
