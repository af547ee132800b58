"""Encoder training against its steps: where the held-out loss flattens, and what quality it has by then.

    .venv/bin/python benchmarks/training.py [--join autofj|fivethirtyeight|ugen_v1|sample] [--steps 1500]
        [--quality-at 0,100,200,300,500,900,1200] [--table fivethirtyeight|ugen_v1|sample]

``--join LAKE``: the ``join`` encoder trained on LAKE's join-training values (the sample and caps a refresh uses,
``discovery.transforms.encoders.lake_training``) for ``--steps`` steps with its stopping rule off, the held-out loss
recorded at every check; on AutoFJ also, at the ``--quality-at`` steps, the nearest-pair precision / recall / F1 of each
right title against its dataset's left titles and the share of datasets whose own left column is the most joinable
(``benchmarks.encoders.matching_quality``, taus 3 / 4 / 6 %).  Then where the default rule (and a few others) would
have stopped.  ``--table LAKE``: the TACTUS table encoder trained on LAKE with its default rule, the held-out loss
and the CPU seconds after every epoch.  CPU seconds are the process's (one torch thread), so a shared machine's load
changes the wall time but not them.  Writes ``benchmarks/results/training.json``.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa

from discovery.config import load_config
from discovery.data.lake import list_lake
from discovery.orchestration.demo_lake import generate_demo_lake
from discovery.transforms.encoders.lake_training import join_config, join_training_columns, read_sample, sample_tables
from harness import print_table, shared_path, write_result

LAKES = {"autofj": ("autofj",), "fivethirtyeight": ("fivethirtyeight",), "ugen_v1": ("ugen_v1", "datalake")}
#: (check every, patience, minimum fall) of stopping rules to replay on a recorded curve; the first is the default.
RULES = ((50, 6, 0.01), (25, 4, 0.01), (50, 3, 0.01), (100, 3, 0.01), (25, 4, 0.02))


def _lake(name: str, work: str) -> str | None:
    if name == "sample":
        path = os.path.join(work, "sample")
        if not os.path.isdir(path):
            generate_demo_lake(path)
        return path
    if name == "autofj":  # the lake join.py --autofj builds: each dataset's two tables
        root = shared_path("autofj")
        if root is None:
            return None
        lake = Path(work) / "autofj"
        for d in sorted(p for p in Path(root).iterdir() if (p / "gt.csv").is_file()):
            for side in ("left", "right"):
                target = lake / f"{d.name}_{side}.csv"
                if not target.exists():
                    lake.mkdir(parents=True, exist_ok=True)
                    target.write_bytes((d / f"{side}.csv").read_bytes())
        return str(lake)
    return shared_path(*LAKES[name])


def _sample(lake: str):
    config = load_config()
    files = list_lake(lake)
    catalog = pa.table({"table_id": list(range(len(files))), "path": [f.path for f in files],
                        "format": [f.format for f in files], "bytes": [f.size for f in files]})
    chosen = sample_tables(catalog, config.embed.train_tables, config.embed.seed)
    return config, read_sample(chosen, lake, config.limits, config.profile.type_agreement)


def _autofj_datasets():
    root = Path(shared_path("autofj"))
    datasets = []
    for d in sorted(p for p in root.iterdir() if (p / "gt.csv").is_file()):
        sides = []
        for side in ("left.csv", "right.csv"):
            with open(d / side, newline="", encoding="utf-8") as fh:
                sides.append(sorted({r["title"] for r in csv.DictReader(fh)}))
        with open(d / "gt.csv", newline="", encoding="utf-8") as fh:
            datasets.append((sides[0], sides[1], {(r["title_l"], r["title_r"]) for r in csv.DictReader(fh)}))
    return datasets


def stopped_at(losses: list[tuple[int, float]], every: int, patience: int, fall: float) -> int | None:
    """The step at which a rule (check every ``every`` steps, ``patience`` checks without a fall of ``fall`` times
    the best) would have ended training on a recorded curve; None when it would not have."""
    best, since = None, 0
    for step, loss in losses:
        if step % every:
            continue
        if best is None or loss < best - fall * abs(best):
            best, since = loss, 0
        else:
            since += 1
        if since >= patience:
            return step
    return None


def join_curve(name: str, steps: int, quality_at: set[int], work: str) -> dict | None:
    from discovery.transforms.encoders.join_training import train_join_encoder

    lake = _lake(name, work)
    if lake is None:
        return None
    config, tables = _sample(lake)
    values, columns = join_training_columns(tables, config.embed, config.embed.seed)
    if name != "autofj":
        quality = None
    else:
        import benchmarks.encoders as enc_bench

        enc_bench.MATCH_TAUS = (0.03, 0.04, 0.06)
        datasets = _autofj_datasets()
        lake_values = sorted({v for left, right, _ in datasets for v in left + right})
        rng = np.random.default_rng(0)
        ra, rb = rng.integers(0, len(lake_values), 50_000), rng.integers(0, len(lake_values), 50_000)
        ra, rb = ra[ra != rb], rb[ra != rb]
        pivots = np.random.default_rng(1).choice(len(lake_values), 5, replace=False)

        def quality(encoder):
            vecs = encoder.encode_values(lake_values)
            distances = np.stack([np.linalg.norm(vecs - vecs[p], axis=1) for p in pivots], axis=1)
            return enc_bench.matching_quality(encoder, datasets, distances, ra, rb)

    rows, started = [], time.process_time()

    def on_check(step, loss, export):
        row = {"step": step, "held_out_loss": loss, "cpu_s": time.process_time() - started}
        if quality is not None and step in quality_at:
            for tau, q in quality(export()).items():
                row[f"f1@{tau}"], row[f"top1@{tau}"] = q["f1"], q["own_left_top1"]
        rows.append(row)
        print(" ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), flush=True)

    cfg = replace(join_config(config.embed), steps=steps, patience=10 ** 9)
    train_join_encoder(values, cfg, columns=columns, on_check=on_check)
    curve = [(r["step"], r["held_out_loss"]) for r in rows]
    rules = [{"every": e, "patience": p, "fall": f, "stops_at": stopped_at(curve, e, p, f)} for e, p, f in RULES]
    print(f"\njoin encoder on {name}: {len(values)} values, {steps} steps without stopping")
    measured = [r for r in rows if "f1@0.04" in r]
    print_table(measured or rows[::4], ["step", "held_out_loss"] + (
        ["f1@0.03", "f1@0.04", "f1@0.06", "top1@0.04"] if measured else []) + ["cpu_s"])
    print("\nwhere a rule (check every, patience, minimum fall) would have stopped; the first is the default")
    print_table(rules, ["every", "patience", "fall", "stops_at"])
    return {"lake": name, "values": len(values), "steps": steps, "curve": rows, "rules": rules}


def table_curve(name: str, work: str) -> dict | None:
    from discovery.transforms.encoders.lake_training import table_config
    from discovery.transforms.encoders.stored import column_encoder
    from discovery.transforms.encoders.table_encoder import held_out_tables, table_steps, train_table_encoder

    lake = _lake(name, work)
    if lake is None:
        return None
    config, tables = _sample(lake)
    rows, started = [], time.process_time()

    def on_check(steps, loss):
        rows.append({"epoch": len(rows), "steps": steps, "held_out_loss": loss,
                     "cpu_s": time.process_time() - started})

    cfg = table_config(config.embed)
    encoder = train_table_encoder([t for t, _, _ in tables], column_encoder(config.embed), cfg,
                                  [k for _, k, _ in tables], [n for _, _, n in tables], on_check=on_check)
    planned = table_steps(cfg, len(tables) - held_out_tables(cfg, len(tables)))
    steps = encoder.config.max_steps or planned
    print(f"\ntable encoder on {name}: {len(tables)} tables, {steps} of {planned} steps, "
          f"{time.process_time() - started:.1f} CPU s")
    print_table(rows, ["epoch", "steps", "held_out_loss", "cpu_s"])
    return {"lake": name, "tables": len(tables), "planned_steps": planned, "steps": steps, "epochs": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--join", choices=("autofj", "fivethirtyeight", "ugen_v1", "sample"), default=None)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--quality-at", default="0,100,200,300,500,900,1200")
    ap.add_argument("--table", choices=("fivethirtyeight", "ugen_v1", "sample"), default=None)
    ap.add_argument("--work", default="/tmp/lakescout-bench-training")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    out = {}
    if args.join:
        out["join"] = join_curve(args.join, args.steps, {int(s) for s in args.quality_at.split(",")}, args.work)
    if args.table:
        out["table"] = table_curve(args.table, args.work)
    write_result("training", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
