"""Union search at scale: a generated lake of clustered column vectors (>= 100k tables), 50 queries.

For every method: recall@k against ``exact`` (the exhaustive Definition 5 ranking), mean latency and its ratio to
``exact`` measured in the same run, candidates and exact matchings per query; for PGTUS vs PGTUS++ the exact matchings
BBP and EBBP computed.  Several (phi_c, phi_ref) settings are measured so the table shows which reach the targets
(pgtus++ recall@k >= 0.95 at >= 20x lower latency than exact; EBBP <= half the exact matchings of BBP).

Prints a table and writes benchmarks/results/union_scale.json.  Needs no shared data: the lake is generated.
Usage: python benchmarks/union.py [--tables 100000] [--queries 50] [--k 10]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from discovery.union import UnionIndex  # noqa: E402
from discovery.union.synthetic import (build_index_inputs, draw_tables, generate_lake, lake_model,  # noqa: E402
                                       table_vectors_of)

RESULTS = Path(__file__).resolve().parent / "results" / "union_scale.json"


def run_method(index, queries, tvecs, k, method, truth, **params):
    """Run every query; return the summary row and the result table ids per query."""
    latencies, recalls, stats, found = [], [], [], []
    for qi, q in enumerate(queries):
        t0 = time.perf_counter()
        res = index.search(q, k, method, query_table_vector=tvecs[qi], **params)
        latencies.append(time.perf_counter() - t0)
        got = {r.table_id for r in res.results}
        if truth is not None and truth[qi]:
            recalls.append(len(got & truth[qi]) / len(truth[qi]))
        stats.append(res.stats)
        found.append(got)
    return {
        "method": method,
        "params": params,
        "recall_at_k": float(np.mean(recalls)) if recalls else 1.0,
        "latency_ms": 1000 * float(np.mean(latencies)),
        "candidates_after_refinement": float(np.mean([s.candidates_after_refinement for s in stats])),
        "candidates_after_pruning": float(np.mean([s.candidates_after_pruning for s in stats])),
        "exact_matchings": float(np.mean([s.exact_matchings for s in stats])),
    }, found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--dim", type=int, default=64)
    args = ap.parse_args()
    threads = min(2, os.cpu_count() or 1)

    t0 = time.perf_counter()
    n_domains = max(50, args.tables // 50)
    model = lake_model(args.dim, n_domains, max(10, n_domains // 5), 16, max_columns=12, seed=0)
    lake = generate_lake(model, args.tables, seed=1)
    centroids, parts = build_index_inputs(lake)
    t_inputs = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = UnionIndex.build(lake.column_vectors, lake.column_table_ids, lake.column_ordinals, centroids, parts,
                             lake.table_vectors, threads=threads)
    t_build = time.perf_counter() - t0
    qv, qo, _ = draw_tables(model, args.queries, seed=12345)
    queries = [qv[qo == i] for i in range(args.queries)]
    tvecs = table_vectors_of(qv, qo, args.queries)
    print(f"lake: {args.tables} tables, {len(lake.column_vectors)} columns, d={args.dim}, "
          f"{len(centroids)} centroids, {len(parts.table_ids)} partitions; centroid stage {t_inputs:.1f}s, "
          f"index build {t_build:.1f}s")

    k = args.k
    exact_row, truth = run_method(index, queries, tvecs, k, "exact", None)
    rows = [exact_row]
    t0 = time.perf_counter()
    index.search(queries[0], k, "starmie")
    t_col_hnsw = time.perf_counter() - t0
    index.search(queries[0], k, "tactus", query_table_vector=tvecs[0])
    settings = [(8, 10 * k), (16, 20 * k), (32, 20 * k), (32, 50 * k)]
    for phi_c, phi_ref in settings:
        for method in ("pgtus++", "pgtus"):
            rows.append(run_method(index, queries, tvecs, k, method, truth, phi_c=phi_c, phi_ref=phi_ref)[0])
    for k_prime in (10 * k, 30 * k):
        rows.append(run_method(index, queries, tvecs, k, "starmie", truth, k_prime=k_prime)[0])
    rows.append(run_method(index, queries, tvecs, k, "tactus", truth)[0])

    exact_ms = rows[0]["latency_ms"]
    for r in rows:
        r["speedup_vs_exact"] = exact_ms / r["latency_ms"]
    print(f"\n{'method':9} {'params':32} {'recall@k':>8} {'ms':>9} {'x exact':>8} {'cand':>7} {'kept':>6} "
          f"{'exact m.':>8}")
    for r in rows:
        p = ", ".join(f"{a}={b}" for a, b in r["params"].items())
        print(f"{r['method']:9} {p:32} {r['recall_at_k']:8.3f} {r['latency_ms']:9.2f} {r['speedup_vs_exact']:8.1f} "
              f"{r['candidates_after_refinement']:7.0f} {r['candidates_after_pruning']:6.1f} "
              f"{r['exact_matchings']:8.1f}")
    pruning = []
    for phi_c, phi_ref in settings:
        pp = next(r for r in rows if r["method"] == "pgtus++" and r["params"]["phi_c"] == phi_c
                  and r["params"]["phi_ref"] == phi_ref)
        pb = next(r for r in rows if r["method"] == "pgtus" and r["params"]["phi_c"] == phi_c
                  and r["params"]["phi_ref"] == phi_ref)
        pruning.append({"phi_c": phi_c, "phi_ref": phi_ref, "bbp_exact_matchings": pb["exact_matchings"],
                        "ebbp_exact_matchings": pp["exact_matchings"],
                        "ebbp_over_bbp": pp["exact_matchings"] / max(pb["exact_matchings"], 1e-9)})
    print("\nexact matchings per query, BBP (pgtus) vs EBBP (pgtus++):")
    for p in pruning:
        print(f"  phi_c={p['phi_c']:3} phi_ref={p['phi_ref']:4}: BBP {p['bbp_exact_matchings']:7.1f}  "
              f"EBBP {p['ebbp_exact_matchings']:7.1f}  ratio {p['ebbp_over_bbp']:.2f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "lake": {"tables": args.tables, "columns": int(len(lake.column_vectors)), "dim": args.dim,
                 "centroids": int(len(centroids)), "partitions": int(len(parts.table_ids)),
                 "domains": n_domains, "queries": args.queries, "k": k, "tau": 0.7, "phi_r": 3 * k},
        "timings_s": {"centroid_stage": t_inputs, "index_build": t_build, "column_hnsw_build": t_col_hnsw},
        "methods": rows, "pruning": pruning,
    }, indent=2))
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
