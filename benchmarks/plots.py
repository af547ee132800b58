"""Plots of the benchmark figures where a curve says more than a table: refresh time against lake size, PEXESO's
speed-up over the exact join against tau, and union quality per method.

Run: ``python benchmarks/plots.py [--out benchmarks/plots]`` (needs ``benchmarks/requirements.txt``).  Each plot is
drawn from the figures recorded in :data:`RECORDED` (the runs ``benchmarks/README.md`` reports, with their commit
and date); the build-time plot takes the rows of ``benchmarks/results/refresh_scale.json`` instead when a run of
``benchmarks/refresh.py --scale`` has written it.  No figure is computed here.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks.common import RESULTS  # noqa: E402

#: The recorded figures the plots show, each with the run it comes from.
RECORDED = {
    "refresh_scale": {
        "source": "benchmarks/refresh.py --scale 1000,4000,16000, test training settings, commit fb1287a, 2026-11-23",
        "tables": [1000, 4000, 16000],
        "full_s": [54.1, 151.0, 596.6],
        "incremental_s": [5.0, 10.5, 21.0],
    },
    "join_tau": {
        "generated": {
            "source": "benchmarks/join.py, 1M vectors, d = 128, T = 60%, commit 55da2f3, 2026-11-23",
            "tau_percent": [2, 4, 6, 8],
            "speedup": [172, 68, 30, 13],
        },
        "autofj": {
            "source": "benchmarks/join.py --autofj, 50 title queries, T = 0.6, CPU time, commit 3dcbe4e, 2026-11-23",
            "tau_percent": [2, 3, 3.5, 4, 4.5, 6, 9],
            "speedup": [20.3, 12.4, 9.3, 7.2, 5.6, 2.6, 0.9],
        },
    },
    "union_quality": {
        "source": "benchmarks/union.py --part quality, k = 10, tau = 0.4, commit 63de787, 2026-11-22",
        "methods": ["exact", "pgtus++", "pgtus", "pgtus++-approx", "tactus", "TF-IDF"],
        "map10": {
            "UGEN-V1": [0.708, 0.708, 0.708, 0.692, 0.682, 0.700],
            "sample lake": [0.972, 0.972, 0.972, 0.970, 0.556, 0.917],
            "fivethirtyeight": [0.389, 0.389, 0.389, 0.361, 0.378, 0.421],
        },
    },
}


def scale_rows() -> tuple[dict, str]:
    """Tables, full and incremental seconds of the latest ``--scale`` run when one was written, else the recorded."""
    path = os.path.join(RESULTS, "refresh_scale.json")
    if os.path.exists(path):
        with open(path) as fh:
            result = json.load(fh)
        rows = result.get("results") or []
        if rows and all({"tables", "full_s", "incremental_s"} <= set(r) for r in rows):
            return ({"tables": [r["tables"] for r in rows], "full_s": [r["full_s"] for r in rows],
                     "incremental_s": [r["incremental_s"] for r in rows]},
                    f"benchmarks/results/refresh_scale.json, {result.get('at', '')[:10]}")
    recorded = RECORDED["refresh_scale"]
    return recorded, recorded["source"]


def plot_build_time(plt, out: str) -> str:
    data, source = scale_rows()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(data["tables"], data["full_s"], "o-", label="full build")
    ax.plot(data["tables"], data["incremental_s"], "s-", label="incremental, 1% of tables changed")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(data["tables"], [f"{n:,}" for n in data["tables"]])
    ax.set_xlabel("lake tables")
    ax.set_ylabel("seconds (2 cores)")
    ax.set_title("Refresh time against lake size")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.text(0.01, 0.01, source, fontsize=6, color="grey")
    return _save(plt, fig, out, "build_time_vs_lake_size.png")


def plot_join_speedup(plt, out: str) -> str:
    runs = RECORDED["join_tau"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(runs["generated"]["tau_percent"], runs["generated"]["speedup"], "o-", label="generated, 1M vectors")
    ax.plot(runs["autofj"]["tau_percent"], runs["autofj"]["speedup"], "s-", label="AutoFJ titles")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("tau (% of the maximum distance)")
    ax.set_ylabel("PEXESO speed-up over exact (x)")
    ax.set_title("Semantic join: speed-up against tau (identical answers)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.text(0.01, 0.01, runs["generated"]["source"] + "; " + runs["autofj"]["source"], fontsize=5, color="grey")
    return _save(plt, fig, out, "join_speedup_vs_tau.png")


def plot_union_quality(plt, out: str) -> str:
    data = RECORDED["union_quality"]
    methods, lakes = data["methods"], list(data["map10"])
    width = 0.8 / len(lakes)
    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    for i, lake in enumerate(lakes):
        xs = [m + (i - (len(lakes) - 1) / 2) * width for m in range(len(methods))]
        ax.bar(xs, data["map10"][lake], width, label=lake)
    ax.set_xticks(range(len(methods)), methods)
    ax.set_ylim(0, 1.15)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylabel("MAP@10")
    ax.set_title("Union search quality per method (k = 10)")
    ax.legend(fontsize=8, ncol=len(lakes), loc="upper center")
    ax.grid(True, axis="y", alpha=0.3)
    fig.text(0.01, 0.01, data["source"], fontsize=6, color="grey")
    return _save(plt, fig, out, "union_quality.png")


def _save(plt, fig, out: str, name: str) -> str:
    path = os.path.join(out, name)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "plots"))
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(args.out, exist_ok=True)
    for draw in (plot_build_time, plot_join_speedup, plot_union_quality):
        print(draw(plt, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
