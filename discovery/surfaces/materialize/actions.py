"""The three actions on an answer, as the Python API and the CLI take them: ``stack`` (write the union), ``augment``
(write the join) and ``pairs`` (write the join's value mapping).

Each checks its parameters here (one-line :class:`~discovery.query.params.ParameterError` naming the parameter, as every
search does), resolves the query once (a file, a lake table, or a table given as data), runs the search the
parameters describe through the same :class:`~discovery.api.Lakescout` methods users call, picks the results
(:mod:`.select`), and materialises them (:mod:`.execute`).  With ``output`` the table is written (:mod:`.output`)
and the description returned; without, the table is returned with the description in its schema metadata.
"""
from __future__ import annotations

import numbers
import time
from typing import cast

import pyarrow as pa

from ...config import Config, Limits
from ...query.params import ParameterError, check_query, choice, count, interval, key_columns
from ...query.resolve import QueryTable, resolve_query
from .augment import MODES, FanOut
from .execute import Materialized, join_plan, join_source, run_plan, union_plan
from .output import output_format, write_table
from .plan import JoinPlan, UnionPlan
from .select import join_result, nary_result, union_results
from .sources import PlanError
from .sources import Matching


def _query(ls, query) -> QueryTable:
    return resolve_query(ls.snapshot, check_query(query))


def _names(name: str, value) -> list[str] | None:
    """A list of names, given as a list or as one comma-separated string."""
    if value is None:
        return None
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else list(value)
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise ParameterError(name, f"{name} must name columns, as a list or 'COL1,COL2'")
    return names


def _tables(value) -> list | None:
    if value is None:
        return None
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items or any(isinstance(t, bool) or not isinstance(t, (str, numbers.Integral)) for t in items):
        raise ParameterError("tables", "tables must be lake table ids or catalogued paths")
    return list(items)


def _deliver(m: Materialized, output: str | None, fmt: str | None, overwrite: bool):
    if output is None:
        return m.with_metadata()
    fmt = output_format(output, fmt)
    started = time.perf_counter()
    size = write_table(m.with_metadata(), output, fmt, overwrite)
    m.description["output"] = {"path": output, "format": fmt, "bytes": size,
                               "seconds": round(time.perf_counter() - started, 3)}
    return m.description


def _run(plan, cfg: Config, output: str | None, fmt: str | None, overwrite: bool, master: str | None):
    """Materialise ``plan`` here, or, with a ``master`` and lake tables of at least ``[materialize]
    spark_min_bytes`` (of ``cfg``, the session's configuration), as a Spark job (which writes ``output`` itself)."""
    size = sum(s.table.bytes for s in plan.sources)
    if master and output is not None and size >= cfg.materialize.spark_min_bytes:
        return _on_spark(plan, cfg.limits, output, output_format(output, fmt), overwrite, master)
    return _deliver(run_plan(plan, cfg.limits), output, fmt, overwrite)


def _on_spark(plan, limits: Limits, output: str, fmt: str, overwrite: bool, master: str) -> dict:
    import tempfile

    from ..submit import run_job
    from .output import check_target
    from .plan import save_plan

    check_target(output, fmt, overwrite)
    with tempfile.TemporaryDirectory(prefix="lakescout-plan-") as folder:
        save_plan(plan, folder, limits)
        args = ["--plan", folder, "--output", output, "--format", fmt] + (["--overwrite"] if overwrite else [])
        return run_job("materialize", master, args, f"writing {output!r}", "nothing was written")


def stack(ls, query, *, output: str | None = None, format: str | None = None, overwrite: bool = False,
          master: str | None = None, **params):
    """Write (or return) the union of ``query`` with the lake tables a union search picks; see
    :meth:`discovery.api.Lakescout.stack`."""
    return _run(stack_plan(ls, query, **params), ls.config, output, format, overwrite, master)


def stack_plan(ls, query, *, tables=None, k: int = 10, min_score: float | None = None, method: str = "pgtus++",
               tau: float | None = None, min_columns: float | None = None, query_rows: bool = True,
               dedupe: bool = False, strict: bool = False) -> UnionPlan:
    """The plan :func:`stack` runs: with the search's tables (no ``tables`` named), only those whose alignment fills
    at least ``min_columns`` (default ``[materialize] stack_min_columns`` of ``ls.config``) of the query's columns,
    each one left out named in a warning; a table that fills fewer writes rows that are mostly nulls, joined on a
    column or two that merely look alike (orders under a staff list through ``rep ~ name``)."""
    q = _query(ls, query)
    k = count("k", k)
    min_score = None if min_score is None else interval(0.0, float("inf"), lo_open=True)("min_score", min_score)
    min_columns = interval(0.0, 1.0)("min_columns", ls.config.materialize.stack_min_columns
                                     if min_columns is None else min_columns)
    params = {} if tau is None else {"tau": tau}
    named = _tables(tables)
    results = union_results(ls, q, named, k, min_score, method, params)
    notes = []
    if named is None:
        need = min_columns * len(q.names)
        notes = [f"lake table {r['path']!r} (rank {r.get('rank')}, score {r['score']:.3f}) is not stacked: it aligns "
                 f"{len(r['alignment'])} of the query's {len(q.names)} columns, fewer than min_columns "
                 f"{min_columns:g} of them (name it in tables to stack it)" for r in results
                 if len(r["alignment"]) < need]
        results = [r for r in results if len(r["alignment"]) >= need]
        if not results and notes:
            raise PlanError(f"no lake table of the union search aligns {min_columns:g} of query {q.label!r}'s "
                            f"{len(q.names)} columns; lower min_columns or name the tables")
    plan = union_plan(ls.snapshot, q, results, include_query=bool(query_rows), dedupe=bool(dedupe),
                      strict=bool(strict))
    plan.notes = notes + plan.notes
    return plan


def _fan_out(fan_out: str, max_matches: int) -> FanOut:
    return FanOut(cast(str, choice(MODES)("fan_out", fan_out)), count("max_matches", max_matches))  # MODES: strings


def _matching(cfg: Config, matcher: str | None, precision: float | None, master: str | None = None) -> Matching:
    """How a text join's values are paired: the parameters given, else ``[materialize] matcher`` / ``precision`` of
    ``cfg`` (the session's configuration); given a Spark ``master``, a lake column of a table of at least
    ``[materialize] spark_min_bytes`` is paired on Spark, as the write runs there."""
    from ...config import MATCHERS

    matcher = cast(str, choice(MATCHERS)("matcher", cfg.materialize.matcher if matcher is None else matcher))
    precision = interval(0.0, 1.0, lo_open=True, hi_open=True)(
        "precision", cfg.materialize.precision if precision is None else precision)
    return Matching(matcher, precision, cfg.limits, master, cfg.materialize.spark_min_bytes)


def augment(ls, query, column: str | None = None, *, output: str | None = None, format: str | None = None,
            overwrite: bool = False, master: str | None = None, **params):
    """Write (or return) ``query`` joined to a lake table; see :meth:`discovery.api.Lakescout.augment`."""
    return _run(augment_plan(ls, query, column, master=master, **params), ls.config, output, format, overwrite,
                master)


def augment_plan(ls, query, column: str | None = None, *, key=None, rank: int | None = None, table=None,
                 lake_column: str | None = None, lake_key=None, columns=None, fan_out: str = "nearest",
                 max_matches: int | None = None, tau: float | None = None, tau_share: float | None = None,
                 metric: str | None = None, matcher: str | None = None, precision: float | None = None,
                 strict: bool = False, master: str | None = None) -> JoinPlan:
    """The plan :func:`augment` runs (its text pairs matched on Spark ``master`` for a large lake table)."""
    if (column is None) == (key is None):
        raise ParameterError("column", "give column (a semantic or numerical join) or key (an n-ary join), not "
                             + ("both" if column is not None else "neither"))
    q = _query(ls, query)
    rank = None if rank is None else count("rank", rank)
    fan = _fan_out(fan_out, ls.config.materialize.max_matches if max_matches is None else max_matches)
    added = _names("columns", columns)
    matching = _matching(ls.config, matcher, precision, master)
    if key is not None:
        key = key_columns("key", key)
        for c in key:
            q.ordinal(c)
        result = nary_result(ls, q, key, rank or 1, table, _names("lake_key", lake_key), {})
        ordinals = [q.ordinal(c) for c in key]
        source = join_source(ls.snapshot, q, "nary", ordinals, result, {}, added, matching, ls.config.numjoin)
    else:
        assert column is not None  # key is None, and exactly one of the two was given (checked above)
        search = {k: v for k, v in (("tau", tau), ("tau_share", tau_share), ("metric", metric)) if v is not None}
        kind, ordinals, result, used = join_result(ls, q, column, rank, table, lake_column, search)
        source = join_source(ls.snapshot, q, kind, ordinals, result, used, added, matching, ls.config.numjoin)
    return join_plan(ls.snapshot, q, source, ordinals, fan_out=fan, strict=bool(strict), result=result)


def pairs(ls, query, column: str, *, rank: int | None = None, table=None, lake_column: str | None = None,
          tau: float | None = None, tau_share: float | None = None, metric: str | None = None,
          matcher: str | None = None, precision: float | None = None, output: str | None = None,
          format: str | None = None, overwrite: bool = False):
    """The whole value mapping of a join result: every matched (query value, lake value, distance, and for text
    the score and rule) with the query rows and lake rows holding each; see :meth:`discovery.api.Lakescout.pairs`."""
    q = _query(ls, query)
    matching = _matching(ls.config, matcher, precision)
    search = {k: v for k, v in (("tau", tau), ("tau_share", tau_share), ("metric", metric)) if v is not None}
    kind, ordinals, result, used = join_result(ls, q, column, None if rank is None else count("rank", rank), table,
                                               lake_column, search)
    source = join_source(ls.snapshot, q, kind, ordinals, result, used, [], matching, ls.config.numjoin)
    table_ = mapping_table(q, source, ordinals, matching)
    described = {"kind": "pairs", "snapshot_id": ls.snapshot.snapshot_id, "query": q.label, "rows": table_.num_rows,
                 "columns": [{"name": f.name, "type": str(f.type)} for f in table_.schema],
                 "sources": [{**source.to_dict(), **{k: result[k] for k in ("rank", "joinability", "matched",
                                                                            "chosen") if k in result}}],
                 "warnings": [] if table_.num_rows else [f"no value of query column {column!r} matched "
                                                         f"{source.label} on {', '.join(source.lake_columns)}"]}
    return _deliver(Materialized(table_, described), output, format, overwrite)


def mapping_table(q: QueryTable, source, ordinals: list[int], matching: Matching) -> pa.Table:
    """The mapping of ``source`` as rows, nearest first: query value, lake value, distance, and how many query rows
    and lake rows (every row at the pinned version) hold each value."""
    import pyarrow.compute as pc

    from .keys import cell_keys, split_tuple_keys
    from .local import lake_key_counts

    mapping = source.mapping
    keys = cell_keys([q.columns[i] for i in ordinals], source.kind, source.dim)
    query_counts = pc.value_counts(keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys)
    lake_counts = lake_key_counts(source, matching.limits)
    counted = []
    for column, counts in (("query_key", query_counts), ("lake_key", lake_counts)):
        at = pc.index_in(mapping.column(column), value_set=counts.field("values"))
        counted.append(pc.fill_null(counts.field("counts").take(at), 0))
    query_values = _shown(mapping.column("query_key"), source)
    if source.kind == "text" and len(ordinals) > 1:
        query_values = split_tuple_keys(query_values)          # a row of several query columns: its values
    out = pa.table({"query_value": query_values,
                    "lake_value": _shown(mapping.column("lake_key"), source), "distance": mapping.column("distance"),
                    **{c: mapping.column(c) for c in ("score", "rule") if c in mapping.column_names},
                    "query_rows": counted[0], "lake_rows": counted[1]})
    return out.take(pc.sort_indices(mapping.column("distance")))  # stable: ties in the mapping's value order


def _shown(keys: pa.ChunkedArray, source) -> pa.Array:
    """Keys as users read them: text as normalised, numbers as numbers, coordinates and vectors as lists."""
    import numpy as np

    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    if source.kind in ("text", "number"):
        return keys
    width = keys.type.byte_width // 8
    values = np.frombuffer(keys.buffers()[1], dtype=np.float64, count=len(keys) * width).reshape(-1, width)
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), width)
