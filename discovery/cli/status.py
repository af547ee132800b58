"""``lakescout status``: the latest snapshot, table counts, failed tables and recent refreshes."""
from __future__ import annotations

import json
import textwrap

from ..store import Warehouse
from .output import table


def cmd_status(args) -> int:
    from ..status import warehouse_status

    st = warehouse_status(Warehouse(args.warehouse))
    if args.json:
        print(json.dumps(st, default=str, indent=2))
        return 0
    snap = st["snapshot"]
    print(f"warehouse  {st['warehouse']}")
    if snap:
        print(f"snapshot   {snap['snapshot_id']} published {snap['created_at']} (refresh {snap['refresh_id']}), "
              f"{st['snapshots']} snapshot(s) in all")
        t = st["tables"]
        print(f"tables     {t.get('ok', 0)} ok, {t.get('stale', 0)} stale, {t.get('error', 0)} error, "
              f"{t.get('deleted', 0)} deleted")
        print(f"formats    {', '.join(f'{k} {v}' for k, v in st.get('formats', {}).items()) or 'none'}")
        rows = ", ".join(f"{k} {v}" for k, v in st.get("index_rows", {}).items() if v)
        print(f"index      {rows or 'empty'}")
    else:
        print("snapshot   none published yet")
    print(f"\nfailed and stale tables ({len(st['errors'])}; a stale table's last indexed rows still answer):")
    print(table(st["errors"], ["table_id", "path", "format", "status", "reason"]))
    if st["warnings"]:
        print(f"\ntables indexed with warnings ({len(st['warnings'])}):")
        print(table([{**w, "warnings": "; ".join(w["warnings"])} for w in st["warnings"]],
                    ["table_id", "path", "warnings"]))
    print("\nrecent refreshes:")
    for r in st["refreshes"]:
        published = f"snapshot {r['snapshot_id']}" if r["snapshot_id"] else "not published"
        print(f"  refresh {r['refresh_id']} started {r['started_at']}: {published}")
        print(textwrap.indent(table([{**s, "seconds": f"{s['seconds']:.1f}"} for s in r["stages"]],
                                    ["stage", "status", "seconds", "tables_processed", "tables_added",
                                     "tables_changed", "tables_deleted", "tables_failed", "rows_written"]), "  "))
    return 0


def register(sub) -> None:
    s = sub.add_parser("status", help="latest snapshot, table counts, failed tables, recent refreshes")
    s.add_argument("--warehouse", required=True)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)
