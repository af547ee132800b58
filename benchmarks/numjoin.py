"""Numerical-join benchmark: PEXESO 003 against its baselines (§V): PNODOM, a pivot table without groups (EPT) and a
KD-tree per set (RTREE), on a clustered synthetic lake in the paper's SYN shape and on real coordinates.

Run: ``python benchmarks/numjoin.py [--vectors 300000] [--sets 300] [--dim 20] [--clusters 100] [--sigma 0.05]
[--queries 5] [--real-only] [--out numjoin]``.  Prints tables and writes ``benchmarks/results/<out>.json``.
``--lake`` instead builds lakes with the real refresh (:func:`coordinate_lake`, :func:`build_cost`) and writes
``numjoin_lake.json``; ``--build-cost sample,ugen_v1,fivethirtyeight`` only measures the numeric stage's share of
those lakes' full builds (``numjoin_build_cost.json``).

SYN (§V-A): cluster centers uniform in the unit cube, objects normal around them (``sigma`` per axis); a set draws its
objects from one to three clusters, its size uniform in ``[0.5, 1.5]`` times the mean.  Queries are sets of the lake
(the paper's "randomly selected sets as queries").  tau is a fraction of the maximum distance ``sqrt(dim)``, T a
fraction of |Q| (f_hit, §V-A defaults 6% and 60%).  The tau sweep runs at T = 60%, the T sweep at tau = 6%, and
top-k (``--top-k``, §II-B: the k-size buffer) at tau = 6%.

Per setting every method answers every query; ``speedup_vs_<m>`` is m's time over PEXESO's (the same queries, the same
run, process CPU time, which is the stable measure on a shared machine), and ``distances`` the distance computations
per query (PEXESO's include the query's grouping against the global centers and the center distances; the KD-tree's
are the candidate pairs its ball queries return, as scipy does not expose the tree's own).  Every method must return
PEXESO's set ids, and PEXESO must return brute force's on the default setting (BLAS brute force with canonical
re-checks near tau, :class:`discovery.indexes.numjoin.baselines.BruteForce`).  The first call of each compiled method is
made on a warm-up query outside the timings.

Real data (``../shared/benchmarks/fivethirtyeight``): the (lat, lng) columns of the 2016 campaign trail
(``clinton.csv``, ``trump.csv``) and the police-killings (latitude, longitude), split into one set per table and
state; each campaign table queried at several taus in metres under the haversine metric; every method must equal the
reference brute force (:func:`discovery.indexes.numjoin.brute_force`).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import harness
from discovery.indexes.numjoin import BASELINES, NumericIndex, brute_force
from harness import print_table, shared_path, write_result

METHODS = ("pexeso", "pnodom", "pivot-table", "kdtree")


def syn_lake(n_vectors: int, n_sets: int, dim: int, n_clusters: int, sigma: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(0.0, 1.0, size=(n_clusters, dim))
    mean = n_vectors / n_sets
    sizes = np.maximum(1, rng.uniform(0.5, 1.5, n_sets) * mean).astype(int)
    sets = []
    for n in sizes:
        own = rng.choice(n_clusters, size=int(rng.integers(1, 4)), replace=False)
        sets.append(centers[rng.choice(own, size=n)] + rng.normal(0.0, sigma, size=(n, dim)))
    return sets


def index_sets(ix: NumericIndex) -> list[np.ndarray]:
    """Each set's vectors as a view of the index's member array (groups are stored set by set; rows within a set
    are in group order, which changes no method's set ids or scores)."""
    g = ix.groups
    return [g.vectors[g.start[g.set_start[s]]:g.start[g.set_start[s + 1]]] for s in range(g.n_sets)]


def _cpu() -> float:
    return time.process_time()


def run_setting(runners: dict, queries, tau: float, T: float | None, k: int | None = None) -> dict:
    per = {}
    answers = {}
    for name, fn in runners.items():
        c0 = _cpu()
        dist = 0
        ids = []
        for q in queries:
            r = fn(q, tau, T, k)
            dist += sum(r.stats["distances"].values())
            # threshold search: the set of ids (scores may be lower bounds); top-k: ids in order and exact scores
            ids.append(sorted(r.set_ids.tolist()) if k is None else [(s.set_id, s.score) for s in r.sets])
        per[name] = {"cpu_s": (_cpu() - c0) / len(queries), "distances": dist / len(queries)}
        answers[name] = ids
    for name in runners:
        if answers[name] != answers["pexeso"]:
            raise AssertionError(f"{name} disagrees with pexeso at tau={tau}, T={T}, k={k}")
    row = {"tau": tau, "T": T, "k": k, "results": float(np.mean([len(a) for a in answers["pexeso"]]))}
    for name in runners:
        row[f"{name}_ms"] = 1000 * per[name]["cpu_s"]
        row[f"{name}_dist"] = per[name]["distances"]
        if name != "pexeso":
            row[f"speedup_vs_{name}"] = per[name]["cpu_s"] / per["pexeso"]["cpu_s"]
            row[f"dist_ratio_{name}"] = per[name]["distances"] / max(per["pexeso"]["distances"], 1)
    return row


def syn(args) -> dict:
    t0 = time.perf_counter()
    sets = syn_lake(args.vectors, args.sets, args.dim, args.clusters, args.sigma, args.seed)
    n = sum(len(s) for s in sets)
    build = {}
    c0 = _cpu()
    ix = NumericIndex.build(sets, "euclidean", seed=args.seed)
    build["pexeso"] = _cpu() - c0
    sets = index_sets(ix)   # the generated arrays go: every method reads the index's one copy of the lake
    base = {}
    for name in ("pivot-table", "kdtree"):
        c0 = _cpu()
        base[name] = BASELINES[name](sets, "euclidean")
        build[name] = _cpu() - c0
    print(f"SYN: {n} vectors, {len(sets)} sets, dim {args.dim}; {ix.centers.shape[0]} centers, "
          f"{ix.groups.n_groups} groups; build CPU s {build}", flush=True)
    runners = {
        "pexeso": lambda q, tau, T, k: ix.search(q, tau, T=T, k=k),
        "pnodom": lambda q, tau, T, k: ix.search(q, tau, T=T, k=k, method="pnodom"),
        "pivot-table": lambda q, tau, T, k: base["pivot-table"].search(q, tau, T=T, k=k),
        "kdtree": lambda q, tau, T, k: base["kdtree"].search(q, tau, T=T, k=k),
    }
    rng = np.random.default_rng(args.seed + 1)
    queries = [sets[i] for i in rng.choice(len(sets), args.queries, replace=False)]
    max_d = float(np.sqrt(args.dim))
    warm = queries[0][:5]
    for fn in runners.values():
        fn(warm, 0.06 * max_d, 0.6, None)
        fn(warm, 0.06 * max_d, None, 3)
    # exactness against brute force on the default setting
    brute = BASELINES["brute"](sets, "euclidean")
    for q in queries[: args.brute_queries]:
        want = sorted(brute.search(q, 0.06 * max_d, T=0.6).set_ids.tolist())
        got = sorted(ix.search(q, 0.06 * max_d, T=0.6).set_ids.tolist())
        if want != got:
            raise AssertionError("pexeso disagrees with brute force on SYN")
    print(f"  brute force checked on {args.brute_queries} queries ({_cpu():.0f} CPU s, "
          f"{time.perf_counter() - t0:.0f} s)", flush=True)
    rows = {"tau_sweep": [], "T_sweep": [], "top_k": []}

    def done(key: str, row: dict) -> None:
        rows[key].append(row)
        print(f"  {key} tau {row['tau_pct']:.0f}% T {row['T']} k {row['k']}: results {row['results']:.1f}, pexeso "
              f"{row['pexeso_ms']:.1f} ms; " + ", ".join(f"vs {m} {row[f'speedup_vs_{m}']:.2f}x" for m in METHODS[1:])
              + f" ({_cpu():.0f} CPU s, {time.perf_counter() - t0:.0f} s)", flush=True)

    for frac in args.tau_sweep:
        done("tau_sweep", run_setting(runners, queries, frac * max_d, 0.6) | {"tau_pct": 100 * frac})
    for T in args.T_sweep:
        done("T_sweep", run_setting(runners, queries, 0.06 * max_d, T) | {"tau_pct": 6.0})
    for k in args.top_k:
        done("top_k", run_setting(runners, queries, 0.06 * max_d, None, k) | {"tau_pct": 6.0})
    cols = ["tau_pct", "T", "k", "results", "pexeso_ms", "pexeso_dist"] + \
        [f"speedup_vs_{m}" for m in METHODS[1:]] + [f"dist_ratio_{m}" for m in METHODS[1:]]
    for key in rows:
        print(f"\nSYN {key} (per query; speed-up = method CPU time / PEXESO's; dist_ratio = method distances / "
              f"PEXESO's)")
        print_table(rows[key], cols)
    print(f"\npeak RSS {harness.peak_rss_mb() / 1024:.2f} GB, wall {time.perf_counter() - t0:.0f} s")
    return {"vectors": n, "sets": len(sets), "dim": args.dim, "clusters": args.clusters, "sigma": args.sigma,
            "queries": args.queries, "centers": int(ix.centers.shape[0]), "groups": int(ix.groups.n_groups),
            "build_cpu_s": build, "brute_checked_queries": args.brute_queries, "wall_s": time.perf_counter() - t0,
            "peak_rss_gb": harness.peak_rss_mb() / 1024, **rows}


def real(args) -> dict | None:
    root = shared_path("fivethirtyeight")
    if root is None:
        return None
    import pandas as pd
    trail = os.path.join(root, "presidential-campaign-trail")
    frames = {
        "clinton": pd.read_csv(os.path.join(trail, "clinton.csv"))[["lat", "lng", "state"]],
        "trump": pd.read_csv(os.path.join(trail, "trump.csv"))[["lat", "lng", "state"]],
        "police": pd.read_csv(os.path.join(root, "police-killings", "police_killings.csv"), encoding="latin-1")[
            ["latitude", "longitude", "state"]].rename(columns={"latitude": "lat", "longitude": "lng"}),
    }
    sets, names = [], []
    for table, df in frames.items():
        df = df.dropna()
        df = df[(df.lat.abs() <= 90) & (df.lng.abs() <= 180)]
        for state, part in df.groupby("state"):
            sets.append(part[["lat", "lng"]].to_numpy(dtype=np.float64))
            names.append(f"{table}:{state}")
    ix = NumericIndex.build(sets, "haversine")
    base = {name: BASELINES[name](sets, "haversine") for name in ("pivot-table", "kdtree")}
    rows = []
    for qname in ("clinton", "trump"):
        q = frames[qname].dropna()[["lat", "lng"]].to_numpy(dtype=np.float64)
        for tau in (100.0, 1000.0, 10000.0, 50000.0):
            for sim in ("hit", "all"):
                want = brute_force(sets, q, tau, "haversine", T=0.02, similarity=sim)
                got = {"pexeso": ix.search(q, tau, T=0.02, similarity=sim, exact_scores=True),
                       "pnodom": ix.search(q, tau, T=0.02, similarity=sim, method="pnodom", exact_scores=True)}
                got |= {m: b.search(q, tau, T=0.02, similarity=sim, exact_scores=True) for m, b in base.items()}
                for m, r in got.items():
                    if r.scores() != want.scores():
                        raise AssertionError(f"{m} disagrees with brute force on {qname} at {tau} m ({sim})")
                top = [f"{names[s.set_id]}={s.score}" for s in want.sets[:3]]
                rows.append({"query": qname, "tau_m": tau, "f": sim, "joinable_sets": len(want.sets),
                             "top3": " ".join(top), "all_equal_brute_force": True,
                             "pexeso_dist": sum(got["pexeso"].stats["distances"].values()),
                             "pivot_table_dist": sum(got["pivot-table"].stats["distances"].values())})
    print(f"\nreal coordinates: {len(sets)} sets ({sum(len(s) for s in sets)} points) from clinton, trump, "
          "police-killings by state; T = 2% of |Q|")
    print_table(rows, ["query", "tau_m", "f", "joinable_sets", "top3", "all_equal_brute_force", "pexeso_dist",
                       "pivot_table_dist"])
    return {"sets": len(sets), "points": int(sum(len(s) for s in sets)), "rows": rows}


def _stage_share(out: dict, publish_numeric_s: float) -> dict:
    """Seconds per stage of a refresh result, and the numerical join's share: its stage plus laying out its query
    arrays at publish, over every stage plus that."""
    stages = {s["stage"]: round(float(s["seconds"]), 2) for s in out["stages"]}
    total = sum(stages.values()) + publish_numeric_s
    return {"stages_s": stages, "numeric_stage_s": stages.get("numeric", 0.0),
            "numeric_arrays_s": round(publish_numeric_s, 3),
            "numeric_share": round((stages.get("numeric", 0.0) + publish_numeric_s) / total, 4)}


def _arrays_seconds(warehouse: str) -> float:
    """Time to build the snapshot's numerical join indexes from ``numeric_sets`` (what publish adds)."""
    from discovery.indexes.numjoin.arrays import build_numeric
    from discovery.data.store import Warehouse, load_snapshot

    wh = Warehouse(warehouse)
    t0 = time.perf_counter()
    build_numeric(wh, load_snapshot(wh).versions)
    return time.perf_counter() - t0


#: Lakes ``--build-cost`` can build: the sample lake, or a shared data set's lake folder.
COST_LAKES = {"sample": None, "ugen_v1": ("ugen_v1", "datalake"), "fivethirtyeight": ("fivethirtyeight",)}


def build_cost(name: str = "sample") -> dict | None:
    """The numeric stage's share of a full build of ``name`` (every stage, local[2]): the sample lake (300 tables,
    seed 7) or a shared lake (copied first)."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="numjoin-cost-") as tmp:
        lake = os.path.join(tmp, "lake")
        if COST_LAKES[name] is None:
            harness.sample_lake(lake)
            label = "sample lake (300 tables, seed 7)"
        else:
            src = shared_path(*COST_LAKES[name])
            if src is None:
                return None
            shutil.copytree(src, lake)
            label = name
        built = harness.build(lake, os.path.join(tmp, "wh"))
        cost = {"lake": label, "refresh_s": round(built.seconds, 1),
                **_stage_share(built.result, _arrays_seconds(built.warehouse))}
    print(f"\nbuild cost on {label}: numeric stage {cost['numeric_stage_s']} s + arrays "
          f"{cost['numeric_arrays_s']} s = {100 * cost['numeric_share']:.1f}% of the stages "
          f"({sum(cost['stages_s'].values()):.1f} s)")
    print_table([{"stage": k, "seconds": v} for k, v in cost["stages_s"].items()], ["stage", "seconds"])
    return cost


def coordinate_lake(args) -> dict | None:
    """The fivethirtyeight tables carrying coordinates as a lake (whole tables, and one table per state), built by
    the real refresh and queried through ``discovery.open(...).join`` on ``lat,lng``; every answer must equal a
    brute force over the files' distinct coordinates."""
    import shutil
    import tempfile

    import pandas as pd

    import discovery

    root = shared_path("fivethirtyeight")
    if root is None:
        return None
    sources = {"clinton": ("presidential-campaign-trail/clinton.csv", "lat", "lng"),
               "trump": ("presidential-campaign-trail/trump.csv", "lat", "lng"),
               "police": ("police-killings/police_killings.csv", "latitude", "longitude")}
    rows = []
    with tempfile.TemporaryDirectory(prefix="numjoin-538-") as tmp:
        lake, wh = os.path.join(tmp, "lake"), os.path.join(tmp, "wh")
        sets = {}
        for name, (rel, la, lo) in sources.items():
            os.makedirs(os.path.join(lake, name), exist_ok=True)
            shutil.copy(os.path.join(root, rel), os.path.join(lake, name, os.path.basename(rel)))
            df = pd.read_csv(os.path.join(root, rel), encoding="latin-1")
            for state, part in df.groupby("state"):
                path = f"{name}/by_state/{state}.csv"
                os.makedirs(os.path.dirname(os.path.join(lake, path)), exist_ok=True)
                part.to_csv(os.path.join(lake, path), index=False)
            for path in [f"{name}/{os.path.basename(rel)}"] + [f"{name}/by_state/{s}.csv" for s in df["state"].unique()
                                                              if isinstance(s, str)]:
                d = pd.read_csv(os.path.join(lake, path), encoding="latin-1")[[la, lo]].apply(
                    pd.to_numeric, errors="coerce").dropna()
                d = d[(d[la].abs() <= 90) & (d[lo].abs() <= 180)]
                if len(d):
                    sets[(path, f"{la},{lo}")] = np.unique(d.to_numpy(np.float64), axis=0)
        built = harness.build(lake, wh)
        cost = {"refresh_s": round(built.seconds, 1), **_stage_share(built.result, _arrays_seconds(wh))}
        ls = discovery.open(wh)
        keys = list(sets)
        for qname in ("clinton", "trump"):
            qpath = f"{qname}/{qname}.csv"
            for tau in (100.0, 1000.0, 10000.0):
                t0 = time.process_time()
                got = ls.join(os.path.join(lake, qpath), "lat,lng", tau=tau, T=0.0)
                api_s = time.process_time() - t0
                others = [k for k in keys if k[0] != qpath]
                t0 = time.process_time()
                want = brute_force([sets[k] for k in others], sets[(qpath, "lat,lng")], tau, "haversine", T=0.0)
                brute_s = time.process_time() - t0
                want = {others[s.set_id]: s.score for s in want.sets}
                have = {(r["path"], r["column"]): r["matched"] for r in got["results"]}
                if have != want:
                    raise AssertionError(f"coordinate lake: {qpath} at {tau} m differs from brute force")
                top = got["results"][0] if got["results"] else None
                rows.append({"query": qpath, "tau_m": tau, "joinable": len(have), "equal_brute_force": True,
                             "top": f"{top['path']} ({top['matched']})" if top else "",
                             "api_cpu_s": round(api_s, 3), "brute_cpu_s": round(brute_s, 3),
                             "distances": got["stats"].get("distance_computations", 0)})
    print(f"\nfivethirtyeight coordinate lake: {len(sets)} coordinate groups "
          f"({sum(len(v) for v in sets.values())} distinct points) in {len(keys)} tables; built in "
          f"{cost['refresh_s']} s, numeric stage + arrays {100 * cost['numeric_share']:.1f}% of the stages")
    print_table(rows, ["query", "tau_m", "joinable", "equal_brute_force", "top", "api_cpu_s", "brute_cpu_s",
                       "distances"])
    return {"groups": len(sets), "points": int(sum(len(v) for v in sets.values())), "build": cost, "rows": rows}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--vectors", type=int, default=300_000)
    p.add_argument("--sets", type=int, default=300)
    p.add_argument("--dim", type=int, default=20)
    p.add_argument("--clusters", type=int, default=100)
    p.add_argument("--sigma", type=float, default=0.05)
    p.add_argument("--queries", type=int, default=5)
    p.add_argument("--brute-queries", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tau-sweep", type=float, nargs="+", default=[0.02, 0.04, 0.06, 0.08, 0.10])
    p.add_argument("--T-sweep", type=float, nargs="+", default=[0.2, 0.4, 0.6, 0.8])
    p.add_argument("--top-k", type=int, nargs="*", default=[10])
    p.add_argument("--real-only", action="store_true")
    p.add_argument("--out", default="numjoin", help="result name: benchmarks/results/<out>.json")
    p.add_argument("--lake", action="store_true",
                   help="only the lakes built by the real refresh: the fivethirtyeight coordinate lake queried "
                        "through the API, and the numeric stage's share of a sample-lake build")
    p.add_argument("--build-cost", default=None, metavar="LAKE,...",
                   help=f"only the numeric stage's share of a full build of these lakes ({', '.join(COST_LAKES)})")
    args = p.parse_args(argv)
    if args.lake:
        write_result("numjoin_lake", {"coordinate_lake": coordinate_lake(args), "build_cost": build_cost("sample")})
        return
    if args.build_cost:
        names = args.build_cost.split(",")
        unknown = [n for n in names if n not in COST_LAKES]
        if unknown:
            p.error(f"unknown lake {unknown[0]!r} for --build-cost (lakes: {', '.join(COST_LAKES)})")
        write_result(args.out if args.out != "numjoin" else "numjoin_build_cost",
                     {"build_cost": {n: build_cost(n) for n in names}})
        return
    out = {"real": real(args)}
    if not args.real_only:
        out["syn"] = syn(args)
    write_result(args.out, out)


if __name__ == "__main__":
    main()
