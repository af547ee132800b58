"""Semantic-join speed benchmark: PEXESO vs PEXESO-H vs blocked BLAS brute force (PEXESO 002, Table VII).

Run: ``python benchmarks/join.py [--vectors 1000000] [--dims 128,48] [--queries 50] [--sweep-queries 4]
[--pivots 7] [--levels 3]``.  Prints tables and writes ``benchmarks/results/join.json``.  Speed is reported as ratios
against ``exact`` measured in the same run, on wall-clock and on process CPU time (the CPU ratio is the stable one
on a shared machine); every run checks that the three methods return identical columns and joinabilities.  The
first call of each compiled method (numba compilation, or loading its cache) is timed on its own and reported as
``first_call_seconds``, never inside a ratio.

Per geometry: the default setting (tau = 6%, T = 60%) on all queries and the tau sweep of PEXESO Table VII (2-8%,
T = 60%) on the sweep queries; for the first geometry also the T sweep (20-80%, tau = 6%) and a |P| / m sweep.
Survivor shares: ``pivot_filter_survivor_share`` is the share of (query vector, lake vector) pairs that Lemma 1
keeps, estimated on a seeded sample of lake vectors; ``grid_blocking_survivor_share`` the share of pairs left as
candidates by blocking (Algorithm 1); ``lemma1_survivor_share_in_verification`` the share of the candidate vectors
verification read that Lemma 1 did not filter.

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
from discovery.join import JoinIndex, map_to_pivots, select_pivots  # noqa: E402

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


def _pivot_filter_share(index, queries, tau, sample=20000, seed=0):
    """Share of (query vector, lake vector) pairs surviving Lemma 1 alone, on a seeded sample of lake vectors."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(index.vectors.shape[0], min(sample, index.vectors.shape[0]), replace=False)
    lake = index.mapped[rows]
    kept = total = 0
    for q in queries:
        qm = map_to_pivots(q, index.pivots, index.metric)
        kept += int((np.abs(qm[:, None, :] - lake[None]) <= tau * 2.0).all(axis=2).sum())
        total += qm.shape[0] * lake.shape[0]
    return kept / max(total, 1)


def first_calls(index, query):
    """Seconds of the first call of each method (compilation or cache load of its compiled kernels)."""
    out = {}
    for m in METHODS:
        t0 = time.perf_counter()
        index.search(query[:3], 0.06, 0.6, method=m)
        out[m] = time.perf_counter() - t0
    return out


def speed_on_vectors(index, queries, tau, T, methods=METHODS, top_k=None):
    """Latency (wall and CPU) and distance computations of each method over the query columns; asserts identical
    answers.  Call :func:`first_calls` before, so no compilation is timed here."""
    row = {m: {"seconds": 0.0, "cpu_seconds": 0.0, "distance_computations": 0} for m in methods}
    survive = {"lemma1_kept": 0, "lemma1_seen": 0, "candidate_vectors": 0, "pairs": 0, "joinable": 0}
    for q in queries:
        answers = {}
        for m in methods:
            t0, c0 = time.perf_counter(), time.process_time()
            res = index.search(q, tau, T, method=m, top_k=top_k)
            row[m]["seconds"] += time.perf_counter() - t0
            row[m]["cpu_seconds"] += time.process_time() - c0
            row[m]["distance_computations"] += res.stats["distance_computations"]
            answers[m] = res.joinabilities()
            if m == "pexeso":
                st = res.stats
                survive["candidate_vectors"] += st["candidate_vectors"]
                survive["pairs"] += q.shape[0] * index.vectors.shape[0]
                survive["joinable"] += len(res.columns)
                survive["lemma1_kept"] += st["distance_computations"] + st["lemma2_matched"]
                survive["lemma1_seen"] += st["distance_computations"] + st["lemma2_matched"] + st["lemma1_filtered"]
        first = answers[methods[0]]
        if any(a != first for a in answers.values()):
            raise AssertionError(f"methods disagree at tau={tau}, T={T}")
    for key, ratio in (("seconds", "speedup_vs_exact"), ("cpu_seconds", "speedup_vs_exact_cpu")):
        base = row.get("exact", row[methods[0]])[key]
        for m in methods:
            row[m][ratio] = base / row[m][key] if row[m][key] else float("inf")
    row["grid_blocking_survivor_share"] = survive["candidate_vectors"] / max(survive["pairs"], 1)
    row["lemma1_survivor_share_in_verification"] = survive["lemma1_kept"] / max(survive["lemma1_seen"], 1)
    row["joinable_columns"] = survive["joinable"]
    return row


def _print(title, rows, key):
    print(f"\n{title}")
    print(f"{key:>8} | {'pexeso s':>8} {'pex-h s':>8} {'exact s':>8} | {'pex:ex':>6} {'h:ex':>6} | {'pex:ex cpu':>10} "
          f"{'h:ex cpu':>8} | {'dist pexeso':>11} {'dist pex-h':>11} {'dist exact':>13} | {'blocked%':>8} "
          f"{'L1 kept%':>8} {'joins':>5}")
    for k, r in rows.items():
        print(f"{k:>8} | {r['pexeso']['seconds']:8.2f} {r['pexeso-h']['seconds']:8.2f} {r['exact']['seconds']:8.2f} | "
              f"{r['pexeso']['speedup_vs_exact']:6.1f} {r['pexeso-h']['speedup_vs_exact']:6.1f} | "
              f"{r['pexeso']['speedup_vs_exact_cpu']:10.1f} {r['pexeso-h']['speedup_vs_exact_cpu']:8.1f} | "
              f"{r['pexeso']['distance_computations']:11d} {r['pexeso-h']['distance_computations']:11d} "
              f"{r['exact']['distance_computations']:13d} | {100 * r['grid_blocking_survivor_share']:8.3f} "
              f"{100 * r['lemma1_survivor_share_in_verification']:8.1f} {r['joinable_columns']:5d}")


def run_geometry(args, dim, full_sweeps):
    """Default setting, sweeps and (``full_sweeps``) the |P| / m sweep on one generated lake of ``dim`` dimensions."""
    vectors, ids, queries, geometry = generate_lake(args.vectors, dim, args.intrinsic_dim, n_queries=args.queries,
                                                    seed=args.seed)
    print(f"\n=== d = {dim}: geometry {json.dumps(geometry)}")
    sample = vectors[np.random.default_rng(1).choice(vectors.shape[0], 20000, replace=False)]

    def build(p, m):
        t = time.perf_counter()
        index = JoinIndex.build(vectors, ids, select_pivots(sample, p, seed=0), levels=m)
        return index, time.perf_counter() - t

    index, build_s = build(args.pivots, args.levels)
    print(f"index: {vectors.shape[0]} vectors, {index.n_columns} columns, |P| = {args.pivots}, m = {args.levels}, "
          f"built in {build_s:.1f}s, {index.nbytes / 2**20:.0f} MiB")
    out = {"geometry": geometry, "build_seconds": build_s, "first_call_seconds": first_calls(index, queries[0])}
    print("first call of each method (compile or cache load, not in any ratio):",
          {k: round(v, 2) for k, v in out["first_call_seconds"].items()})
    sweep_q = queries[:args.sweep_queries]
    out["pivot_filter_survivor_share"] = _pivot_filter_share(index, sweep_q, 0.06)
    print(f"Lemma 1 alone keeps {100 * out['pivot_filter_survivor_share']:.3f}% of all pairs at tau = 6%")
    rows = {"default": speed_on_vectors(index, queries, 0.06, 0.6)}
    _print(f"default tau=6% T=60%, {len(queries)} queries", rows, "setting")
    out["default"] = rows["default"]
    rows = {f"{int(t * 100)}%": speed_on_vectors(index, sweep_q, t, 0.6) for t in (0.02, 0.04, 0.06, 0.08)}
    _print(f"tau sweep (T=60%), {len(sweep_q)} queries", rows, "tau")
    out["tau_sweep"] = rows
    if full_sweeps:
        rows = {f"{int(T * 100)}%": speed_on_vectors(index, sweep_q, 0.06, T) for T in (0.2, 0.4, 0.8)}
        _print(f"T sweep (tau=6%; 60% is in the tau sweep), {len(sweep_q)} queries", rows, "T")
        out["T_sweep"] = rows
    rows = {"top-10": speed_on_vectors(index, sweep_q, 0.06, 0.0, top_k=10)}
    _print(f"top-10 (tau=6%, T=0), {len(sweep_q)} queries", rows, "mode")
    out["top_k"] = rows
    del index
    if full_sweeps:
        rows = {}
        for p, m in ((5, 4), (5, 5), (7, 4)):
            if (p, m) == (args.pivots, args.levels) or p * m > 63:
                continue
            idx, bs = build(p, m)
            first_calls(idx, queries[0])
            rows[f"{p}/{m}"] = speed_on_vectors(idx, sweep_q, 0.06, 0.6)
            rows[f"{p}/{m}"]["build_seconds"] = bs
            del idx
        _print(f"|P| / m sweep (tau=6%, T=60%), {len(sweep_q)} queries", rows, "|P|/m")
        out["pivots_levels_sweep"] = rows
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vectors", type=int, default=1_000_000)
    ap.add_argument("--dims", default="128,48", help="comma-separated vector dimensions, one lake each")
    ap.add_argument("--intrinsic-dim", type=int, default=16)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--sweep-queries", type=int, default=4)
    ap.add_argument("--pivots", type=int, default=7)
    ap.add_argument("--levels", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    out = {"defaults": {"tau": 0.06, "T": 0.6, "pivots": args.pivots, "levels": args.levels,
                        "queries": args.queries, "sweep_queries": args.sweep_queries, "vectors": args.vectors}}
    for i, dim in enumerate(int(d) for d in args.dims.split(",")):
        out[f"d{dim}"] = run_geometry(args, dim, full_sweeps=i == 0)
    out["total_seconds"] = time.perf_counter() - t0
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "join.json").write_text(json.dumps(out, indent=1))
    print(f"\nwrote {RESULTS / 'join.json'} in {out['total_seconds']:.0f}s")


if __name__ == "__main__":
    main()
