"""Running a ``spark_jobs`` application with ``spark-submit``: the command, its environment, its answer.

Every Spark application Lakescout starts from a process of its own (the CLI, the Python API) is a ``spark_jobs``
module run by this installation's ``spark-submit`` on a master; executors run ``LAKESCOUT_PYSPARK_PYTHON`` when set
(a cluster's own environment), else this interpreter.  The application prints one ``LAKESCOUT_RESULT {json}`` line
on stdout: its answer, or ``{"refused": message}`` for input it would not act on.  The JVM's log goes to a file
whose path a failure names.

The driver JVM's options.  On a small lake the JVM costs more than the work: starting it and the first jobs'
just-in-time compilation took 29 of the 80 CPU seconds of a 20-table refresh on a shared 2-core machine, and on a
``local`` master that JVM is the whole of Spark (driver and executor).  Its work in a refresh is coordination (scheduling, moving small Arrow batches
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

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

RESULT = "LAKESCOUT_RESULT "
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


class JobRefused(ValueError):
    """The application refused its input; the message says why."""


class JobFailed(RuntimeError):
    """The application failed (not the user's input); the message ends with the tail of its log."""


def spark_submit() -> str:
    """This installation's ``spark-submit`` (beside the interpreter, else on ``PATH``)."""
    local = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    found = local if os.path.exists(local) else shutil.which("spark-submit")
    if not found:
        raise JobRefused("spark-submit not found: install pyspark in this environment")
    return found


def command(module: str, master: str, args: list[str]) -> list[str]:
    """The spark-submit command running ``spark_jobs.<module>`` on ``master`` with ``args``."""
    spec = importlib.util.find_spec(f"spark_jobs.{module}")
    if spec is None or spec.origin is None:
        raise JobRefused("the spark_jobs package is not installed next to discovery")
    return [spark_submit(), "--master", master, spec.origin, *args]


def environment() -> dict[str, str]:
    """The environment of a ``spark-submit`` process: the executors' interpreter and the driver JVM's options."""
    return submit_env(dict(os.environ, PYSPARK_PYTHON=os.environ.get("LAKESCOUT_PYSPARK_PYTHON", sys.executable),
                           PYSPARK_DRIVER_PYTHON=sys.executable))


def run_job(module: str, master: str, args: list[str], what: str, undone: str) -> dict:
    """Run the application and return its answer; :class:`JobRefused` or :class:`JobFailed` otherwise (``what``
    names the work in the message, ``undone`` what a failure left undone)."""
    log = tempfile.NamedTemporaryFile("w+", prefix=f"lakescout-{module}-", suffix=".log", delete=False)
    proc = subprocess.run(command(module, master, args), stdout=subprocess.PIPE, stderr=log, text=True,
                          env=environment())
    result = next((json.loads(line[len(RESULT):]) for line in proc.stdout.splitlines() if line.startswith(RESULT)),
                  None)
    if result is not None and "refused" in result:
        raise JobRefused(result["refused"])
    if proc.returncode != 0 or result is None:
        log.seek(0)
        raise JobFailed(f"{what} failed on Spark ({master}); {undone}. Spark log: {log.name}\n"
                        f"{log.read()[-3000:]}")
    return result
