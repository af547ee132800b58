"""Union search benchmark: quality on UGEN-V1 and speed on a generated lake of >= 100k tables.

Quality (``../shared/benchmarks/ugen_v1``, skipped with a message when missing): hash-encoder column vectors, table
vectors = their mean, base centroids by numpy k-means and Algorithm 1 partitions (the centroid stage on one machine),
then MAP@10 / P@10 / R@10 (TACTUS §6.1, ``benchmarks.encoders.metrics``) of exact, pgtus, pgtus++ (both exact's
top-k by construction), pgtus++-approx, starmie and tactus for every tau given.

Scale (generated, no shared data): clustered column vectors, 50 queries drawn from the same model.  For every method
and parameter setting: recall@k against ``exact`` (the exhaustive Definition 5 ranking), mean latency and its ratio to
``exact``, candidates and exact matchings per query.  Queries run interleaved (every query through every setting
before the next query) so that load on a shared machine hits all settings alike.  EBBP vs BBP: exact matchings of
pgtus++ and pgtus, on the stream the default feeds (best first by cone bound) and in table-id order (what a scan of
centroid partitions delivers).  The pgtus++-approx setting with the highest speed-up among those reaching
recall@k >= 0.95 is reported as the recommended one.

BLAS runs single-threaded (set before numpy loads) so that latencies compare algorithms, not thread scheduling.
Prints tables and writes benchmarks/results/union_quality.json and union_scale.json.
Usage: python benchmarks/union.py [--part all|quality|scale] [--tables 100000] [--queries 50] [--k 10]
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import print_table, shared_path, write_result  # noqa: E402
from benchmarks.encoders import infer_kind, load_ugen_table, metrics, ugen_layout  # noqa: E402
from discovery.encoders import HashEncoder  # noqa: E402
from discovery.union import UnionIndex  # noqa: E402
from discovery.union.partitioning import partition_lake  # noqa: E402
from discovery.union.search import APPROXIMATE, DEFAULT_PHI_C, DEFAULT_PHI_REF_PER_K, DEFAULT_TAU  # noqa: E402
from discovery.union.synthetic import (build_index_inputs, draw_tables, generate_lake, lake_model,  # noqa: E402
                                       table_vectors_of)

TARGET_RECALL = 0.95


# quality ------------------------------------------------------------------------------------------------------------

def quality(taus: list[float], k: int) -> dict | None:
    root = shared_path("ugen_v1")
    if root is None:
        return None
    root = Path(root)
    lake_names, query_names, truth = ugen_layout(root)
    encoder = HashEncoder()

    def encode(path: Path) -> np.ndarray:
        cols = load_ugen_table(path)
        return np.stack([encoder.encode_column(c, infer_kind(c)) for c in cols]).astype(np.float32)

    t0 = time.perf_counter()
    lake_cols = [encode(root / "datalake" / n) for n in lake_names]
    query_cols = [encode(root / "query" / n) for n in query_names]
    encode_s = time.perf_counter() - t0
    sizes = np.array([len(c) for c in lake_cols])
    vectors = np.concatenate(lake_cols)
    owner = np.repeat(np.arange(len(lake_cols)), sizes)
    ordinal = np.arange(len(owner)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    t0 = time.perf_counter()
    centroids, parts = partition_lake(vectors, owner, ordinal)
    index = UnionIndex.build(vectors, owner, ordinal, centroids, parts,
                             np.stack([encoder.encode_table(c) for c in lake_cols]))
    index_s = time.perf_counter() - t0
    print(f"\nUGEN-V1: {len(lake_names)} lake tables ({len(vectors)} columns, {len(centroids)} centroids, "
          f"{len(parts.table_ids)} partitions), {len(query_names)} queries, k={k}; encoding {encode_s:.1f}s, "
          f"centroid stage + index {index_s:.1f}s")

    settings = [("exact", {}), ("pgtus", {}), ("pgtus++", {}), (APPROXIMATE, {}),
                (APPROXIMATE, {"phi_c": 8, "phi_ref": 20 * k}), ("starmie", {}), ("tactus", {})]
    rows = []
    for tau in taus:
        exact_found: list[set[int]] = []
        for method, params in settings:
            if method == "tactus" and tau != taus[0]:
                continue  # TACTUS does not use tau
            scores, latencies, recalls = [], [], []
            for qi, qname in enumerate(query_names):
                t0 = time.perf_counter()
                res = index.search(query_cols[qi], k, method, tau=tau,
                                   query_table_vector=encoder.encode_table(query_cols[qi]), **params)
                latencies.append(time.perf_counter() - t0)
                ids = {r.table_id for r in res.results}
                if method == "exact":
                    exact_found.append(ids)
                elif exact_found[qi]:
                    recalls.append(len(ids & exact_found[qi]) / len(exact_found[qi]))
                ranked = [lake_names[r.table_id] for r in res.results]
                ranked += [""] * (k - len(ranked))  # fewer than k unionable tables: the empty ranks are misses
                scores.append(metrics(ranked, truth.get(qname, set())))
            m = np.mean(scores, axis=0)
            rows.append({"method": method, "tau": None if method == "tactus" else tau,
                         "phi_c": params.get("phi_c", DEFAULT_PHI_C) if method == APPROXIMATE else None,
                         "phi_ref": params.get("phi_ref", DEFAULT_PHI_REF_PER_K * k)
                         if method == APPROXIMATE else None,
                         "MAP@10": float(m[0]), "P@10": float(m[1]), "R@10": float(m[2]),
                         "recall_vs_exact": float(np.mean(recalls)) if recalls else None,
                         "latency_ms": 1000 * float(np.mean(latencies))})
    print_table(rows, ["method", "tau", "phi_c", "phi_ref", "MAP@10", "P@10", "R@10", "recall_vs_exact",
                       "latency_ms"])
    return {"lake_tables": len(lake_names), "columns": int(len(vectors)), "centroids": int(len(centroids)),
            "queries": len(query_names), "k": k, "encode_seconds": encode_s, "index_seconds": index_s,
            "defaults": {"phi_c": DEFAULT_PHI_C, "phi_ref": DEFAULT_PHI_REF_PER_K * k, "phi_r": k},
            "results": rows}


# scale --------------------------------------------------------------------------------------------------------------

def scale(n_tables: int, n_queries: int, k: int, dim: int, with_starmie: bool) -> dict:
    t0 = time.perf_counter()
    n_domains = max(50, n_tables // 50)
    model = lake_model(dim, n_domains, max(10, n_domains // 5), 16, max_columns=12, seed=0)
    lake = generate_lake(model, n_tables, seed=1)
    centroids, parts = build_index_inputs(lake)
    t_inputs = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = UnionIndex.build(lake.column_vectors, lake.column_table_ids, lake.column_ordinals, centroids, parts,
                             lake.table_vectors, threads=min(2, os.cpu_count() or 1))
    t_build = time.perf_counter() - t0
    qv, qo, _ = draw_tables(model, n_queries, seed=12345)
    queries = [qv[qo == i] for i in range(n_queries)]
    tvecs = table_vectors_of(qv, qo, n_queries)
    print(f"\nscale: {n_tables} tables, {len(lake.column_vectors)} columns, d={dim}, {len(centroids)} centroids, "
          f"{len(parts.table_ids)} partitions; centroid stage {t_inputs:.1f}s, index build {t_build:.1f}s")

    timings = {"centroid_stage": t_inputs, "index_build": t_build}
    t0 = time.perf_counter()
    index.search(queries[0], k, "tactus", query_table_vector=tvecs[0])
    timings["table_hnsw_build"] = time.perf_counter() - t0
    grid = [(1, 2 * k), (1, 3 * k), (1, 5 * k), (2, 3 * k), (2, 5 * k), (4, 5 * k), (4, 10 * k), (8, 10 * k),
            (8, 20 * k)]
    settings: list[tuple[str, dict]] = [("exact", {})]
    for arrival in ("ranked", "table_id"):
        for method in ("pgtus++", "pgtus"):
            settings.append((method, {"arrival": arrival}))
    for phi_c, phi_ref in grid:
        settings.append((APPROXIMATE, {"phi_c": phi_c, "phi_ref": phi_ref}))
    if with_starmie:
        t0 = time.perf_counter()
        index.search(queries[0], k, "starmie")
        timings["column_hnsw_build"] = time.perf_counter() - t0
        settings += [("starmie", {"k_prime": 10 * k}), ("starmie", {"k_prime": 30 * k})]
    settings.append(("tactus", {}))
    print("timings (s): " + ", ".join(f"{a} {b:.1f}" for a, b in timings.items()))

    latency = np.zeros((len(settings), n_queries))
    found: list[list[set[int]]] = [[] for _ in settings]
    stats: list[list] = [[] for _ in settings]
    for qi, q in enumerate(queries):
        for si, (method, params) in enumerate(settings):
            t0 = time.perf_counter()
            res = index.search(q, k, method, query_table_vector=tvecs[qi], **params)
            latency[si, qi] = time.perf_counter() - t0
            found[si].append({r.table_id for r in res.results})
            stats[si].append(res.stats)
    truth = found[0]
    exact_ms = 1000 * latency[0].mean()
    rows = []
    for si, (method, params) in enumerate(settings):
        recalls = [len(f & t) / len(t) for f, t in zip(found[si], truth) if t]
        ms = 1000 * latency[si].mean()
        rows.append({
            "method": method, **{p: params.get(p) for p in ("phi_c", "phi_ref", "arrival", "k_prime")},
            "recall@k": float(np.mean(recalls)) if recalls else 1.0, "latency_ms": float(ms),
            "x_faster": float(exact_ms / ms),
            "candidates": float(np.mean([s.candidates_after_refinement for s in stats[si]])),
            "bounded": float(np.mean([s.candidates_bounded for s in stats[si]])),
            "exact_matchings": float(np.mean([s.exact_matchings for s in stats[si]])),
            "assignments": float(np.mean([s.assignments_solved for s in stats[si]])),
        })
    print(f"\nmethods (k={k}, tau={DEFAULT_TAU}, phi_r=k); latency ratio against exact measured in this run")
    print_table(rows, ["method", "phi_c", "phi_ref", "arrival", "k_prime", "recall@k", "latency_ms", "x_faster",
                       "candidates", "bounded", "exact_matchings", "assignments"])

    pruning = {}
    for arrival in ("ranked", "table_id"):
        pick = {r["method"]: r["exact_matchings"] for r in rows if r["arrival"] == arrival}
        pruning.update({f"bbp_{arrival}": pick["pgtus"], f"ebbp_{arrival}": pick["pgtus++"],
                        f"ebbp/bbp_{arrival}": pick["pgtus++"] / max(pick["pgtus"], 1e-9)})
    print("\nexact matchings per query, BBP (pgtus) vs EBBP (pgtus++) on the same candidate stream:")
    print_table([pruning], list(pruning))

    eligible = [r for r in rows if r["method"] == APPROXIMATE and r["recall@k"] >= TARGET_RECALL]
    best = max(eligible, key=lambda r: r["x_faster"]) if eligible else None
    if best:
        print(f"\nrecommended {APPROXIMATE} setting: phi_c={best['phi_c']}, phi_ref={best['phi_ref']}, phi_r={k}, "
              f"tau={DEFAULT_TAU}: recall@k {best['recall@k']:.3f}, {best['x_faster']:.1f}x faster than exact")
    return {"lake": {"tables": n_tables, "columns": int(len(lake.column_vectors)), "dim": dim,
                     "centroids": int(len(centroids)), "partitions": int(len(parts.table_ids)),
                     "domains": n_domains, "queries": n_queries, "k": k, "tau": DEFAULT_TAU, "phi_r": k},
            "timings_s": timings, "methods": rows, "pruning": pruning, "recommended": best}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("all", "quality", "scale"), default="all")
    ap.add_argument("--tables", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--taus", type=float, nargs="+", default=[DEFAULT_TAU, 0.5])
    ap.add_argument("--no-starmie", action="store_true", help="skip Starmie (its HNSW over all columns is slow)")
    args = ap.parse_args()
    if args.part in ("all", "quality"):
        result = quality(args.taus, args.k)
        if result is not None:
            write_result("union_quality", result)
    if args.part in ("all", "scale"):
        write_result("union_scale", scale(args.tables, args.queries, args.k, args.dim, not args.no_starmie))


if __name__ == "__main__":
    main()
