"""Ranking quality against a ground truth (TACTUS §6.1), and the layouts of the shared UGEN-V1 and fivethirtyeight
data sets."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

#: The cut-off the union figures are reported at.
K = 10


def metric_curves(ranked: list[str], truth: set[str], k: int = K) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TACTUS §6.1 at every cut-off i = 1..k of one ranked answer: MAP@i = (1/i) sum_{j<=i} P@j, P@i and R@i, three
    arrays of length k.  An answer shorter than k counts its missing places as misses, as a refused query does."""
    hits = np.zeros(k)
    hits[:min(len(ranked), k)] = [t in truth for t in ranked[:k]]
    at = np.arange(1, k + 1)
    found = np.cumsum(hits)
    p_at = found / at
    return np.cumsum(p_at) / at, p_at, found / max(len(truth), 1)


def metrics(ranked: list[str], truth: set[str], k: int = K) -> tuple[float, float, float]:
    """TACTUS §6.1: MAP@k = (1/k) sum_{i<=k} P@i, P@k, R@k (the last cut-off of :func:`metric_curves`)."""
    map_at, p_at, r_at = metric_curves(ranked, truth, k)
    return float(map_at[-1]), float(p_at[-1]), float(r_at[-1])


def ugen_layout(root: Path) -> tuple[list[str], list[str], dict[str, set[str]]]:
    """UGEN-V1's lake table names, query table names and the unionable lake tables of each query."""
    root = Path(root)
    lake_names = sorted(p.name for p in (root / "datalake").glob("*.csv"))
    query_names = sorted(p.name for p in (root / "query").glob("*.csv"))
    truth: dict[str, set[str]] = {}
    with open(root / "groundtruth.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["unionable"].strip() == "1":
                truth.setdefault(row["query_table"], set()).add(row["data_lake_table"])
    return lake_names, query_names, truth


def fivethirtyeight_truth(root: str | Path) -> dict[str, set[str]]:
    """fivethirtyeight's union ground truth: the files of one article's folder are unionable with each other; the
    first file (in path order) of each folder of two or more is the query, the others its answers (lake paths)."""
    root = Path(root)
    by_folder: dict[str, list[str]] = {}
    for p in sorted(root.rglob("*.csv")):
        rel = p.relative_to(root).as_posix()
        by_folder.setdefault(rel.split("/")[0], []).append(rel)
    return {files[0]: set(files[1:]) for files in by_folder.values() if len(files) >= 2}
