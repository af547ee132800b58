"""``lakescout union``, ``join`` and ``nary``: the searches, answered from a snapshot in this process."""
from __future__ import annotations

import json

from .common import Choices, add_common, add_snapshot, add_warehouse, methods
from .output import table


# -- union ---------------------------------------------------------------------------------------------------------
def _search(kind: str, args, names: tuple[str, ...]) -> dict:
    """The search of ``kind`` with the options of ``names`` the user gave: the kind fills in the defaults."""
    from ...api import Lakescout

    given = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    return Lakescout(args.warehouse, args.snapshot, args.config).search(kind, args.query, **given)


def cmd_union(args) -> int:
    out = _search("union", args, ("k", "method", "tau", "phi_c", "phi_ref", "phi_r", "score", "lexical"))
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    st = out["stats"]
    lexical = f" + lexical {st['lexical']:g}" if st.get("lexical") else ""
    print(f"snapshot {out['snapshot_id']}  query {out['query']}  method {out['method']}  "
          f"score {st['score_kind']}{lexical}")
    rows = [{"rank": r["rank"], "score": f"{r['score']:.3f}", "table_id": r["table_id"], "path": r["path"],
             "alignment": ", ".join(f"{q}~{c} ({s:.2f})" for q, c, s in r["alignment"])} for r in out["results"]]
    print(table(rows, ["rank", "score", "table_id", "path", "alignment"], flexible=("alignment",)))
    print(f"\ncandidates after refinement {st['candidates_after_refinement']}, after pruning "
          f"{st['candidates_after_pruning']}, exact matchings {st['exact_matchings']}, {st['seconds'] * 1000:.0f} ms")
    return 0


# -- join ----------------------------------------------------------------------------------------------------------
def cmd_join(args) -> int:
    out = _search("join", args, ("column", "tau", "T", "top_k", "method", "tau_share", "similarity", "metric"))
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    st = out["stats"]
    if out.get("join") == "numeric":
        return _print_numeric_join(out)
    print(f"snapshot {out['snapshot_id']}  query {out['query']}  column {out['column']}  method {out['method']}  "
          f"tau {out['tau']} (distance {st['tau_distance']:.3f})  "
          + (f"top-{out['top_k']}" if out["T"] is None else f"T {out['T']}"))
    rows = [{"rank": r["rank"], "joinability": f"{r['joinability']:.2f}", "table_id": r["table_id"],
             "path": r["path"], "column": r["column"], "context": _context(r),
             "matches": "; ".join(f"{a} ~ {b} ({d:.3f})" for a, b, d in r["matches"][:3])} for r in out["results"]]
    print(table(rows, ["rank", "joinability", "table_id", "path", "column", "context", "matches"],
                flexible=("context", "matches")))
    print(f"\n{st['query_values']} distinct query values; {st.get('distance_computations', 0)} distance computations"
          f", {st['seconds'] * 1000:.0f} ms")
    return 0


def _context(r: dict) -> str:
    """A join result's context score and evidence (``2.75 Year ~ year; rows 0.75 (Year ~ year)``): what lifted it
    above results of (nearly) the same joinability; nothing where context decided no order."""
    if r.get("context_score") is None:
        return ""
    return f"{r['context_score']:.2f} {r.get('context') or '(none)'}"


def _value(v) -> str:
    return f"{v:g}" if isinstance(v, float) else "(" + ", ".join(f"{x:g}" for x in v[:4]) + (
        ", ...)" if len(v) > 4 else ")")


def _print_numeric_join(out: dict) -> int:
    st = out["stats"]
    print(f"snapshot {out['snapshot_id']}  query {out['query']}  column {out['column']} ({out['kind']}, "
          f"{out['metric']})  method {out['method']}  tau {out['tau']:g} {st['units']}  "
          + (f"top-{out['top_k']}" if out["T"] is None else f"T {out['T']}"))
    rows = [{"rank": r["rank"], "joinability": f"{r['joinability']:.2f}", "table_id": r["table_id"],
             "path": r["path"], "column": r["column"],
             "matches": "; ".join(f"{_value(a)} ~ {_value(b)} ({d:.3g})" for a, b, d in r["matches"][:3])}
            for r in out["results"]]
    print(table(rows, ["rank", "joinability", "table_id", "path", "column", "matches"], flexible=("matches",)))
    print(f"\n{st['query_values']} distinct query values; {st.get('distance_computations', 0)} distance computations"
          f", {st['seconds'] * 1000:.0f} ms")
    return 0


# -- nary ------------------------------------------------------------------------------------------------------------
def cmd_nary(args) -> int:
    out = _search("nary", args, ("key", "k", "method", "bits", "initial_column"))
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    st = out["stats"]
    print(f"snapshot {out['snapshot_id']}  query {out['query']}  key ({', '.join(out['key'])})  method {out['method']}"
          f"  {st['bits']}-bit XASH (alpha {st['alpha']})")
    rows = [{"rank": r["rank"], "J": r["joinability"], "table_id": r["table_id"], "path": r["path"],
             "mapping": ", ".join(f"{q} -> {c}" for q, c in r["mapping"].items()),
             "not_found": r["tuples_not_found"],
             "matched": "; ".join("/".join(t) for t in r["matched_tuples"][:3])} for r in out["results"]]
    print(table(rows, ["rank", "J", "table_id", "path", "mapping", "not_found", "matched"],
                flexible=("mapping", "matched")))
    print(f"\n{st['matchable_tuples']} of {st['query_tuples']} distinct key tuples occur in the lake; initial column "
          f"{st['initial_column']!r}; candidate rows {st['candidate_rows_fetched']}, passing the filter "
          f"{st['rows_passing_filter']}, verified {st['rows_verified']} ({st['false_positive_rows']} false positives)")
    return 0


def _scores() -> tuple:
    from ...indexes.union.widths import SCORES

    return SCORES


QUERY_HELP = "query table: a file, a catalogued lake path or a lake table id"


def register(sub) -> None:
    u = sub.add_parser("union", help="tables unionable with a query table (PGTUS, TACTUS, Starmie, exact)")
    add_warehouse(u)
    u.add_argument("--query", required=True, help=QUERY_HELP)
    u.add_argument("-k", type=int, default=None, help="number of results (default 10)")
    u.add_argument("--method", default=None, choices=methods("union"), metavar="METHOD",
                   help="search method: %(choices)s (the first is the default; exact, pgtus and pgtus++ return the "
                        "same exact top-k)")
    u.add_argument("--tau", type=float, default=None,
                   help="column similarity threshold in (0, 1] of Definition 5 of PGTUS (default 0.4)")
    u.add_argument("--phi-c", type=int, default=None, help="centroids probed per query column (pgtus++-approx)")
    u.add_argument("--phi-ref", type=int, default=None, help="candidate tables kept by refinement (pgtus++-approx)")
    u.add_argument("--phi-r", type=int, default=None, help="candidates kept by bound pruning")
    u.add_argument("--score", default=None, choices=Choices(_scores), metavar="SCORE",
                   help="table score: sum (Definition 5, the default), max_width (sum / the wider table's columns), "
                        "sqrt_width (sum / sqrt(query columns x table columns)); exact under exact, pgtus, pgtus++")
    u.add_argument("--lexical", type=float, default=None,
                   help="weight in [0, 1] of the tables' TF-IDF word cosine added to the score (default 0.2; 0: the "
                        "score alone); exact under exact, pgtus, pgtus++")
    add_snapshot(u)
    add_common(u, cmd_union)

    j = sub.add_parser("join", help="columns joinable with a query column (PEXESO): semantically for text, by "
                                    "distance for numbers, coordinates and vectors; with evidence")
    add_warehouse(j)
    j.add_argument("--query", required=True, help=QUERY_HELP)
    j.add_argument("--column", required=True,
                   help="the query column to join on; LAT,LNG for a coordinate pair (distances in metres)")
    j.add_argument("--tau", type=float, default=None,
                   help="distance threshold: for text a fraction in (0, 1) of the maximum (default [join] tau, "
                        "0.04); for numbers, coordinates and vectors a distance >= 0 in the data's units (metres "
                        "for coordinates; default [numjoin] tau_metres 50, else tau_share of the column's spread)")
    j.add_argument("--tau-share", type=float, default=None,
                   help="numerical join: tau as a fraction of the query column's spread instead")
    j.add_argument("--similarity", choices=("hit", "all"), default=None,
                   help="numerical join: count query values with a match (hit, default) or matched pairs (all)")
    j.add_argument("--metric", choices=("euclidean", "angular"), default=None,
                   help="numerical join on a list column: euclidean (default) or angular (radians)")
    mode = j.add_mutually_exclusive_group()
    mode.add_argument("--top-k", type=int, default=None,
                      help="the k columns of highest joinability, any match counting (default [join] top_k, 10)")
    mode.add_argument("--T", type=float, default=None,
                      help="instead: every column in which this share of the query values find a match")
    j.add_argument("--method", default=None, choices=methods("join"), metavar="METHOD",
                   help="%(choices)s (the first is the default): pexeso-h for text, pnodom for numbers; every "
                        "method gives identical answers")
    add_snapshot(j)
    add_common(j, cmd_join)

    n = sub.add_parser("nary", help="tables joinable on a multi-column key (MATE), with J and the column mapping")
    add_warehouse(n)
    n.add_argument("--query", required=True, help=QUERY_HELP)
    n.add_argument("--key", required=True, help="key columns of the query, comma-separated: COL1,COL2[,...] (a "
                                                "column with a comma in its name needs a key given as a list: Python "
                                                "API or batch spec)")
    n.add_argument("-k", type=int, default=None, help="number of results (default 10)")
    n.add_argument("--method", default=None, choices=methods("nary"), metavar="METHOD",
                   help="%(choices)s (the first, XASH super keys, is the default; scr: none, bloom: Bloom-filter "
                        "super keys); all return the same exact top-k")
    n.add_argument("--bits", type=int, default=None, choices=Choices(xash_sizes), metavar="BITS",
                   help="super-key size: %(choices)s (default: the index's; another is derived in memory)")
    n.add_argument("--initial-column", default=None, help="key column whose posting lists are fetched "
                                                          "(default: the one with the fewest distinct values)")
    add_snapshot(n)
    add_common(n, cmd_nary)


def xash_sizes() -> tuple:
    from ...ground.xash import SUPPORTED_BITS

    return tuple(SUPPORTED_BITS)
