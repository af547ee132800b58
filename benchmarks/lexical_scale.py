"""The union search's lexical index at scale: what building a snapshot's table vectors costs, and a query's cosines.

A served snapshot builds its :class:`~discovery.indexes.union.lexical.LexicalIndex` from the ``terms`` and
``term_counts`` of every ``column_vectors`` row the first time a union search asks for it (each new snapshot again), so
at a million tables its build time is how long a new snapshot's first union search waits (or its warm-up takes), and its
memory is held beside the union index.

The lake: the sample lake built by the real refresh (``lakescout refresh``, quick training: terms do not depend on
the encoders), whose stored column terms are copied out to ``--tables`` tables.  A copy keeps the words common in
the sample lake (those of more than ``COMMON_DF`` columns: names such as ``id`` or ``name``, category values) and
gives every rarer word a bucket of its own per copy, so the vocabulary grows with the lake as real lakes' do and the
table vectors hold as many entries as the sample lake's tables.  The rows are written as one Parquet file of
(table_id, terms, term_counts), the columns the served index reads, and each measurement runs in a fresh process
that reads the file and builds the index, as a served process does after its Delta read: the build's wall and CPU
seconds, the peak resident memory above the read rows, the index's bytes, and the median time of a query's cosines
over every table (50 of the sample lake's tables as queries, their own stored terms).

With ``--baseline DIR`` (a worktree of other code) each size is also built by that code's ``LexicalIndex`` in its
own fresh process, the two alternating.

Usage: python benchmarks/lexical_scale.py [--tables 100000,1000000] [--workdir DIR] [--baseline DIR]
Writes benchmarks/results/lexical_scale.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import harness
from harness import print_table, write_result

#: A word of more columns than this in the sample lake is kept as it is by every copy; rarer words get a bucket of
#: their own per copy.
COMMON_DF = 20
#: Query tables measured.
QUERIES = 50

_CHILD = """
import json, statistics, sys, time
import numpy as np, pyarrow.parquet as pq
import scipy.sparse  # imported once by a served process; not the build's cost
from discovery.indexes.union.lexical import LexicalIndex

def rss():
    with open("/proc/self/status") as fh:
        return {l.split(":")[0]: int(l.split()[1]) * 1024 for l in fh if l.startswith(("VmRSS", "VmHWM"))}

rows = pq.read_table(sys.argv[1])
queries = json.load(open(sys.argv[2]))
ids = rows.column("table_id").to_numpy()
before = rss()
c0, t0 = time.process_time(), time.perf_counter()
index = LexicalIndex.build(np.unique(ids), ids, rows.column("terms"), rows.column("term_counts"))
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
after = rss()
secs = []
for q in queries:
    terms = [(np.asarray(b, dtype=np.int32), np.asarray(c, dtype=np.int32)) for b, c in q]
    t = time.perf_counter()
    index.cosines(terms)
    secs.append(time.perf_counter() - t)
import discovery
print(json.dumps({
    "code_path": discovery.__file__, "build_s": wall, "build_cpu_s": cpu,
    "peak_above_rows_mb": (after["VmHWM"] - before["VmRSS"]) / 2**20,
    "held_mb": (after["VmRSS"] - before["VmRSS"]) / 2**20, "index_mb": index.nbytes / 2**20,
    "entries": int(index.by_bucket.nnz), "cosines_ms": 1000 * statistics.median(secs)}))
"""


def seed_rows(workdir: str) -> pa.Table:
    """(table_id, terms, term_counts) of every column of the sample lake, built by the real refresh."""
    import discovery

    lake = harness.sample_lake(os.path.join(workdir, "lake"))
    warehouse = os.path.join(workdir, "warehouse")
    config = harness.config_file(workdir, "quick", harness.QUICK_TRAINING)
    harness.build(lake, warehouse, config=config, via="cli")
    snapshot = discovery.open(warehouse).snapshot
    return snapshot.read("column_vectors", columns=["table_id", "terms", "term_counts"])


def scaled(seed: pa.Table, n_tables: int) -> pa.Table:
    """``seed``'s columns copied out to ``n_tables`` tables (module docstring); two words of a column that a copy
    maps to one bucket become one term with both counts."""
    from discovery.transforms.encoders.terms import BUCKETS

    ids = seed.column("table_id").to_numpy()
    tables, table_of = np.unique(ids, return_inverse=True)
    terms, counts = seed.column("terms").combine_chunks(), seed.column("term_counts").combine_chunks()
    lengths = terms.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = terms.flatten().to_numpy().astype(np.int64)
    flat_counts = counts.flatten().to_numpy().astype(np.int64)
    column_of = np.repeat(np.arange(len(lengths)), lengths)
    common = np.bincount(flat, minlength=BUCKETS)[flat] > COMMON_DF
    out_ids, out_lengths, out_terms, out_counts = [], [], [], []
    for c in range(-(-n_tables // len(tables))):
        mixed = np.where(common, flat, (flat * 2654435761 + c * 40503 + 97) & (BUCKETS - 1))
        order = np.lexsort((mixed, column_of))
        m, col, cnt = mixed[order], column_of[order], flat_counts[order]
        first = np.flatnonzero(np.r_[True, (m[1:] != m[:-1]) | (col[1:] != col[:-1])]) if len(m) else order[:0]
        keep = table_of + c * len(tables) < n_tables
        in_kept = keep[col[first]]
        out_terms.append(m[first][in_kept].astype(np.int32))
        out_counts.append(np.add.reduceat(cnt, first)[in_kept].astype(np.int32) if len(first) else cnt[:0])
        out_lengths.append(np.bincount(col[first], minlength=len(lengths))[keep])
        out_ids.append((table_of[keep] + c * len(tables)).astype(np.int64))
    offsets = pa.array(np.r_[0, np.cumsum(np.concatenate(out_lengths))].astype(np.int32))
    return pa.table({"table_id": np.concatenate(out_ids),
                     "terms": pa.ListArray.from_arrays(offsets, pa.array(np.concatenate(out_terms))),
                     "term_counts": pa.ListArray.from_arrays(offsets, pa.array(np.concatenate(out_counts)))})


def queries(seed: pa.Table) -> list:
    """The stored column terms of :data:`QUERIES` sample-lake tables: [[(buckets, counts) per column] per table]."""
    ids = seed.column("table_id").to_numpy()
    chosen = np.unique(ids)[:: max(1, len(np.unique(ids)) // QUERIES)][:QUERIES]
    out = []
    for t in chosen:
        rows = seed.filter(pa.array(ids == t))
        out.append([(b, c) for b, c in zip(rows.column("terms").to_pylist(), rows.column("term_counts").to_pylist())])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", default="100000,1000000")
    p.add_argument("--workdir", default="/tmp/lakescout-bench-lexical")
    p.add_argument("--baseline", help="a worktree of the code to compare with")
    args = p.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    seed = seed_rows(args.workdir)
    query_file = os.path.join(args.workdir, "queries.json")
    with open(query_file, "w") as fh:
        json.dump(queries(seed), fh)
    rows = []
    for n in [int(x) for x in args.tables.split(",")]:
        path = os.path.join(args.workdir, f"terms_{n}.parquet")
        if not os.path.exists(path):
            table = scaled(seed, n)
            pq.write_table(table, path)
            del table
        columns = pq.read_metadata(path).num_rows
        for code, where in [("this", None)] + ([("baseline", args.baseline)] if args.baseline else []):
            env = dict(os.environ, PYTHONPATH=where) if where else None
            done = harness.run([sys.executable, "-c", _CHILD, path, query_file], env=env, cwd=args.workdir)
            rows.append({"code": code, "tables": n, "columns": columns, **done.json()})
            print_table(rows[-1:], list(rows[-1]))
    seed_tables = int(len(np.unique(seed.column("table_id").to_numpy())))
    write_result("lexical_scale", {"baseline": args.baseline, "seed_tables": seed_tables, "common_df": COMMON_DF,
                                   "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
