"""Live progress of a stage, read on the driver from Spark's status tracker.

Tasks report nothing extra: every Spark job a stage starts runs in the stage's job group, and a daemon thread of the
driver polls ``sc.statusTracker()`` once a second for the group's jobs and sums their stages' completed and total
tasks (a finished job counts whole: its skipped stages never run their tasks).  The total grows as the stage starts
more jobs (training, then encoding; k-means iterations), so the count is of the tasks known so far.  What the thread
sees goes out through :mod:`discovery.stages.progress` at a bounded rate: a ``LAKESCOUT_PROGRESS`` line on standard
output when the count moved (at most every :data:`LINE_SECONDS`, and every ``HEARTBEAT_SECONDS`` regardless) and the
warehouse record at most every :data:`RECORD_SECONDS`; the first and the last report of a stage are always written.

Every report also carries the stage's CPU utilisation so far (:class:`CpuMeter`): CPU seconds of the processes that
run the stage's work, over wall seconds times the cores Spark was given.  On a ``local`` master that is the process
tree of the driver JVM (its executor threads, the Python driver and the Python workers it forks, sampled every poll
so that workers which exit keep what they used); executors of a cluster run on other hosts, out of reach of the
driver's process table, so there the utilisation is left unknown (``None``) rather than reported for the driver
alone.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import replace

import psutil

from discovery.stages import StageContext
from discovery.stages.progress import HEARTBEAT_SECONDS, Progress, write_progress
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


class CpuMeter:
    """CPU utilisation of a local Spark application since the meter was made: process-tree CPU seconds / (wall
    seconds x cores).  ``utilisation()`` is None when the executors are not local processes (see the module).

    Each process's own CPU time is remembered by (pid, start time) at every :meth:`sample`, and a process counts what
    it used since the meter was made (or since it started).  Summing the tree's cumulative times instead would lose a
    worker's seconds when it exits: PySpark's daemon ignores SIGCHLD, so its exited workers' times never reach its
    children's totals.  A process that exits loses at most what it used since the last sample (the watcher samples
    every :data:`POLL_SECONDS`; Python workers are reused across tasks, so few exit within a stage)."""

    def __init__(self, sc):
        self.cores = max(int(sc.defaultParallelism), 1)
        self._root = _jvm_process() if sc.master.startswith("local") else None
        self._lock = threading.Lock()
        self._wall0 = time.perf_counter()
        self._start = self._read()
        self._last = dict(self._start)

    def _read(self) -> dict[tuple[int, float], float]:
        out = {}
        for proc in [] if self._root is None else [self._root, *_children(self._root)]:
            try:
                with proc.oneshot():
                    t = proc.cpu_times()
                    out[(proc.pid, proc.create_time())] = t.user + t.system
            except psutil.Error:  # exited between the listing and the reading
                continue
        return out

    def sample(self) -> None:
        seen = self._read()
        with self._lock:
            self._last.update(seen)

    def cpu_seconds(self) -> float | None:
        """CPU seconds the tree used since the meter was made (None off a local master)."""
        if self._root is None:
            return None
        self.sample()
        with self._lock:
            return sum(max(v - self._start.get(k, 0.0), 0.0) for k, v in self._last.items())

    def utilisation(self) -> float | None:
        cpu, wall = self.cpu_seconds(), time.perf_counter() - self._wall0
        if cpu is None or wall <= 0:
            return None
        return round(cpu / (wall * self.cores), 3)


def _jvm_process() -> psutil.Process:
    """The driver JVM: this process's parent under spark-submit (it starts the Python driver), else this process,
    whose child it is (pyspark launched it)."""
    me = psutil.Process(os.getpid())
    parent = me.parent()
    if "PYSPARK_GATEWAY_PORT" in os.environ and parent is not None and "java" in parent.name():
        return parent
    return me


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except psutil.Error:
        return []


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
        self._meter: CpuMeter | None = None

    def __enter__(self) -> StageProgress:
        self._sc.setJobGroup(self.group, f"Lakescout refresh {self._ctx.refresh_id}: {self.current.stage}")
        self._meter = CpuMeter(self._sc)
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
                             updated=time.time(), cpu=self._meter.utilisation()), force=True)

    def usage(self) -> dict:
        """The finished stage's wall seconds and CPU utilisation (None when unknown), for its summary line."""
        return {"seconds": round(self.current.elapsed, 3), "cpu": self.current.cpu}

    def _count(self) -> tuple[int, int]:
        return count_tasks(self._sc.statusTracker(), self.group, self._ended)

    def _watch(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self._meter.sample()
            done, total = self._count()
            now = time.time()
            moved = (done, total) != (self.current.done, self.current.total)
            if (moved and now - self._last_line >= LINE_SECONDS) or now - self._last_line >= HEARTBEAT_SECONDS:
                self._report(replace(self.current, done=done, total=total, updated=now,
                                     cpu=self._meter.utilisation()))
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
