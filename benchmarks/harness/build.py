"""Lakes and warehouses: the sample lake, a warehouse built (or reused) by the real refresh, in this process on one
SparkSession or as ``lakescout refresh`` in a child process, as users build theirs.

Every benchmark builds its index this way, so a figure measured on a warehouse always comes from the refresh users
run; a warehouse that already holds a published snapshot is reused unless the caller asks for a rebuild."""
from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass

from .measure import cli

#: Encoder training settings that build a warehouse in seconds (a 30-step join encoder, two table-encoder epochs on
#: 64 tables): for benchmarks that measure the index and the queries, not the encoders' quality.
QUICK_TRAINING = """[embed]
join_steps = 30
table_epochs = 2
train_tables = 64
"""

_SPARK = None


def published(warehouse: str) -> bool:
    """Whether ``warehouse`` holds a published snapshot indexed by this code's rules: a warehouse a benchmark kept
    from before an upgrade (its quantities under another rule) measures a mix a refresh would not leave."""
    import discovery
    from discovery.data.store import Warehouse, list_snapshots
    from discovery.query.vectors import current_quantities

    wh = Warehouse(str(warehouse))
    if not (wh.exists() and list_snapshots(wh)):
        return False
    return current_quantities(discovery.open(str(warehouse)).snapshot)


def sample_lake(path: str, *, seed: int = 7, **options) -> str:
    """The sample lake at ``path``, written as ``lakescout demo-lake`` writes it (``seed``; ``options`` as
    :func:`discovery.orchestration.demo_lake.generate_demo_lake` takes them) unless a generated one is there."""
    from discovery.orchestration.demo_lake import generate_demo_lake

    if not os.path.isdir(os.path.join(path, "_ground_truth")):
        generate_demo_lake(str(path), seed=seed, **options)
    return str(path)


def config_file(folder: str, name: str, text: str) -> str:
    """A TOML configuration file ``<folder>/<name>.toml`` holding ``text`` (empty: the defaults; a file still, so
    neither ``$LAKESCOUT_CONFIG`` nor a ``lakescout.toml`` in the working folder can change the run)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.toml")
    with open(path, "w") as fh:
        fh.write(text)
    return path


def spark_session(app: str = "lakescout-bench", master: str | None = None):
    """The benchmark's one SparkSession, started on first use on ``master``, else ``LAKESCOUT_SPARK_MASTER``, else
    ``local[2]`` (the two cores the figures are recorded on); executors run this interpreter."""
    global _SPARK
    if _SPARK is None:
        from spark_jobs.common import spark_session as start

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        _SPARK = start(app, master or os.environ.get("LAKESCOUT_SPARK_MASTER", "local[2]"))
        _SPARK.sparkContext.setLogLevel("ERROR")
    return _SPARK


def stop_spark() -> None:
    """Stop the benchmark's SparkSession: what runs next starts its own processes and needs the cores."""
    global _SPARK
    if _SPARK is not None:
        _SPARK.stop()
        _SPARK = None


@dataclass
class Build:
    """A warehouse as :func:`build` left it."""

    warehouse: str
    #: Wall seconds of the refresh; None when an existing snapshot was reused.
    seconds: float | None = None
    #: What the refresh returned (``lakescout refresh --json``'s object); None when reused.
    result: dict | None = None
    #: CPU seconds and peak RSS of a ``lakescout refresh`` process (its Spark application included).
    cpu: float | None = None
    peak_rss_mb: float | None = None


def refresh(lake: str, warehouse: str, *, config: str | None = None, spark=None, master: str | None = None) -> Build:
    """One refresh of ``lake`` into ``warehouse`` in this process (``spark``, or the benchmark's session on
    ``master``), timed; whether it published is the caller's to check (:attr:`Build.result`)."""
    from spark_jobs.refresh import refresh as run_refresh

    spark = spark or spark_session(master=master)
    t0 = time.perf_counter()
    out = run_refresh(spark, str(warehouse), str(lake), config_path=config)
    return Build(str(warehouse), time.perf_counter() - t0, out)


def refresh_cli(lake: str, warehouse: str, *, config: str | None = None, master: str | None = None,
                env: dict | None = None) -> Build:
    """``lakescout refresh --json`` of ``lake`` into ``warehouse`` in a child process, timed (wall, CPU, peak RSS);
    raises :class:`~harness.measure.RunFailed` when it fails."""
    args = ["refresh", "--lake", str(lake), "--warehouse", str(warehouse), "--json"]
    args += ["--config", config] if config else []
    args += ["--master", master] if master else []
    done = cli(*args, env=env)
    return Build(str(warehouse), done.wall, done.json(), done.cpu, done.peak_rss_mb)


def build(lake: str, warehouse: str, *, config: str | None = None, via: str = "spark", master: str | None = None,
          rebuild: bool = False, spark=None) -> Build:
    """``warehouse`` indexing ``lake`` with the real refresh, reused when it already holds a published snapshot
    (``rebuild`` starts over): ``via="spark"`` refreshes in this process, ``via="cli"`` runs ``lakescout refresh``;
    ``master``: the Spark master of either.  Raises when the refresh does not publish."""
    if published(warehouse) and not rebuild:
        return Build(str(warehouse))
    shutil.rmtree(warehouse, ignore_errors=True)
    if via == "cli":
        done = refresh_cli(lake, warehouse, config=config, master=master)
    elif via == "spark":
        done = refresh(lake, warehouse, config=config, spark=spark, master=master)
    else:
        raise ValueError(f"via: 'spark' or 'cli', not {via!r}")
    if not done.result.get("published"):
        raise RuntimeError(f"the refresh of {lake} into {warehouse} did not publish: {done.result}")
    return done


def driver_peak_rss(spark=None) -> dict[str, float | None]:
    """Peak RSS in MB of a Spark driver: this Python process and the JVM it launched (a local master's executors run
    in that JVM; their Python workers are not the driver and are left out)."""
    from .measure import peak_rss_mb

    spark = spark or spark_session()
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    jvm = peak_rss_mb(proc.pid) if proc is not None else None
    python = peak_rss_mb()
    total = python + jvm if python is not None and jvm is not None else None
    return {"driver_python_peak_mb": python, "driver_jvm_peak_mb": jvm, "driver_peak_mb": total}


def autofj_warehouse(root: str, names: list[str], workdir: str, *, master: str | None = None,
                     config: str | None = None) -> Build:
    """A lake of the AutoFJ tables ``<Dataset>_left.csv`` / ``<Dataset>_right.csv`` under ``workdir`` (copied once)
    and its warehouse beside it, built by :func:`build` (reused when published)."""
    lake = os.path.join(str(workdir), "lake")
    os.makedirs(lake, exist_ok=True)
    for n in names:
        for side in ("left", "right"):
            if not os.path.exists(os.path.join(lake, f"{n}_{side}.csv")):
                shutil.copyfile(os.path.join(str(root), n, f"{side}.csv"), os.path.join(lake, f"{n}_{side}.csv"))
    return build(lake, os.path.join(str(workdir), "warehouse"), config=config, master=master)
