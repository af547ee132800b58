"""The compact union index at scale: memory, query time, recall and cold start against float32 ``exact``.

A generated lake (``tests/synthetic_lake.py``: clustered column vectors, as ``benchmarks/union.py``'s scale part
draws them, at the dimension of the union column vectors with the name channel, d = 384) is written as the query
arrays the refresh writes (``discovery.indexes.union.arrays``: float32 vectors, int8 codes, offsets) into ``--workdir``
(reused when it holds the same lake), and 50 queries drawn from the same model are answered by

* ``exact``: every table scored from the float32 vectors (one BLAS product with the lake in blocks of 65,536
  columns, then the admissible pairs), the baseline of the issue.  It runs over the memory-mapped vectors file, as a
  served snapshot's ``exact`` does, not over a copy on the heap: at 1M tables the vectors are 11.5 GB, and a heap copy
  beside the page cache's would need twice that.  With the file in the page cache the product reads the same bytes
  at the same speed; the major page faults of each method are counted, so a pass that had to read the disk shows;
* ``compact`` (what ``pgtus++`` runs on a served snapshot): the int8 bound pass over the memory-mapped codes, then
  exact scores for the tables whose bound reaches the k-th score, from their float32 rows read with positioned reads.

Measured in one run: recall@k of compact against exact (and whether scores and order are identical), median and
mean latency with their ratio (queries interleaved, the order alternating, so load hits both alike), the median CPU
seconds of each (what a query costs on a core of its own, page-fault handling included), the tables
compact scored exactly, and the major page faults of each method; resident memory of a fresh process that maps the
index and answers every query (the resident pages of each mapped file, from ``/proc/self/smaps``, plus the arrays it
holds on the heap) against
the bytes of the float32 vectors; and the time from spawning a fresh Python process to its first answer, compact
(map the arrays, answer) against ``exact`` (map the arrays, answer from the mapped vectors), with the files in the
page cache (dropping the cache needs root).

The lake is generated in chunks and streamed to its files (:func:`prepare`), so generating 1M tables holds one chunk
in memory.  Both methods run on ``--threads`` threads (default 1, so latencies compare algorithms): exact's BLAS
product and compact's bound pass (``LAKESCOUT_QUERY_THREADS``).

Usage: python benchmarks/union_scale.py [--tables 100000] [--queries 50] [--k 10] [--dim 384] [--tau 0.4]
       [--workdir /tmp/lakescout-bench-union-scale] [--cold-runs 3] [--threads 1]
Writes benchmarks/results/union_scale_compact_<tables>.json.
"""
from __future__ import annotations

import os
import sys

#: ``--threads N`` (default 1), read before numpy loads BLAS: the threads of exact's BLAS product and of compact's
#: bound pass alike, in this process and the children it measures.
_THREADS = next((sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--threads"), "1")
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "LAKESCOUT_QUERY_THREADS"):
    os.environ[_var] = _THREADS

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import harness  # noqa: E402
from discovery.indexes.union.arrays import load_arrays, save_arrays  # noqa: E402
from discovery.indexes.union.compact import CompactIndex  # noqa: E402
from harness import print_table, write_result  # noqa: E402

#: child process programs: each prints one JSON line.  ``{folder}`` and ``{queries}`` are filled in.
_COLD = {
    "compact": """
import time, json, numpy as np
from discovery.indexes.union.arrays import load_arrays
from discovery.indexes.union.compact import CompactIndex
index = CompactIndex(**load_arrays({folder!r}))
query = np.load({queries!r})["q0"]
found = index.search(query, {k}, "pgtus++", tau={tau})
print(json.dumps({{"first_answer": time.time(), "tables": [r.table_id for r in found.results]}}))
""",
    "exact": """
import time, json, numpy as np
from discovery.indexes.union.arrays import load_arrays
from discovery.indexes.union.compact import CompactIndex
index = CompactIndex(**load_arrays({folder!r}))
query = np.load({queries!r})["q0"]
found = index.search(query, {k}, "exact", tau={tau})
print(json.dumps({{"first_answer": time.time(), "tables": [r.table_id for r in found.results]}}))
""",
}

_MEMORY = """
import json, os, numpy as np
from discovery.indexes.union.arrays import load_arrays
from discovery.indexes.union.compact import CompactIndex

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
    return started, harness.python(program).json()


#: tables drawn and written per step of the generation (about 75k columns: a few hundred MB of float64 working copies).
_CHUNK = 10_000


def prepare(workdir: str, n_tables: int, n_queries: int, dim: int) -> tuple[str, str, float]:
    """The lake's arrays folder and the queries file (generated unless ``workdir`` holds them); generation seconds.

    Generated in chunks of :data:`_CHUNK` tables (chunk c drawn with seed (1, c)) and streamed to the files, so memory
    stays at one chunk whatever the lake's size (the float32 vectors of 1M tables are 11.5 GB): the vectors are
    written as they are drawn, the per-dimension steps are ``fit_steps`` of the chunks' per-dimension maxima (the
    lake's maxima), and the codes are written by ``encode`` in a second pass that reads the vectors file back in
    blocks with positioned reads (mapping it would make the whole file resident in this process).
    """
    from discovery.indexes.union.arrays import StoredRows, narrow_offsets
    from discovery.indexes.union.csr import offsets_from_counts
    from discovery.indexes.union.matching import unit_rows
    from discovery.indexes.union.quantised import encode, fit_steps
    from synthetic_lake import draw_tables, lake_model

    folder = os.path.join(workdir, f"union-{n_tables}-d{dim}")
    queries = os.path.join(workdir, f"queries-{n_tables}-d{dim}-{n_queries}.npz")
    n_domains = max(50, n_tables // 50)
    model = lake_model(dim, n_domains, max(10, n_domains // 5), 16, max_columns=12, seed=0)
    if not os.path.exists(queries):
        os.makedirs(workdir, exist_ok=True)
        qv, qo, _ = draw_tables(model, n_queries, seed=12345)
        np.savez(queries, **{f"q{i}": qv[qo == i] for i in range(n_queries)})
    if os.path.exists(os.path.join(folder, "meta.json")):
        return folder, queries, 0.0
    started = time.perf_counter()
    os.makedirs(folder, exist_ok=True)
    vectors_path, codes_path = os.path.join(folder, "vectors.npy"), os.path.join(folder, "codes.npy")
    counts, ordinals, maxima = [], [], []
    with open(vectors_path, "wb") as fh:
        _npy_header(fh, (0, dim), np.float32)  # rewritten with the row count once it is known
        for c, first in enumerate(range(0, n_tables, _CHUNK)):
            size = min(_CHUNK, n_tables - first)
            vectors, owner, ordinal = draw_tables(model, size, seed=[1, c])
            vectors = unit_rows(vectors)
            vectors.tofile(fh)
            counts.append(np.bincount(owner, minlength=size))
            ordinals.append(ordinal.astype(np.int32))
            maxima.append(np.abs(vectors).max(axis=0))
        n = sum(len(o) for o in ordinals)
        fh.seek(0)
        _npy_header(fh, (n, dim), np.float32)
    steps = fit_steps(np.stack(maxima))
    stored, error = StoredRows(vectors_path), np.zeros(dim)
    codes = np.empty((_CHUNK * 8, dim), dtype=np.int8)
    with open(codes_path, "wb") as fh:
        _npy_header(fh, (n, dim), np.int8)
        for a in range(0, n, len(codes)):
            block = stored.take(np.array([a]), np.array([min(len(codes), n - a)]))
            np.maximum(error, encode(block, steps, codes[:len(block)]), out=error)
            codes[:len(block)].tofile(fh)
    arrays = {"table_ids": np.arange(n_tables, dtype=np.int64),
              "col_offsets": narrow_offsets(offsets_from_counts(np.concatenate(counts))),
              "ordinals": np.concatenate(ordinals), "steps": steps, "error": error,
              "vectors": np.load(vectors_path, mmap_mode="r+"), "codes": np.load(codes_path, mmap_mode="r+")}
    save_arrays(folder, arrays, {"generated": {"tables": n_tables, "chunk": _CHUNK}})
    return folder, queries, time.perf_counter() - started


def _npy_header(fh, shape: tuple, dtype) -> None:
    """Write a ``.npy`` header at the file's position; its length does not depend on the row count (numpy pads it
    to 128 bytes here), so the vectors' header can be rewritten once the rows are written."""
    at = fh.tell()
    np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                              "fortran_order": False, "shape": shape})
    if fh.tell() - at != 128:
        raise ValueError(f"unexpected .npy header length {fh.tell() - at}")


def latency(folder: str, queries_file: str, k: int, tau: float) -> dict:
    """Interleaved exact and compact queries on one index over the mapped arrays: recall, identity, latency, work,
    major page faults, and this process's memory afterwards."""
    index = CompactIndex(**load_arrays(folder))
    queries = np.load(queries_file)
    names = queries.files
    index.search(queries[names[0]], k, "pgtus++", tau=tau)  # compiles the bound pass (numba caches it on disk)
    times, cpu = {"exact": [], "compact": []}, {"exact": [], "compact": []}
    faults = {"exact": 0, "compact": 0}
    recall, identical, scored = [], 0, []
    for i, name in enumerate(names):
        q = queries[name]
        order = ("exact", "compact") if i % 2 == 0 else ("compact", "exact")
        found = {}
        for method in order:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
            t0, c0 = time.perf_counter(), time.process_time()
            found[method] = index.search(q, k, "exact" if method == "exact" else "pgtus++", tau=tau)
            times[method].append(time.perf_counter() - t0)
            cpu[method].append(time.process_time() - c0)
            faults[method] += resource.getrusage(resource.RUSAGE_SELF).ru_majflt - before
        want = [(r.table_id, r.score, r.alignment) for r in found["exact"].results]
        got = [(r.table_id, r.score, r.alignment) for r in found["compact"].results]
        truth = {t for t, _, _ in want}
        recall.append(len(truth & {t for t, _, _ in got}) / len(truth) if truth else 1.0)
        identical += want == got
        scored.append(found["compact"].stats.exact_matchings)
    med = {m: statistics.median(v) for m, v in times.items()}
    return {"queries": len(names), "recall_at_k": float(np.mean(recall)), "identical_answers": identical,
            "exact_median_s": med["exact"], "compact_median_s": med["compact"],
            "exact_mean_s": float(np.mean(times["exact"])), "compact_mean_s": float(np.mean(times["compact"])),
            "compact_over_exact_median": med["compact"] / med["exact"],
            "exact_cpu_median_s": statistics.median(cpu["exact"]),
            "compact_cpu_median_s": statistics.median(cpu["compact"]),
            "tables_scored_exactly_mean": float(np.mean(scored)), "tables_scored_exactly_max": int(np.max(scored)),
            "exact_major_faults": faults["exact"], "compact_major_faults": faults["compact"],
            **{f"process_{key}_bytes": harness.proc_status(key) for key in ("VmHWM", "RssAnon", "RssFile")}}


def memory(folder: str, queries_file: str, k: int, tau: float) -> dict:
    _, out = _child(_MEMORY.format(folder=folder, queries=queries_file, k=k, tau=tau))
    meta = json.load(open(os.path.join(folder, "meta.json")))
    float32 = meta["columns"] * meta["dim"] * 4
    mapped = out["mapped_rss"]
    index_bytes = sum(mapped.values()) + out["heap_arrays"]
    return {"float32_vectors_bytes": float32, "index_resident_bytes": index_bytes,
            "index_over_float32": index_bytes / float32,
            "resident_by_file": mapped, "heap_arrays_bytes": out["heap_arrays"],
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
    assert out["compact_tables"] == out["exact_tables"], "compact and exact answers differ"
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
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads of exact and bound-pass threads of compact")
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
        "lake": {**meta, "queries": args.queries, "k": args.k, "tau": args.tau, "threads": args.threads},
        "queries": speed, "memory": mem,
        "cold": start})


if __name__ == "__main__":
    main()
