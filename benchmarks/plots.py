"""Plots of the benchmark figures where a curve says more than a table: refresh time against lake size, PEXESO's
speed-up over the exact join against tau, union quality per method, and union quality against k.

Run: ``python benchmarks/plots.py [--out benchmarks/plots] [--record]`` (needs ``benchmarks/requirements.txt``).  Each
plot is drawn from recorded figures, each with the run it comes from: :data:`RECORDED` (the runs
``benchmarks/README.md`` reports, with their commit and date) and, for union quality against k, the curves recorded in
``benchmarks/plots/union_quality_vs_k.json``.  The build-time plot takes the rows of
``benchmarks/results/refresh_scale.json`` instead when a run of ``benchmarks/refresh.py --scale`` has written it, and
the k plot the lakes of ``benchmarks/results/union_quality*.json`` (the newest run of each lake) when a run of
``benchmarks/union.py --part quality`` has written curves; ``--record`` then writes those curves into the recorded
file.  No figure is computed here.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys

from harness import RESULTS, ROOT

#: The union quality curves the k plot shows (written by ``--record`` from a ``benchmarks/union.py`` run).
UNION_K_RECORDED = os.path.join(ROOT, "benchmarks", "plots", "union_quality_vs_k.json")
#: Lines of the k plot: (method in the results, label); methods whose curves are equal share one line.
UNION_K_METHODS = (("exact", "exact"), ("pgtus++", "pgtus++ (default)"), ("pgtus", "pgtus"),
                   ("pgtus++-approx", "pgtus++-approx"), ("tactus", "tactus"), ("tf-idf", "TF-IDF baseline"))
UNION_K_LAKES = ("UGEN-V1", "sample lake", "fivethirtyeight")

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
        "source": "benchmarks/union.py --part quality --k 20 (code of commit ab2070a), each method's own top-10 "
                  "answers, tau = 0.4, 2026-11-30",
        "methods": ["exact", "pgtus++", "pgtus", "pgtus++-approx", "tactus", "TF-IDF"],
        "map10": {
            "UGEN-V1": [0.716, 0.716, 0.716, 0.688, 0.681, 0.700],
            "sample lake": [0.966, 0.966, 0.966, 0.961, 0.620, 0.909],
            "fivethirtyeight": [0.400, 0.400, 0.400, 0.365, 0.379, 0.421],
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


def union_k_results() -> dict:
    """Per lake, the curves of the newest ``benchmarks/results/union_quality*.json`` run holding them (rounded to
    the 4 decimals the recorded file keeps), with the run's date and k; {} when no run wrote curves."""
    lakes: dict[str, dict] = {}
    for path in glob.glob(os.path.join(RESULTS, "union_quality*.json")):
        with open(path) as fh:
            result = json.load(fh)
        for lake in result.get("lakes") or []:
            rows = lake.get("results") or []
            if not rows or not all("MAP@k" in r for r in rows):
                continue
            if lake["lake"] in lakes and lakes[lake["lake"]]["at"] >= result.get("at", ""):
                continue
            lakes[lake["lake"]] = {
                "at": result.get("at", ""), "k": result["k"], "queries": lake["queries"],
                "methods": {r["method"]: {**{m: [round(x, 4) for x in r[m]] for m in ("MAP@k", "P@k", "R@k")},
                                          "direct": {c: {m: round(v[m], 4) for m in ("MAP", "P", "R")}
                                                     for c, v in r["at"].items()
                                                     if v.get("differs_from_prefix")}}
                            for r in rows}}
    return lakes


def union_k_curves(record: bool) -> tuple[dict, str]:
    """The lakes the k plot draws and its source line: a run's curves when there are (recorded with ``record``),
    else the recorded file."""
    lakes = union_k_results()
    if lakes and record:
        text = json.dumps({"source": "benchmarks/union.py --part quality, tau = 0.4; curves from each method's top-k "
                                     "answers, hollow markers its own top-i answer where that differs",
                           "lakes": lakes}, indent=1)
        text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
        with open(UNION_K_RECORDED, "w") as fh:  # one line per curve
            fh.write(text + "\n")
    if not lakes:
        with open(UNION_K_RECORDED) as fh:
            lakes = json.load(fh)["lakes"]
    dates = sorted({lake["at"][:10] for lake in lakes.values()})
    return lakes, f"benchmarks/union.py --part quality, tau = 0.4, {' / '.join(dates)}"


def plot_union_quality_vs_k(plt, out: str, record: bool = False) -> str:
    lakes, source = union_k_curves(record)
    names = [n for n in UNION_K_LAKES if n in lakes] + sorted(set(lakes) - set(UNION_K_LAKES))
    measures = (("MAP@k", "MAP"), ("P@k", "P"), ("R@k", "R"))
    fig, axes = plt.subplots(len(measures), len(names), figsize=(3.8 * len(names), 8.4), squeeze=False,
                             sharex="col")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, name in enumerate(names):
        lake = lakes[name]
        ks = list(range(1, lake["k"] + 1))
        lines: list[tuple[list[str], str]] = []  # (labels, method) of each distinct curve
        for method, label in UNION_K_METHODS:
            data = lake["methods"].get(method)
            if data is None:
                continue
            same = next((ln for ln in lines if all(lake["methods"][ln[1]][m] == data[m] for m, _ in measures)), None)
            if same:
                same[0].append(label)
            else:
                lines.append(([label], method))
        for i, (measure, short) in enumerate(measures):
            ax = axes[i][j]
            for n, (labels, method) in enumerate(lines):
                data, colour = lake["methods"][method], colours[n % len(colours)]
                ax.plot(ks, data[measure], ".-", color=colour, label=" = ".join(labels), linewidth=1.2, markersize=4)
                direct = data.get("direct") or {}
                if direct:
                    ax.plot([int(c) for c in direct], [v[short] for v in direct.values()], "o", color=colour,
                            markerfacecolor="none", markersize=7)
            ax.set_ylim(0, 1.02)
            ax.grid(True, alpha=0.3)
            if i == 0:
                ax.set_title(f"{name} ({lake['queries']} queries)")
            if i == len(measures) - 1:
                ax.set_xlabel("k")
                ax.set_xticks([1, 5, 10, 15, 20][: 1 + sum(x <= lake["k"] for x in (5, 10, 15, 20))])
            if j == 0:
                ax.set_ylabel(measure)
        if any(lake["methods"][method].get("direct") for _, method in lines):
            axes[0][j].plot([], [], "o", color="grey", markerfacecolor="none",
                            label="own top-k answer where it differs")
        axes[0][j].legend(fontsize=6.5, loc="lower left")
    fig.suptitle("Union search quality against k", fontsize=11)
    fig.text(0.01, 0.01, source, fontsize=6, color="grey")
    return _save(plt, fig, out, "union_quality_vs_k.png")


def _save(plt, fig, out: str, name: str) -> str:
    path = os.path.join(out, name)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "plots"))
    ap.add_argument("--record", action="store_true",
                    help="write the union curves of benchmarks/results/ into benchmarks/plots/union_quality_vs_k.json")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(args.out, exist_ok=True)
    for draw in (plot_build_time, plot_join_speedup, plot_union_quality):
        print(draw(plt, args.out))
    print(plot_union_quality_vs_k(plt, args.out, args.record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
