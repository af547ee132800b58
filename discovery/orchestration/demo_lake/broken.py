"""Odd and broken files placed among the good ones, each failing (or not) for a reason met in real lakes.

``status`` is what a scanner is expected to record: ``ok`` for files that are unusual but readable (other
encodings, a byte-order mark, duplicate headers), ``error`` with a readable reason for the rest.  A header-only file
counts as an error: it parses, but there is nothing to index, and the owner should hear about it.
"""
from __future__ import annotations

import gzip
import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import entities as E
from . import vocab as V
from .builder import LakeBuilder
from .tablefile import encode_text_table

HUGE_CELL_BYTES = 1_200_000


def _people_rows(rng: np.random.Generator, n: int) -> list[list[str]]:
    return [[E.pick(rng, V.FIRST_NAMES), E.pick(rng, V.LAST_NAMES), E.pick(rng, V.DEPARTMENTS),
             str(int(rng.integers(32000, 150000)))] for _ in range(n)]


def _add(lake: LakeBuilder, rel: str, data: bytes, status: str, reason: str, fmt: str, encoding: str = "",
         rows: int | str = "", cols: int | str = "") -> dict:
    lake.fresh_path(rel.rsplit("/", 1)[0], rel.rsplit("/", 1)[1].rsplit(".", 1)[0], "." + rel.rsplit(".", 1)[1])
    lake.write_bytes(rel, data)
    lake.manifest.append({"path": rel, "role": "broken", "group": status, "format": fmt, "encoding": encoding,
                          "rows": rows, "cols": cols})
    return {"path": rel, "status": status, "reason": reason}


def write_broken(lake: LakeBuilder) -> list[dict]:
    """Write the odd/broken files; returns the ``broken.csv`` rows."""
    rng = lake.rng
    out = []
    header = ["first_name", "last_name", "department", "salary"]

    rows = _people_rows(rng, 40)
    text = encode_text_table(["order_id", "customer", "comment", "total"],
                             [[f"SO-{i:05d}", f"{r[0]} {r[1]}", "delivered", r[3]] for i, r in enumerate(rows)])
    lines = text.split("\n")
    lines[12] = lines[12].replace("delivered", '"left at door, signed by neighbour', 1)
    out.append(_add(lake, "sales/exports/orders_export_2023-03.csv", "\n".join(lines).encode(), "error",
                    "malformed quoting: a quoted field opened on line 13 is never closed", "csv"))

    out.append(_add(lake, "uploads/empty_upload.csv", b"", "error", "empty file (0 bytes)", "csv"))
    out.append(_add(lake, "hr/templates/headcount_template.csv", (",".join(header) + "\n").encode(), "error",
                    "header only: no data rows", "csv"))

    cities = ("Zürich", "Köln", "Málaga", "Kraków", "Gdańsk", "São Paulo", "Besançon", "Malmö",
              "Düsseldorf", "Córdoba", "Genève", "Århus")
    latin = [c for c in cities if c.encode("cp1252", errors="replace").decode("cp1252") == c]
    body = [[c, E.pick(rng, ("Geschäft", "Café", "Bäckerei", "Épicerie")), f"{rng.uniform(1, 99):.2f} €"]
            for c in latin]
    data = encode_text_table(["Stadt", "Geschäftstyp", "Umsatz"], body, ";").encode("cp1252")
    out.append(_add(lake, "geo/legacy/staedte_umsatz.csv", data, "ok",
                    "cp1252 (Windows-1252) encoded, not UTF-8: must be detected and decoded", "semicolon",
                    "cp1252", len(body), 3))

    body = _people_rows(rng, 25)
    data = encode_text_table(header, body, "\t", "\r\n").encode("utf-16")
    out.append(_add(lake, "hr/exports/payroll_unicode_text.tsv", data, "ok",
                    "UTF-16 with byte-order mark (spreadsheet 'Unicode text' export)", "tsv", "utf-16",
                    len(body), len(header)))

    body = _people_rows(rng, 30)
    data = encode_text_table(header, body, ",", "\r\n").encode("utf-8-sig")
    out.append(_add(lake, "partners/suppliers_contacts_bom.csv", data, "ok",
                    "UTF-8 with byte-order mark and CRLF line ends", "csv", "utf-8-sig", len(body), len(header)))

    body = [[r[0], r[1], r[2], r[0][0] + r[1], r[3]] for r in _people_rows(rng, 30)]
    data = encode_text_table(["name", "name", "department", "Name", "salary"], body).encode()
    out.append(_add(lake, "hr/exports/staff_duplicate_headers.csv", data, "ok",
                    "duplicate column names (name, name, Name): parse with deduplicated names", "csv", "utf-8",
                    len(body), 5))

    words = [E.pick(rng, V.TITLE_NOUNS).lower() for _ in range(64)]
    chunk = " ".join(words) + " "
    huge = (chunk * (HUGE_CELL_BYTES // len(chunk) + 1))[:HUGE_CELL_BYTES]
    data = encode_text_table(["review_id", "product", "review_text"],
                             [["1", "Deluxe Steel Kettle", "great"], ["2", "Smart Oak Desk Lamp", huge],
                              ["3", "Eco Wool Scarf", "too small"]]).encode()
    out.append(_add(lake, "media/reviews/reviews_dump.csv", data, "error",
                    f"cell of {HUGE_CELL_BYTES} bytes exceeds the maximum cell length", "csv"))

    garbage = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + rng.integers(0, 256, size=6000, dtype=np.uint8).tobytes()
    out.append(_add(lake, "uploads/IMG_2041.csv", garbage, "error",
                    "binary content (a JPEG image) with a .csv name", "csv"))

    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        gz.write(encode_text_table(header, _people_rows(rng, 50)).encode())
    out.append(_add(lake, "sales/exports/daily_export.csv", buf.getvalue(), "error",
                    "gzip-compressed data with a .csv name", "csv"))

    body = _people_rows(rng, 30)
    for i in (6, 14, 21):
        body[i] = body[i][:2] + ["Sales", "North", "East"] + body[i][3:]
    out.append(_add(lake, "sales/regional/regional_headcount_ragged.csv", encode_text_table(header, body).encode(),
                    "error", "ragged rows: rows 8, 16 and 23 have 6 fields, the header has 4", "csv"))

    table = pa.table({"account": [E.code(rng, 2, 4) for _ in range(400)],
                      "amount": rng.normal(0, 1000, size=400).round(2)})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="snappy")
    blob = sink.getvalue()
    out.append(_add(lake, "finance/ledger/ledger_2022.parquet", blob[: int(len(blob) * 0.6)], "error",
                    "truncated Parquet file (footer missing, upload interrupted)", "parquet"))
    return out
