"""Encoder quality: union ranking on UGEN-V1 and value distances on AutoFJ.

1. ``../shared/benchmarks/ugen_v1``: rank the 1000 lake tables for each of the 50 queries by (a) exhaustive maximum
   bipartite matching of hash column vectors (sum of matched cosine similarities), (b) the mean table vector, (c) the
   TACTUS table encoder trained on the lake tables (queries excluded); MAP@10 / P@10 / R@10 as in TACTUS §6.1.
2. ``../shared/benchmarks/autofj``: distance percentiles of ground-truth pairs (those that differ after
   normalisation) and of random value pairs, for the hash encoder and the ``join`` encoder trained on the lake's
   distinct values; shares within tau = 6 % of the maximum distance (0.12).  The target (>= 80 % of ground-truth
   pairs, < 0.1 % of random pairs within tau) is measured on the pairs that differ after normalisation ("gt<=tau");
   "all gt<=tau" also counts the identical ones.  "ranking" is tau-free: the share of differing ground-truth pairs
   closer than the 0.1 % quantile of the random-pair distances, i.e. the best share any calibration of the same
   geometry could put within tau at 0.1 % random pairs; TF-IDF cosine over words and character 3-grams gives the
   lexical reference for it.  The ``join`` variants of ``JOIN_VARIANTS`` are trained side by side: the default,
   InfoNCE alone (``alignment_weight`` and ``margin_weight`` 0, the alternative :class:`JoinEncoderConfig`
   describes), without same-column hard negatives (``hard_share`` 0) and generated variations only (no positives
   mined from the lake and no hard negatives).  Training sees each AutoFJ table's titles as one column.  For each
   encoder and a range of taus: nearest-value matching quality against ``gt.csv``, the share of datasets whose own
   left column is the most joinable one for its right column, and the share of random pairs that 5-pivot filtering
   (PEXESO Lemma 1) leaves, so quality and prunability are read side by side.

3. ``--embed-stage``: the embed stage on ``../shared/benchmarks/fivethirtyeight`` (scan, profile, embed into a
   temporary warehouse on a local[2] SparkSession, then a second refresh with nothing changed); stage seconds from
   ``refresh_runs``, reported against the profile stage of the same run (which reads and profiles the same tables).

Prints tables and writes ``benchmarks/results/encoders.json`` (parts not run keep their previous figures).  Usage:
``python benchmarks/encoders.py [--table-epochs N] [--join-steps N] [--autofj-only]`` or
``python benchmarks/encoders.py --embed-stage [--stage-join-steps N] [--stage-table-epochs N]``.
"""
from __future__ import annotations

import argparse
import csv
import time
from collections import Counter
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

import harness
from discovery.config import EmbedConfig
from discovery.transforms.encoders import (HashEncoder, JoinEncoderConfig, TableEncoderConfig, train_join_encoder,
                                           train_table_encoder)
from discovery.transforms.encoders.columns import parse_numbers
from discovery.transforms.encoders.hash_encoder import prepare_strings
from discovery.transforms.encoders.join_encoder import strip_punctuation
from harness import K, metrics, ugen_layout

DATA = Path(harness.SHARED) / "benchmarks"
TAU = 0.12
#: Match-quality taus, fractions of the maximum distance (PEXESO's 6 % and the range either side of it).
MATCH_TAUS = (0.03, 0.06, 0.09, 0.12, 0.175, 0.25, 0.35)
PIVOTS = 5
#: Join encoder variants trained side by side on AutoFJ (``join`` is the shipped default; the others change the
#: fields given, see :class:`JoinEncoderConfig`).
JOIN_VARIANTS = {"join": {}, "join-infonce": {"alignment_weight": 0.0, "margin_weight": 0.0},
                 "join-no-hard-negatives": {"hard_share": 0.0},
                 "join-variations-only": {"mined_share": 0.0, "hard_share": 0.0}}


def load_ugen_table(path: Path) -> list[list[str | None]]:
    """Columns of a UGEN table (cells separated by ' | ', first line is the header)."""
    lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    rows = [[c.strip() for c in line.split(" | ")] for line in lines]
    width = len(rows[0])
    return [[r[j] if j < len(r) else None for r in rows[1:]] for j in range(width)]


def infer_kind(column: list[str | None]) -> str:
    """"float" when at least 90 % of non-empty cells are numbers, else "string"."""
    cells = [c for c in column if c]
    if not cells:
        return "string"
    return "float" if np.isfinite(parse_numbers(cells)).mean() >= 0.9 else "string"


def bipartite_score(q: np.ndarray, t: np.ndarray) -> float:
    sim = q @ t.T
    r, c = linear_sum_assignment(sim, maximize=True)
    return float(sim[r, c].sum())


def union_benchmark(table_epochs: int) -> dict:
    root = DATA / "ugen_v1"
    lake_names, query_names, truth = ugen_layout(root)
    lake = [load_ugen_table(root / "datalake" / n) for n in lake_names]
    queries = [load_ugen_table(root / "query" / n) for n in query_names]
    lake_kinds = [[infer_kind(c) for c in t] for t in lake]
    query_kinds = [[infer_kind(c) for c in t] for t in queries]
    encoder = HashEncoder()

    t0 = time.perf_counter()
    lake_cols = [np.stack([encoder.encode_column(c, k) for c, k in zip(t, ks)]) for t, ks in zip(lake, lake_kinds)]
    query_cols = [np.stack([encoder.encode_column(c, k) for c, k in zip(t, ks)])
                  for t, ks in zip(queries, query_kinds)]
    column_seconds = time.perf_counter() - t0

    t0 = time.perf_counter()
    table_encoder = train_table_encoder(lake, encoder, TableEncoderConfig(epochs=table_epochs), lake_kinds)
    train_seconds = time.perf_counter() - t0

    mean_lake = np.stack([encoder.encode_table(c) for c in lake_cols])
    mean_query = np.stack([encoder.encode_table(c) for c in query_cols])
    t0 = time.perf_counter()
    tact_lake = np.stack([table_encoder.encode_table(c) for c in lake_cols])
    table_seconds = time.perf_counter() - t0
    tact_query = np.stack([table_encoder.encode_table(c) for c in query_cols])

    results: dict[str, list[tuple[float, float, float]]] = {"bipartite": [], "mean": [], "tactus": []}
    timings = {"bipartite": 0.0, "mean": 0.0, "tactus": 0.0}
    for qi, qname in enumerate(query_names):
        gt = truth.get(qname, set())
        t0 = time.perf_counter()
        scores = np.array([bipartite_score(query_cols[qi], c) for c in lake_cols])
        timings["bipartite"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        mean_scores = mean_lake @ mean_query[qi]
        timings["mean"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        tact_scores = tact_lake @ tact_query[qi]
        timings["tactus"] += time.perf_counter() - t0
        for name, s in (("bipartite", scores), ("mean", mean_scores), ("tactus", tact_scores)):
            order = np.lexsort((np.arange(len(lake_names)), -s))
            results[name].append(metrics([lake_names[i] for i in order[:K]], gt))

    print(f"\nUGEN-V1 union search, {len(lake_names)} lake tables, {len(query_names)} queries, k={K}")
    print(f"{'method':<12}{'MAP@10':>8}{'P@10':>8}{'R@10':>8}{'query time / mean':>20}")
    summary = {}
    for name, rows in results.items():
        m = np.mean(rows, axis=0)
        ratio = timings[name] / max(timings["mean"], 1e-9)
        summary[name] = {"map": m[0], "precision": m[1], "recall": m[2], "query_time_ratio_vs_mean": ratio}
        print(f"{name:<12}{m[0]:>8.3f}{m[1]:>8.3f}{m[2]:>8.3f}{ratio:>19.1f}x")
    print(f"column vectors: {column_seconds:.1f} s; table encoder training ({table_epochs} epochs): "
          f"{train_seconds:.1f} s; table vectors of the lake: {table_seconds:.2f} s")
    summary.update(column_vector_seconds=column_seconds, table_train_seconds=train_seconds,
                   table_epochs=table_epochs, table_encoder_version=table_encoder.version)
    return summary


def _tfidf_matrix(strings: list[str], vocabulary: dict[str, int], idf: np.ndarray):
    """Unit-normalised TF-IDF rows over word tokens and character 3-grams (the lexical reference model)."""
    import scipy.sparse as sp

    rows, cols, vals = [], [], []
    for r, s in enumerate(strings):
        for f, n in Counter(_lexical_features(s)).items():
            j = vocabulary.get(f)
            if j is not None:
                rows.append(r)
                cols.append(j)
                vals.append(n * idf[j])
    m = sp.csr_matrix((vals, (rows, cols)), shape=(len(strings), len(vocabulary)))
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    return sp.diags(1 / np.maximum(norms, 1e-12)) @ m


def _lexical_features(s: str) -> list[str]:
    padded = f" {s} "
    return [padded[i:i + 3] for i in range(len(padded) - 2)] + ["w:" + w for w in s.split()]


def lexical_ranking(lake: list[str], left: list[str], right: list[str], ra: np.ndarray, rb: np.ndarray) -> float:
    """Tau-free ranking of TF-IDF cosine (words and character 3-grams, IDF over the lake's distinct values): the
    share of ground-truth pairs (``left`` / ``right``, normalised) more similar than the 99.9 % quantile of random
    pairs.  A sparse model of what the strings share: the reference a string encoder trained without labels is
    measured against."""

    prepared = strip_punctuation(prepare_strings(lake, True))
    df = Counter(f for s in prepared for f in set(_lexical_features(s)))
    vocabulary = {f: j for j, f in enumerate(df)}
    idf = np.log(len(prepared) / np.array([df[f] for f in vocabulary], dtype=np.float64))
    a = _tfidf_matrix(strip_punctuation(left), vocabulary, idf)
    b = _tfidf_matrix(strip_punctuation(right), vocabulary, idf)
    v = _tfidf_matrix(prepared, vocabulary, idf)
    gt = np.asarray(a.multiply(b).sum(axis=1)).ravel()
    rand = np.asarray(v[ra].multiply(v[rb]).sum(axis=1)).ravel()
    return float((gt > np.quantile(rand, 0.999)).mean())


def matching_quality(enc, datasets: list[tuple[list[str], list[str], set[tuple[str, str]]]],
                     pivot_distances: np.ndarray, ra: np.ndarray, rb: np.ndarray) -> dict[str, dict]:
    """For each tau in MATCH_TAUS (fractions of the maximum distance 2): match every right value of a dataset to its
    nearest left value if that lies within tau, then precision / recall / F1 against ``gt.csv`` (as in
    ``benchmarks/join.py --autofj``); the share of datasets whose own left column is the single most joinable of the
    other 99 columns for its right column (joinability = share of right values with a value within tau, the ranking
    a top-k join search returns); and the share of random lake pairs that Lemma 1 of PEXESO cannot prune with
    PIVOTS random pivots (``max_p |d(x, p) - d(y, p)| <= tau``), the fraction of candidate pairs pivot filtering
    leaves to verify at that tau."""
    columns = [side for left, right, _ in datasets for side in (left, right)]
    vectors = [enc.encode_values(c) for c in columns]
    lake = np.concatenate(vectors)
    starts = np.r_[0, np.cumsum([len(c) for c in columns])[:-1]]
    best, correct, nearest_column, n_gt = [], [], [], 0
    for d, (left, right, gt) in enumerate(datasets):
        lv, rv = vectors[2 * d], vectors[2 * d + 1]
        dist = np.sqrt(np.maximum(2 - 2 * rv @ lv.T, 0))
        nearest = dist.argmin(axis=1)
        best.append(dist[np.arange(len(right)), nearest])
        correct.append(np.array([(left[j], r) in gt for j, r in zip(nearest, right)], dtype=bool))
        n_gt += len(gt)
        sim = np.concatenate([np.maximum.reduceat(rv[i:i + 256] @ lake.T, starts, axis=1)
                              for i in range(0, len(rv), 256)])
        per_column = np.sqrt(np.maximum(2 - 2 * sim, 0))
        per_column[:, 2 * d + 1] = np.inf  # the query column itself
        nearest_column.append(per_column)
    best_d, hit = np.concatenate(best), np.concatenate(correct)
    lower_bound = np.abs(pivot_distances[ra] - pivot_distances[rb]).max(axis=1)
    out = {}
    for frac in MATCH_TAUS:
        within = best_d <= 2 * frac
        tp = int(hit[within].sum())
        p, r = tp / max(int(within.sum()), 1), tp / max(n_gt, 1)
        top1 = 0
        for d, per_column in enumerate(nearest_column):
            joinable = (per_column <= 2 * frac).sum(axis=0)
            top1 += joinable[2 * d] > 0 and joinable[2 * d] > np.delete(joinable, 2 * d).max()
        out[f"{frac:g}"] = {"precision": p, "recall": r, "f1": 2 * p * r / max(p + r, 1e-12),
                            "own_left_top1": float(top1 / len(datasets)),
                            "unpruned_by_pivots": float((lower_bound <= 2 * frac).mean())}
    return out


def distance_benchmark(join_steps: int) -> dict:
    root = DATA / "autofj"
    values: set[str] = set()
    pairs: list[tuple[str, str]] = []
    datasets, columns = [], []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        sides = []
        for side in ("left.csv", "right.csv"):
            with open(d / side, newline="", encoding="utf-8") as fh:
                sides.append(sorted({r["title"] for r in csv.DictReader(fh)}))
        values.update(sides[0] + sides[1])
        columns += sides
        with open(d / "gt.csv", newline="", encoding="utf-8") as fh:
            gt = [(r["title_l"], r["title_r"]) for r in csv.DictReader(fh)]
        pairs.extend(gt)
        datasets.append((sides[0], sides[1], set(gt)))
    lake = sorted(values)
    left = prepare_strings([a for a, _ in pairs], True)
    right = prepare_strings([b for _, b in pairs], True)
    differ = [i for i in range(len(pairs)) if left[i] != right[i]]
    rng = np.random.default_rng(0)
    ra, rb = rng.integers(0, len(lake), 50_000), rng.integers(0, len(lake), 50_000)
    keep = ra != rb
    ra, rb = ra[keep], rb[keep]
    pivots = np.random.default_rng(1).choice(len(lake), PIVOTS, replace=False)

    encoders, summary = [("hash", HashEncoder())], {"join_steps": join_steps}
    for name, options in JOIN_VARIANTS.items():
        t0 = time.perf_counter()
        encoders.append((name, train_join_encoder(lake, JoinEncoderConfig(**{"steps": join_steps, **options}),
                                                  columns=columns)))
        summary[f"{name}_train_seconds"] = time.perf_counter() - t0
    summary["join_version"] = encoders[1][1].version

    print(f"\nAutoFJ value distances: {len(pairs)} ground-truth pairs ({len(differ)} differ after normalisation), "
          f"{len(lake)} distinct lake values, {keep.sum()} random pairs; tau = {TAU} (6 % of max distance 2)")
    print(f"{'encoder':<14}{'gt p10':>8}{'p50':>7}{'p90':>7}{'gt<=tau':>9}{'all gt<=tau':>12}"
          f"{'rand p10':>10}{'p50':>7}{'p90':>7}{'rand<=tau':>11}{'ranking':>9}")
    for name, enc in encoders:
        t0 = time.perf_counter()
        a = enc.encode_values([pairs[i][0] for i in range(len(pairs))])
        b = enc.encode_values([pairs[i][1] for i in range(len(pairs))])
        vecs = enc.encode_values(lake)
        encode_seconds = time.perf_counter() - t0
        dist = np.linalg.norm(a - b, axis=1)
        gt = dist[differ]
        rand = np.linalg.norm(vecs[ra] - vecs[rb], axis=1)
        row = {"gt_percentiles": np.percentile(gt, [10, 50, 90]).tolist(), "gt_within_tau": float((gt <= TAU).mean()),
               "all_gt_within_tau": float((dist <= TAU).mean()),
               "random_percentiles": np.percentile(rand, [10, 50, 90]).tolist(),
               "random_within_tau": float((rand <= TAU).mean()), "encode_seconds": encode_seconds,
               "gt_within_random_quantile_0.001": float((gt <= np.quantile(rand, 0.001)).mean()),
               "matching": matching_quality(enc, datasets,
                                            np.stack([np.linalg.norm(vecs - vecs[p], axis=1) for p in pivots], axis=1),
                                            ra, rb)}
        summary[name] = row
        g, r = row["gt_percentiles"], row["random_percentiles"]
        print(f"{name:<14}{g[0]:>8.3f}{g[1]:>7.3f}{g[2]:>7.3f}{row['gt_within_tau']:>9.1%}"
              f"{row['all_gt_within_tau']:>12.1%}{r[0]:>10.3f}{r[1]:>7.3f}{r[2]:>7.3f}{row['random_within_tau']:>11.3%}"
              f"{row['gt_within_random_quantile_0.001']:>9.1%}")
    summary["tfidf_ranking"] = lexical_ranking(lake, [left[i] for i in differ], [right[i] for i in differ], ra, rb)
    print(f"ranking = differing gt pairs closer than the 0.1 % quantile of random pairs; TF-IDF (words + char "
          f"3-grams) on the same pairs: {summary['tfidf_ranking']:.1%}")
    print(f"\nnearest left value per right value within tau: P / R / F1, own left column ranked first (top1), and "
          f"random pairs left by {PIVOTS}-pivot filtering (Lemma 1)")
    print(f"{'tau':>6}" + "".join(f"{name:>43}" for name, _ in encoders))
    for frac in MATCH_TAUS:
        cells = [summary[name]["matching"][f"{frac:g}"] for name, _ in encoders]
        print(f"{frac:>6.1%}" + "".join(f"{c['precision']:>10.2f} /{c['recall']:.2f} /{c['f1']:.2f}  top1 "
                                        f"{c['own_left_top1']:.2f}  left {c['unpruned_by_pivots']:>6.1%}"
                                        for c in cells))
    ratio = summary["join"]["encode_seconds"] / summary["hash"]["encode_seconds"]
    print(f"join encoder training ({join_steps} steps): " + ", ".join(
        f"{name} {summary[f'{name}_train_seconds']:.1f} s" for name in JOIN_VARIANTS) + f"; encoding time join / "
          f"hash: {ratio:.2f}x")
    summary["encode_time_ratio_join_vs_hash"] = ratio
    return summary


def embed_stage_benchmark(join_steps: int, table_epochs: int) -> dict | None:
    """Time the embed stage (first build, then a refresh with nothing changed) on the fivethirtyeight lake."""
    import tempfile

    lake = DATA / "fivethirtyeight"
    if not lake.is_dir():
        print(f"skipping embed-stage benchmark: {lake} not found")
        return None
    from discovery.data.store import Warehouse, load_snapshot

    with tempfile.TemporaryDirectory(prefix="lakescout-embed-bench-") as tmp:
        config = harness.config_file(tmp, "bench", f"[embed]\njoin_steps = {join_steps}\n"
                                                   f"table_epochs = {table_epochs}\n")
        root = str(Path(tmp) / "warehouse")
        runs = []
        for label in ("first build", "nothing changed"):
            rid = harness.refresh(str(lake), root, config=config,
                                  spark=harness.spark_session("lakescout-bench-embed")).result["refresh_id"]
            rows = {r["stage"]: r for r in Warehouse(root).read("refresh_runs").to_pylist()
                    if r["refresh_id"] == rid and r["status"] == "ok"}
            runs.append((label, rows))
        counts = load_snapshot(Warehouse(root)).counts
    print(f"\nembed stage on {lake.name}: {counts['tables_ok']} ok tables, {counts['rows_column_vectors']} column "
          f"vectors, {counts['rows_value_vectors']} value vectors (join_steps {join_steps}, table_epochs "
          f"{table_epochs}, local[2])")
    print(f"{'refresh':<18}{'embed s':>9}{'profile s':>11}{'embed / profile':>17}{'tables encoded':>16}")
    summary = {"tables_ok": counts["tables_ok"], "rows": {k: v for k, v in counts.items() if k.startswith("rows_")},
               "join_steps": join_steps, "table_epochs": table_epochs}
    for label, rows in runs:
        embed, profile = rows["embed"], rows["profile"]
        ratio = embed["seconds"] / max(profile["seconds"], 1e-9)
        print(f"{label:<18}{embed['seconds']:>9.1f}{profile['seconds']:>11.1f}{ratio:>16.1f}x"
              f"{embed['tables_processed']:>16}")
        summary[label.replace(" ", "_")] = {"embed_seconds": embed["seconds"], "profile_seconds": profile["seconds"],
                                            "embed_vs_profile": ratio, "tables_encoded": embed["tables_processed"],
                                            "message": embed["message"]}
    print("first build: " + runs[0][1]["embed"]["message"][:400])
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table-epochs", type=int, default=20)
    parser.add_argument("--join-steps", type=int, default=JoinEncoderConfig().steps)
    parser.add_argument("--embed-stage", action="store_true", help="only time the embed stage on fivethirtyeight")
    parser.add_argument("--autofj-only", action="store_true", help="skip the UGEN-V1 union ranking")
    parser.add_argument("--stage-join-steps", type=int, default=EmbedConfig().join_steps)
    parser.add_argument("--stage-table-epochs", type=int, default=EmbedConfig().table_epochs)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    out = harness.previous_result("encoders")
    if args.embed_stage:
        stage = embed_stage_benchmark(args.stage_join_steps, args.stage_table_epochs)
        if stage is not None:
            out["embed_stage"] = stage
    else:
        if not (DATA / "ugen_v1" / "groundtruth.csv").exists():
            print(f"skipping union benchmark: {DATA / 'ugen_v1'} not found")
        elif not args.autofj_only:
            out["ugen_v1"] = union_benchmark(args.table_epochs)
        if (DATA / "autofj").is_dir():
            out["autofj"] = distance_benchmark(args.join_steps)
        else:
            print(f"skipping value-distance benchmark: {DATA / 'autofj'} not found")
    harness.write_result("encoders", out, stamp=False, default=float)


if __name__ == "__main__":
    main()
