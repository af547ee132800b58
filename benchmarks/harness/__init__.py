"""The benchmarks' harness: every script builds its warehouses, runs the CLI, times and measures, and reports
through it.

Scripts run as ``python benchmarks/<name>.py``, so this folder is first on ``sys.path`` and they import ``harness``;
importing it puts ``scripts/`` (the S3 server, the Spark cluster starter) and ``tests/`` (the Airflow api-server, the
soak, the page's search clients: what the tests and the benchmarks both drive) on the path, the one place that does.
``discovery`` and ``spark_jobs`` come from the venv's editable install.
"""
from __future__ import annotations

import os
import sys

from .build import (QUICK_TRAINING, Build, autofj_warehouse, build, config_file, driver_peak_rss, published, refresh,
                    refresh_cli, sample_lake, spark_session, stop_spark)
from .measure import (LAKESCOUT, Run, RunFailed, cli, peak_rss_mb, proc_status, python, run, summary, timed)
from .quality import K, fivethirtyeight_truth, metric_curves, metrics, ugen_layout
from .records import join_build, join_model, refresh_record, stage_seconds
from .report import (RESULTS, ROOT, SHARED, LoadSampler, load_average, previous_result, print_table, result_path,
                     shared_path, write_result)

for _folder in ("scripts", "tests"):
    if os.path.join(ROOT, _folder) not in sys.path:
        sys.path.append(os.path.join(ROOT, _folder))

# Bytecode is cached as a user's processes cache it: where PYTHONDONTWRITEBYTECODE is set, every process a benchmark
# starts (the CLI, a Spark driver and each of its Python workers, Airflow's task processes) would compile the
# project's modules again, CPU seconds a run that no user pays (benchmarks/startup.py measured them).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

__all__ = ["autofj_warehouse", "Build", "build", "cli", "config_file", "driver_peak_rss", "fivethirtyeight_truth",
           "join_build", "join_model", "K", "LAKESCOUT", "load_average", "LoadSampler", "metric_curves", "metrics",
           "peak_rss_mb", "previous_result", "print_table", "proc_status", "published", "python", "QUICK_TRAINING",
           "refresh", "refresh_cli", "refresh_record", "result_path", "RESULTS", "ROOT", "Run",
           "run", "RunFailed", "sample_lake", "SHARED", "shared_path", "spark_session", "stage_seconds", "stop_spark",
           "summary", "timed", "ugen_layout", "write_result"]
