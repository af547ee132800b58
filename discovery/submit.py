"""Running a ``spark_jobs`` application with ``spark-submit``: the command, its environment, its answer.

Every Spark application Lakescout starts from a process of its own (the CLI, the Python API) is a ``spark_jobs``
module run by this installation's ``spark-submit`` on a master; executors run ``LAKESCOUT_PYSPARK_PYTHON`` when set
(a cluster's own environment), else this interpreter.  The application prints one ``LAKESCOUT_RESULT {json}`` line
on stdout: its answer, or ``{"refused": message}`` for input it would not act on.  The JVM's log goes to a file
whose path a failure names.
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
    return dict(os.environ, PYSPARK_PYTHON=os.environ.get("LAKESCOUT_PYSPARK_PYTHON", sys.executable),
                PYSPARK_DRIVER_PYTHON=sys.executable)


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
