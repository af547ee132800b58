"""Query batches: a validated list of union / join / n-ary searches answered from one snapshot and recorded.

A batch spec is ``{"name": ..., "snapshot_id": optional, "queries": [{"id": optional, "kind": "union"|"join"|"nary",
"query": path or table id, <parameters of the search>}]}``; parameters may also be nested under ``"params"``.  Every
query is checked before any runs (kind known, query resolvable, then parameter names, types, ranges, methods and
column names by its search kind, :mod:`discovery.orchestration.searches`, as the Python API and the CLI check them), and
the first problem raises :class:`BatchError` naming the query (index and id) and the field.
Results are written to ``query_results`` in one
Delta commit per batch, so a batch is either recorded whole or not at all; a row in ``query_batches`` carries its
summary.

A served batch (``served=True``: the Lake discovery page, the ``query_batch`` DAG, the standing queries of
:mod:`discovery.surfaces.standing`) runs on behalf of users who do not own the server, so its queries name lake tables
only, plus the uploads the page saved; see :mod:`discovery.query.resolve`.  The CLI and the Python API run unserved
batches, which may also read local files.

A kind is one of :data:`discovery.orchestration.searches.SEARCHES`, checked, routed and answered by the registry's
entry, as the Python API answers it.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, UTC

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import Config
from ..data.store import SCHEMAS, Session, Snapshot, Warehouse, WarehouseError, load_snapshot, new_attempt_token
from ..data.store.warehouse import LATEST_READ_ATTEMPTS, json_dumps
from ..orchestration.searches import SEARCHES, limits
from ..query.params import ParameterError, check_id, check_query
from ..query.resolve import QueryError, QueryTable, read_query_file, resolve_query


class BatchError(ValueError):
    """A batch that cannot run; the message names the query (index and id) and the field at fault."""

    @property
    def field(self) -> str | None:
        """The field at fault: every message here names it as ``field 'name'`` (None when it names none)."""
        found = re.search(r"field '([^']+)'", str(self))
        return found[1] if found else None


_SPEC_KEYS = {"name", "snapshot_id", "queries"}
_QUERY_KEYS = {"id", "kind", "query", "params"}


@dataclass(frozen=True)
class BatchQuery:
    index: int
    id: str
    kind: str
    query: str | int
    params: dict = field(default_factory=dict)

    def label(self) -> str:
        return f"query {self.index} (id {self.id!r})"

    def to_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "query": self.query, **self.params}


@dataclass(frozen=True)
class BatchSpec:
    name: str
    queries: tuple[BatchQuery, ...]
    snapshot_id: int | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "snapshot_id": self.snapshot_id, "queries": [q.to_dict() for q in self.queries]}


# -- parsing ---------------------------------------------------------------------------------------------------------
def parse_spec(spec: dict | list | str, name: str = "batch") -> BatchSpec:
    """Structure of a batch (a dict, a bare list of queries, or JSON text) without consulting any snapshot."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError as exc:
            raise BatchError(f"batch spec is not valid JSON: {exc}") from None
    if isinstance(spec, list):
        spec = {"queries": spec}
    if not isinstance(spec, dict):
        raise BatchError("batch spec must be an object with a 'queries' list")
    unknown = set(spec) - _SPEC_KEYS
    if unknown:
        raise BatchError(f"batch spec has unknown field(s): {', '.join(sorted(unknown))} "
                         f"(allowed: {', '.join(sorted(_SPEC_KEYS))})")
    snapshot_id = spec.get("snapshot_id")
    if snapshot_id is not None:
        try:
            snapshot_id = check_id("snapshot_id", snapshot_id)
        except ParameterError as exc:
            raise BatchError(f"field 'snapshot_id': {exc}") from None
    queries = spec.get("queries")
    if not isinstance(queries, list) or not queries:
        raise BatchError("field 'queries' must be a non-empty list of queries")
    parsed, seen = [], set()
    for i, raw in enumerate(queries):
        q = _parse_query(i, raw)
        if q.id in seen:
            raise BatchError(f"{q.label()}: field 'id': duplicate query id")
        seen.add(q.id)
        parsed.append(q)
    label = spec.get("name", name)
    if not isinstance(label, str) or not label:
        raise BatchError("field 'name' must be a non-empty string")
    return BatchSpec(label, tuple(parsed), snapshot_id)


def _parse_query(i: int, raw) -> BatchQuery:
    where = f"query {i}"
    if not isinstance(raw, dict):
        raise BatchError(f"{where}: must be an object with 'kind' and 'query'")
    qid = raw.get("id", f"q{i + 1}")
    if not isinstance(qid, (str, int)) or isinstance(qid, bool) or str(qid) == "":
        raise BatchError(f"{where}: field 'id' must be a non-empty string")
    where = f"query {i} (id {str(qid)!r})"
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind not in SEARCHES:
        raise BatchError(f"{where}: field 'kind': {kind!r} is not one of {', '.join(SEARCHES)}")
    try:
        query = check_query(raw.get("query"))
    except ParameterError as exc:
        raise BatchError(f"{where}: field 'query': {exc}") from None
    if isinstance(query, QueryTable):
        raise BatchError(f"{where}: field 'query': a batch is recorded as JSON, so its query names a lake table or a "
                         "file; search a DataFrame or a pyarrow Table with discovery.open(...) instead")
    params = {k: v for k, v in raw.items() if k not in _QUERY_KEYS}
    nested = raw.get("params", {})
    if not isinstance(nested, dict):
        raise BatchError(f"{where}: field 'params' must be an object")
    clash = set(params) & set(nested)
    if clash:
        raise BatchError(f"{where}: field {sorted(clash)[0]!r} is given both inline and under 'params'")
    params.update(nested)
    return BatchQuery(i, str(qid), kind, query, params)


# -- validation against a snapshot -----------------------------------------------------------------------------------
def _check_params(q: BatchQuery, table: QueryTable, config: Config) -> None:
    """Names, types and ranges of ``q``'s parameters and the query columns they name: the checks of its search kind
    (:mod:`discovery.orchestration.searches`), which the Python API and the CLI make too, so a batch refuses what they
    refuse."""
    kind = SEARCHES[q.kind]
    try:
        kind.plan(kind.check(q.params), table, config)
    except ParameterError as exc:
        raise BatchError(f"{q.label()}: field {exc.param!r}: {exc}") from None
    except QueryError as exc:  # a column no join takes (neither text nor numbers)
        raise BatchError(f"{q.label()}: field 'column': {exc}") from None


def _resolve(snap: Snapshot, q: BatchQuery, served: bool, uploads: Mapping[str, str]) -> QueryTable:
    """The table ``q`` names: an upload saved by the server under that name, else what :func:`resolve_query`
    accepts (in a served batch only lake tables)."""
    if isinstance(q.query, str) and q.query in uploads:
        return read_query_file(uploads[q.query], q.query, served=True)
    return resolve_query(snap, q.query, allow_files=not served)


def validate_batch(session: Session, spec: dict | list | str | BatchSpec,
                   snapshot_id: int | None = None, served: bool = False,
                   uploads: Mapping[str, str] | None = None) -> tuple[BatchSpec, Snapshot]:
    """Parse ``spec`` and check every query against the snapshot it will run on, under the session's
    configuration; raise :class:`BatchError`.

    ``served`` is the mode of the Lake discovery page and the DAGs: queries name lake tables (a table id or a
    catalogued lake path), never a file of the server; ``uploads`` maps query names to files the server saved itself.
    """
    batch = spec if isinstance(spec, BatchSpec) else parse_spec(spec)
    snap = batch_snapshot(session.warehouse, batch, snapshot_id)
    for q in batch.queries:
        check_query_table(snap, q, served, uploads or {}, session.config)
    return batch, snap


def batch_snapshot(wh: Warehouse, batch: BatchSpec, snapshot_id: int | None = None) -> Snapshot:
    """The snapshot a batch runs on: ``snapshot_id``, else the spec's, else the latest; :class:`BatchError` when
    there is no such snapshot."""
    sid = snapshot_id if snapshot_id is not None else batch.snapshot_id
    try:
        return load_snapshot(wh, None if sid is None else check_id("snapshot_id", sid))
    except (WarehouseError, ParameterError) as exc:
        raise BatchError(f"field 'snapshot_id': {exc}") from None


def check_query_table(snap: Snapshot, q: BatchQuery, served: bool, uploads: Mapping[str, str], config: Config,
                      table: QueryTable | None = None) -> QueryTable:
    """The checks :func:`validate_batch` makes of one query (its table resolvable and not empty, its parameters and
    the columns they name, under ``config``); returns the resolved table or raises :class:`BatchError`.  ``table``
    is the query already resolved elsewhere (a Spark batch resolves the driver's own files on the driver)."""
    try:
        table = table if table is not None else _resolve(snap, q, served, uploads)
    except QueryError as exc:
        raise BatchError(f"{q.label()}: field 'query': {exc}") from None
    if table.num_rows == 0:
        raise BatchError(f"{q.label()}: field 'query': the query table {q.query!r} has no rows")
    _check_params(q, table, config)
    return table


# -- running and recording -------------------------------------------------------------------------------------------
def result_rows(batch_id: str | None, q: BatchQuery, snapshot_id: int, answer: dict, now: datetime) -> list[dict]:
    """``query_results`` rows of one search answer: the score is the result's ``score`` or ``joinability``, the
    evidence everything else it carries (alignment, matches, mapping)."""
    rows = []
    for rank, r in enumerate(answer.get("results", []), start=1):
        score = r.get("score", r.get("joinability"))
        evidence = {k: v for k, v in r.items()
                    if k not in ("rank", "table_id", "path", "column", "score", "joinability")}
        rows.append({"batch_id": batch_id, "query_id": q.id, "snapshot_id": snapshot_id, "kind": q.kind,
                     "rank": int(r.get("rank", rank)), "table_id": r.get("table_id"), "path": r.get("path"),
                     "column": r.get("column"), "score": None if score is None else float(score),
                     "evidence": json_dumps(evidence), "created_at": now})
    return rows


def first_run(rows: pa.Table, keys: list[str]) -> pa.Table:
    """``rows`` with one row per ``keys``: the earliest recorded (``created_at``), in their stored order.

    A batch id is checked before its rows are written, so two runs of one batch that start together (the same
    ``batch_id`` given to two DAG runs, a standing query run by its DAG and by hand) can both record it.  Their
    rows are the same answers on the same snapshot; readers keep the first run's, so nothing is listed twice."""
    if rows.num_rows < 2:
        return rows
    at = pa.array(np.arange(rows.num_rows), pa.int64())
    order = pc.sort_indices(rows, sort_keys=[("created_at", "ascending")])
    ranked = rows.select(keys).take(order).append_column("_row", at.take(order))
    ranked = ranked.append_column("_rank", pa.array(np.arange(rows.num_rows), pa.int64()))
    first = ranked.group_by(keys, use_threads=False).aggregate([("_rank", "min")]).column("_rank_min")
    keep = np.sort(ranked.column("_row").take(first).to_numpy())
    return rows if keep.size == rows.num_rows else rows.take(pa.array(keep))


def has_rows(wh: Warehouse, name: str, column: str, value) -> bool:
    """Whether table ``name`` holds a row whose ``column`` is ``value``: a run of a batch (or of a standing query)
    checks it before committing, so a retry after the commit does not write the same rows twice."""
    t = wh.read(name, columns=[column], filter=pc.field(column) == value)
    return t.num_rows > 0


def recorded_batch(wh: Warehouse, batch_id: str) -> dict | None:
    """The summary of an already recorded batch, or None."""
    t = first_run(wh.read("query_batches", filter=pc.field("batch_id") == batch_id), ["batch_id"])
    if t.num_rows == 0:
        return None
    return json.loads(t.column("summary")[0].as_py())


def answer_query(snap: Snapshot, q: BatchQuery, batch_id: str, now: datetime, config: Config, served: bool = False,
                 uploads: Mapping[str, str] | None = None,
                 table: QueryTable | None = None) -> tuple[list[dict], dict]:
    """(``query_results`` rows, summary entry) of one checked query answered from ``snap``, its table resolved
    again (or ``table``), its defaults from ``config``; :class:`BatchError` when it can no longer be read or the
    search refuses it."""
    answer = search_answer(snap, q, config, served, uploads, table)
    return answer_rows(snap, q, batch_id, answer, now)


def search_answer(snap: Snapshot, q: BatchQuery, config: Config, served: bool = False,
                  uploads: Mapping[str, str] | None = None, table: QueryTable | None = None) -> dict:
    """The answer of one checked query, as the Python API returns it (:func:`answer_query`'s arguments)."""
    kind = SEARCHES[q.kind]
    try:
        table = table if table is not None else _resolve(snap, q, served, uploads or {})
        return kind.plan(kind.check(q.params, limits(snap)), table, config).run(snap)
    except (QueryError, ValueError) as exc:
        raise BatchError(f"{q.label()}: {exc}") from None


def answer_rows(snap: Snapshot, q: BatchQuery, batch_id: str | None, answer: dict,
                now: datetime) -> tuple[list[dict], dict]:
    """(``query_results`` rows, summary entry) of ``answer``, the answer of ``q`` from ``snap``."""
    mine = result_rows(batch_id, q, snap.snapshot_id, answer, now)
    entry = {"id": q.id, "kind": q.kind, "query": str(q.query), "results": len(mine),
             "top": [{k: r[k] for k in ("rank", "table_id", "path", "column", "score")} for r in mine[:3]],
             "stats": answer.get("stats", {})}
    return mine, entry


def new_batch_id() -> str:
    return f"batch-{datetime.now(UTC):%Y%m%dT%H%M%S}-{new_attempt_token()[:6]}"


def open_batch(wh: Warehouse, batch_id: str | None) -> tuple[str, dict | None]:
    """(batch id, the stored summary when that batch is already recorded, else None)."""
    wh.require()
    wh.ensure()
    batch_id = batch_id or new_batch_id()
    return batch_id, recorded_batch(wh, batch_id)


def run_batch(session: Session, spec: dict | list | str | BatchSpec, batch_id: str | None = None,
              snapshot_id: int | None = None, standing: bool = False, served: bool = False,
              uploads: Mapping[str, str] | None = None) -> dict:
    """Validate, run every query in this process (its defaults the ``session``'s configuration), record the results
    in one commit and return the summary.

    ``batch_id`` makes the run idempotent: a batch already recorded returns its stored summary, and a retry after the
    results were committed does not commit them twice.  ``served`` and ``uploads`` as in :func:`validate_batch`;
    each search gets the table resolved under those rules.  A large batch may run on Spark instead
    (``spark_jobs.query_batch``), with the same checks, answers and record.
    """
    wh = session.warehouse
    batch_id, done = open_batch(wh, batch_id)
    if done is not None:
        return done
    batch, snap = validate_batch(session, spec, snapshot_id, served, uploads)
    started = time.time()
    now = datetime.now(UTC)
    rows, per_query = [], []
    for q in batch.queries:
        mine, entry = answer_query(snap, q, batch_id, now, session.config, served, uploads)
        rows.extend(mine)
        per_query.append(entry)
    return record_batch(wh, batch, snap, batch_id, rows, per_query, started, now, standing)


def record_batch(wh: Warehouse, batch: BatchSpec, snap: Snapshot, batch_id: str, rows: list[dict],
                 per_query: list[dict], started: float, now: datetime, standing: bool = False,
                 spark_tasks: int | None = None) -> dict:
    """Commit a batch's result rows to ``query_results`` (one commit, skipped when a run of the same batch id got
    there first) and its summary to ``query_batches``; returns the summary (with ``spark_tasks`` when the queries
    were answered in that many Spark tasks)."""
    attempt = new_attempt_token()
    if rows and not has_rows(wh, "query_results", "batch_id", batch_id):
        wh.append_rows("query_results", pa.Table.from_pylist(rows, schema=SCHEMAS["query_results"]),
                       refresh_id=snap.refresh_id, stage="query_batch", attempt=attempt, once=False)
    summary, record = batch_record(batch, snap, batch_id, rows, per_query, time.time() - started, now, standing,
                                   spark_tasks)
    wh.append_rows("query_batches", pa.Table.from_pylist([record], schema=SCHEMAS["query_batches"]),
                   refresh_id=snap.refresh_id, stage="query_batch", attempt=attempt, once=False)
    return summary


def batch_record(batch: BatchSpec, snap: Snapshot, batch_id: str, rows: list[dict], per_query: list[dict],
                 seconds: float, now: datetime, standing: bool = False,
                 spark_tasks: int | None = None) -> tuple[dict, dict]:
    """(summary, ``query_batches`` row) of a batch answered in ``seconds``."""
    summary = {"batch_id": batch_id, "name": batch.name, "snapshot_id": snap.snapshot_id, "standing": standing,
               "queries": per_query, "results": len(rows), "seconds": round(seconds, 3)}
    if spark_tasks is not None:
        summary["spark_tasks"] = spark_tasks
    record = {"batch_id": batch_id, "name": batch.name, "standing": standing, "snapshot_id": snap.snapshot_id,
              "queries": len(batch.queries), "results": len(rows), "seconds": seconds,
              "spec": json_dumps(batch.to_dict()), "summary": json_dumps(summary), "created_at": now}
    return summary, record


def batch_results(wh: Warehouse, batch_id: str | list[str], since: datetime | None = None) -> pa.Table:
    """The recorded result rows of a batch (or of several, in one read), by batch, query and rank.

    ``since``: the earliest first-run time (``query_batches.created_at``) of the batches asked for, when the caller
    has it: a run stamps its result rows with its batch's time, so only the data files whose ``created_at``
    statistics reach it are read (:meth:`Warehouse.read_since`), a few however many searches the table holds;
    without it every file's statistics are matched against the ids, which costs a page that lists the newest batches
    about a millisecond per file of ``query_results`` until maintenance compacts it."""
    ids = [batch_id] if isinstance(batch_id, str) else list(batch_id)
    if not ids:
        return SCHEMAS["query_results"].empty_table()
    if since is None:
        t = wh.read("query_results", filter=pc.field("batch_id").isin(ids))
    else:
        t = wh.read_since("query_results", "created_at", since)
        t = t.filter(pc.is_in(t["batch_id"], value_set=pa.array(ids, pa.string())))
    t = first_run(t, ["batch_id", "query_id", "rank"])
    return t.sort_by([("batch_id", "ascending"), ("query_id", "ascending"), ("rank", "ascending")])


def _newest(wh: Warehouse, limit: int, columns: list[str] | None = None) -> pa.Table:
    """The ``limit`` most recent recorded batches (their first runs), newest first.

    The keys (batch id, time) are read from the files that can hold the newest (:func:`_newest_keys`), then the
    rows of those batches from the files whose ``created_at`` statistics reach the oldest of them, so the wide
    columns (the spec, the summary) are read for the newest batches only however many a warehouse holds."""
    for attempt in range(1, LATEST_READ_ATTEMPTS + 1):
        try:
            newest = _newest_keys(wh, limit)
            break
        except FileNotFoundError:  # maintenance vacuumed a listed file meanwhile: list again, as Warehouse.read does
            if attempt == LATEST_READ_ATTEMPTS:
                raise
    if newest.num_rows == 0:
        return SCHEMAS["query_batches"].empty_table().select(columns or SCHEMAS["query_batches"].names)
    wanted = None if columns is None else list(dict.fromkeys([*columns, "batch_id", "created_at"]))
    rows = wh.read_since("query_batches", "created_at", pc.min(newest["created_at"]), wanted)
    rows = first_run(rows.filter(pc.is_in(rows["batch_id"], value_set=newest["batch_id"])), ["batch_id"])
    rows = rows.sort_by([("created_at", "descending")])
    return rows if columns is None else rows.select(columns)


def _newest_keys(wh: Warehouse, limit: int) -> pa.Table:
    """``(batch_id, created_at)`` of the ``limit`` batches whose first runs are newest, newest first: exactly what
    :func:`first_run` over every row would give, read from few files.

    The data files are read newest first by their ``created_at`` maximum until ``limit`` batches are known to be
    newer than anything unread (a file's maximum bounds its rows); a batch recorded twice keeps its first run, so
    an unread file whose ``batch_id`` range holds one of those batches is read too, and the reading goes on while
    that changes the answer.  A file without statistics is read first.  At a few hundred files (a served page
    rebuilds this after every recorded search) reading every file's keys cost about 90 ms."""
    files = wh.files("query_batches", stats=("created_at", "batch_id"))
    paths = files.column("path").to_pylist()
    high = files.column("max.created_at").to_pylist() if "max.created_at" in files.column_names else [None] * len(paths)
    low_id = files.column("min.batch_id").to_pylist() if "min.batch_id" in files.column_names else [None] * len(paths)
    high_id = files.column("max.batch_id").to_pylist() if "max.batch_id" in files.column_names else [None] * len(paths)
    newest_first = [None if h is None else -h.timestamp() for h in high]
    order = sorted(range(len(paths)), key=lambda f: (newest_first[f] is not None, newest_first[f] or 0.0))
    done: set[int] = set()
    parts = [SCHEMAS["query_batches"].empty_table().select(["batch_id", "created_at"])]
    cursor = 0

    def read(chosen: list[int]) -> None:
        done.update(chosen)
        parts.append(wh.parquet_files("query_batches", [paths[f] for f in chosen])
                     .to_table(columns=["batch_id", "created_at"]))

    while True:
        while cursor < len(order) and order[cursor] in done:
            cursor += 1
        keys = first_run(pa.concat_tables(parts), ["batch_id"]).sort_by([("created_at", "descending")])
        top = keys.slice(0, limit)
        if cursor < len(order):
            bound = high[order[cursor]]  # statistics keep milliseconds: a row may be up to 1 ms past its file's
            known = (bound is not None and top.num_rows == limit
                     and pc.min(top["created_at"]).as_py() > bound + timedelta(milliseconds=1))
            if not known:
                read([f for f in order[cursor:cursor + max(limit, 8)] if f not in done])
                continue
        ids = top.column("batch_id").to_pylist()
        rerun = [f for f in range(len(paths)) if f not in done
                 and (low_id[f] is None or high_id[f] is None or any(low_id[f] <= i <= high_id[f] for i in ids))]
        if not rerun:
            return top
        read(rerun)


def recent_batches(wh: Warehouse, limit: int = 20) -> list[dict]:
    """The most recent recorded batches, newest first (the summary decoded)."""
    return [{**{k: v for k, v in r.items() if k not in ("spec", "summary")}, "summary": json.loads(r["summary"])}
            for r in _newest(wh, limit).to_pylist()]


def recent_queries(wh: Warehouse, limit: int = 20) -> list[BatchQuery]:
    """The queries of the ``limit`` most recent recorded batches, newest batch first: what a server warms a snapshot
    with (a spec that no longer parses is skipped)."""
    out: list[BatchQuery] = []
    for spec in _newest(wh, limit, ["batch_id", "spec", "created_at"]).column("spec").to_pylist():
        try:
            out.extend(parse_spec(spec).queries)
        except BatchError:
            continue
    return out
