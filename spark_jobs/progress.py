"""Live progress of a stage, read on the driver from Spark's status tracker.

Tasks report nothing extra: every Spark job a stage starts runs in the stage's job group, and a daemon thread of the
driver polls ``sc.statusTracker()`` once a second for the group's jobs and sums their stages' completed and total
tasks (a finished job counts whole: its skipped stages never run their tasks).  The total grows as the stage starts
more jobs (training, then encoding; k-means iterations), so the count is of the tasks known so far.  What the thread
sees goes out through :mod:`discovery.refresh.progress` at a bounded rate: a ``LAKESCOUT_PROGRESS`` line on standard
output when the count moved (at most every :data:`LINE_SECONDS`, and every ``HEARTBEAT_SECONDS`` regardless) and the
warehouse record at most every :data:`RECORD_SECONDS`; the first and the last report of a stage are always written.
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import replace

from discovery.refresh import StageContext
from discovery.refresh.progress import HEARTBEAT_SECONDS, Progress, write_progress
from spark_jobs.stages import STAGES

POLL_SECONDS = 1.0
LINE_SECONDS = 2.0
RECORD_SECONDS = 5.0


def stage_position(stage: str) -> tuple[int, int]:
    """(step, steps) of a stage in a refresh: its place in ``STAGES``, counting the final publish as a step."""
    names = list(STAGES)
    return (names.index(stage) + 1 if stage in names else 1), len(names) + 1


def count_tasks(tracker, group: str, ended: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(completed, total) tasks of the jobs of ``group`` known to ``tracker``; ``ended`` keeps the counts of jobs
    that finished (they no longer change), so a poll asks Spark only about the running ones."""
    done = total = 0
    for job_id in tracker.getJobIdsForGroup(group):
        if job_id not in ended:
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            stages = [s for s in (tracker.getStageInfo(i) for i in job.stageIds) if s is not None]
            n = sum(s.numTasks for s in stages)
            counts = (n if job.status == "SUCCEEDED" else sum(s.numCompletedTasks for s in stages), n)
            if job.status not in ("SUCCEEDED", "FAILED"):
                done, total = done + counts[0], total + counts[1]
                continue
            ended[job_id] = counts
        done, total = done + ended[job_id][0], total + ended[job_id][1]
    return done, total


class StageProgress:
    """Context manager around a stage body: puts its Spark jobs in one job group and reports their progress."""

    def __init__(self, spark, ctx: StageContext, stage: str):
        self._sc = spark.sparkContext
        self._ctx = ctx
        self.group = f"lakescout-{ctx.refresh_id}-{stage}"
        step, steps = stage_position(stage)
        now = time.time()
        self.current = Progress(ctx.refresh_id, stage, step, steps, stage_started=now, updated=now)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"progress-{stage}", daemon=True)
        self._last_line = self._last_record = 0.0
        self._unrecorded = False
        self._ended: dict[int, tuple[int, int]] = {}

    def __enter__(self) -> "StageProgress":
        self._sc.setJobGroup(self.group, f"Lakescout refresh {self._ctx.refresh_id}: {self.current.stage}")
        self._report(self.current, force=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """Stop watching and report the stage's final state: done (every task known counted) or failed."""
        self._stop.set()
        self._thread.join()
        done, total = self._count()
        state = "failed" if exc_type else "done"
        self._report(replace(self.current, state=state, done=done if exc_type else total, total=total,
                             updated=time.time()), force=True)

    def _count(self) -> tuple[int, int]:
        return count_tasks(self._sc.statusTracker(), self.group, self._ended)

    def _watch(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            done, total = self._count()
            now = time.time()
            moved = (done, total) != (self.current.done, self.current.total)
            if (moved and now - self._last_line >= LINE_SECONDS) or now - self._last_line >= HEARTBEAT_SECONDS:
                self._report(replace(self.current, done=done, total=total, updated=now))
            elif self._unrecorded and now - self._last_record >= RECORD_SECONDS:
                self._record(self.current)

    def _report(self, progress: Progress, force: bool = False) -> None:
        self.current = progress
        sys.stdout.write(progress.line() + "\n")
        sys.stdout.flush()
        self._last_line = time.time()
        self._unrecorded = True
        if force or self._last_line - self._last_record >= RECORD_SECONDS:
            self._record(progress)

    def _record(self, progress: Progress) -> None:
        try:
            write_progress(self._ctx.warehouse, progress)
        except OSError as exc:  # progress is for watching; a store hiccup must not fail the stage
            print(f"progress record not written: {exc}", file=sys.stderr)
        self._last_record = time.time()
        self._unrecorded = False
