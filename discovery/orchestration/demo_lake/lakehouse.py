"""The sample lake's lakehouse tables: members of one union family laid out as Delta, Iceberg, Hive-partitioned,
Spark part-file, gzip'd CSV and JSON Lines tables, with their ground truth renamed to the new table paths.

Laying out existing members (rather than adding tables) keeps every answer of the ground truth known: a relaid table
holds the same cells as text, so it is unionable with exactly the tables its file was.  The Delta and Iceberg tables
also carry an older version with different rows and columns, which an index of the latest version never shows.
The Iceberg table's SQL catalog lives on SQLite under ``_catalog/`` (a hidden folder, never a table), so the lake
can also be indexed as ``iceberg://lakescout/lake`` with ``PYICEBERG_CATALOG__LAKESCOUT__URI`` pointing at it.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from .layouts import relayout
from .tablefile import read_table_file

#: Layouts given to the family's members, in order (the family's first member, the demo query, stays a file).
LAYOUT_ORDER = ("delta", "hive", "parts", "csv.gz", "jsonl", "iceberg")
CATALOG_DB = "_catalog/iceberg.db"
#: The demo's union query; its family is the one laid out (the largest family when the lake has no such table).
DEMO_UNION_QUERY = "finance/registers/firms.tsv"


def _family(gt: dict) -> list[str]:
    groups: dict[str, list[str]] = {}
    for t in gt["tables"]:
        if t["role"] == "union":
            groups.setdefault(t["group"], []).append(t["path"])
    demo = next((t["group"] for t in gt["tables"] if t["path"] == DEMO_UNION_QUERY), None)
    members = groups[demo] if demo else max(groups.values(), key=len)
    first = [DEMO_UNION_QUERY] if DEMO_UNION_QUERY in members else []
    return first + sorted(p for p in members if p not in first)


def _rename(gt: dict, old: str, new: str, fmt: str) -> None:
    for name, rows in gt.items():
        for row in rows:
            for key in ("path", "table", "query_table", "lake_table"):
                if row.get(key) == old:
                    row[key] = new
                    if name == "tables":
                        row["format"], row["encoding"] = fmt, "utf-8"


def add_lakehouse_tables(root: Path, gt: dict) -> list[dict]:
    """Relay members of the demo query's union family under ``root`` and rename them in ``gt`` (the ground-truth
    tables, edited in place); returns one row per relaid table: its new path, layout and former file."""
    members = _family(gt)[1:1 + len(LAYOUT_ORDER)]
    manifest = {t["path"]: t for t in gt["tables"]}
    (root / CATALOG_DB).parent.mkdir(parents=True, exist_ok=True)
    out = []
    for layout, rel in zip(LAYOUT_ORDER, members):
        entry = manifest[rel]
        header, cols = read_table_file(root / rel, entry["format"], entry["encoding"] or "utf-8")
        table = pa.table({h: pa.array(c, pa.string()) for h, c in zip(header, cols)})
        older = None
        if layout == "delta":   # an older version with other columns and fewer rows
            older = table.slice(0, max(1, table.num_rows // 3)).select(header[:max(1, len(header) - 1)])
            older = older.append_column("retired", pa.array(["old version"] * older.num_rows))
        elif layout == "iceberg":   # an Iceberg overwrite keeps the schema: the older snapshot holds fewer rows
            older = table.slice(0, max(1, table.num_rows // 3))
        new = relayout(str(root), rel, layout, table, older, catalog_db=str(root / CATALOG_DB))
        _rename(gt, rel, new, layout)
        out.append({"path": new, "layout": layout, "source": rel})
    return out
