"""The compact union index at scale: memory, query time, recall and cold start against float32 ``exact``.

A generated lake (``discovery.union.synthetic``: clustered column vectors, as ``benchmarks/union.py``'s scale part
draws them, at the dimension of the union column vectors with the name channel, d = 384) is written as the query
arrays the refresh writes (``discovery.union.arrays``: float32 vectors, int8 codes, offsets) into ``--workdir``
(reused when it holds the same lake), and 50 queries drawn from the same model are answered by

* ``exact``: every table scored from the float32 vectors held in memory (one blocked BLAS product with the lake,
  then the admissible pairs), the baseline of the issue;
* ``compact`` (what ``pgtus++`` runs on a served snapshot): the int8 bound pass over the memory-mapped codes, then
  exact scores for the tables whose bound reaches the k-th score, from the memory-mapped float32 vectors.

Measured in one run: recall@k of compact against exact (and whether scores and order are identical), median and
mean latency with their ratio (queries interleaved, the order alternating, so load hits both alike), tables and
columns compact scored exactly; resident memory of a fresh process that maps the index and answers every query
(the resident pages of each mapped file, from ``/proc/self/smaps``, plus the arrays it holds on the heap) against
the bytes of the float32 vectors; and the time from spawning a fresh Python process to its first answer, compact
(map the arrays, answer) against float32 (read the vectors file, answer with ``exact``), with the files in the page
cache (dropping the cache needs root).  BLAS is single-threaded so latencies compare algorithms.

Usage: python benchmarks/union_scale.py [--tables 100000] [--queries 50] [--k 10] [--dim 384] [--tau 0.4]
       [--workdir /tmp/lakescout-bench-union-scale] [--cold-runs 3]
Writes benchmarks/results/union_scale_compact_<tables>.json.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import print_table, write_result  # noqa: E402
from discovery.union.arrays import FILES, load_arrays, save_arrays  # noqa: E402
from discovery.union.compact import CompactIndex  # noqa: E402

#: child process programs: each prints one JSON line.  ``{folder}`` and ``{queries}`` are filled in.
_COLD = {
    "compact": """
import time, json, numpy as np
from discovery.union.arrays import load_arrays
from discovery.union.compact import CompactIndex
index = CompactIndex(**load_arrays({folder!r}))
query = np.load({queries!r})["q0"]
found = index.search(query, {k}, "pgtus++", tau={tau})
print(json.dumps({{"first_answer": time.time(), "tables": [r.table_id for r in found.results]}}))
""",
    "float32": """
import time, json, numpy as np
from discovery.union.arrays import load_arrays
from discovery.union.compact import CompactIndex
arrays = load_arrays({folder!r})
arrays["vectors"] = np.load({folder!r} + "/vectors.npy")
index = CompactIndex(**arrays)
query = np.load({queries!r})["q0"]
found = index.search(query, {k}, "exact", tau={tau})
print(json.dumps({{"first_answer": time.time(), "tables": [r.table_id for r in found.results]}}))
""",
}

_MEMORY = """
import json, os, numpy as np
from discovery.union.arrays import load_arrays
from discovery.union.compact import CompactIndex

def mapped_rss():
    out, current = {{}}, None
    with open("/proc/self/smaps") as fh:
        for line in fh:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 6 and parts[-1].startswith({folder!r}):
                current = os.path.basename(parts[-1])
            elif "-" in parts[0] and ":" not in parts[0]:
                current = None
            elif current and parts[0] == "Rss:":
                out[current] = out.get(current, 0) + int(parts[1]) * 1024
    return out

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) * 1024 for l in fh if l.startswith(key + ":"))

rss0 = status("VmRSS")
index = CompactIndex(**load_arrays({folder!r}))
rss_open = status("VmRSS")
queries = np.load({queries!r})
for name in queries.files:
    index.search(queries[name], {k}, "pgtus++", tau={tau})
heap = sum(a.nbytes for a in (index.table_ids, index.col_offsets, index.steps, index.error)
           if not isinstance(a, np.memmap))
print(json.dumps({{"mapped_rss": mapped_rss(), "heap_arrays": heap, "rss_before": rss0, "rss_open": rss_open,
                  "rss_after": status("VmRSS")}}))
"""


def _child(program: str) -> tuple[float, dict]:
    started = time.time()
    out = subprocess.run([sys.executable, "-c", program], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})
    return started, json.loads(out.stdout.strip().splitlines()[-1])


def prepare(workdir: str, n_tables: int, n_queries: int, dim: int) -> tuple[str, str, float]:
    """The lake's arrays folder and the queries file (generated unless ``workdir`` holds them); generation seconds."""
    from discovery.union.synthetic import draw_tables, generate_lake, lake_model

    folder = os.path.join(workdir, f"union-{n_tables}-d{dim}")
    queries = os.path.join(workdir, f"queries-{n_tables}-d{dim}-{n_queries}.npz")
    if os.path.exists(os.path.join(folder, "meta.json")) and os.path.exists(queries):
        return folder, queries, 0.0
    started = time.perf_counter()
    n_domains = max(50, n_tables // 50)
    model = lake_model(dim, n_domains, max(10, n_domains // 5), 16, max_columns=12, seed=0)
    lake = generate_lake(model, n_tables, seed=1)
    index = CompactIndex.build(lake.column_vectors, lake.column_table_ids, lake.column_ordinals)
    os.makedirs(folder, exist_ok=True)
    save_arrays(folder, {name: getattr(index, name) for name in FILES}, {"generated": {"tables": n_tables}})
    qv, qo, _ = draw_tables(model, n_queries, seed=12345)
    np.savez(queries, **{f"q{i}": qv[qo == i] for i in range(n_queries)})
    return folder, queries, time.perf_counter() - started


def latency(folder: str, queries_file: str, k: int, tau: float) -> dict:
    """Interleaved exact (float32 in memory) and compact (mapped) queries: recall, identity, latency, work."""
    mapped = load_arrays(folder)
    compact = CompactIndex(**mapped)
    exact = CompactIndex(**{**mapped, "vectors": np.load(os.path.join(folder, "vectors.npy"))})
    queries = np.load(queries_file)
    names = queries.files
    compact.search(queries[names[0]], k, "pgtus++", tau=tau)  # compiles the bound pass (numba caches it on disk)
    times = {"exact": [], "compact": []}
    recall, identical, scored, columns = [], 0, [], []
    for i, name in enumerate(names):
        q = queries[name]
        order = ("exact", "compact") if i % 2 == 0 else ("compact", "exact")
        found = {}
        for method in order:
            index, m = (exact, "exact") if method == "exact" else (compact, "pgtus++")
            t0 = time.perf_counter()
            found[method] = index.search(q, k, m, tau=tau)
            times[method].append(time.perf_counter() - t0)
        want = [(r.table_id, r.score, r.alignment) for r in found["exact"].results]
        got = [(r.table_id, r.score, r.alignment) for r in found["compact"].results]
        truth = {t for t, _, _ in want}
        recall.append(len(truth & {t for t, _, _ in got}) / len(truth) if truth else 1.0)
        identical += want == got
        scored.append(found["compact"].stats.exact_matchings)
        tix = np.searchsorted(compact.table_ids, [r.table_id for r in found["compact"].results])
        columns.append(int(np.diff(compact.col_offsets)[tix].sum()))
    med = {m: statistics.median(v) for m, v in times.items()}
    return {"queries": len(names), "recall_at_k": float(np.mean(recall)), "identical_answers": identical,
            "exact_median_s": med["exact"], "compact_median_s": med["compact"],
            "exact_mean_s": float(np.mean(times["exact"])), "compact_mean_s": float(np.mean(times["compact"])),
            "compact_over_exact_median": med["compact"] / med["exact"],
            "tables_scored_exactly_mean": float(np.mean(scored)), "tables_scored_exactly_max": int(np.max(scored))}


def memory(folder: str, queries_file: str, k: int, tau: float) -> dict:
    _, out = _child(_MEMORY.format(folder=folder, queries=queries_file, k=k, tau=tau))
    meta = json.load(open(os.path.join(folder, "meta.json")))
    float32 = meta["columns"] * meta["dim"] * 4
    mapped = out["mapped_rss"]
    index_bytes = sum(mapped.values()) + out["heap_arrays"]
    return {"float32_vectors_bytes": float32, "index_resident_bytes": index_bytes,
            "index_over_float32": index_bytes / float32,
            "codes_resident_bytes": mapped.get("codes.npy", 0),
            "vectors_resident_bytes": mapped.get("vectors.npy", 0),
            "process_rss_growth_bytes": out["rss_after"] - out["rss_before"],
            "process_rss_growth_over_float32": (out["rss_after"] - out["rss_before"]) / float32}


def cold(folder: str, queries_file: str, k: int, tau: float, runs: int) -> dict:
    out = {}
    for kind, program in _COLD.items():
        seconds, tables = [], None
        for _ in range(runs):
            started, result = _child(program.format(folder=folder, queries=queries_file, k=k, tau=tau))
            seconds.append(result["first_answer"] - started)
            tables = result["tables"] if tables is None else tables
            assert tables == result["tables"]
        out[f"{kind}_first_answer_median_s"] = statistics.median(seconds)
        out[f"{kind}_tables"] = tables
    assert out["compact_tables"] == out["float32_tables"], "compact and float32 answers differ"
    return {key: value for key, value in out.items() if not key.endswith("_tables")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--tau", type=float, default=0.4)
    ap.add_argument("--workdir", default="/tmp/lakescout-bench-union-scale")
    ap.add_argument("--cold-runs", type=int, default=3)
    args = ap.parse_args()
    folder, queries, generated = prepare(args.workdir, args.tables, args.queries, args.dim)
    meta = json.load(open(os.path.join(folder, "meta.json")))
    print(f"lake: {meta['tables']} tables, {meta['columns']} columns, d={meta['dim']} "
          f"(generated in {generated:.0f} s)" if generated else f"lake: reused {folder}")
    speed = latency(folder, queries, args.k, args.tau)
    mem = memory(folder, queries, args.k, args.tau)
    start = cold(folder, queries, args.k, args.tau, args.cold_runs)
    print(f"\nqueries (k={args.k}, tau={args.tau}); compact against exact measured in this run")
    print_table([speed], list(speed))
    print("\nresident memory of the loaded index (a fresh process after every query) against the float32 vectors")
    print_table([mem], list(mem))
    print("\ncold process, spawn to first answer (files in the page cache)")
    print_table([start], list(start))
    write_result(f"union_scale_compact_{args.tables}", {
        "lake": {**meta, "queries": args.queries, "k": args.k, "tau": args.tau}, "queries": speed, "memory": mem,
        "cold": start})


if __name__ == "__main__":
    main()
