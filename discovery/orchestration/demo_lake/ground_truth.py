"""Writing and loading the sample lake's ground truth (``DIR/_ground_truth``)."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from .tablefile import FORMATS as FILE_FORMATS, read_table_file

GROUND_TRUTH_DIR = "_ground_truth"

#: ground-truth file -> columns (in order)
FILES = {
    "tables": ("path", "role", "group", "format", "encoding", "rows", "cols"),
    "union": ("query_table", "lake_table", "unionable"),
    "union_columns": ("table", "column", "attribute"),
    "join": ("query_table", "query_column", "lake_table", "lake_column", "kind", "matched_values", "query_distinct",
             "containment"),
    "join_values": ("query_table", "query_column", "query_value", "lake_table", "lake_column", "lake_value",
                    "variation"),
    "nary": ("query_table", "query_columns", "lake_table", "lake_columns", "joinable_tuples", "query_tuples",
             "planted"),
    "numeric": ("query_table", "query_columns", "lake_table", "lake_columns", "kind", "matched_values",
                "query_distinct", "tau", "units", "planted"),
    "broken": ("path", "status", "reason"),
    "lakehouse": ("path", "layout", "source"),   # tables laid out as Delta, Iceberg, ... (``lakehouse=True``)
}
_INT_FIELDS = {"rows", "cols", "unionable", "matched_values", "query_distinct", "joinable_tuples", "query_tuples",
               "planted"}
_FLOAT_FIELDS = {"containment", "tau"}
_LIST_FIELDS = {"query_columns", "lake_columns"}
LIST_SEPARATOR = "|"


def write_ground_truth(root: Path, tables: dict[str, list[dict]], summary: dict) -> None:
    """Write every ground-truth CSV (lists joined with ``|``) and ``summary.json``."""
    out = root / GROUND_TRUTH_DIR
    out.mkdir(parents=True, exist_ok=True)
    for name, fields in FILES.items():
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in tables[name]:
            writer.writerow({k: LIST_SEPARATOR.join(v) if k in _LIST_FIELDS else v for k, v in row.items()})
        (out / f"{name}.csv").write_bytes(buf.getvalue().encode("utf-8"))
    (out / "summary.json").write_bytes((json.dumps(summary, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def _typed(row: dict) -> dict:
    out: dict[str, object] = {}
    for k, v in row.items():
        if k in _INT_FIELDS:
            out[k] = int(v) if v != "" else None
        elif k in _FLOAT_FIELDS:
            out[k] = float(v)
        elif k in _LIST_FIELDS:
            out[k] = v.split(LIST_SEPARATOR) if v else []
        else:
            out[k] = v
    return out


def load_ground_truth(root: str | Path) -> dict:
    """The ground truth of a generated lake: one list of typed row dicts per file, plus ``summary``."""
    base = Path(root) / GROUND_TRUTH_DIR
    if not base.is_dir():
        raise FileNotFoundError(f"no sample-lake ground truth under {base}")
    out: dict = {}
    for name in FILES:
        if not (base / f"{name}.csv").exists() and name in ("lakehouse", "numeric"):
            out[name] = []   # a lake generated before lakehouse tables (numerical joins) existed
            continue
        with open(base / f"{name}.csv", newline="", encoding="utf-8") as fh:
            out[name] = [_typed(r) for r in csv.DictReader(fh)]
    out["summary"] = json.loads((base / "summary.json").read_text(encoding="utf-8"))
    return out


def read_demo_table(root: str | Path, path: str, ground_truth: dict | None = None
                    ) -> tuple[list[str], list[list[str | None]]]:
    """Header and columns (cells as text) of a readable table of the lake, using its manifest format/encoding."""
    gt = ground_truth or load_ground_truth(root)
    entry = next((t for t in gt["tables"] if t["path"] == path), None)
    if entry is None:
        raise KeyError(f"{path} is not a table of the sample lake")
    if entry["format"] not in FILE_FORMATS:
        # A lakehouse table (Delta, Iceberg, ...): its cells are its former file's, as text, read by the lake reader.
        from ...config import Limits
        from ...data.lake import list_lake, read_lake_table

        table = next(t for t in list_lake(str(root)) if t.path == path)
        parsed = read_lake_table(str(root), path, table.format, table.size, Limits())
        return parsed.names, [c.to_pylist() for c in parsed.columns]
    return read_table_file(Path(root) / path, entry["format"], entry["encoding"] or "utf-8")
