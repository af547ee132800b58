"""What every command shares: the errors that end a command and how a command starts a Spark application."""
from __future__ import annotations

import os
import shutil
import sys


class UsageError(Exception):
    """Bad input from the user: printed as one clear line, exit code 2, never a traceback."""


class SparkFailed(Exception):
    """A Spark application that failed (not the user's input): exit code 1, with the tail of its log."""


def spark_submit() -> str:
    local = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    found = local if os.path.exists(local) else shutil.which("spark-submit")
    if not found:
        raise UsageError("spark-submit not found: install pyspark in this environment")
    return found
