"""Names of written columns: never two alike, never one that hides a query column.

* A lake table's *short name* is the last part of its path without the format's endings (``finance/payables/
  purchase_orders.csv.gz`` -> ``purchase_orders``; a Delta folder ``sales/orders_delta`` -> ``orders_delta``); a
  second table of the same short name in one write is ``<short>_2``, and so on.
* A column added by a join is ``<short>.<column>`` (``purchase_orders.amount``), its match distance
  ``<short>.distance``, its aggregates ``<short>.<column>.<min|max|mean>`` and ``<short>.count``.  A dot reads as
  "of", and no lake column name is changed.
* Whatever name is already taken -- by a query column, an earlier augmentation, or a provenance column -- gets the
  first free suffix ``_2``, ``_3``, ... : the query's own columns always keep their names.
* A union's provenance columns are ``lakescout_source`` (the lake path, or the query's label for its own rows),
  ``lakescout_table_id``, ``lakescout_version`` (Delta version, Iceberg snapshot, else the content digest) and
  ``lakescout_snapshot``, renamed the same way if the query has columns of those names.
"""
from __future__ import annotations

import posixpath

from ...data.lake.formats import COMPRESSIONS, FILE_FORMATS

PROVENANCE = ("lakescout_source", "lakescout_table_id", "lakescout_version", "lakescout_snapshot")


def short_name(path: str) -> str:
    """A lake table's short name (see the module docstring)."""
    base = posixpath.basename(str(path).rstrip("/")) or str(path)
    for endings in (COMPRESSIONS, FILE_FORMATS):
        stem, dot, ext = base.rpartition(".")
        if dot and stem and f".{ext.lower()}" in endings:
            base = stem
    return base


class Names:
    """Names handed out in one written table: each :meth:`take` returns a name no earlier one has."""

    def __init__(self, taken=()):
        self.taken: set[str] = set(taken)

    def take(self, name: str) -> str:
        out, n = name, 2
        while out in self.taken:
            out, n = f"{name}_{n}", n + 1
        self.taken.add(out)
        return out
