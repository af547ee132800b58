"""``lakescout find``: lake tables ranked by how their names (and, with ``--values``, sampled values) answer a few
words."""
from __future__ import annotations

import json

from .common import add_common, add_snapshot, add_warehouse
from .output import table


def _match(m: dict) -> str:
    if "value" in m:
        return f"{m['term']} = value {m['value']!r} of {m['column']}"
    where = m["column"] if "column" in m else f"table {m['table_name']}"
    via = f" as {m['synonym']}" if m.get("synonym") else ""
    return f"{m['term']}{via} ~ {where} ({m['similarity']:.2f})"


def cmd_find(args) -> int:
    from ...api import Lakescout

    out = Lakescout(args.warehouse, args.snapshot).find(args.words, k=args.k, values=args.values)
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    print(f"snapshot {out['snapshot_id']}  find {', '.join(out['terms'])}" + ("  (names and values)" if args.values
                                                                           else ""))
    rows = [{"rank": r["rank"], "score": f"{r['score']:.2f}", "table_id": r["table_id"], "path": r["path"],
             "matches": "; ".join(_match(m) for m in r["matches"])} for r in out["results"]]
    print(table(rows, ["rank", "score", "table_id", "path", "matches"], flexible=("matches",)))
    return 0


def register(sub) -> None:
    f = sub.add_parser("find", help="lake tables whose table or column names (or sampled values) match a few words")
    f.add_argument("words", nargs="+", metavar="WORD",
                   help="a column or table name or part of one, in any case and with any separators; quote a phrase "
                        "(\"hire date\")")
    add_warehouse(f)
    f.add_argument("-k", type=int, default=10, help="number of results (default 10)")
    f.add_argument("--values", action="store_true",
                   help="also match words against the distinct values sampled from text columns")
    add_snapshot(f)
    add_common(f, cmd_find)
