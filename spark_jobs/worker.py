"""The Python worker daemon of Lakescout's Spark applications (``spark.python.daemon.module``).

Spark starts one daemon per executor, which forks a worker per concurrent task and reuses it for later tasks.  Two
fixed costs of PySpark's own daemon are paid on every task, whatever the task does, and made most of a small lake's
refresh (a 20-table refresh ran about 60 tasks):

* Spark puts its bundled ``pyspark.zip`` and ``py4j-*-src.zip``, and its own ``spark-core`` jar (5,261 entries, no
  Python in it), on the workers' ``PYTHONPATH``, and before every task the worker calls
  ``importlib.invalidate_caches()``, which makes Python's zip importer read the directory of each of them again:
  0.47 CPU seconds a task on a loaded 2-core machine (29 of the 42 CPU seconds the workers spent on 60 tasks that did
  nothing).  Modules imported from a zip are also compiled from source in every worker, as a zip gets no
  ``__pycache__``.  Importing ``spark_jobs`` (which ``python -m spark_jobs.worker`` does first) takes them off the
  path (:mod:`spark_jobs.archives`), and PySpark is imported from the installed package.
* After every task the worker runs a full ``gc.collect()``, whose cost grows with every object the imported modules
  hold (0.14 s a task above).  The daemon imports the modules every task needs (the stage helpers, pyarrow, numpy,
  the lake readers and the index store) once, before it forks, and freezes them (``gc.freeze``): the workers inherit
  them ready.  Modules only some stages need (torch for training, numba kernels) are still imported by the tasks
  that use them, and after those the full collection cost a training worker about 0.1 s on each later task; so the
  collection after a task is of the young generations, which hold what the task made (Python's own thresholds
  still collect the old generation as it grows).

The daemon then runs PySpark's own (``pyspark.daemon.manager``), so scheduling, reuse and protocol are Spark's.
"""
from __future__ import annotations

import gc
import importlib

#: What every stage's tasks import: the stage driver's helpers and the fan-out helpers (and through them the index
#: store, the refresh tasks and the lake readers).
PRELOAD = ("spark_jobs.common", "spark_jobs.fanout")


class YoungCollection:
    """What PySpark's daemon sees as ``gc``: its collection after a task takes the young generations only."""

    @staticmethod
    def collect(generation: int = 1) -> int:
        return gc.collect(min(generation, 1))


def main() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()
    from pyspark import daemon

    daemon.gc = YoungCollection
    daemon.manager()


if __name__ == "__main__":
    main()
