"""Entry point: plan the lake for a table budget, write it, compute and write its ground truth."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from ...ground.normalize import normalize_values
from .broken import write_broken
from .builder import LakeBuilder
from .ground_truth import GROUND_TRUTH_DIR, load_ground_truth, write_ground_truth
from .joins import JOIN_KINDS, write_pair
from .lakehouse import CATALOG_DB, add_lakehouse_tables
from .nary import NARY_KINDS, joinability, write_group
from .numeric import NUMERIC_TABLES, write_numeric
from .seeds import SEEDS
from .tablefile import read_table_file
from .unions import family_sizes, union_pairs, write_family

MIN_TABLES = 40


def _plan(n_tables: int, n_broken: int) -> tuple[int, list[int], int]:
    n_pairs = max(2, round(0.04 * n_tables))
    groups, n_nary = [], 0
    for i in range(max(2, round(0.027 * n_tables))):
        groups.append(i % len(NARY_KINDS))
        n_nary += 1 + len(NARY_KINDS[groups[-1]].lakes)
    return n_pairs, groups, n_tables - n_broken - 2 * n_pairs - n_nary


def _make_room(lake: LakeBuilder, families: dict[str, list[str]], union_cols: list[dict], n: int) -> None:
    """Remove the last ``n`` union tables written (from the last families, each keeping three members): room for the
    numerical joins within the table budget.  The tables were written, so the random stream of everything after them
    is what it was before numerical joins were planted."""
    gone: set[str] = set()
    for name in reversed(list(families)):
        while len(gone) < n and len(families[name]) > 3:
            gone.add(families[name].pop())
    if len(gone) < n:
        raise ValueError("too few union tables to make room for the numerical joins")
    for rel in gone:
        (lake.root / rel).unlink()
    lake.manifest[:] = [t for t in lake.manifest if t["path"] not in gone]
    union_cols[:] = [c for c in union_cols if c["table"] not in gone]


def _exhaustive_nary(root: Path, manifest: list[dict], queries: list[tuple[str, list[str], set[str]]]) -> list[dict]:
    good = [t for t in manifest if t["role"] in ("union", "join", "nary", "numeric")]
    norm = {}
    for t in good:
        header, cols = read_table_file(root / t["path"], t["format"])
        norm[t["path"]] = (header, [normalize_values(c) for c in cols])
    rows = []
    for q_path, q_cols, planted in queries:
        header, cols = norm[q_path]
        q_norm = [cols[header.index(c)] for c in q_cols]
        q_tuples = len({tp for tp in zip(*q_norm) if None not in tp})
        for t in good:
            if t["path"] == q_path:
                continue
            j, mapping = joinability(q_norm, *norm[t["path"]])
            if j > 0 or t["path"] in planted:
                rows.append({"query_table": q_path, "query_columns": q_cols, "lake_table": t["path"],
                             "lake_columns": mapping, "joinable_tuples": j, "query_tuples": q_tuples,
                             "planted": int(t["path"] in planted)})
    return rows


def _clear_previous(root: Path) -> None:
    if not root.exists() or not any(root.iterdir()):
        return
    if not (root / GROUND_TRUTH_DIR / "tables.csv").is_file():
        raise FileExistsError(f"{root} is not empty and holds no sample lake; choose an empty folder")
    for entry in load_ground_truth(root)["tables"]:
        target = root / entry["path"]
        if target.is_dir():  # a lakehouse table
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
    shutil.rmtree(root / GROUND_TRUTH_DIR)
    shutil.rmtree(root / CATALOG_DB.split("/")[0], ignore_errors=True)
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(folder.iterdir()):
            folder.rmdir()


def generate_demo_lake(out_dir: str | Path, seed: int = 7, n_tables: int = 300, lakehouse: bool = False) -> dict:
    """Write the sample lake of ``n_tables`` files (broken ones included) and its ground truth into ``out_dir``.

    ``out_dir`` must be empty, missing, or hold an earlier sample lake, whose files are removed first (so a
    regenerated lake never keeps stale tables).  Returns the summary also written to ``summary.json``.

    ``lakehouse`` lays members of the demo query's union family out as Delta, Iceberg, partitioned, part-file,
    gzip'd and JSON Lines tables (:mod:`.lakehouse`); those are not byte-reproducible (their writers stamp ids and
    times), which is why the library's default keeps plain files and ``lakescout demo-lake`` asks for them.
    """
    if n_tables < MIN_TABLES:
        raise ValueError(f"n_tables must be at least {MIN_TABLES}, got {n_tables}")
    root = Path(out_dir)
    _clear_previous(root)
    root.mkdir(parents=True, exist_ok=True)
    lake = LakeBuilder(root=root, rng=np.random.default_rng(seed))

    broken = write_broken(lake)
    n_pairs, groups, n_union = _plan(n_tables, len(broken))

    families, union_cols = {}, []
    for i, size in enumerate(family_sizes(n_union, lake.rng)):
        seed_schema = SEEDS[i]
        paths, cols = write_family(lake, seed_schema, size, f"union:{seed_schema.name}")
        families[seed_schema.name] = paths
        union_cols += cols

    _make_room(lake, families, union_cols, NUMERIC_TABLES)

    join_rows, join_values = [], []
    for i in range(n_pairs):
        spec = JOIN_KINDS[i % len(JOIN_KINDS)]
        row, values = write_pair(lake, spec, f"join:{spec.kind}-{i // len(JOIN_KINDS) + 1}")
        join_rows.append(row)
        join_values += values

    queries = []
    for i, k in enumerate(groups):
        group = NARY_KINDS[k]
        q_path, q_cols, planted = write_group(lake, group, f"nary:{group.kind}-{i // len(NARY_KINDS) + 1}")
        queries.append((q_path, q_cols, set(planted)))

    attrs_of: dict[str, set[str]] = {}
    for c in union_cols:
        attrs_of.setdefault(c["table"], set()).add(c["attribute"])
    good = [t["path"] for t in lake.manifest if t["role"] != "broken"]
    union = union_pairs(families, attrs_of, good, lake.rng)
    numeric = write_numeric(lake.reseeded(np.random.default_rng([seed, 26])),
                            np.random.default_rng([seed, 27]))
    nary = _exhaustive_nary(root, lake.manifest, queries)

    n_bytes = sum((root / t["path"]).stat().st_size for t in lake.manifest)
    roles = [t["role"] for t in lake.manifest]
    summary = {"seed": seed, "n_tables": len(lake.manifest), "bytes": n_bytes,
               "tables_by_role": {r: roles.count(r) for r in ("union", "join", "nary", "numeric", "broken")},
               "tables_by_format": {f: sum(t["format"] == f for t in lake.manifest)
                                    for f in ("csv", "tsv", "semicolon", "parquet")},
               "union_families": len(families), "join_pairs": len(join_rows), "nary_queries": len(queries),
               "numeric_joins": sum(r["planted"] for r in numeric),
               "ground_truth": GROUND_TRUTH_DIR}
    gt = {"tables": sorted(lake.manifest, key=lambda t: t["path"]), "union": union, "union_columns": union_cols,
          "join": join_rows, "join_values": join_values, "nary": nary, "numeric": numeric, "broken": broken,
          "lakehouse": []}
    if lakehouse:
        gt["lakehouse"] = add_lakehouse_tables(root, gt)
        gt["tables"].sort(key=lambda t: t["path"])
        summary["lakehouse_tables"] = {r["layout"]: r["path"] for r in gt["lakehouse"]}
    write_ground_truth(root, gt, summary)
    return summary
