"""Lakes that change: a small lake of shared vocabularies edited cycle by cycle from a seeded RNG (the soak's), and
rows appended to delimited tables (a changed lake for the next refresh), and small CSV tables written by hand.
Used by the tests and by the benchmarks (``benchmarks/refresh.py``, ``benchmarks/concurrency.py``,
``benchmarks/soak.py``)."""
from __future__ import annotations

import csv
import os
import random

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq


def write_csv(path: str, header: list[str], rows: list[list]) -> None:
    """A CSV table at ``path`` (folders made as needed): the header, then the rows."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def append_last_rows(lake: str, n: int, rng: random.Random) -> list[str]:
    """Append a copy of its last row to ``n`` delimited tables of ``lake`` picked with ``rng`` (at most all of them):
    each gets a new size, time and content hash.  Returns the lake paths changed; a table without a data row is
    picked but left as it is."""
    from discovery.data.lake import list_lake

    files = [f.path for f in list_lake(lake) if f.format in ("csv", "tsv") and f.size > 0]
    picked = rng.sample(files, min(n, len(files)))
    for rel in picked:
        path = os.path.join(lake, rel)
        with open(path, "rb") as fh:
            data = fh.read()
        lines = data.splitlines()
        if len(lines) > 1:
            with open(path, "ab") as fh:
                fh.write((b"" if data.endswith(b"\n") else b"\n") + lines[-1] + b"\n")
    return picked


CITIES = [("Paris", "France"), ("Lyon", "France"), ("Nice", "France"), ("Berlin", "Germany"),
          ("Munich", "Germany"), ("Hamburg", "Germany"), ("Madrid", "Spain"), ("Seville", "Spain"),
          ("Valencia", "Spain"), ("Rome", "Italy"), ("Milan", "Italy"), ("Naples", "Italy"), ("Lisbon", "Portugal"),
          ("Porto", "Portugal"), ("Vienna", "Austria"), ("Graz", "Austria"), ("Zurich", "Switzerland"),
          ("Geneva", "Switzerland"), ("Oslo", "Norway"), ("Bergen", "Norway"), ("Warsaw", "Poland"),
          ("Krakow", "Poland"), ("Prague", "Czechia"), ("Brno", "Czechia")]
NAMES = ["Ada", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gia", "Hugo", "Ines", "Jon", "Kai", "Lena", "Milo", "Nora",
         "Otto", "Pia", "Quin", "Rosa", "Sven", "Tara", "Ugo", "Vera", "Wim", "Xia", "Yves", "Zoe"]
PRODUCTS = ["apple", "bread", "cheese", "dates", "eggs", "flour", "grapes", "honey", "ink", "jam", "kale", "lemon",
            "milk", "nuts", "oats", "pears", "quince", "rice", "salt", "tea"]
KINDS = ("cities", "people", "sales")


def make_rows(kind: str, rng: random.Random, n: int) -> pa.Table:
    """``n`` rows of one of three table shapes over shared vocabularies, so union, join and n-ary have answers."""
    places = [rng.choice(CITIES) for _ in range(n)]
    if kind == "cities":
        return pa.table({"city": [c for c, _ in places], "country": [k for _, k in places],
                         "population": [rng.randrange(10_000, 3_000_000) for _ in range(n)]})
    if kind == "people":
        return pa.table({"name": [rng.choice(NAMES) for _ in range(n)], "city": [c for c, _ in places],
                         "country": [k for _, k in places], "age": [rng.randrange(18, 90) for _ in range(n)]})
    return pa.table({"product": [rng.choice(PRODUCTS) for _ in range(n)], "city": [c for c, _ in places],
                     "amount": [round(rng.uniform(1, 500), 2) for _ in range(n)]})


def _write_file(path: str, table: pa.Table) -> None:
    from discovery.orchestration.demo_lake.layouts import write_json_lines

    os.makedirs(os.path.dirname(path), exist_ok=True)
    if path.endswith(".csv"):
        pacsv.write_csv(table, path)
    elif path.endswith(".parquet"):
        pq.write_table(table, path)
    else:
        write_json_lines(path, table)


def make_lake(root: str, rng: random.Random) -> None:
    """About two dozen small tables: CSV, Parquet and JSON Lines files, three Delta tables (one with an older
    version), two Hive-partitioned folders."""
    from discovery.orchestration.demo_lake.layouts import write_delta, write_hive

    for i in range(18):
        kind = KINDS[i % 3]
        ext = ("csv", "csv", "parquet", "jsonl")[i % 4]
        _write_file(os.path.join(root, "files", f"{kind}_{i}.{ext}"), make_rows(kind, rng, rng.randrange(20, 60)))
    for i in range(3):
        kind = KINDS[i % 3]
        write_delta(os.path.join(root, "delta", f"{kind}_d{i}"), make_rows(kind, rng, 40),
                    make_rows(kind, rng, 30) if i == 0 else None)
    for i, kind in enumerate(("cities", "people")):
        write_hive(os.path.join(root, "hive", f"{kind}_h{i}"), make_rows(kind, rng, 50), ["country"])


class Editor:
    """Random edits of the lake, one cycle at a time, from a seeded RNG."""

    OPS = ("add", "change", "delete", "rename", "delta_version", "add_partition", "break")

    def __init__(self, root: str, rng: random.Random):
        self.root, self.rng, self.serial = root, rng, 100
        self.broken: dict[str, bytes] = {}  # lake path -> its bytes before garbling

    def files(self) -> list[str]:
        folder = os.path.join(self.root, "files")
        return sorted(f for f in os.listdir(folder) if f not in {os.path.basename(p) for p in self.broken})

    def _kind(self, name: str) -> str:
        return name.split("_")[0]

    def cycle(self) -> list[str]:
        """Mend what the last cycle broke, then one to three random edits; returns what was done."""
        done = []
        for rel, data in sorted(self.broken.items()):
            with open(os.path.join(self.root, rel), "wb") as fh:
                fh.write(data)
            done.append(f"mend {rel}")
        self.broken.clear()
        for _ in range(self.rng.randint(1, 3)):
            op = self.rng.choice(self.OPS)
            done.append(getattr(self, op)())
        return done

    def add(self) -> str:
        self.serial += 1
        kind = self.rng.choice(KINDS)
        ext = self.rng.choice(("csv", "parquet", "jsonl"))
        rel = f"files/{kind}_{self.serial}.{ext}"
        _write_file(os.path.join(self.root, rel), make_rows(kind, self.rng, self.rng.randrange(20, 60)))
        return f"add {rel}"

    def change(self) -> str:
        name = self.rng.choice(self.files())
        _write_file(os.path.join(self.root, "files", name),
                    make_rows(self._kind(name), self.rng, self.rng.randrange(20, 60)))
        return f"change files/{name}"

    def delete(self) -> str:
        names = self.files()
        if len(names) <= 10:
            return self.add()
        name = self.rng.choice(names)
        os.remove(os.path.join(self.root, "files", name))
        return f"delete files/{name}"

    def rename(self) -> str:
        name = self.rng.choice(self.files())
        self.serial += 1
        kind, _, rest = name.partition("_")
        new = f"{kind}_{self.serial}.{rest.split('.', 1)[1]}"
        os.rename(os.path.join(self.root, "files", name), os.path.join(self.root, "files", new))
        return f"rename files/{name} -> files/{new}"

    def delta_version(self) -> str:
        from deltalake import DeltaTable, write_deltalake

        name = self.rng.choice(sorted(os.listdir(os.path.join(self.root, "delta"))))
        path = os.path.join(self.root, "delta", name)
        mode = self.rng.choice(("append", "overwrite"))
        rows = make_rows(self._kind(name), self.rng, self.rng.randrange(5, 40))
        write_deltalake(path, rows.cast(pa.schema(DeltaTable(path).schema().to_arrow())), mode=mode)
        return f"delta {mode} delta/{name}"

    def add_partition(self) -> str:
        from discovery.orchestration.demo_lake.layouts import write_hive

        name = self.rng.choice(sorted(os.listdir(os.path.join(self.root, "hive"))))
        rows = make_rows(self._kind(name), self.rng, 20)
        self.serial += 1
        country = f"Land{self.serial}"
        rows = rows.set_column(rows.column_names.index("country"), "country", pa.array([country] * rows.num_rows))
        write_hive(os.path.join(self.root, "hive", name), rows, ["country"])
        return f"partition hive/{name}/country={country}"

    def break_(self) -> str:
        name = self.rng.choice(self.files())
        rel = f"files/{name}"
        path = os.path.join(self.root, rel)
        with open(path, "rb") as fh:
            self.broken[rel] = fh.read()
        with open(path, "wb") as fh:  # not a table any reader can make sense of
            fh.write(b"\x00\x01garbled\xff" * 7 if not name.endswith(".csv") else b"\x00\xff\xfe" * 40)
        return f"break {rel}"

    def __getattr__(self, name):
        if name == "break":
            return self.break_
        raise AttributeError(name)
