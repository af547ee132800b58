"""What the quantity rule (``discovery.transforms.quantities``) removes, on a warehouse ``benchmarks/union.py`` built.

The same snapshot answers every query twice with this code: once as users get it, once with the rule switched off
(the union search given no query quantities, for which every pair is compatible, and the numerical join given no
allowed sets), so the difference is the rule's alone, on the same vectors.  Counted:

* union (``exact``, top ``--k``): the union benchmark's queries (the sample lake's ``union.csv``, UGEN-V1's query
  files, fivethirtyeight's first file of each article folder); column pairs of the answers, tables that leave the top k,
  and those of them the ground truth calls
  unionable.  On the sample lake also every planted column pair (two columns of one ``union_columns.csv`` attribute
  in tables ``union.csv`` calls unionable) whose indexed quantities the rule calls incompatible.
* numerical join (top 10, default tau): every ``number`` group of ``numeric_sets`` as the query; lake columns the
  rule removes from the answer.  On the sample lake, whether every planted numerical join (``numeric.csv``) is still
  found with its planted count of matched values.
* coordinate pairs: every ``coordinates`` group of ``numeric_sets``, with its names, for judging true and false.

With ``--off scale`` the variant compared is the rule without the scale of money (step 4 of the rule: two money
columns of any scales compatible) instead of no rule at all, so the counts are what the scale alone removes; the
aligned pairs it removes are listed (``pairs_gone``).

Prints the counts and writes benchmarks/results/quantities_<name>.json (``quantities_<name>_scale.json``).
Usage: python benchmarks/quantities.py WAREHOUSE NAME [--truth SAMPLE_GROUND_TRUTH_DIR | --ugen GROUNDTRUTH_CSV |
--fivethirtyeight LAKE] [--parts union,numjoin] [--off rule|scale]
"""
from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

import numpy as np

import discovery
from discovery.config import load_config
from discovery.data.store import result_names
import discovery.indexes.numjoin.service as numjoin_service
import discovery.indexes.union.service as union_service
from discovery.query.resolve import QueryError, resolve_query
import discovery.transforms.quantities as quantities
from discovery.transforms.quantities import compatible
from harness import fivethirtyeight_truth, write_result

RULE_ON = (union_service.quantity_codes, numjoin_service.allowed_sets)
WITH_SCALE = quantities.COMPATIBLE.copy()
#: The rule's compatibility with every money scale ignored (what ``--off scale`` compares against).
SCALE_FREE = np.array([[quantities.compatible(a.partition("@")[0], b.partition("@")[0]) for b in quantities.QUANTITIES]
                       for a in quantities.QUANTITIES], dtype=bool)
OFF = {"variant": "rule"}


def rule(on: bool) -> None:
    """Switch the rule on (the product's functions) or off: no quantities on the query side, or (``--off scale``)
    the compatibility table without the money scales, changed in place where every search reads it."""
    if OFF["variant"] == "scale":
        quantities.COMPATIBLE[...] = WITH_SCALE if on else SCALE_FREE
        return
    union_service.quantity_codes, numjoin_service.allowed_sets = RULE_ON if on else (
        lambda quantities: None, lambda quantity, sets: None)


def truth_of(args) -> tuple[dict[str, set[str]], list[dict], dict]:
    """Unionable lake tables per query (paths, or UGEN file names), planted numerical joins, column attributes."""
    unionable: dict[str, set[str]] = {}
    numeric, attributes = [], {}
    if args.truth:
        gt = Path(args.truth)
        for r in csv.DictReader(open(gt / "union.csv")):
            if r["unionable"] in ("1", "True", "true"):
                unionable.setdefault(r["query_table"], set()).add(r["lake_table"])
        numeric = [r for r in csv.DictReader(open(gt / "numeric.csv")) if r["planted"] in ("1", "True", "true")]
        for r in csv.DictReader(open(gt / "union_columns.csv")):
            attributes.setdefault(r["table"], {})[r["column"]] = r["attribute"]
    if args.ugen:
        folder = os.path.join(os.path.dirname(args.ugen), "query")
        for r in csv.DictReader(open(args.ugen)):
            if r["unionable"].strip() == "1":
                unionable.setdefault(os.path.join(folder, r["query_table"]), set()).add(r["data_lake_table"])
    if args.fivethirtyeight:
        unionable.update(fivethirtyeight_truth(args.fivethirtyeight))
    return unionable, numeric, attributes


def union_counts(snap, unionable: dict[str, set[str]], k: int) -> dict:
    out = {"queries": 0, "pairs_off": 0, "pairs_on": 0, "tables_left": 0, "truth_tables_left": [], "pairs_gone": []}
    for query in sorted(unionable):
        try:
            rule(False)
            off = union_service.union_search(snap, query, k=k, method="exact")["results"]
            rule(True)
            on = union_service.union_search(snap, query, k=k, method="exact")["results"]
        except QueryError:
            continue
        out["queries"] += 1
        out["pairs_off"] += sum(len(r["alignment"]) for r in off)
        out["pairs_on"] += sum(len(r["alignment"]) for r in on)
        kept = {(r["path"], a[0], a[1]) for r in on for a in r["alignment"]}
        out["pairs_gone"] += [[query, r["path"], a[0], a[1]] for r in off for a in r["alignment"]
                              if (r["path"], a[0], a[1]) not in kept]
        left = {r["path"] for r in off} - {r["path"] for r in on}
        out["tables_left"] += len(left)
        truth = unionable[query]
        out["truth_tables_left"] += [[query, p] for p in sorted(left) if p in truth or os.path.basename(p) in truth]
    return out


def planted_pairs(snap, unionable: dict[str, set[str]], attributes: dict) -> dict:
    """Planted column pairs whose indexed quantities the rule calls incompatible."""
    paths = {r["table_id"]: r["path"] for r in snap.read("catalog", columns=["table_id", "path"]).to_pylist()}
    _, names = result_names(snap, list(paths))
    quantity = {(paths[r["table_id"]], names.get((r["table_id"], r["ordinal"]))): r["quantity"]
                for r in snap.read("column_vectors", columns=["table_id", "ordinal", "quantity"]).to_pylist()}
    out = {"pairs": 0, "both_with_quantity": 0, "forbidden": []}
    for query, tables in unionable.items():
        for table in tables:
            by_attribute = {a: c for c, a in attributes.get(table, {}).items()}
            for column, attribute in attributes.get(query, {}).items():
                if attribute not in by_attribute:
                    continue
                a, b = quantity.get((query, column), ""), quantity.get((table, by_attribute[attribute]), "")
                out["pairs"] += 1
                out["both_with_quantity"] += bool(a and b)
                if not compatible(a, b):
                    out["forbidden"].append([query, column, a, table, by_attribute[attribute], b])
    return out


def numjoin_counts(snap, sets: list[dict], planted: list[dict]) -> dict:
    numjoin = load_config().numjoin
    out = {"queries": 0, "results_off": 0, "results_on": 0, "removed": 0, "planted": len(planted),
           "planted_lost": []}
    for s in sets:
        if s["kind"] != "number":
            continue
        q = resolve_query(snap, s["table_id"])
        found = {}
        for on in (False, True):
            rule(on)
            res = numjoin_service.numeric_join_search(snap, q, list(s["ordinals"]), top_k=10, config=numjoin)["results"]
            found[on] = {(r["path"], r["column"]) for r in res}
        out["queries"] += 1
        out["results_off"] += len(found[False])
        out["results_on"] += len(found[True])
        out["removed"] += len(found[False] - found[True])
    for r in planted:
        q = resolve_query(snap, r["query_table"])
        ordinals = [q.names.index(c) for c in r["query_columns"].split("|")]
        res = numjoin_service.numeric_join_search(snap, q, ordinals, tau=float(r["tau"]), top_k=20,
                                                  config=numjoin)["results"]
        hit = [x["matched"] for x in res if x["path"] == r["lake_table"]]
        if hit != [int(r["matched_values"])]:
            out["planted_lost"].append([r["query_table"], r["lake_table"], hit])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("warehouse")
    ap.add_argument("name")
    ap.add_argument("--truth", help="the sample lake's _ground_truth folder")
    ap.add_argument("--ugen", help="UGEN-V1's groundtruth.csv (its query files are the union queries)")
    ap.add_argument("--fivethirtyeight", help="the fivethirtyeight lake folder (an article's files union)")
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--parts", default="union,numjoin", help="what to count (a lake of thousands of number "
                    "columns takes long for numjoin: each group is a query, twice)")
    ap.add_argument("--off", choices=("rule", "scale"), default="rule",
                    help="compare with no rule (rule) or with the rule without money scales (scale)")
    args = ap.parse_args()
    OFF["variant"] = args.off
    parts = set(args.parts.split(","))
    snap = discovery.open(args.warehouse).snapshot
    unionable, planted, attributes = truth_of(args)
    sets = snap.read("numeric_sets", columns=["table_id", "kind", "ordinals", "names"]).to_pylist()
    paths = {r["table_id"]: r["path"] for r in snap.read("catalog", columns=["table_id", "path"]).to_pylist()}
    out = {"lake": args.name, "k": args.k,
           "coordinate_pairs": [[paths[s["table_id"]], list(s["names"])] for s in sets if s["kind"] == "coordinates"]}
    if "union" in parts:
        out["union"] = union_counts(snap, unionable, args.k)
    if "numjoin" in parts:
        out["numjoin"] = numjoin_counts(snap, sets, planted)
    if attributes:
        out["planted_union_pairs"] = planted_pairs(snap, unionable, attributes)
    rule(True)
    for part in ("union", "numjoin", "planted_union_pairs"):
        if part in out:
            print(part, {key: (len(v) if isinstance(v, list) else v) for key, v in out[part].items()})
    print("coordinate pairs", len(out["coordinate_pairs"]), sorted({" / ".join(n) for _, n in out["coordinate_pairs"]}))
    out["off"] = args.off
    write_result(f"quantities_{args.name}" + ("_scale" if args.off == "scale" else ""), out)


if __name__ == "__main__":
    main()
