"""Spark's own archives taken off ``sys.path`` in every Python process of a Lakescout Spark application.

``spark-submit`` puts Spark's bundled ``pyspark.zip`` and ``py4j-*-src.zip``, and its ``spark-core`` jar (5,261
entries, no Python in it), on the ``PYTHONPATH`` of the driver it starts and of the executors' Python workers.  A
module imported from a zip gets no ``__pycache__``, so every such process compiled PySpark from source: 0.6 to 0.9 s of
the driver's start (``from pyspark.sql import SparkSession`` 0.85 s against 0.23 from the installed package, idle
2-core machine), paid by every stage task of the ``lake_refresh`` DAG, every CLI refresh and every other application
``spark-submit`` runs; and the worker's ``importlib.invalidate_caches()`` before each task made the zip importer read
each archive's directory again (:mod:`spark_jobs.worker`).

Where the same ``pyspark`` and ``py4j`` are installed in the process's own environment (a ``pip install pyspark``, as
this project's requirements pin it; the zips ship inside that very package), the zips are dropped and PySpark is
imported from the installed package; otherwise only the jar is dropped.  The package runs this on import
(``spark_jobs/__init__.py``), which in a driver and in a worker daemon comes before PySpark's first import.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys


def spark_archives(path: list[str]) -> tuple[list[str], list[str]]:
    """(Spark's jars, the zips Spark ships PySpark and Py4J in) among the entries of ``path``."""
    names = [(p, os.path.basename(p)) for p in path]
    return ([p for p, n in names if n.endswith(".jar") and n.startswith("spark-")],
            [p for p, n in names if n.endswith(".zip") and n.startswith(("pyspark", "py4j"))])


def drop_spark_archives() -> list[str]:
    """Take Spark's jars off ``sys.path``, and its PySpark and Py4J zips when both packages are installed outside
    them; returns the entries removed (none outside a Spark application's processes)."""
    jars, zips = spark_archives(sys.path)
    if not jars and not zips:
        return []
    rest = [p for p in sys.path if p not in jars and p not in zips]
    if any(importlib.machinery.PathFinder.find_spec(name, rest) is None for name in ("pyspark", "py4j")):
        rest, zips = [p for p in sys.path if p not in jars], []
    sys.path[:] = rest
    for entry in jars + zips:
        sys.path_importer_cache.pop(entry, None)
    return jars + zips
