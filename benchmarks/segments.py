"""What segment-aware join matching costs on a real lake: index growth, build time and query time.

Run: ``.venv/bin/python benchmarks/segments.py [--lake DIR] [--workdir DIR] [--config FILE] [--master local[2]]
[--queries 20] [--name sample] [--reencode]``.

Lakes: the sample lake (the default: ``sample_lake/`` of the repository, the Makefile's ``LAKESCOUT_LAKE``, written as
``lakescout demo-lake`` / ``make sample-lake`` write it when missing) and fivethirtyeight (``--lake
../shared/benchmarks/fivethirtyeight --name fivethirtyeight``).  AutoFJ is measured by ``join.py --autofj``.

``[embed] join_segments`` (default 3) gives each join-candidate value up to that many segment vectors besides the
vector of the whole cell (:mod:`discovery.transforms.segments`); 0 keeps whole-cell vectors only.  The lake is refreshed
with the real pipeline (``lakescout refresh``, :func:`webjoin.refresh`) with ``--config`` as given (the project's
defaults without it) into ``<workdir>/warehouse``; a copy of that warehouse is then refreshed with ``join_segments =
0`` into ``<workdir>/warehouse_segments0``.  Both are kept and reused by a later run with the same lake and
configuration (the copy is published before its own refresh, so a ``.done`` marker says it finished; the refreshes'
wall seconds are kept in ``builds.json``).

Index growth: value vectors per warehouse (whole cells and segments), and the bytes of the snapshot's
``value_vectors`` and ``pivot_mappings`` files.

Build time, and why the two refreshes are not alike.  The first is a first build: its ``embed`` stage trains the join
and table encoders (two Spark tasks side by side), then encodes column, table and value vectors of every table.  The
copy's refresh is an incremental one with no lake change: ``join_segments`` is no training requirement of the join
encoder (:func:`discovery.transforms.encoders.lake_training.join_requires`), so nothing is retrained, but the value
vectors' ``encoder_version`` names the segment setting
(:attr:`discovery.query.vectors.EncoderRefs.value_vector_version`), so the ``embed`` stage re-encodes the value vectors
of every table (column and table vectors stay), and the ``pivots`` stage, seeing a new version in ``value_vectors``,
reselects the pivots and maps every vector again.  So the ``pivots`` stages compare like for like; the ``embed`` stages
do not. ``harness.join_build`` exposes stage seconds, not an encode part, so
the training seconds each refresh's ``embed`` message reports are printed beside it, and ``embed - training`` (training
taken as the longer encoder, as they train side by side; their sample reading stays in) estimates the encoding of the
first build, which also encodes column and table vectors.  ``--reencode`` measures it like for like: a copy of the
segments-0 warehouse is refreshed back to the configuration as given (``<workdir>/warehouse_reencode``), the exact
twin of the segments-0 refresh with segments on; queries do not use it.

Query time: ``--queries`` + 1 query columns picked from the published snapshot with a fixed seed among the join
candidates (columns with value vectors, typed string), each asked ``discovery.open(W).join(path, column, top_k=10)``
of both warehouses, one warehouse after the other, after an untimed :func:`discovery.indexes.join.warmup.warm` (so the
process's first-join costs fall on neither); the first query of each loads its index and is reported apart, the
median and mean wall (and median CPU) seconds are over the others.  On the segments-on warehouse every query is asked
with ``method="exact"`` as well: its answers (table, column, matched) must be identical to PEXESO's, in the same
order (every method links a matched value through its nearest lake value, so the context order agrees too).
Shown too: how many queries return the same top-10 columns, in the same order, with segments off.  The
queries use the configuration as given (``LAKESCOUT_CONFIG``).  The result goes to
``benchmarks/results/segments_<name>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import tomllib

import harness
from harness import ROOT, print_table, write_result
from webjoin import refresh, segments_off

TOP_K = 10
SEED = 0
#: The Makefile's ``LAKESCOUT_LAKE``: where ``make sample-lake`` writes the sample lake.
SAMPLE_LAKE = os.path.join(ROOT, "sample_lake")
TRAINED = re.compile(r"\b(join|table) encoder \S+ trained in ([\d.]+) s")


def join_segments(config_text: str) -> int:
    """The ``[embed] join_segments`` a configuration holding ``config_text`` sets (the default when it does not)."""
    from discovery.config import Config

    return Config.from_dict(tomllib.loads(config_text)).embed.join_segments


def without_segments(config_text: str) -> str:
    """``config_text`` with ``join_segments = 0``: its own setting replaced, else :func:`webjoin.segments_off`'s."""
    if re.search(r"^\s*join_segments\s*=", config_text, re.MULTILINE):
        return re.sub(r"^\s*join_segments\s*=.*$", "join_segments = 0", config_text, flags=re.MULTILINE)
    return segments_off(config_text)


def trained(warehouse: str) -> dict[str, float]:
    """Seconds of the encoders the last refresh's ``embed`` stage trained (none: it reused stored ones)."""
    embed = harness.refresh_record(warehouse)["stages"].get("embed", {})
    return {kind: float(s) for kind, s in TRAINED.findall(embed.get("message") or "")}


def index_size(warehouse: str) -> dict:
    """Value vectors of the latest snapshot, whole cells and segments, and the bytes of its join index tables."""
    import pyarrow.compute as pc

    import discovery

    snap = discovery.open(warehouse).snapshot
    seg = snap.read("value_vectors", columns=["segment"]).column("segment")
    whole = int(pc.sum(pc.equal(pc.fill_null(seg, 0), 0)).as_py() or 0)
    mb = {name: round(pc.sum(snap.warehouse.files(name, snap.version(name))["size_bytes"]).as_py() / 2**20, 2)
          for name in ("value_vectors", "pivot_mappings")}
    return {"whole": whole, "segments": len(seg) - whole, **{f"{k}_mb": v for k, v in mb.items()}}


def query_columns(warehouse: str, n: int, seed: int = SEED) -> list[dict]:
    """``n`` join-candidate string columns of the latest snapshot (those with value vectors), picked with ``seed``
    from all of them in (path, ordinal) order; names a table holds twice are left out (a query names its column)."""
    import pyarrow.compute as pc

    import discovery

    snap = discovery.open(warehouse).snapshot
    indexed = snap.read("value_vectors", columns=["table_id", "ordinal"]).group_by(["table_id", "ordinal"]) \
        .aggregate([])
    indexed = {(t, o) for t, o in zip(*(indexed.column(c).to_pylist() for c in ("table_id", "ordinal")))}
    catalog = snap.read("catalog", columns=["table_id", "path", "status"])
    catalog = catalog.filter(pc.equal(catalog["status"], "ok"))
    paths = dict(zip(catalog.column("table_id").to_pylist(), catalog.column("path").to_pylist()))
    columns = snap.read("columns", columns=["table_id", "ordinal", "name", "type"]).to_pylist()
    names: dict[tuple[int, str], int] = {}
    for c in columns:
        names[(c["table_id"], c["name"])] = names.get((c["table_id"], c["name"]), 0) + 1
    pool = sorted((paths[c["table_id"]], c["ordinal"], c["name"], c["table_id"]) for c in columns
                  if (c["table_id"], c["ordinal"]) in indexed and c["type"] == "string" and c["table_id"] in paths
                  and names[(c["table_id"], c["name"])] == 1)
    picked = random.Random(seed).sample(pool, min(n, len(pool)))
    return [{"path": p, "column": name, "table_id": t} for p, _, name, t in picked]


def ask(ls, query: dict, method: str) -> dict:
    """One top-10 join: its answer (table id, column, matched), wall and CPU seconds and the search's counts."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = ls.join(query["path"], query["column"], top_k=TOP_K, method=method)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"answer": [(r["table_id"], r["column"], r["matched"]) for r in out["results"]], "wall": wall, "cpu": cpu,
            "query_values": out["stats"].get("query_values"),
            "distance_computations": out["stats"].get("distance_computations")}


def run_queries(warehouse: str, queries: list[dict], method: str = "pexeso") -> list[dict]:
    import discovery

    ls = discovery.open(warehouse)
    return [ask(ls, q, method) for q in queries]


def query_summary(runs: list[dict]) -> dict:
    """The first query (index load) apart; median and mean over the others."""
    warm = runs[1:] or runs
    return {"first_s": runs[0]["wall"], "median_s": statistics.median(r["wall"] for r in warm),
            "mean_s": statistics.fmean(r["wall"] for r in warm),
            "median_cpu_s": statistics.median(r["cpu"] for r in warm),
            "median_distance_computations": statistics.median(r["distance_computations"] or 0 for r in warm)}


def _state(workdir: str) -> dict:
    path = os.path.join(workdir, "builds.json")
    return json.load(open(path)) if os.path.exists(path) else {}


def _save_state(workdir: str, state: dict) -> None:
    with open(os.path.join(workdir, "builds.json"), "w") as fh:
        json.dump(state, fh, indent=2)


def build(lake: str, workdir: str, config_text: str, master: str, reencode: bool) -> tuple[dict, dict]:
    """The warehouses (name -> folder) refreshed or reused, and each one's refresh wall seconds (None: unknown)."""
    whs = {"segments": os.path.join(workdir, "warehouse"), "segments 0": os.path.join(workdir, "warehouse_segments0")}
    state = _state(workdir)
    if harness.published(whs["segments"]):
        if state.get("lake") != lake or state.get("config") != config_text:
            raise SystemExit(f"{workdir} holds a warehouse of another lake or configuration ({state.get('lake')}); "
                             "name another --workdir")
    else:
        state = {"lake": lake, "config": config_text, "seconds": {}}
        for marker in ("segments0.done", "reencode.done"):
            if os.path.exists(os.path.join(workdir, marker)):
                os.remove(os.path.join(workdir, marker))
        state["seconds"]["segments"] = refresh(lake, whs["segments"], config_text, workdir, master,
                                               "segments")["seconds"]
        _save_state(workdir, state)
    copies = [("segments 0", "segments", "segments0", without_segments(config_text))]
    if reencode:
        whs["re-encode"] = os.path.join(workdir, "warehouse_reencode")
        copies.append(("re-encode", "segments 0", "reencode", config_text))
    for name, source, tag, text in copies:
        done = os.path.join(workdir, f"{tag}.done")  # a copy is published before its own refresh: a marker
        if not os.path.exists(done):
            shutil.rmtree(whs[name], ignore_errors=True)
            shutil.copytree(whs[source], whs[name])
            state["seconds"][name] = refresh(lake, whs[name], text, workdir, master, tag)["seconds"]
            _save_state(workdir, state)
            open(done, "w").close()
    return whs, {name: state["seconds"].get(name) for name in whs}


def build_row(name: str, warehouse: str, seconds: float | None) -> dict:
    info, run, size = harness.join_build(warehouse), harness.refresh_record(warehouse), index_size(warehouse)
    stages, took = info["stage_seconds"], trained(warehouse)
    training = max(took.values(), default=0.0)
    return {"warehouse": name, "value vectors": info["value_vectors"], "whole": size["whole"],
            "segments": size["segments"], "value_vectors MB": size["value_vectors_mb"],
            "pivot_mappings MB": size["pivot_mappings_mb"], "refresh s": seconds, "embed s": stages.get("embed"),
            "trained": ", ".join(f"{k} {v:.1f} s" for k, v in took.items()) or "none (reused)",
            "embed - training s": None if stages.get("embed") is None else stages["embed"] - training,
            "pivots s": stages.get("pivots"), "|P|": info["n_pivots"], "m": info["levels"],
            "stages": stages, "embed message": run["stages"].get("embed", {}).get("message"),
            "pivots message": run["stages"].get("pivots", {}).get("message"), "join_encoder": info["join_encoder"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lake", default=None, help=f"lake folder (default: the sample lake, {SAMPLE_LAKE})")
    ap.add_argument("--workdir", default=None, help="warehouses here (kept; an existing one is reused)")
    ap.add_argument("--config", default=None, help="TOML file for the refresh (default: the project's defaults)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--queries", type=int, default=20, help="query columns timed, after the first (index load)")
    ap.add_argument("--name", default=None, help="label of the result: segments_<name> (default: the lake's folder)")
    ap.add_argument("--reencode", action="store_true",
                    help="also refresh a copy of the segments-0 warehouse back to the configuration: the embed "
                         "stage's like-for-like twin of the segments-0 refresh")
    args = ap.parse_args(argv)
    if args.queries < 1:
        ap.error("--queries must be at least 1")
    lake = os.path.abspath(args.lake) if args.lake else harness.sample_lake(SAMPLE_LAKE, lakehouse=True)
    if not os.path.isdir(lake):
        ap.error(f"--lake {lake} is not a folder")
    name = args.name or os.path.basename(lake.rstrip(os.sep))
    config_text = open(args.config).read() if args.config else ""
    on = join_segments(config_text)
    if on == 0:
        ap.error("the configuration sets join_segments = 0: there is nothing to compare")
    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="segments-"))
    os.makedirs(workdir, exist_ok=True)
    load_before = os.getloadavg()

    whs, seconds = build(lake, workdir, config_text, args.master, args.reencode)
    builds = [build_row(n, w, seconds[n]) for n, w in whs.items()]
    print(f"lake {lake}; workdir {workdir}; join_segments {on} against 0; load before {load_before}\n")
    print_table(builds, ["warehouse", "value vectors", "whole", "segments", "value_vectors MB", "pivot_mappings MB",
                         "refresh s", "embed s", "trained", "embed - training s", "pivots s", "|P|", "m"])
    for b in builds:
        print(f"\n{b['warehouse']}: stages {b['stages']}\n  embed: {b['embed message']}\n"
              f"  pivots: {b['pivots message']}")

    query_config = os.path.join(workdir, "query.toml")
    with open(query_config, "w") as fh:
        fh.write(config_text)
    saved = os.environ.get("LAKESCOUT_CONFIG")
    os.environ["LAKESCOUT_CONFIG"] = query_config
    try:
        queries = query_columns(whs["segments"], args.queries + 1)
        from discovery.config import load_config
        from discovery.indexes.join.warmup import warm

        # the process's first join costs (kernels, imports) out of the first warehouse's first query
        warm(load_config().join)
        runs = {n: run_queries(whs[n], queries) for n in ("segments", "segments 0")}
        exact = run_queries(whs["segments"], queries, "exact")
    finally:
        os.environ.pop("LAKESCOUT_CONFIG")
        if saved is not None:
            os.environ["LAKESCOUT_CONFIG"] = saved
    identical = [p["answer"] == e["answer"] for p, e in zip(runs["segments"], exact)]
    same_columns = [[a[:2] for a in p["answer"]] == [a[:2] for a in o["answer"]]
                    for p, o in zip(runs["segments"], runs["segments 0"])]

    print()
    print_table([{"query": f"{q['path']}:{q['column']}", "first": i == 0,
                  "query values": runs["segments"][i]["query_values"], "segments s": runs["segments"][i]["wall"],
                  "segments 0 s": runs["segments 0"][i]["wall"], "exact s": exact[i]["wall"],
                  "exact identical": identical[i], "same top-10 columns": same_columns[i]}
                 for i, q in enumerate(queries)],
                ["query", "first", "query values", "segments s", "segments 0 s", "exact s", "exact identical",
                 "same top-10 columns"])
    summary = [{"warehouse": n, **query_summary(runs[n])} for n in runs]
    summary.append({"warehouse": "segments, exact", **query_summary(exact)})
    print()
    print_table(summary, ["warehouse", "first_s", "median_s", "mean_s", "median_cpu_s",
                          "median_distance_computations"])
    load = os.getloadavg()
    print(f"\n{len(queries) - 1} top-{TOP_K} queries after the first (index load); exact and pexeso identical: "
          f"{sum(identical)} of {len(queries)}, in order; same top-{TOP_K} columns "
          f"with segments 0: {sum(same_columns)} of {len(queries)}; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    write_result(f"segments_{name}", {"lake": lake, "workdir": workdir, "config": config_text,
                                      "join_segments": on, "master": args.master, "builds": builds,
                                      "queries": [{**q, **{n: runs[n][i] for n in runs}, "exact": exact[i]}
                                                  for i, q in enumerate(queries)],
                                      "summary": summary, "exact_identical": all(identical),
                                      "same_top_columns": sum(same_columns), "load_before": load_before,
                                      "load_average": load})
    return 0 if all(identical) else 1


if __name__ == "__main__":
    sys.exit(main())
