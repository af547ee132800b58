"""A seeded random lake for the materialisation tests, and independent oracles of what a written join or union
holds (pandas merges over brute-force value mappings); no tests of their own.

The lake mixes formats (CSV, Parquet, a Delta table of two commits) and join kinds: entity names written in
variants (semantic join), integer amounts (numerical join), latitude / longitude pairs (coordinates) and
(country, city) keys (n-ary join), with repeated join values so that every fan-out policy has something to decide.
Cells are written in one spelling per type (integers as digits, numbers with two decimals, ISO dates), so an
oracle compares a written value with the cell it came from by parsing the cell.
"""
from __future__ import annotations

import csv
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from discovery.ground.normalize import normalize_values
from discovery.orchestration.demo_lake import entities as E
from discovery.orchestration.demo_lake.variants import vary

CITIES = [("France", "Paris"), ("France", "Lyon"), ("Spain", "Madrid"), ("Spain", "Seville"), ("Italy", "Rome"),
          ("Italy", "Milan"), ("Peru", "Lima"), ("Chile", "Santiago"), ("Japan", "Osaka"), ("Japan", "Kyoto")]


def _write_csv(path: str, frame: pd.DataFrame) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(frame.columns)
        writer.writerows(frame.astype(object).where(frame.notna(), "").itertuples(index=False))


def _names(rng, pool: list[str], n: int) -> list[str]:
    out = []
    for v in rng.choice(pool, n):
        varied = vary(str(v), "company", rng) if rng.random() < 0.4 else None
        out.append(varied[0] if varied else str(v))
    return out


def _table(rng, pool: list[str], n: int) -> pd.DataFrame:
    places = [CITIES[i] for i in rng.integers(len(CITIES), size=n)]
    return pd.DataFrame({
        "supplier": _names(rng, pool, n),
        "country": [p[0] for p in places], "city": [p[1] for p in places],
        "amount": [str(int(x)) for x in rng.integers(1, 40, n)],
        "price": [f"{x:.2f}" for x in rng.integers(100, 9999, n) / 4],
        "day": [f"2024-{m:02d}-{d:02d}" for m, d in zip(rng.integers(1, 13, n), rng.integers(1, 29, n))],
        "lat": [f"{48.80 + x / 1000:.4f}" for x in rng.integers(0, 60, n)],
        "lng": [f"{2.30 + x / 1000:.4f}" for x in rng.integers(0, 60, n)],
    })


def write_lake(root: str, seed: int = 11) -> dict:
    """The lake under ``root/lake`` and a query file ``root/query.csv``; returns their paths and the Delta table's
    path inside the lake."""
    rng = np.random.default_rng(seed)
    pool = E.unique(rng, 45, E.company)
    lake = os.path.join(root, "lake")
    for i in range(4):
        _write_csv(os.path.join(lake, f"csv/orders_{i}.csv"), _table(rng, pool, int(rng.integers(30, 70))))
    os.makedirs(os.path.join(lake, "pq"))
    for i in range(2):
        pq.write_table(pa.Table.from_pandas(_table(rng, pool, 50), preserve_index=False),
                       os.path.join(lake, f"pq/shipments_{i}.parquet"))
    from deltalake import write_deltalake

    delta = os.path.join(lake, "delta/ledger")
    write_deltalake(delta, pa.Table.from_pandas(_table(rng, pool, 40), preserve_index=False))
    write_deltalake(delta, pa.Table.from_pandas(_table(rng, pool, 25), preserve_index=False), mode="append")
    query = _table(rng, pool, 40).rename(columns={"supplier": "vendor"})
    query.loc[3, "vendor"] = query.loc[1, "vendor"]           # a repeated query value
    query.loc[5, ["vendor", "amount", "lat"]] = None          # a row with no join value
    _write_csv(os.path.join(root, "query.csv"), query)
    return {"lake": lake, "query": os.path.join(root, "query.csv"), "delta": "delta/ledger"}


def lake_frame(lake: str, path: str, version: str | None) -> pd.DataFrame:
    """A lake table's cells as text, in the table's row order (a Delta version's files in path order), read with
    pandas / pyarrow alone; empty cells None."""
    full = os.path.join(lake, path)
    if path.endswith(".csv"):
        frame = pd.read_csv(full, dtype=str, keep_default_na=False)
    elif path.endswith(".parquet"):
        frame = pq.read_table(full).to_pandas().astype(str)
    else:
        from deltalake import DeltaTable

        dt = DeltaTable(full, version=int(version))
        files = sorted(dt.file_uris())
        frame = pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True).astype(str)
    frame = frame.apply(lambda c: c.str.strip()).astype(object)
    return frame.where(frame.notna() & (frame != ""), None).reset_index(drop=True)


def merge_oracle(query: pd.DataFrame, query_key: pd.Series, mapping: dict, lake: pd.DataFrame,
                 lake_key: pd.Series, mode: str) -> pd.DataFrame:
    """The join as pandas computes it: each query row's key through ``mapping`` ({query key: (lake key, distance)})
    to the lake rows of that key; ``mode`` nearest (first lake row), all (every lake row), or aggregate (count)."""
    q = query.assign(__row=np.arange(len(query)), __qk=query_key.values)
    q["__lk"] = q["__qk"].map(lambda k: mapping.get(k, (None, None))[0])
    q["__d"] = q["__qk"].map(lambda k: mapping.get(k, (None, None))[1])
    lk = lake.add_prefix("lake:").assign(__lk=lake_key.values, __lrow=np.arange(len(lake)))
    lk = lk[lk["__lk"].notna()]
    merged = q.merge(lk, on="__lk", how="left").sort_values(["__row", "__lrow"], kind="stable")
    if mode == "nearest":
        return merged.drop_duplicates("__row", keep="first").reset_index(drop=True)
    if mode == "aggregate":
        counts = merged.groupby("__row")["__lrow"].count()
        first = merged.drop_duplicates("__row", keep="first").set_index("__row")
        return first.assign(__count=counts).reset_index()
    return merged.reset_index(drop=True)


def text_keys(values) -> list:
    return normalize_values([None if v is None or (isinstance(v, float) and np.isnan(v)) else v for v in values])
