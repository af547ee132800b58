"""``lakescout status``: the latest snapshot, table counts, failed tables and recent refreshes."""
from __future__ import annotations

import json
from datetime import datetime, UTC

from .common import add_common, add_warehouse
from .output import table, wrapped


def cmd_status(args) -> int:
    from ...orchestration.status import warehouse_status
    from ...data.store import Warehouse

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
        print(wrapped(f"rows       {rows or 'none'} (rows of each index table in this snapshot)", 11))
        print(f"fresh      {freshness_text(st['freshness'])}")
    else:
        print("snapshot   none published yet")
    print(f"\nfailed and stale tables ({len(st['errors'])}; a stale table's last indexed rows still answer):")
    print(table(st["errors"], ["table_id", "path", "format", "status", "reason"], flexible=("reason",)))
    if st["warnings"]:
        print(f"\ntables indexed with warnings ({len(st['warnings'])}):")
        print(table([{**w, "warnings": "; ".join(w["warnings"])} for w in st["warnings"]],
                    ["table_id", "path", "warnings"], flexible=("warnings",)))
    print("\nrecent refreshes:")
    for r in st["refreshes"]:
        published = f"snapshot {r['snapshot_id']}" if r["snapshot_id"] else "not published"
        print(f"  refresh {r['refresh_id']} started {r['started_at']}: {published}")
        stages = [{"stage": s["stage"], "status": s["status"], "seconds": f"{s['seconds']:.1f}",
                   **{k: s[f"tables_{k}"] for k in ("processed", "added", "changed", "deleted", "failed")},
                   "rows": s["rows_written"]} for s in r["stages"]]
        print(table(stages, ["stage", "status", "seconds", "processed", "added", "changed", "deleted", "failed",
                             "rows"], indent=4))
    return 0


def freshness_text(fresh: dict) -> str:
    """One line: whether the lake watcher saw the lake ahead of this snapshot, and when."""
    lake = fresh.get("lake")
    if lake is None:
        return "no lake watcher has checked this snapshot (lake_refresh's [refresh] watch_seconds)"
    checked = datetime.fromtimestamp(lake["checked_at"], UTC).isoformat(timespec="seconds")
    if not lake["tables"]:
        return f"the index holds the lake as the watcher saw it at {checked}"
    changed = datetime.fromtimestamp(lake["lake_changed_at"], UTC).isoformat(timespec="seconds") \
        if lake["lake_changed_at"] else "unknown"
    return (f"the lake is ahead: {lake['added']} added, {lake['changed']} changed, {lake['deleted']} deleted "
            f"tables since this snapshot (lake changed {changed}, checked {checked})")


def register(sub) -> None:
    s = sub.add_parser("status", help="latest snapshot, table counts, failed tables, recent refreshes")
    add_warehouse(s)
    add_common(s, cmd_status)
