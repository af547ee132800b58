"""Query latency on the sample lake: cold CLI processes, warm ``discovery.open`` queries, and where the time goes.

Run: ``python benchmarks/latency.py [--runs 5] [--warm 20] [--workdir DIR]``.

The sample lake (``discovery.orchestration.demo_lake``) is written and indexed with the real refresh (``lakescout
refresh``) into a warehouse under ``--workdir`` (a temporary folder by default; an existing warehouse there is reused).
Then, for the three queries ``make demo`` runs (join, union, n-ary):

* **cold**: ``--runs`` fresh ``lakescout join|union|nary`` processes each, timed from spawn to exit.  The OS file
  cache is warm (an untimed run precedes them) but every process imports, reads the Delta tables, loads encoders and
  builds its index from scratch.  Reported: median and max wall time.
* **first run after install**: one process with an empty ``NUMBA_CACHE_DIR`` (numba finds no compiled kernel and
  compiles what the query needs), then a second one on that now-filled cache; and a join query on a cache filled
  only by the install-time warm-up (``python -m discovery.indexes.join.warmup``, which ``make venv`` runs).
* **warm**: one ``discovery.open(warehouse)`` kept open; the first query of each kind builds the indexes, the next
  ``--warm`` are timed (median, max).
* **breakdown**: one more cold process per query whose phases are timed by wrapping the functions that do them
  (interpreter start, imports of the CLI, snapshot, query read, encoder load, model reads, index load, encoding,
  search, result names, output; exclusive times, so they add up), with numba compilation measured by numba's own
  compile events, and the slowest imports as ``python -X importtime`` reports them.

Speed is reported in seconds and as the ratio to the targets of the latency issue (cold join 2 s, union 1 s; warm
50 ms), with the CPU time (user + system) next to the wall time: a query runs mostly on one thread, so on a machine
shared with other work the CPU time is close to what the wall time would be on an idle one (the load average is
recorded).  Writes ``benchmarks/results/latency.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import harness
from harness import ROOT, print_table, write_result

#: The sample queries of ``make demo``, as CLI arguments after ``--warehouse``.
QUERIES = {
    "join": ["--query", "partners/vendor_master.csv", "--column", "Vendor"],
    "union": ["--query", "finance/registers/firms.tsv", "-k", "5"],
    "nary": ["--query", "retail/stores/store_locations_q1.csv", "--key", "country,city"],
}
TARGETS = {"cold": {"join": 2.0, "union": 1.0, "nary": 1.0}, "warm": 0.05}


def build_warehouse(workdir: str) -> str:
    """The sample lake under ``workdir``, indexed by ``lakescout refresh`` (reused when already published)."""
    lake = harness.sample_lake(os.path.join(workdir, "lake"), lakehouse=True)  # as ``lakescout demo-lake`` writes it
    built = harness.build(lake, os.path.join(workdir, "warehouse"), via="cli")
    if built.seconds is not None:
        print(f"sample lake indexed by lakescout refresh in {built.seconds:.1f} s")
    return built.warehouse


def cli(kind: str, warehouse: str, env: dict | None = None) -> tuple[float, float, dict]:
    """Wall and CPU (user + system) time of one fresh ``lakescout <kind> ... --json`` process, and its answer."""
    done = harness.cli(kind, "--warehouse", warehouse, *QUERIES[kind], "--json", env=env)
    return done.wall, done.cpu, done.json()


def ranking(answer: dict) -> list:
    """What must not change between runs: the result tables in rank order with their scores."""
    score = next(k for k in ("joinability", "score") if not answer["results"] or k in answer["results"][0])
    return [(r["table_id"], r.get("column"), r[score]) for r in answer["results"]]


def cold_runs(warehouse: str, runs: int) -> dict:
    out = {}
    for kind in QUERIES:
        cli(kind, warehouse)  # warms the OS file cache (and fills numba's cache if it is empty)
        runs_ = [cli(kind, warehouse)[:2] for _ in range(runs)]
        times, cpus = [w for w, _ in runs_], [c for _, c in runs_]
        out[kind] = {"median_s": statistics.median(times), "max_s": max(times), "cpu_median_s": statistics.median(cpus),
                     "runs": times}
    return out


def first_runs(warehouse: str) -> dict:
    """Each query with an empty numba cache (what the first query after an install costs), then with that cache."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="lakescout-numba-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        answers = {}
        for kind in QUERIES:
            first, _, answers[kind] = cli(kind, warehouse, env)
            second, _, again = cli(kind, warehouse, env)
            out[kind] = {"empty_cache_s": first, "filled_cache_s": second,
                         "same_answer": ranking(answers[kind]) == ranking(again)}
        warmed = dict(env, NUMBA_CACHE_DIR=os.path.join(cache, "warmed"))
        harness.run([sys.executable, "-m", "discovery.indexes.join.warmup"], cwd=ROOT, env=warmed)
        seconds, _, after = cli("join", warehouse, warmed)
        out["join"].update(after_warmup_s=seconds, same_answer_after_warmup=ranking(after) == ranking(answers["join"]))
    return out


WARM_CHILD = """
import json, statistics, sys, time
import discovery
warehouse, queries, n = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
ls = discovery.open(warehouse)
calls = {
    "join": lambda: ls.join(queries["join"][1], queries["join"][3]),
    "union": lambda: ls.union(queries["union"][1], k=int(queries["union"][3])),
    "nary": lambda: ls.nary(queries["nary"][1], queries["nary"][3]),
}
out = {}
for kind, call in calls.items():
    started = time.perf_counter(); call(); first = time.perf_counter() - started
    times, cpus = [], []
    for _ in range(n):
        started, cpu = time.perf_counter(), time.process_time(); call()
        times.append(time.perf_counter() - started); cpus.append(time.process_time() - cpu)
    out[kind] = {"first_s": first, "median_s": statistics.median(times), "max_s": max(times),
                 "cpu_median_s": statistics.median(cpus)}
print(json.dumps(out))
"""


def warm_runs(warehouse: str, n: int) -> dict:
    return harness.python(WARM_CHILD, warehouse, json.dumps(QUERIES), n, cwd=ROOT).json()


# -- the phase breakdown: a cold CLI process whose phases are timed by wrappers --------------------------------------
#: (phase, module, attribute): the functions whose exclusive time makes a phase.  Names bound by ``from x import y``
#: are wrapped where the caller looks them up.
PHASES = [
    ("snapshot", "discovery.api", "load_snapshot"),
    ("query read", "discovery.api", "resolve_query"),
    ("parameters", "discovery.orchestration.searches.kind", "SearchKind.check"),
    ("encoder load", "discovery.query.vectors", "stored_encoder"),
    ("encoder load", "discovery.query.vectors", "payload"),
    ("model reads", "discovery.indexes.union.service", "snapshot_model"),
    ("model reads", "discovery.indexes.join.service", "snapshot_model"),
    ("model reads", "discovery.indexes.nary.loader", "snapshot_model"),
    ("index load", "discovery.indexes.union.service", "LoadedUnionIndex.__init__"),
    ("index load", "discovery.indexes.union.service", "LoadedCompactIndex.__init__"),
    ("index load", "discovery.indexes.join.service", "LoadedJoinIndex.partition"),
    ("index load", "discovery.indexes.nary.loader", "_build"),
    ("encoding", "discovery.query.vectors", "embed_table"),
    ("encoding", "discovery.query.vectors", "column_values"),
    ("search", "discovery.indexes.union.search", "UnionIndex.search"),
    ("search", "discovery.indexes.union.compact", "CompactIndex.search"),
    ("stored rows", "discovery.indexes.union.compact", "CompactIndex.table_columns"),
    ("search", "discovery.indexes.join.service", "search_partitions"),
    ("search", "discovery.indexes.nary.index", "NaryIndex.search"),
    ("result names", "discovery.indexes.union.service", "result_names"),
    ("result names", "discovery.indexes.join.service", "result_names"),
    ("result names", "discovery.indexes.nary.service", "result_names"),
]

PHASE_CHILD = """
import functools, importlib, io, json, os, sys, time
spawned = float(sys.argv[1])
started = time.time()
from discovery.surfaces import cli
imported = time.time()
phases, stack = {}, []

def wrap(phase, fn):
    @functools.wraps(fn)
    def timed(*a, **k):
        t = time.perf_counter(); stack.append(0.0)
        try:
            return fn(*a, **k)
        finally:
            took = time.perf_counter() - t; inner = stack.pop()
            phases[phase] = phases.get(phase, 0.0) + took - inner
            if stack: stack[-1] += took
    return timed

def install():
    for phase, module, attr in json.loads(sys.argv[2]):  # imports the modules the query would import later
        owner = importlib.import_module(module)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, name, wrap(phase, getattr(owner, name)))

compiles = []
t = time.perf_counter(); install(); search_imports = time.perf_counter() - t
if sys.argv[3] == "join":  # the only query kind that runs numba kernels (importing numba elsewhere would distort)
    from numba.core import event

    class Compiles(event.Listener):  # outermost compilations only: a kernel's compile compiles its callees inside
        depth = 0

        def on_start(self, e):
            self.depth += 1
            if self.depth == 1:
                compiles.append(-time.perf_counter())

        def on_end(self, e):
            self.depth -= 1
            if self.depth == 0:
                compiles[-1] += time.perf_counter()

    event.register("numba:compile", Compiles())
out, sys.stdout = sys.stdout, io.StringIO()
t = time.perf_counter()
code = cli.main(sys.argv[3:])
query = time.perf_counter() - t
sys.stdout = out
print(json.dumps({"code": code, "start_to_main_s": started - spawned, "cli_import_s": imported - started,
                  "search_imports_s": search_imports, "query_s": query, "phases": phases,
                  "numba_compile_s": sum(compiles), "numba_compilations": len(compiles)}), flush=True)
os._exit(code)  # as the console script leaves (discovery.surfaces.cli.entry)
"""


def breakdown(kind: str, warehouse: str, env: dict | None = None) -> dict:
    """Phases of one cold query process (see the module docstring); ``other`` is what no wrapped phase covers."""
    argv = [kind, "--warehouse", warehouse, *QUERIES[kind]]
    wanted = ("discovery.api", f"discovery.{kind}.") + (("discovery.query.vectors",) if kind != "nary" else ())
    phases = [p for p in PHASES if p[1].startswith(wanted)]
    done = harness.python(PHASE_CHILD, time.time(), json.dumps(phases), *argv, cwd=ROOT, env=env)
    wall, got = done.wall, done.json()
    phases = {"interpreter start": got["start_to_main_s"], "imports (cli)": got["cli_import_s"],
              "imports (search modules)": got["search_imports_s"], **got["phases"]}
    phases["other (cli, output, exit)"] = wall - sum(phases.values())
    return {"wall_s": wall, "phases": phases, "numba_compile_s": got["numba_compile_s"],
            "numba_compilations": got["numba_compilations"]}


def slowest_imports(kind: str, warehouse: str, top: int = 8) -> list[dict]:
    """Top-level packages by the import time of their own modules (``-X importtime`` self times, summed per
    package) over one cold query process."""
    done = harness.run([sys.executable, "-X", "importtime", "-m", "discovery.surfaces.cli", kind,
                        "--warehouse", warehouse,
                        *QUERIES[kind]], cwd=ROOT, check=False)
    totals: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, _, name = line.split(":", 1)[1].split("|")
        package = name.strip().split(".")[0]
        totals[package] = totals.get(package, 0.0) + int(own) / 1e6
    return [{"package": p, "seconds": s} for p, s in sorted(totals.items(), key=lambda x: -x[1])[:top]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="cold CLI processes per query (default 5)")
    ap.add_argument("--warm", type=int, default=20, help="timed warm queries per kind (default 20)")
    ap.add_argument("--workdir", default=None, help="folder for the lake and warehouse (default: a temporary one)")
    args = ap.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="lakescout-latency-")
    warehouse = build_warehouse(workdir)
    load_start = os.getloadavg()

    cold = cold_runs(warehouse, args.runs)
    first = first_runs(warehouse)
    warm = warm_runs(warehouse, args.warm)
    phases = {kind: breakdown(kind, warehouse) for kind in QUERIES}
    imports = {kind: slowest_imports(kind, warehouse) for kind in QUERIES}

    print("\n== cold CLI query (fresh process; OS file cache warm)")
    print_table([{"query": k, "median s": v["median_s"], "max s": v["max_s"], "cpu s": v["cpu_median_s"],
                  "target s": TARGETS["cold"][k], "median / target": v["median_s"] / TARGETS["cold"][k]}
                 for k, v in cold.items()], ["query", "median s", "max s", "cpu s", "target s", "median / target"])
    print("\n== first query after install (empty numba cache), then the next one")
    print_table([{"query": k, **v} for k, v in first.items()],
                ["query", "empty_cache_s", "filled_cache_s", "after_warmup_s", "same_answer",
                 "same_answer_after_warmup"])
    print("\n== warm API query (discovery.open kept open; second and later queries)")
    print_table([{"query": k, "first s": v["first_s"], "median ms": v["median_s"] * 1000, "max ms": v["max_s"] * 1000,
                  "cpu ms": v["cpu_median_s"] * 1000, "median / target": v["median_s"] / TARGETS["warm"]}
                 for k, v in warm.items()], ["query", "first s", "median ms", "max ms", "cpu ms", "median / target"])
    print("\n== where a cold query's time goes (seconds, exclusive)")
    names = list(dict.fromkeys(p for v in phases.values() for p in v["phases"]))
    rows = [{"phase": p, **{k: v["phases"].get(p) for k, v in phases.items()}} for p in names]
    rows.append({"phase": "numba compile (inside the above)", **{k: v["numba_compile_s"] for k, v in phases.items()}})
    rows.append({"phase": "wall", **{k: v["wall_s"] for k, v in phases.items()}})
    print_table(rows, ["phase", *QUERIES])
    print("\n== slowest imports per cold query (python -X importtime, seconds in each package's own modules)")
    for kind, top in imports.items():
        print(f"  {kind}: " + ", ".join(f"{i['package']} {i['seconds']:.2f}" for i in top))
    write_result("latency", {"workdir": workdir, "file_cache": "warm (an untimed run first)", "targets": TARGETS,
                             "load_average": {"start": load_start, "end": os.getloadavg()},
                             "cold": cold, "first_after_install": first, "warm": warm, "breakdown": phases,
                             "imports": imports})
    return 0


if __name__ == "__main__":
    sys.exit(main())
