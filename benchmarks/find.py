"""Name search on the sample lake: is each planted table found by its own column names written differently?

The sample lake (``lakescout demo-lake``, seed 7) is built by the real refresh (default configuration).  Its
generator's ground truth names, for every table of its unionable families, which attribute each column holds, and its
vocabulary lists the names an attribute goes by across the lake (``company``, ``Company Name``, ``firm``, ...).  For
each such table, one query per mode, its column names written differently:

* ``case and separators``: every name in another case and with other separators (``Company Name`` ->
  ``company_name``, ``COMPANY-NAME``, ``companyName``, ...);
* ``one synonym``: the same, and one name replaced by another name of its attribute (``firm`` for ``Company Name``);
* ``half synonyms``: the same, and half the names replaced so.

A query is answered by ``discovery.open(W).find(names, k=5)``, as users call it; a case counts when the table is
among the five results.  A last row, ``all synonyms``, replaces every name, which describes the attribute set rather
than the table: it counts a table of the same family in the top 5.

Synonyms only (``--synonyms``, also run by default): a second lake holds one table per seed schema of the sample
lake's generator, every column under its attribute's first name (``salary``, ``company``, ``elevation_m``) and the
file named ``table_<n>.csv``, built by the real refresh.  Every other name the generator's vocabulary gives an
attribute (``compensation``, ``firm``, ``altitude``; written for the sample lake, before the lexicon) that shares no
word with any name of that lake is one query, alone; it counts when a table holding the attribute is among the five
results.  No query can be found by its spelling, so this measures names by meaning only.  Some of the vocabulary's
names are context rather than synonyms (``to`` for ``destination``, ``kitchen`` for ``cuisine``): they are counted,
not left out.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import harness
from harness import print_table, write_result

MODES = ("case and separators", "one synonym", "half synonyms")


def restyle(name: str, rng: np.random.Generator) -> str:
    """``name`` in another case and with other separators, its words kept."""
    from discovery.transforms.encoders.header import header_words

    words = header_words(name) or [name.lower()]
    styles = (lambda w: "_".join(w), lambda w: "-".join(x.upper() for x in w),
              lambda w: w[0] + "".join(x.title() for x in w[1:]), lambda w: " ".join(x.title() for x in w),
              lambda w: " ".join(w).upper(), lambda w: ".".join(w))
    options = [s(words) for s in styles]
    options = [o for o in options if o != name] or options
    return options[int(rng.integers(len(options)))]


def synonym(name: str, attribute: str, rng: np.random.Generator) -> str:
    """Another name of ``attribute`` in the sample lake's vocabulary (not ``name`` in any case or spelling)."""
    from discovery.orchestration.demo_lake.vocab import HEADER_SYNONYMS
    from discovery.transforms.encoders.header import header_words

    own = header_words(name)
    options = [s for s in HEADER_SYNONYMS[attribute] if header_words(s) and header_words(s) != own]
    return options[int(rng.integers(len(options)))] if options else name


def cases(truth: dict[str, list[tuple[str, str]]], seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for table, columns in sorted(truth.items()):
        for mode in MODES + ("all synonyms",):
            k = {"case and separators": 0, "one synonym": 1, "half synonyms": len(columns) // 2,
                 "all synonyms": len(columns)}[mode]
            replaced = set(rng.permutation(len(columns))[:k].tolist())
            names = [restyle(synonym(c, a, rng) if i in replaced else c, rng) for i, (c, a) in enumerate(columns)]
            out.append({"table": table, "mode": mode, "names": names})
    return out


def synonym_lake(root: str, seed: int = 7) -> tuple[str, dict[str, set[str]]]:
    """Write the synonyms-only lake under ``root``: one table per seed schema, columns under their attributes' first
    names; returns the lake and, per attribute, the paths of the tables holding it."""
    import pandas as pd

    from discovery.orchestration.demo_lake import vocab
    from discovery.orchestration.demo_lake.seeds import SEEDS

    rng = np.random.default_rng(seed)
    holding: dict[str, set[str]] = {}
    os.makedirs(root, exist_ok=True)
    for i, schema in enumerate(SEEDS, 1):
        data = schema.make(rng, 40)
        path = f"table_{i:02d}.csv"
        pd.DataFrame({vocab.HEADER_SYNONYMS[a][0]: v for a, v in data.items()}).to_csv(os.path.join(root, path),
                                                                                        index=False)
        for a in data:
            holding.setdefault(a, set()).add(path)
    return root, holding


def synonym_cases(holding: dict[str, set[str]]) -> list[dict]:
    """Every other name of an attribute that shares no word with a name of the synonyms-only lake."""
    from discovery.orchestration.demo_lake import vocab
    from discovery.transforms.encoders.header import header_words

    used = {w for a in holding for w in header_words(vocab.HEADER_SYNONYMS[a][0])} | {"table"}
    return [{"attribute": a, "query": q, "lake_name": vocab.HEADER_SYNONYMS[a][0]}
            for a in sorted(holding) for q in vocab.HEADER_SYNONYMS[a][1:]
            if header_words(q) and not set(header_words(q)) & used]


def run_synonyms(workdir: str, k: int) -> dict:
    import discovery

    lake, holding = synonym_lake(os.path.join(workdir, "synonym_lake"))
    warehouse = harness.build(lake, os.path.join(workdir, "synonym_warehouse")).warehouse
    ls = discovery.open(warehouse)
    per_case = []
    started = time.perf_counter()
    for case in synonym_cases(holding):
        results = ls.find([case["query"]], k=k)["results"]
        right = [r for r in results if r["path"] in holding[case["attribute"]]]
        sources = {m.get("synonym") for r in right for m in r["matches"]}
        per_case.append({**case, "found": bool(right), "results": len(results),
                         "wrong": len(results) - len(right), "via": sorted(s for s in sources if s),
                         "top": [(r["path"], r["matches"][0].get("synonym"),
                                  r["matches"][0].get("column") or r["matches"][0].get("table_name"))
                                 for r in results]})
    seconds = time.perf_counter() - started
    found = sum(c["found"] for c in per_case)
    answered = sum(c["results"] for c in per_case)
    wrong = sum(c["wrong"] for c in per_case)
    print(f"\nSynonyms only: {len(holding)} attributes in {len(set().union(*holding.values()))} tables; "
          f"{len(per_case)} queries in {seconds:.2f} s")
    print_table([{"queries": len(per_case), f"attribute's table in top {k}": found,
                  "share": found / len(per_case), "results": answered,
                  "results not holding it": wrong}],
                ["queries", f"attribute's table in top {k}", "share", "results", "results not holding it"])
    for c in per_case:
        if not c["found"]:
            print(f"  missed {c['query']!r} for {c['lake_name']!r}: {c['top'][:2]}")
    return {"queries": len(per_case), "found": found, "share": found / len(per_case), "results": answered,
            "wrong_results": wrong, "seconds": seconds, "cases": per_case}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default=None, help="where the lake and warehouse go (default: a temporary folder)")
    ap.add_argument("--warehouse", default=None, help="an index of the sample lake already built (skips the build)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--synonyms", action="store_true", help="only the synonyms-only lake (skip the sample lake)")
    args = ap.parse_args()

    import discovery
    from discovery.orchestration.demo_lake import load_ground_truth

    workdir = args.workdir or tempfile.mkdtemp(prefix="lakescout-bench-find-")
    synonyms = run_synonyms(workdir, args.k)
    if args.synonyms:
        write_result("find_synonyms", {"k": args.k, **synonyms})
        return 0
    lake = harness.sample_lake(os.path.join(workdir, "sample_lake"), lakehouse=True)
    warehouse = args.warehouse or harness.build(lake, os.path.join(workdir, "warehouse")).warehouse
    gt = load_ground_truth(lake)
    truth: dict[str, list[tuple[str, str]]] = {}
    for r in gt["union_columns"]:
        truth.setdefault(r["table"], []).append((r["column"], r["attribute"]))
    family = {r["path"]: r["group"] for r in gt["tables"]}
    ls = discovery.open(warehouse)
    indexed = {r["path"] for r in ls.tables(status="ok")}
    truth = {t: c for t, c in truth.items() if t in indexed}
    rows, per_case = [], []
    started = time.perf_counter()
    for case in cases(truth, args.seed):
        top = [r["path"] for r in ls.find(case["names"], k=args.k)["results"]]
        if case["mode"] == "all synonyms":
            hit = any(family.get(p) == family[case["table"]] for p in top)
        else:
            hit = case["table"] in top
        per_case.append({**case, "found": hit, "top": top})
    seconds = time.perf_counter() - started
    for mode in MODES + ("all synonyms",):
        mine = [c for c in per_case if c["mode"] == mode]
        found = sum(c["found"] for c in mine)
        rows.append({"mode": mode + (" (a table of its family)" if mode == "all synonyms" else ""),
                     "queries": len(mine), f"in top {args.k}": found, "share": found / len(mine)})
    main_cases = [c for c in per_case if c["mode"] in MODES]
    overall = sum(c["found"] for c in main_cases) / len(main_cases)
    rows.append({"mode": "all three modes", "queries": len(main_cases),
                 f"in top {args.k}": sum(c["found"] for c in main_cases), "share": overall})
    print(f"{len(truth)} planted tables of the sample lake; {len(per_case)} queries in {seconds:.1f} s "
          f"({1000 * seconds / len(per_case):.0f} ms each)\n")
    print_table(rows, ["mode", "queries", f"in top {args.k}", "share"])
    missed = [c for c in main_cases if not c["found"]]
    for c in missed[:10]:
        print(f"  missed {c['table']} ({c['mode']}): {', '.join(c['names'])} -> {c['top'][:3]}")
    write_result("find", {"k": args.k, "seed": args.seed, "tables": len(truth), "rows": rows, "overall": overall,
                          "seconds": seconds, "missed": missed, "synonyms": synonyms})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
