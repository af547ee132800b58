"""Running a ``spark_jobs`` application with ``spark-submit``: the command, its environment, its answer.

Every Spark application Lakescout starts is a ``spark_jobs`` module run by ``spark-submit`` on a master: from a
process of its own (the CLI, the Python API) by this installation's ``spark-submit`` (:func:`launch`), from a DAG by
Airflow's ``SparkSubmitOperator`` (:func:`stage_operator`).  Both take the application's file, the executors'
interpreter (``LAKESCOUT_PYSPARK_PYTHON`` when set: a cluster's own environment, else this interpreter) and the
driver JVM's options from here.  The application prints one ``LAKESCOUT_RESULT {json}`` line on stdout: its answer,
or ``{"refused": message}`` for input it would not act on.  The JVM's log goes to a file whose path a failure names.

The driver JVM's options.  On a small lake the JVM costs more than the work: starting it and the first jobs'
just-in-time compilation took 29 of the 80 CPU seconds of a 20-table refresh on a shared 2-core machine, and on a
``local`` master that JVM is the whole of Spark (driver and executor).
Its work in a refresh is coordination (scheduling, moving small Arrow batches
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
import threading
from dataclasses import dataclass
from collections.abc import Callable

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
    ``SPARK_SUBMIT_OPTS``, then any the environment already sets (a later JVM option overrides an earlier one); and
    C1 only for the short JVM ``spark-submit`` runs first to build the driver's command line (``SPARK_LAUNCHER_OPTS``,
    unless set: 0.30 -> 0.17 CPU seconds of every submission)."""
    options = driver_java_options() if options is None else options
    given = env.get("SPARK_SUBMIT_OPTS", "")
    return {**env, "SPARK_SUBMIT_OPTS": given if given.startswith(options) else f"{options} {given}".strip(),
            "SPARK_LAUNCHER_OPTS": env.get("SPARK_LAUNCHER_OPTS", COMPILER)}


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


def application(module: str) -> str:
    """The file of ``spark_jobs.<module>``, the application spark-submit runs."""
    spec = importlib.util.find_spec(f"spark_jobs.{module}")
    if spec is None or spec.origin is None:
        raise JobRefused("the spark_jobs package is not installed next to discovery")
    return spec.origin


def executor_python(default: str = sys.executable) -> str:
    """The interpreter of the executors' Python workers: ``LAKESCOUT_PYSPARK_PYTHON`` when set (a cluster's own
    environment), else ``default`` (this interpreter)."""
    return os.environ.get("LAKESCOUT_PYSPARK_PYTHON") or default


def command(module: str, master: str, args: list[str]) -> list[str]:
    """The spark-submit command running ``spark_jobs.<module>`` on ``master`` with ``args``."""
    return [spark_submit(), "--master", master, application(module), *args]


def environment() -> dict[str, str]:
    """The environment of a ``spark-submit`` process: the executors' interpreter and the driver JVM's options."""
    return submit_env(dict(os.environ, PYSPARK_PYTHON=executor_python(), PYSPARK_DRIVER_PYTHON=sys.executable))


@dataclass(frozen=True)
class Finished:
    """An application that answered or ended: its exit code (None when it answered: it was left to end on its own,
    see :func:`launch`), its ``LAKESCOUT_RESULT`` answer (None when it printed none) and the file holding its JVM's
    log."""
    returncode: int | None
    result: dict | None
    log: str

    def log_tail(self) -> str:
        """The end of the JVM's log, which a failure shows."""
        with open(self.log, encoding="utf-8", errors="replace") as fh:
            return fh.read()[-3000:]


def launch(module: str, master: str, args: list[str], on_line: Callable[[str], None] | None = None) -> Finished:
    """Run ``spark_jobs.<module>`` on ``master`` with ``args`` until it answers; every line of its stdout before the
    answer goes to ``on_line`` as it comes (a refresh's progress).  :class:`JobRefused` when it refused its input.

    The answer line is an application's last act: its work is committed (a refresh has published and released the
    warehouse lease).  What follows is Spark's teardown: the Python driver's exit, then the JVM's shutdown hooks,
    which remove each temporary folder by spawning an ``rm -rf`` (60 to 80 ms apiece on a 2-core machine), 0.5 to
    0.7 s of every refresh that the caller has no reason to wait for.  So an application that answered is left to
    end on its own, reaped by a daemon thread while this process lives; one that ends without answering (a crash) is
    waited for, and its exit code returned."""
    with tempfile.NamedTemporaryFile("w", prefix=f"lakescout-{module}-", suffix=".log", delete=False) as log:
        proc = subprocess.Popen(command(module, master, args), stdout=subprocess.PIPE, stderr=log, text=True,
                                env=environment())
    assert proc.stdout is not None  # stdout=PIPE
    result = None
    try:
        for line in proc.stdout:
            if line.startswith(RESULT):
                result = json.loads(line[len(RESULT):])
                break
            if on_line is not None:
                on_line(line)
    except BaseException:  # Ctrl-C, a line the caller could not show: the application is waited for, as it ends
        proc.stdout.close()
        proc.wait()
        raise
    if result is None:
        proc.stdout.close()
        proc.wait()
    else:
        threading.Thread(target=_end, args=(proc,), name=f"lakescout-{module}-exit", daemon=True).start()
    if result is not None and "refused" in result:
        raise JobRefused(result["refused"])
    return Finished(None if result is not None else proc.returncode, result, log.name)


def _end(proc: subprocess.Popen) -> None:
    """Read what an application that answered still prints, until it exits, and reap it."""
    assert proc.stdout is not None
    with proc.stdout:
        for _ in proc.stdout:
            pass
    proc.wait()


def run_job(module: str, master: str, args: list[str], what: str, undone: str) -> dict:
    """Run the application and return its answer; :class:`JobRefused` or :class:`JobFailed` otherwise (``what``
    names the work in the message, ``undone`` what a failure left undone)."""
    done = launch(module, master, args)
    if done.result is None:  # an application that ends without answering failed, whatever its exit code
        raise JobFailed(f"{what} failed on Spark ({master}); {undone}. Spark log: {done.log}\n{done.log_tail()}")
    return done.result


def stage_operator(stage: str, module: str, args: list[str], conn_id: str = "spark_default"):
    """The Airflow task running ``spark_jobs.<module>`` with ``args`` (templated) as a spark-submit application on
    the master of Spark connection ``conn_id``: Airflow's own ``SparkSubmitOperator``, given the application, the
    executors' interpreter and, just before it runs (:func:`_before_submit`), the driver JVM's options and the run's
    storage credentials.  A stage already recorded as done for the refresh (by the scan task's application on a
    small plan, or by an attempt that succeeded before its task failed) ends without starting Spark."""
    from ..orchestration.refresh.stage_task import StageOperator

    return StageOperator(task_id=stage, conn_id=conn_id, application=application(module),
                         name=f"lakescout-{stage}", application_args=args,
                         conf={"spark.pyspark.python": executor_python()}, pre_execute=_before_submit)


def _before_submit(context) -> None:
    """The run's storage credentials (the ``aws_conn_id`` param's connection) in the application's environment and
    in the task process's (which reads ``refresh_runs`` before it submits:
    :mod:`discovery.orchestration.refresh.stage_task`), and the driver JVM's options in the task process's, which
    spark-submit inherits: ``env_vars`` would pass them to a YARN or Kubernetes application master rather than to the
    spark-submit JVM."""
    from . import connections

    task = context["task"]
    task.env_vars = {**(task.env_vars or {}),
                     **connections.airflow_connection_env(context["params"].get("aws_conn_id", ""))}
    connections.use_airflow_connection(context["params"])
    os.environ.update(submit_env(dict(os.environ)))


def connection_master(conn_id: str) -> str:
    """The master URL of Airflow's Spark connection ``conn_id``, read as ``SparkSubmitOperator`` reads it (host, and
    port when set): the master of a Spark session a DAG task starts itself (a query batch, a materialisation)."""
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(conn_id)
    if not conn.host:
        raise ValueError(f"Airflow connection {conn_id!r} has no host: set it to the Spark master (local[*], "
                         "spark://HOST, yarn, k8s://...)")
    return f"{conn.host}:{conn.port}" if conn.port else conn.host
