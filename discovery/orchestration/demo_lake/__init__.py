"""Deterministic sample lake with known answers (``lakescout demo-lake DIR``).

:func:`generate_demo_lake` writes a few hundred realistic tables (CSV mostly, some TSV and semicolon files, a few
Parquet files) in nested folders, plus odd and broken files, and the ground truth under ``DIR/_ground_truth/``:

* ``tables.csv``: every file with its role (union / join / nary / broken), group, format, encoding, rows, columns;
* ``union.csv`` and ``union_columns.csv``: labelled union candidates and the canonical attribute of every column;
* ``join.csv`` and ``join_values.csv``: planted semantic-join column pairs and their value pairs;
* ``nary.csv``: exact multi-column-key joinability of every n-ary query against every good table (J > 0);
* ``numeric.csv``: planted numerical joins (coordinates a few metres apart, re-taken measurements) and a weaker
  coordinate join, with the distinct query values matched at the numerical join's default tau;
* ``broken.csv``: the odd/broken files with the expected scan status and reason;
* ``summary.json``: seed, counts and sizes.

The same seed yields the same bytes (for a given numpy/pyarrow version: the random streams and the Parquet writer
are the only version-dependent parts).
"""
from __future__ import annotations

from .generate import generate_demo_lake
from .ground_truth import GROUND_TRUTH_DIR, load_ground_truth, read_demo_table

__all__ = ["generate_demo_lake", "load_ground_truth", "read_demo_table", "GROUND_TRUTH_DIR"]
