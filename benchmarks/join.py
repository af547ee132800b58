"""Semantic-join benchmark: speed of PEXESO vs PEXESO-H vs blocked BLAS brute force (PEXESO 002, Table VII) on
generated lakes, and (``--autofj``) quality on the AutoFJ fuzzy-join datasets with the shipped default encoder.

Run: ``python benchmarks/join.py [--vectors 1000000] [--dims 128,48] [--queries 50] [--sweep-queries 4]
[--pivots 7] [--levels 3]`` (speed) or ``python benchmarks/join.py --autofj [--workdir DIR] [--master local[2]]
[--seed 0]`` (AutoFJ).  Prints tables and writes ``benchmarks/results/join.json``: the speed part every key but
``autofj``, the AutoFJ part the key ``autofj``; each keeps the other's results.  Speed is reported as ratios
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
distance, the geometry an ideally calibrated trained encoder would give.  Query columns are fresh variants of a lake
column's entities.  :func:`speed_on_vectors` takes any (vectors, column_ids, query columns) and runs the same
comparison; the AutoFJ part runs it on real value vectors.

AutoFJ (``../shared/benchmarks/autofj``, skipped with a message when missing): the 50 datasets' ``left.csv`` and
``right.csv`` are copied into one lake as ``<Dataset>_left.csv`` / ``<Dataset>_right.csv`` and refreshed by the real
pipeline (``spark_jobs.refresh.refresh``, every stage, the project's default configuration: the run refuses a
``$LAKESCOUT_CONFIG`` or ``./lakescout.toml`` that changes it).  With ``--workdir`` lake and warehouse are kept there,
and a warehouse that already has a snapshot is reused instead of refreshed.  tau is ``[join]``'s default, T 0.6.

* ``refresh``: wall seconds of the refresh (SparkSession start-up excluded) and the seconds of every stage as
  ``refresh_runs`` recorded them (``embed`` trains the join encoder and encodes every value), value vectors indexed,
  model versions.
* ``column_search``: each right table's ``title`` queried by its lake path (so it is left out of its own results)
  with ``pexeso``: ``top-5`` (the 5 most joinable columns) and ``threshold`` (all columns reaching T).
  ``own_left_rank1_share``: share of datasets whose own left table ranks first; ``own_left_returned``: datasets
  returning it at all; ``mean_results``: results per query.  ``equi raw`` / ``equi normalised``: the same for an
  equi-join, ranking the 99 other tables by distinct shared titles, exact or after normalisation (ties rank ahead of
  the own left table; a result is a table sharing a title).
* ``value_pairs``: precision / recall / F1 of predicted (right title, left title) pairs against ``gt.csv``, micro
  (pooled counts) and macro (mean per dataset; no prediction scores precision 0).  ``pexeso``: every pair of the
  query column and its own left title column within tau; ``pexeso best match``: each right value with its nearest
  left value within tau (AutoFJ's many-to-one task).  The pairs are computed on the two columns' stored vectors with
  the search's own distance (the canonical float64 sum), because a search result carries one witness per matched
  query value; the run checks that their matched-value count equals the search's ``matched`` whenever the own left
  table is a result.  The index stores values normalised (:func:`discovery.ground.normalize.normalize_array`, the first
  step of the encoders' ``prepare_strings``): a predicted pair of normalised values stands for every raw spelling
  of each in the CSVs, and the raw pairs are compared with ``gt.csv``'s raw pairs.  ``equi raw`` pairs equal raw
  titles, ``equi normalised`` titles equal after that normalisation.
* ``geometry``: distances, as fractions of the maximum distance, between the stored value vectors of the
  ground-truth pairs (those whose normalised titles are both indexed) and of 50,000 seeded random pairs of lake
  value vectors: percentiles 10/50/90 and share within tau.
* ``lexical_reference``: not a method of the platform but a ceiling to read the F1 target against: each right
  title's nearest left title by TF-IDF over words and character 3-grams, pairs kept above a cosine chosen with
  ``gt.csv`` (one for all datasets, and one per dataset).
* ``search``: the 50 right-title columns' stored vectors searched against the whole index (all 100 tables, so each
  finds its own column too) at tau and T: the survivor shares above, distance computations and latency per method,
  with ``cpu_ratio_to_exact`` the process-CPU-time ratio pexeso : pexeso-h : exact; the three methods must agree.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import discovery  # noqa: E402
import harness  # noqa: E402
from discovery.config import Config, load_config  # noqa: E402
from discovery.indexes.join import JoinIndex, chord_threshold, map_to_pivots, max_distance, select_pivots  # noqa: E402
from discovery.indexes.join.metric import canonical_squared, from_chord  # noqa: E402
from discovery.indexes.join.service import loaded_index  # noqa: E402
from discovery.indexes.join.stage import COLUMN_KEY_BASE, ROW_KEYS  # noqa: E402
from discovery.transforms.encoders.hash_encoder import prepare_strings  # noqa: E402
from harness import print_table, shared_path  # noqa: E402

METHODS = ("pexeso", "pexeso-h", "exact")


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
        q, value_ids = q if isinstance(q, tuple) else (q, None)  # a query of segmented values: (vectors, value ids)
        answers = {}
        for m in methods:
            t0, c0 = time.perf_counter(), time.process_time()
            res = index.search(q, tau, T, method=m, top_k=top_k, value_ids=value_ids)
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



# AutoFJ: quality and real-vector geometry on a lake refreshed by the real pipeline ----------------------------------

AUTOFJ_TOP_K = 5
AUTOFJ_T = 0.6
AUTOFJ_TAUS = (0.02, 0.03, 0.035, 0.04, 0.045, 0.06, 0.09)
RANDOM_PAIRS = 50_000
AUTOFJ_GOALS = {"rank1": 0.92, "f1": 0.72, "speedup": 5.0}  # rank1: 46 of 50 among left tables


def _titles(path):
    """The ``title`` cells of an AutoFJ CSV, as written."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [row["title"] for row in csv.DictReader(fh)]


def _gold(path):
    """Ground-truth (right title, left title) pairs, as written."""
    with open(path, newline="", encoding="utf-8") as fh:
        return {(row["title_r"], row["title_l"]) for row in csv.DictReader(fh)}


def _normalised(strings):
    """Strings as the index stores them: the normalisation the encoders start from (nulls and null tokens: "")."""
    return prepare_strings(strings, canonicalize=False)


EQUI_KEYS = {"raw": list, "normalised": _normalised}


def _raw_pairs(pairs, raw_r, raw_l, key):
    """Raw (right, left) title pairs whose keys ``pairs`` pairs, with every raw spelling of each key."""
    spelled_r, spelled_l = defaultdict(set), defaultdict(set)
    for spelled, raw in ((spelled_r, raw_r), (spelled_l, raw_l)):
        for s, k in zip(raw, key(raw)):
            spelled[k].add(s)
    return {(a, b) for kr, kl in pairs for a in spelled_r[kr] for b in spelled_l[kl]}


def _scores(tp, predicted, gold):
    p, r = tp / predicted if predicted else 0.0, tp / gold if gold else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def _micro_macro(counts):
    """Scores of per-dataset (true positives, predicted, gold) counts, micro- and macro-averaged."""
    per = [_scores(*c) for c in counts]
    return {"micro": _scores(*np.sum(counts, axis=0).tolist()),
            "macro": {k: float(np.mean([s[k] for s in per])) for k in per[0]}}


def _value_squared(sq, a_of, b_of, n_a, n_b):
    """Squared distances between values given as several vectors each (whole cell and segments): the least over
    their vectors' pairs, the distance by which the join matches two values."""
    out = np.full((n_a, sq.shape[1]), np.inf)
    np.minimum.at(out, a_of, sq)
    final = np.full((n_a, n_b), np.inf)
    np.minimum.at(final.T, b_of, out.T)
    return final


def _cross_squared(a, b):
    """Squared distances of every row of ``a`` to every row of ``b``, summed in :func:`canonical_squared`'s float64
    order: the values every join method decides ``<= tau`` on."""
    acc = np.zeros((a.shape[0], b.shape[0]))
    for j in range(a.shape[1]):
        diff = a[:, j, None].astype(np.float64) - b[None, :, j].astype(np.float64)
        acc += diff * diff
    return acc


def _distance_summary(sq, tau_sq, metric):
    """Percentiles (as fractions of the maximum distance) and share within tau of squared chord distances."""
    d = from_chord(np.sqrt(sq), metric) / max_distance(metric)
    return {"pairs": int(sq.size), "distance_pct": {p: float(np.percentile(d, p)) for p in (10, 50, 90)},
            "share_within_tau": float((sq <= tau_sq).mean())}


def autofj(args):
    """The AutoFJ part (see the module docstring); returns its results, or None when the data is missing."""
    root = shared_path("autofj")
    if root is None:
        return None
    if args.train_seconds is not None:  # the defaults but the training time budget: a loaded machine's clock
        # would otherwise decide how many steps the join encoder trains (lake_training.StepBudget)
        budget = Path(tempfile.mkdtemp(prefix="lakescout-autofj-")) / "lakescout.toml"
        budget.write_text(f"[embed]\ntrain_seconds = {args.train_seconds!r}\n")
        os.environ["LAKESCOUT_CONFIG"] = str(budget)
    config = load_config()
    if replace(config, embed=replace(config.embed, train_seconds=Config().embed.train_seconds)) != Config():
        raise SystemExit("the AutoFJ benchmark measures the default configuration (--train-seconds aside): unset "
                         "LAKESCOUT_CONFIG and run outside a folder holding lakescout.toml")
    root = Path(root)
    names = sorted(d.name for d in root.iterdir() if (d / "gt.csv").is_file())
    with tempfile.TemporaryDirectory() as tmp:
        built = harness.autofj_warehouse(root, names, Path(args.workdir or tmp), master=args.master)
        harness.stop_spark()
        return _autofj_measure(root, names, built.warehouse, built.seconds, args.seed)


def _autofj_measure(root, names, wh, wall, seed):
    cfg = load_config().join
    tau, T = cfg.tau, AUTOFJ_T
    ls = discovery.open(wh)
    snap = ls.snapshot
    run = next(r for r in ls.status()["refreshes"] if r["snapshot_id"] == snap.snapshot_id)
    loaded = loaded_index(snap)
    if loaded.model.n_partitions != 1:
        raise RuntimeError("the AutoFJ lake is expected to fit one join-index partition")
    index, metric = loaded.partition(0, {}, []), loaded.model.metric
    tau_sq = chord_threshold(tau, metric) ** 2
    row_key = index.column_values[index.col]       # column key of every index row
    stored = snap.read("value_vectors", columns=ROW_KEYS).sort_by([(k, "ascending") for k in ROW_KEYS])
    row_value = np.asarray(stored.column("value").to_pylist(), dtype=object)[index.order]  # its stored string
    catalog = snap.read("catalog", columns=["table_id", "path"]).to_pydict()
    table_of = dict(zip(catalog["path"], catalog["table_id"]))
    title_key = {c["table_id"]: c["table_id"] * COLUMN_KEY_BASE + c["ordinal"]
                 for c in snap.read("columns", columns=["table_id", "ordinal", "name"]).to_pylist()
                 if c["name"] == "title"}

    def title_column(path):
        """Vectors of a title column (whole values and segments), the value id of each, and the distinct values."""
        rows = np.flatnonzero(row_key == title_key[table_of[path]])
        values, value_of = np.unique(row_value[rows], return_inverse=True)
        return index.vectors[rows], value_of, values

    refresh_out = {"wall_seconds": wall, "reused_snapshot": wall is None, "snapshot_id": snap.snapshot_id,
                   "stage_seconds": {s["stage"]: s["seconds"] for s in run["stages"] if s["status"] == "ok"},
                   "value_vectors": int(index.vectors.shape[0]), "dim": int(index.vectors.shape[1]),
                   "segment_vectors": int(pc.sum(pc.not_equal(stored.column("segment"), 0)).as_py() or 0),
                   "models": snap.models}
    print(f"\nAutoFJ: {len(names)} datasets, {2 * len(names)} lake tables, snapshot {snap.snapshot_id}: "
          f"{refresh_out['value_vectors']} value vectors of dim {refresh_out['dim']} "
          f"({refresh_out['segment_vectors']} of them segments); refresh "
          + ("reused" if wall is None else f"{wall:.0f}s") + ", stages (s): "
          + ", ".join(f"{k} {v:.1f}" for k, v in refresh_out["stage_seconds"].items()))
    refresh_out["embed_message"] = next((s.get("message") or "" for s in run["stages"] if s["stage"] == "embed"), "")
    print(f"embed stage: {refresh_out['embed_message'][:300]}")  # says how many join training steps ran

    raw = {f"{n}_{side}.csv": _titles(root / n / f"{side}.csv") for n in names for side in ("left", "right")}
    keys = {k: {path: set(f(titles)) - {""} for path, titles in raw.items()} for k, f in EQUI_KEYS.items()}
    rules = ["pexeso", "pexeso best match", *(f"equi {k}" for k in EQUI_KEYS)]
    counts = {r: [] for r in rules}
    top_mode = f"top-{AUTOFJ_TOP_K}"
    left_mode = f"{top_mode} among left tables"
    search = {m: {"rank1": 0, "returned": 0, "results": 0}
              for m in (top_mode, left_mode, "threshold", *(f"equi {k}" for k in EQUI_KEYS))}
    gold_sq, per_dataset, queries, kept = [], [], [], []
    for n in names:
        right, left = f"{n}_right.csv", f"{n}_left.csv"
        gold = _gold(root / n / "gt.csv")
        qv, q_of, qvalues = title_column(right)
        lv, l_of, lvalues = title_column(left)
        queries.append((qv, q_of))
        sq = _value_squared(_cross_squared(qv, lv), q_of, l_of, len(qvalues), len(lvalues))
        within = sq <= tau_sq
        hit = within.any(axis=1)
        nearest = sq.argmin(axis=1)
        ranks = {}
        for mode, out in ((top_mode, ls.join(right, "title", top_k=AUTOFJ_TOP_K)),
                          ("threshold", ls.join(right, "title", T=T))):
            own = next((r for r in out["results"] if r["path"] == left), None)
            if own is not None and own["matched"] != int(hit.sum()):
                raise AssertionError(f"{n}: join_search matched {own['matched']}, the column pair {int(hit.sum())}")
            ranks[mode] = None if own is None else own["rank"]
            search[mode]["results"] += len(out["results"])
            if mode == top_mode:  # other datasets' right tables may repeat the query's titles verbatim
                lefts = [r["path"] for r in out["results"] if r["path"].endswith("_left.csv")]
                ranks[left_mode] = lefts.index(left) + 1 if left in lefts else None
                search[left_mode]["results"] += len(lefts)
        for k in EQUI_KEYS:  # rank by distinct shared keys among the 99 other tables, ties ranked ahead of the own
            overlap = {p: len(keys[k][right] & s) for p, s in keys[k].items() if p != right}
            own = overlap.pop(left)
            ranks[f"equi {k}"] = 1 + sum(v >= own for v in overlap.values()) if own else None
            search[f"equi {k}"]["results"] += sum(v > 0 for v in overlap.values()) + (own > 0)
        for mode, rank in ranks.items():
            search[mode]["returned"] += rank is not None
            search[mode]["rank1"] += rank == 1
        predicted = {"pexeso": {(qvalues[i], lvalues[j]) for i, j in zip(*np.nonzero(within))},
                     "pexeso best match": {(qvalues[i], lvalues[nearest[i]]) for i in np.flatnonzero(hit)}}
        predicted = {r: _raw_pairs(p, raw[right], raw[left], _normalised) for r, p in predicted.items()}
        for k, f in EQUI_KEYS.items():
            shared = keys[k][right] & set(f(raw[left]))
            predicted[f"equi {k}"] = _raw_pairs({(x, x) for x in shared}, raw[right], raw[left], f)
        for r in rules:
            counts[r].append((len(predicted[r] & gold), len(predicted[r]), len(gold)))
        kept.append((sq, qvalues, lvalues, raw[right], raw[left], gold))
        at_r = {v: i for i, v in enumerate(qvalues)}
        at_l = {v: j for j, v in enumerate(lvalues)}
        gr, gl = zip(*gold)
        gold_sq += [sq[at_r[a], at_l[b]] for a, b in zip(_normalised(list(gr)), _normalised(list(gl)))
                    if a in at_r and b in at_l]
        verbatim = sorted(p for p, s in keys["normalised"].items() if p != right and keys["normalised"][right] <= s)
        per_dataset.append({"dataset": n, "right_values": len(qvalues), "gold_pairs": len(gold),
                            "tables_holding_every_query_title": verbatim,
                            "own_left_joinability": float(hit.mean()), **{f"rank {m}": r for m, r in ranks.items()},
                            **{f"f1 {r}": _scores(*counts[r][-1])["f1"] for r in rules}})

    column_search = {m: {"own_left_rank1_share": v["rank1"] / len(names), "own_left_returned": v["returned"],
                         "mean_results": v["results"] / len(names)} for m, v in search.items()}
    print(f"\ncolumn search, {len(names)} queries (right title column; answer: its own left table), tau={tau}, "
          f"threshold T={T}, top-{AUTOFJ_TOP_K} at T=0")
    print_table([{"mode": m, **v} for m, v in column_search.items()],
                ["mode", "own_left_rank1_share", "own_left_returned", "mean_results"])
    repeated = {d["dataset"]: d["tables_holding_every_query_title"] for d in per_dataset
                if d["tables_holding_every_query_title"]}
    column_search["queries_repeated_verbatim"] = repeated
    print(f"{len(repeated)} of {len(names)} query columns are held whole (normalised) by another lake table, which "
          f"then ties or beats the own left table: " + ", ".join(f"{k} in {', '.join(v)}" for k, v in repeated.items()))
    value_pairs = {r: _micro_macro(c) for r, c in counts.items()}
    print(f"\nvalue pairs (right title, left title) against gt.csv, tau={tau}")
    print_table([{"rule": r, **{f"{a} {k[0].upper()}": v[a][k] for a in ("micro", "macro") for k in v[a]}}
                 for r, v in value_pairs.items()],
                ["rule", "micro P", "micro R", "micro F", "macro P", "macro R", "macro F"])

    rng = np.random.default_rng(seed)
    i = rng.integers(index.vectors.shape[0], size=RANDOM_PAIRS)
    j = (i + rng.integers(1, index.vectors.shape[0], size=RANDOM_PAIRS)) % index.vectors.shape[0]
    geometry = {"ground_truth": _distance_summary(np.asarray(gold_sq), tau_sq, metric),
                "random": _distance_summary(canonical_squared(index.vectors[i], index.vectors[j]), tau_sq, metric)}
    geometry["ground_truth"]["of_gold_pairs"] = sum(c[2] for c in counts["pexeso"])
    print(f"\ndistances of the default encoder's value vectors (fraction of the maximum), tau={tau}")
    print_table([{"pairs": k, "n": v["pairs"], **{f"p{p}": d for p, d in v["distance_pct"].items()},
                  "within tau": v["share_within_tau"]} for k, v in geometry.items()],
                ["pairs", "n", "p10", "p50", "p90", "within tau"])

    first = first_calls(index, queries[0][0])
    speed = speed_on_vectors(index, queries, tau, T)
    speed["first_call_seconds"] = first
    speed["pivot_filter_survivor_share"] = _pivot_filter_share(index, [q for q, _ in queries], tau, seed=seed)
    speed["cpu_ratio_to_exact"] = {m: speed[m]["cpu_seconds"] / speed["exact"]["cpu_seconds"] for m in METHODS}
    _print(f"search on the real vectors: {len(queries)} queries, tau={tau} T={T}, all 100 tables indexed, "
           "methods agree", {"autofj": speed}, "lake")
    print(f"Lemma 1 alone keeps {100 * speed['pivot_filter_survivor_share']:.3f}% of all pairs; CPU time "
          + " : ".join(f"{speed['cpu_ratio_to_exact'][m]:.3f}" for m in METHODS) + " (" + " : ".join(METHODS) + ")")
    geometry["pca_components_90"] = {"real": _components_90(index.vectors, seed),
                                     "generated": _components_90(generate_lake(
                                         n_vectors=50_000, dim=index.vectors.shape[1], seed=seed)[0], seed)}
    print("principal components holding 90% of the variance: real value vectors "
          f"{geometry['pca_components_90']['real']}, generated lake of the same dimension "
          f"{geometry['pca_components_90']['generated']} (of {index.vectors.shape[1]})")
    sweep = _tau_sweep(ls, names, kept, index, queries, metric, T)
    lexical = _lexical_ceiling(root, names)
    targets = _targets(column_search[left_mode]["own_left_rank1_share"],
                       value_pairs["pexeso best match"]["micro"]["f1"], speed["pexeso"]["speedup_vs_exact_cpu"])
    return {"tau": tau, "T": T, "top_k": AUTOFJ_TOP_K, "datasets": len(names), "refresh": refresh_out,
            "column_search": column_search, "value_pairs": value_pairs, "geometry": geometry, "search": speed,
            "tau_sweep": sweep, "lexical_reference": lexical, "targets": targets, "per_dataset": per_dataset}


def _tfidf_rows(strings):
    """Unit rows of TF-IDF (sublinear counts, smoothed IDF) over the words and character 3-grams of ``strings``."""
    vocab, rows, cols, vals = {}, [], [], []
    for i, s in enumerate(strings):
        padded = f" {s} "
        grams = defaultdict(int)
        for g in ["w:" + w for w in s.split()] + [padded[k:k + 3] for k in range(len(padded) - 2)]:
            grams[g] += 1
        for g, n in grams.items():
            rows.append(i)
            cols.append(vocab.setdefault(g, len(vocab)))
            vals.append(1.0 + np.log(n))
    m = sp.csr_matrix((vals, (rows, cols)), shape=(len(strings), len(vocab)))
    df = np.bincount(m.indices, minlength=len(vocab))
    m = (m @ sp.diags(np.log((1 + len(strings)) / (1 + df)) + 1)).tocsr()
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    return (sp.diags(1 / np.maximum(norms, 1e-12)) @ m).tocsr()


def _lexical_ceiling(root, names):
    """A reference to read the F1 target against, not a method of the platform: each right title's nearest left
    title by the cosine of TF-IDF over words and character 3-grams (fitted on the dataset's two columns, on values
    normalised as the index stores them), the pair kept when the cosine reaches a threshold chosen *with the
    answers* (``gt.csv``): one threshold for all datasets, and one per dataset.  What one similarity threshold reaches
    on these datasets when it is tuned on the ground truth, which a lake-wide tau cannot be."""
    best, golds = [], []  # per right value: (dataset, cosine, true pairs, predicted pairs); gold pairs per dataset
    for d, n in enumerate(names):
        raw_r, raw_l = _titles(root / n / "right.csv"), _titles(root / n / "left.csv")
        gold = _gold(root / n / "gt.csv")
        golds.append(len(gold))
        rv = sorted(set(_normalised(raw_r)) - {""})
        lv = sorted(set(_normalised(raw_l)) - {""})
        m = _tfidf_rows(lv + rv)
        sim = (m[len(lv):] @ m[:len(lv)].T).toarray()
        nearest = sim.argmax(axis=1)
        spelled_r, spelled_l = defaultdict(set), defaultdict(set)  # every raw spelling of a normalised title
        for spelled, raw in ((spelled_r, raw_r), (spelled_l, raw_l)):
            for title, key in zip(raw, _normalised(raw)):
                spelled[key].add(title)
        for i, r in enumerate(rv):
            pairs = {(a, b) for a in spelled_r[r] for b in spelled_l[lv[nearest[i]]]}
            best.append((d, sim[i, nearest[i]], len(pairs & gold), len(pairs)))
    table = np.array(best, dtype=np.float64)

    def sweep(rows):
        """(true positives, predicted) at every threshold, thresholds descending."""
        rows = rows[np.argsort(-rows[:, 1], kind="stable")]
        return rows[:, 1], np.cumsum(rows[:, 2]), np.cumsum(rows[:, 3])

    n_gold = sum(golds)
    cosine, tp, predicted = sweep(table)
    at = int(np.argmax(2 * tp / (predicted + n_gold)))
    out = {"one_threshold": {**_scores(tp[at], predicted[at], n_gold), "cosine": float(cosine[at])}}
    tp_all = predicted_all = 0
    for d, gold in enumerate(golds):
        _, tp, predicted = sweep(table[table[:, 0] == d])
        at = int(np.argmax(2 * tp / (predicted + gold)))
        tp_all, predicted_all = tp_all + tp[at], predicted_all + predicted[at]
    out["per_dataset_threshold"] = _scores(tp_all, predicted_all, n_gold)
    print("\nlexical reference (TF-IDF over words and char 3-grams, nearest left title, thresholds chosen with the "
          "answers): best-match P / R / F1 " + "; ".join(
              f"{k} {v['precision']:.3f} / {v['recall']:.3f} / {v['f1']:.3f}" for k, v in out.items())
          + f" (one threshold: cosine {out['one_threshold']['cosine']:.3f})")
    return out


def _targets(rank1, f1, speedup):
    """The encoder targets (own left table ranked first, one-to-one pair F1, PEXESO's CPU speed-up over exact with
    identical answers), each with the measured figure, at the default tau with the default encoder."""
    rows = [{"target": "own left table first among left tables", "goal": AUTOFJ_GOALS["rank1"], "measured": rank1},
            {"target": "best-match pair F1 (micro)", "goal": AUTOFJ_GOALS["f1"], "measured": f1},
            {"target": "pexeso : exact speed-up (cpu)", "goal": AUTOFJ_GOALS["speedup"], "measured": speedup}]
    for r in rows:
        r["met"] = r["measured"] >= r["goal"]
    print("\nAutoFJ targets at the default tau, default encoder (search answers identical across methods)")
    print_table(rows, ["target", "goal", "measured", "met"])
    return rows


def _components_90(vectors, seed, sample=50_000):
    """Principal components needed for 90% of the variance of (a seeded sample of) ``vectors``: the intrinsic
    dimension that decides how much pivot distances can prune."""
    rng = np.random.default_rng(seed)
    x = vectors[rng.choice(vectors.shape[0], min(sample, vectors.shape[0]), replace=False)].astype(np.float64)
    var = np.linalg.svd(x - x.mean(axis=0), compute_uv=False) ** 2
    return int(np.searchsorted(np.cumsum(var) / var.sum(), 0.9) + 1)


def _tau_sweep(ls, names, kept, index, queries, metric, T, taus=AUTOFJ_TAUS):
    """Quality and speed against tau on the same lake: own-left rank-1 share (top-5; among all tables and among the
    left tables), best-match pair scores and the pexeso : exact CPU-time ratio with the distance computations of
    each."""
    rows = []
    for t in taus:
        tau_sq = chord_threshold(t, metric) ** 2
        counts = []
        for sq, qvalues, lvalues, raw_r, raw_l, gold in kept:
            hit = (sq <= tau_sq).any(axis=1)
            best = _raw_pairs({(qvalues[i], lvalues[j]) for i, j in zip(np.flatnonzero(hit), sq.argmin(axis=1)[hit])},
                              raw_r, raw_l, _normalised)
            counts.append((len(best & gold), len(best), len(gold)))
        rank1 = among_left = 0
        for n in names:
            paths = [r["path"] for r in ls.join(f"{n}_right.csv", "title", tau=t, top_k=AUTOFJ_TOP_K)["results"]]
            rank1 += paths[:1] == [f"{n}_left.csv"]
            among_left += [p for p in paths if p.endswith("_left.csv")][:1] == [f"{n}_left.csv"]
        speed = speed_on_vectors(index, queries, t, T, methods=("pexeso", "exact"))
        rows.append({"tau": t, "own_left_rank1_share": rank1 / len(names), "among_left_tables": among_left / len(names),
                     **{f"best {k}": v for k, v in _micro_macro(counts)["micro"].items()},
                     "pexeso:exact cpu": speed["pexeso"]["speedup_vs_exact_cpu"],
                     "blocked%": 100 * speed["grid_blocking_survivor_share"],
                     "dist pexeso": speed["pexeso"]["distance_computations"],
                     "dist exact": speed["exact"]["distance_computations"]})
    print(f"\ntau sweep (T={T} for speed; top-{AUTOFJ_TOP_K} for rank 1; best-match pairs, micro)")
    print_table(rows, list(rows[0]))
    return rows


def _save(out, part=None):
    """Write join.json: ``part`` (e.g. "autofj") replaces that key only; the speed run replaces every other key."""
    old = harness.previous_result("join")
    new = {**old, part: out} if part else {**out, **{k: v for k, v in old.items() if k == "autofj"}}
    return harness.write_result("join", new, stamp=False, indent=1)


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
    ap.add_argument("--autofj", action="store_true", help="run the AutoFJ quality part instead of the speed part")
    ap.add_argument("--train-seconds", type=float, default=None,
                    help="AutoFJ: [embed] train_seconds of the refresh, 0 for none (default: the configuration's)")
    ap.add_argument("--workdir", default=None, help="AutoFJ: keep lake and warehouse here (default: a temp dir)")
    ap.add_argument("--master", default="local[2]", help="AutoFJ: Spark master of the refresh")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.autofj:
        out = autofj(args)
        if out is not None:
            out["total_seconds"] = time.perf_counter() - t0
            _save(out, "autofj")
            print(f"in {out['total_seconds']:.0f}s")
        return
    out = {"defaults": {"tau": 0.06, "T": 0.6, "pivots": args.pivots, "levels": args.levels,
                        "queries": args.queries, "sweep_queries": args.sweep_queries, "vectors": args.vectors}}
    for i, dim in enumerate(int(d) for d in args.dims.split(",")):
        out[f"d{dim}"] = run_geometry(args, dim, full_sweeps=i == 0)
    out["total_seconds"] = time.perf_counter() - t0
    _save(out)
    print(f"in {out['total_seconds']:.0f}s")


if __name__ == "__main__":
    main()
