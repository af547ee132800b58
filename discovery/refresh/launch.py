"""Options of the driver JVM of a refresh's Spark application (the CLI's, each DAG stage's, a Python session's).

On a small lake the JVM costs more than the work: starting it and the first jobs' just-in-time compilation took 29 of
the 80 CPU seconds of a 20-table refresh on a shared 2-core machine, and on a ``local`` master that JVM is the whole
of Spark (driver and executor).  Its work in a refresh is coordination (scheduling, moving small Arrow batches
between Python processes, collecting file metadata), never the per-row work, which runs in Python.  So:

* ``-XX:TieredStopAtLevel=1``: compile with C1 only.  C2's optimising compiler threads pay off in long-running JVMs
  with hot loops, which a refresh's driver has none of; measured: the JVM's CPU seconds of that refresh 29.3 -> 13.9.
* a class-data-sharing archive of the classes a Spark application loads (``-XX:SharedArchiveFile``), written once
  per environment by ``python -m spark_jobs.warmup`` (``make venv`` runs it, as it warms numba's cache): the JVM
  maps the parsed classes instead of loading and verifying some 8,000 classes from the jars at every start.
  Measured: JVM CPU 13.9 -> 8.6 s, first line of the refresh 10.7 -> 8.2 s.  A missing or stale archive (another
  JVM or Spark build) is ignored by the JVM, which then starts as it would without it.

They reach the JVM as ``SPARK_SUBMIT_OPTS`` (spark-submit's options of the JVM it starts, the driver in client
mode) ahead of the submitter's own, which therefore win, or as ``spark.driver.extraJavaOptions`` of a session
started from plain Python.  Executors on a cluster keep their own JVM settings.
"""
from __future__ import annotations

import os
import sys

#: The class-data-sharing archive of this environment's Spark (written by ``python -m spark_jobs.warmup``).
ARCHIVE = os.path.join(sys.prefix, "share", "lakescout", "spark-classes.jsa")
#: Compiler setting of the driver JVM (see the module docstring).
COMPILER = "-XX:TieredStopAtLevel=1"


def driver_java_options(archive: str = ARCHIVE) -> str:
    """The driver JVM's options: C1 only, and the class archive when there is one."""
    if os.path.isfile(archive):
        return f"{COMPILER} -XX:SharedArchiveFile={archive} -Xshare:auto"
    return COMPILER


def submit_env(env: dict, options: str | None = None) -> dict:
    """``env`` for a ``spark-submit`` process: ``options`` (default :func:`driver_java_options`) first in
    ``SPARK_SUBMIT_OPTS``, then any the environment already sets (a later JVM option overrides an earlier one)."""
    options = driver_java_options() if options is None else options
    given = env.get("SPARK_SUBMIT_OPTS", "")
    return {**env, "SPARK_SUBMIT_OPTS": given if given.startswith(options) else f"{options} {given}".strip()}
