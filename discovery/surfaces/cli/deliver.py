"""``lakescout stack``, ``augment`` and ``pairs``: the union, the join and the value mapping an answer describes,
written to Parquet, CSV or Delta (a local path or an object-store URI), or previewed."""
from __future__ import annotations

import json

from .common import Choices, add_common, add_snapshot, add_warehouse
from .output import table



def _formats() -> tuple:
    from ..materialize.output import FORMATS

    return FORMATS


def _modes() -> tuple:
    from ..materialize.augment import MODES

    return MODES


def _matchers() -> tuple:
    from ...config import MATCHERS

    return MATCHERS


#: The writer's formats, the join's fan-out policies and matchers, read from the modules that own them when argparse
#: asks.
FORMATS, MODES, MATCHERS = Choices(_formats), Choices(_modes), Choices(_matchers)

#: Rows a command without ``--output`` shows.
PREVIEW_ROWS = 20


def _open(args):
    from ...api import Lakescout

    return Lakescout(args.warehouse, args.snapshot, args.config)


def _written(args, out) -> int:
    """Print what ``stack`` / ``augment`` / ``pairs`` produced: the description of the file written, or a preview."""
    from ..materialize import METADATA_KEY

    if args.output:
        if args.json:
            print(json.dumps(out, default=str))
            return 0
        o = out["output"]
        sources = ", ".join(s["path"] for s in out["sources"])
        print(f"wrote {out['rows']} rows x {len(out['columns'])} columns to {o['path']} ({o['format']}) from "
              f"snapshot {out['snapshot_id']}: {sources}")
        for w in out["warnings"]:
            print(f"warning: {w}")
        return 0
    described = json.loads(out.schema.metadata[METADATA_KEY])
    preview = out.slice(0, PREVIEW_ROWS).to_pylist()
    if args.json:
        print(json.dumps({**described, "preview": preview}, default=str))
        return 0
    print(table([{k: _cell(v) for k, v in r.items()} for r in preview], out.column_names))
    shown = min(out.num_rows, PREVIEW_ROWS)
    print(f"\n{out.num_rows} rows ({shown} shown; --output FILE writes them all)")
    for w in described["warnings"]:
        print(f"warning: {w}")
    return 0


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    text = "" if v is None else str(v)
    return text if len(text) <= 40 else text[:39] + "…"


def _write_args(args) -> dict:
    return {"output": args.output, "format": args.format, "overwrite": args.overwrite}


def cmd_stack(args) -> int:
    tables = [t.strip() for t in args.tables.split(",")] if args.tables else None
    out = _open(args).stack(args.query, tables=tables, k=args.k, min_score=args.min_score, method=args.method,
                            tau=args.tau, min_columns=args.min_columns, query_rows=not args.no_query_rows,
                            dedupe=args.dedupe, strict=args.strict, master=args.master, **_write_args(args))
    return _written(args, out)


def cmd_augment(args) -> int:
    out = _open(args).augment(args.query, args.column, key=args.key, rank=args.rank, table=args.table,
                              lake_column=args.lake_column, lake_key=args.lake_key, columns=args.columns,
                              fan_out=args.fan_out, max_matches=args.max_matches, tau=args.tau,
                              tau_share=args.tau_share, metric=args.metric, matcher=args.matcher,
                              precision=args.precision, strict=args.strict, master=args.master,
                              **_write_args(args))
    return _written(args, out)


def cmd_pairs(args) -> int:
    out = _open(args).pairs(args.query, args.column, rank=args.rank, table=args.table, lake_column=args.lake_column,
                            tau=args.tau, tau_share=args.tau_share, metric=args.metric, matcher=args.matcher,
                            precision=args.precision, **_write_args(args))
    if args.output or args.json:
        if not args.output:
            print(json.dumps(out.to_pylist(), default=str))
            return 0
        return _written(args, out)
    print(table([{k: _cell(v) for k, v in r.items()} for r in out.to_pylist()], out.column_names))
    print(f"\n{out.num_rows} matched value pairs")
    from ..materialize import METADATA_KEY

    for w in json.loads(out.schema.metadata[METADATA_KEY])["warnings"]:
        print(f"warning: {w}")
    return 0


def _common(p, what: str) -> None:
    add_warehouse(p)
    p.add_argument("--query", required=True, metavar="TABLE",
                   help="query table: a file, a catalogued lake path or a lake table id")
    add_snapshot(p)
    p.add_argument("--output", default=None, metavar="PATH",
                   help=f"where to write {what}: a path or URI (s3://...); without it, a preview is printed")
    p.add_argument("--format", choices=FORMATS, default=None, metavar="FORMAT",
                   help="output format: parquet, csv or delta (default: from the ending, .parquet or .csv; else a "
                        "Delta table)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output (refused otherwise)")


def _master(p) -> None:
    p.add_argument("--master", default=None,
                   help="Spark master (e.g. spark://host:7077, local[4]) that writes outputs whose lake tables hold at "
                        "least [materialize] spark_min_bytes (default: every write runs in this process)")


def _join_choice(p) -> None:
    p.add_argument("--rank", type=int, default=None,
                   help="which result of the search to write (default the first; for a category column the first "
                        "whose lake column holds one row per value)")
    p.add_argument("--table", default=None, help="instead: this lake table (id or path), through --lake-column or "
                                                 "its most joinable column")
    p.add_argument("--lake-column", default=None, help="with --table: the lake column to join (LAT,LNG for a pair)")
    p.add_argument("--tau", type=float, default=None, help="match distance, as in lakescout join")
    p.add_argument("--tau-share", type=float, default=None, help="numerical join: tau as a share of the query "
                                                                 "column's spread")
    p.add_argument("--metric", choices=("euclidean", "angular"), default=None,
                   help="numerical join on a list column: euclidean (default) or angular")
    p.add_argument("--matcher", choices=MATCHERS, default=None,
                   help="text join: pair values with the two-table matcher (auto) or the search's own pairs "
                        "(search); default [materialize] matcher, auto")
    p.add_argument("--precision", type=float, default=None,
                   help="the auto matcher's precision target, in (0, 1) (default [materialize] precision, 0.95)")


def register(sub) -> None:
    s = sub.add_parser("stack", help="write the union of a query table with the lake tables a union search finds")
    _common(s, "the union")
    pick = s.add_mutually_exclusive_group()
    pick.add_argument("--tables", default=None, help="these lake tables (ids or paths, comma-separated) instead of "
                                                     "the search's top k")
    pick.add_argument("--min-score", type=float, default=None, help="the search's results scoring at least this")
    s.add_argument("-k", type=int, default=10, help="the search's top k (default 10)")
    s.add_argument("--method", default="pgtus++", help="union search method (default pgtus++)")
    s.add_argument("--tau", type=float, default=None, help="column similarity threshold of Definition 5")
    s.add_argument("--min-columns", type=float, default=None,
                   help="of the search's tables, stack those aligning this share of the query's columns (default "
                        "[materialize] stack_min_columns, 0.5)")
    s.add_argument("--no-query-rows", action="store_true", help="leave the query's own rows out")
    s.add_argument("--dedupe", action="store_true", help="write identical rows once (the first)")
    s.add_argument("--strict", action="store_true", help="refuse a plain lake file changed since the snapshot")
    _master(s)
    add_common(s, cmd_stack)

    a = sub.add_parser("augment", help="write the query's rows with columns of a joinable lake table added")
    _common(a, "the joined rows")
    on = a.add_mutually_exclusive_group(required=True)
    on.add_argument("--column", default=None, help="the query column to join on (LAT,LNG for coordinates)")
    on.add_argument("--key", default=None, help="instead: an n-ary key, COL1,COL2[,...]")
    _join_choice(a)
    a.add_argument("--lake-key", default=None, help="with --table and --key: the lake columns of the key, in order")
    a.add_argument("--columns", default=None, help="lake columns to add, comma-separated (default all)")
    a.add_argument("--fan-out", choices=MODES, default="nearest", metavar="MODE",
                   help="one row per query row with its first match (nearest, default), every match (all), or "
                        "count / first / min / max / mean (aggregate)")
    a.add_argument("--max-matches", type=int, default=None,
                   help="--fan-out all: refuse a query value matching more lake rows than this (default "
                        "[materialize] max_matches, 100)")
    a.add_argument("--strict", action="store_true", help="refuse a plain lake file changed since the snapshot")
    _master(a)
    add_common(a, cmd_augment)

    p = sub.add_parser("pairs", help="every matched value pair of a join result (query value, lake value, distance, "
                                     "rows)")
    _common(p, "the pairs")
    p.add_argument("--column", required=True, help="the query column of the join (LAT,LNG for coordinates)")
    _join_choice(p)
    add_common(p, cmd_pairs)
