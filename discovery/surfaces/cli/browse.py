"""``lakescout tables`` and ``lakescout describe``: what the index holds, read from a snapshot (never the lake)."""
from __future__ import annotations

import json

from .common import Choices, add_common, add_snapshot, add_warehouse
from .output import table


def _size(n: float | None) -> str:
    if n is None:
        return ""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def _version(row: dict) -> str:
    """A Delta version or Iceberg snapshot id as the format names it; a file's digest, shortened."""
    if row.get("version"):
        return row["version"]
    digest = (row.get("content_hash") or "").split(":")[-1]
    return digest[:12]


def cmd_tables(args) -> int:
    from ...api import Lakescout

    rows = Lakescout(args.warehouse, args.snapshot).tables(path=args.path, format=args.format, status=args.status)
    if args.json:
        print(json.dumps(rows, default=str))
        return 0
    shown = [{**r, "bytes": _size(r["bytes"]), "version": _version(r), "reason": r["error"] or ""} for r in rows]
    print(table(shown, ["table_id", "path", "format", "status", "rows", "cols", "bytes", "version", "reason"],
                flexible=("reason", "version")))
    print(f"\n{len(rows)} table(s)")
    return 0


def cmd_describe(args) -> int:
    from ...api import Lakescout

    out = Lakescout(args.warehouse, args.snapshot).describe(args.table)
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    t = out["table"]
    print(f"snapshot {out['snapshot_id']}  table {t['table_id']}  {t['path']}  ({t['format']}, {t['status']})")
    print(f"rows {t['rows']}  columns {t['cols']}  {_size(t['bytes'])}  version {_version(t)}  indexed "
          f"{t['indexed_at']} (refresh {t['refresh_id']})")
    if t["error"]:
        print(f"reason     {t['error']}")
    for w in out["warnings"]:
        print(f"warning    {w}")
    rows = [{"#": c["ordinal"], "name": c["name"], "type": c["type"], "distinct": c["distinct_count"],
             "nulls": f"{c['null_fraction']:.0%}", "key": "yes" if c["key_candidate"] else "",
             "indexes": ", ".join(c["indexes"]) or "none",
             "not indexed": "; ".join(f"{i}: {why}" for i, why in c["not_indexed"].items())}
            for c in out["columns"]]
    print()
    print(table(rows, ["#", "name", "type", "distinct", "nulls", "key", "indexes", "not indexed"],
                flexible=("not indexed",)))
    return 0


def statuses() -> tuple:
    from ...indexes.browse import STATUSES

    return STATUSES


def register(sub) -> None:
    t = sub.add_parser("tables", help="the lake tables the index holds: format, status, rows, columns, size, version")
    add_warehouse(t)
    t.add_argument("--path", action="append", default=[], metavar="PATTERN",
                   help="only tables whose path matches this gitignore-style pattern, as --include takes "
                        "(repeatable)")
    t.add_argument("--format", action="append", default=[], metavar="FORMAT",
                   help="only tables of this format, as status shows it or its first part (hive for hive/parquet, "
                        "csv for csv.gz; repeatable)")
    t.add_argument("--status", action="append", default=[], choices=Choices(statuses), metavar="STATUS",
                   help="only tables of this status: %(choices)s (repeatable; default: all but deleted)")
    add_snapshot(t)
    add_common(t, cmd_tables)

    d = sub.add_parser("describe", help="one lake table's columns: inferred types, distinct counts, the indexes "
                                        "each is in and why not, warnings")
    d.add_argument("table", help="lake table id or catalogued lake path")
    add_warehouse(d)
    add_snapshot(d)
    add_common(d, cmd_describe)
