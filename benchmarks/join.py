"""Semantic-join speed benchmark: PEXESO vs PEXESO-H vs blocked BLAS brute force (PEXESO 002, Table VII).

Run: ``python benchmarks/join.py [--vectors 1000000] [--queries 50] [--sweep-queries 10]``.  Prints tables and
writes ``benchmarks/results/join.json``.  Speed is reported as ratios against ``exact`` measured in the same run;
every run also checks that the three methods return identical columns and joinabilities.

Generated lake geometry (explicit, see :func:`generate_lake`): entities lie on a unit sphere of ``intrinsic_dim``
dimensions rotated into ``dim`` dimensions, grouped in domains (entities of a domain are ~0.5 apart, unrelated
entities ~sqrt(2)); a column draws entities from one domain; a value is its entity plus noise whose radius is
calibrated so that ~80% of true matches (two values of the same entity) lie within tau = 6% of the maximum
distance, the geometry the vectors issue expects of a trained encoder.  Query columns are fresh variants of a lake
column's entities.  :func:`speed_on_vectors` takes any (vectors, column_ids, query columns) - real value vectors
once encoders exist - and runs the same comparison.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from discovery.join import JoinIndex, select_pivots  # noqa: E402

METHODS = ("pexeso", "pexeso-h", "exact")
RESULTS = Path(__file__).resolve().parent / "results"


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _variants(rng, entities_k, basis, radius_scale):
    """Values of the given entities: entity (projected to full dim) + noise of lognormal radius, normalised."""
    base = entities_k @ basis
    noise = rng.normal(size=base.shape)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    radius = radius_scale * np.exp(0.35 * rng.normal(size=(base.shape[0], 1)))
    return _unit(base + noise * radius).astype(np.float32)


def _calibrate_noise(rng, basis, intrinsic_dim, tau_abs, share=0.8):
    """Noise radius scale such that ``share`` of same-entity value pairs lie within ``tau_abs`` (bisection)."""
    ent = _unit(rng.normal(size=(4000, intrinsic_dim)))
    lo, hi = 1e-4, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        d = np.linalg.norm(_variants(rng, ent, basis, mid) - _variants(rng, ent, basis, mid), axis=1)
        lo, hi = (mid, hi) if (d <= tau_abs).mean() > share else (lo, mid)
    return (lo + hi) / 2


def generate_lake(n_vectors=1_000_000, dim=128, intrinsic_dim=16, n_domains=300, domain_entities=1000,
                  n_queries=50, tau=0.06, seed=0):
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(dim, intrinsic_dim)))[0].T          # orthonormal rows (k, d)
    radius = _calibrate_noise(rng, basis, intrinsic_dim, tau * 2.0)
    centres = _unit(rng.normal(size=(n_domains, intrinsic_dim)))
    entities = _unit(np.repeat(centres, domain_entities, axis=0)
                     + rng.normal(size=(n_domains * domain_entities, intrinsic_dim)) * 0.35 / np.sqrt(intrinsic_dim))
    sizes, total = [], 0
    while total < n_vectors:  # realistic column sizes: lognormal, median ~90 distinct values
        s = int(np.clip(rng.lognormal(4.5, 1.0), 5, domain_entities))
        sizes.append(min(s, n_vectors - total))
        total += sizes[-1]
    members = []
    vectors = np.empty((n_vectors, dim), dtype=np.float32)
    pos = 0
    for s in sizes:
        dom = rng.integers(n_domains)
        ent = dom * domain_entities + rng.choice(domain_entities, s, replace=False)
        members.append(ent)
        vectors[pos:pos + s] = _variants(rng, entities[ent], basis, radius)
        pos += s
    column_ids = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    queries = []
    eligible = [i for i, s in enumerate(sizes) if s >= 20]
    for c in rng.choice(eligible, n_queries, replace=False):
        ent = members[c][:300]
        queries.append(_variants(rng, entities[ent], basis, radius))
    a = _variants(rng, entities[:20000], basis, radius)
    b = _variants(rng, entities[:20000], basis, radius)
    true_d = np.linalg.norm(a - b, axis=1)
    rand_d = np.linalg.norm(a - b[rng.permutation(20000)], axis=1)
    geometry = {"dim": dim, "intrinsic_dim": intrinsic_dim, "columns": len(sizes), "vectors": n_vectors,
                "noise_radius_scale": radius,
                "true_match_share_within_tau": float((true_d <= tau * 2).mean()),
                "true_match_distance_pct": {p: float(np.percentile(true_d, p) / 2) for p in (10, 50, 90)},
                "random_pair_distance_pct": {p: float(np.percentile(rand_d, p) / 2) for p in (1, 10, 50)},
                "column_size_median": float(np.median(sizes)), "column_size_max": int(max(sizes))}
    return vectors, column_ids, queries, geometry


def speed_on_vectors(index, queries, tau, T, methods=METHODS, top_k=None):
    """Latency and distance computations of each method over the query columns; asserts identical answers."""
    row = {m: {"seconds": 0.0, "distance_computations": 0} for m in methods}
    survive = {"lemma1_survivors": 0, "candidate_vectors": 0, "pairs": 0, "joinable": 0}
    for q in queries:
        answers = {}
        for m in methods:
            t0 = time.perf_counter()
            res = index.search(q, tau, T, method=m, top_k=top_k)
            row[m]["seconds"] += time.perf_counter() - t0
            row[m]["distance_computations"] += res.stats["distance_computations"]
            answers[m] = res.joinabilities()
            if m == "pexeso":
                survive["candidate_vectors"] += res.stats["candidate_vectors"]
                survive["pairs"] += q.shape[0] * index.vectors.shape[0]
                survive["joinable"] += len(res.columns)
        first = answers[methods[0]]
        if any(a != first for a in answers.values()):
            raise AssertionError(f"methods disagree at tau={tau}, T={T}")
    base = row.get("exact", row[methods[0]])["seconds"]
    for m in methods:
        row[m]["speedup_vs_exact"] = base / row[m]["seconds"] if row[m]["seconds"] else float("inf")
    row["grid_blocking_survivor_share"] = survive["candidate_vectors"] / max(survive["pairs"], 1)
    row["joinable_columns"] = survive["joinable"]
    return row


def _print(title, rows, key):
    print(f"\n{title}")
    print(f"{key:>8} | {'pexeso s':>9} {'pex-h s':>9} {'exact s':>9} | {'pex:exact':>9} {'h:exact':>8} | "
          f"{'dist pexeso':>12} {'dist pex-h':>12} {'dist exact':>12} | {'blocked%':>8} {'joins':>5}")
    for k, r in rows.items():
        print(f"{k:>8} | {r['pexeso']['seconds']:9.2f} {r['pexeso-h']['seconds']:9.2f} {r['exact']['seconds']:9.2f} | "
              f"{r['pexeso']['speedup_vs_exact']:9.1f} {r['pexeso-h']['speedup_vs_exact']:8.1f} | "
              f"{r['pexeso']['distance_computations']:12d} {r['pexeso-h']['distance_computations']:12d} "
              f"{r['exact']['distance_computations']:12d} | {100 * r['grid_blocking_survivor_share']:8.3f} "
              f"{r['joinable_columns']:5d}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vectors", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--intrinsic-dim", type=int, default=16)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--sweep-queries", type=int, default=10)
    ap.add_argument("--pivots", type=int, default=5)
    ap.add_argument("--levels", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    vectors, ids, queries, geometry = generate_lake(args.vectors, args.dim, args.intrinsic_dim,
                                                    n_queries=args.queries, seed=args.seed)
    print("geometry:", json.dumps(geometry))
    sample = vectors[np.random.default_rng(1).choice(vectors.shape[0], 20000, replace=False)]

    def build(p, m):
        t = time.perf_counter()
        index = JoinIndex.build(vectors, ids, select_pivots(sample, p, seed=0), levels=m)
        return index, time.perf_counter() - t

    index, build_s = build(args.pivots, args.levels)
    print(f"index: {vectors.shape[0]} vectors, {index.n_columns} columns, built in {build_s:.1f}s, "
          f"{index.nbytes / 2**20:.0f} MiB")
    out = {"geometry": geometry, "defaults": {"tau": 0.06, "T": 0.6, "pivots": args.pivots, "levels": args.levels,
                                               "queries": args.queries}, "build_seconds": build_s}
    default = {"default": speed_on_vectors(index, queries, 0.06, 0.6)}
    _print(f"default tau=6% T=60% |P|={args.pivots} m={args.levels}, {len(queries)} queries", default, "setting")
    out["default"] = default["default"]
    sweep_q = queries[:args.sweep_queries]
    rows = {f"{int(t * 100)}%": speed_on_vectors(index, sweep_q, t, 0.6) for t in (0.02, 0.04, 0.06, 0.08)}
    _print(f"tau sweep (T=60%), {len(sweep_q)} queries", rows, "tau")
    out["tau_sweep"] = rows
    rows = {f"{int(t * 100)}%": speed_on_vectors(index, sweep_q, 0.06, t) for t in (0.2, 0.4, 0.6, 0.8)}
    _print(f"T sweep (tau=6%), {len(sweep_q)} queries", rows, "T")
    out["T_sweep"] = rows
    rows = {"top-10": speed_on_vectors(index, sweep_q, 0.06, 0.0, top_k=10)}
    _print(f"top-10 (tau=6%, T=0), {len(sweep_q)} queries", rows, "mode")
    out["top_k"] = rows
    del index
    for name, grid in (("pivots", [(p, args.levels) for p in (3, 7, 9) if p * args.levels <= 63]),
                       ("levels", [(args.pivots, m) for m in (3, 4, 6) if args.pivots * m <= 63])):
        rows = {}
        for p, m in grid:
            idx, bs = build(p, m)
            rows[f"{p}/{m}"] = speed_on_vectors(idx, sweep_q, 0.06, 0.6)
            rows[f"{p}/{m}"]["build_seconds"] = bs
            del idx
        _print(f"{name} sweep |P|/m (tau=6%, T=60%), {len(sweep_q)} queries", rows, "|P|/m")
        out[f"{name}_sweep"] = rows
    out["total_seconds"] = time.perf_counter() - t0
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "join.json").write_text(json.dumps(out, indent=1))
    print(f"\nwrote {RESULTS / 'join.json'} in {out['total_seconds']:.0f}s")


if __name__ == "__main__":
    main()
