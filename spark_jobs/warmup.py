"""Write the class-data-sharing archive of this environment's Spark (``discovery.surfaces.submit.ARCHIVE``).

Run once per environment (``make venv`` does): ``python -m spark_jobs.warmup``.  A local Spark application runs the
kinds of job a refresh runs (Python tasks of the one fan-out, :func:`spark_jobs.fanout.map_items`, a broadcast,
results collected, the status tracker polled) in a JVM started with ``-XX:ArchiveClassesAtExit``, which writes
every class it loaded to the archive when it exits.  Later driver JVMs map that archive
(:func:`discovery.surfaces.submit.driver_java_options`).
"""
from __future__ import annotations

import os
import sys


from discovery.surfaces.submit import ARCHIVE, COMPILER
from spark_jobs.common import spark_session
from spark_jobs.fanout import map_items


def main() -> int:
    os.makedirs(os.path.dirname(ARCHIVE), exist_ok=True)
    if os.path.exists(ARCHIVE):
        os.remove(ARCHIVE)  # the JVM writes it read-only
    # (classes from signed jars cannot be archived: the JVM's warnings about each are left out)
    spark = spark_session("lakescout-warmup", master="local[2]",
                          java_options=f"{COMPILER} -XX:ArchiveClassesAtExit={ARCHIVE} -Xlog:cds=off")
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.setJobGroup("lakescout-warmup", "class archive")
    shared = spark.sparkContext.broadcast(b"warmup")
    for n in (2, 4):
        map_items(spark, n, lambda i: [str(i)])
    tracker = spark.sparkContext.statusTracker()
    for job in tracker.getJobIdsForGroup("lakescout-warmup"):
        info = tracker.getJobInfo(job)
        [tracker.getStageInfo(s) for s in (info.stageIds if info else [])]
    shared.unpersist()
    spark.stop()
    print(f"Spark class archive: {ARCHIVE} (written when this JVM exits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
