"""Progress of a running refresh: one small record in the warehouse, and the line a stage prints for its log.

A stage's driver learns how far its Spark jobs are from Spark's status tracker (see ``spark_jobs.progress``) and
reports a :class:`Progress` in two places at a bounded rate: a ``LAKESCOUT_PROGRESS {json}`` line on its standard
output (the Airflow task log shows it; ``lakescout refresh`` draws it as a bar) and the record
``<warehouse>/progress/refresh.json``, which the Lake discovery page reads.  There is one record per warehouse, the
latest refresh's, replaced whole on every write (a rename, so a reader never sees half of it); ``publish`` marks it
published.  A refresh that was killed leaves a record behind that stops being updated: readers call it stalled once
it is older than :data:`STALE_SECONDS`.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass

import pyarrow.fs as pafs

from ..data.store.files import resolve

PREFIX = "LAKESCOUT_PROGRESS "
#: Prefix of a line a refresh's driver prints about what it does outside the stages (Spark started, lease taken),
#: which ``lakescout refresh`` shows as it comes.
NOTE = "LAKESCOUT_NOTE "
#: A running record not updated for this long belongs to a refresh that stopped without saying so.
STALE_SECONDS = 600.0
#: Longest silence of a running stage: its driver reports at least this often even when no task finished.
HEARTBEAT_SECONDS = 30.0
_FOLDER, _NAME = "progress", "refresh.json"


@dataclass(frozen=True)
class Progress:
    """Where a refresh is: its stage (``step`` of ``steps``), Spark tasks done of those known so far, times, and the
    stage's CPU utilisation so far (``spark_jobs.progress.CpuMeter``)."""

    refresh_id: int
    stage: str
    step: int
    steps: int
    state: str = "running"      # running | done (stage finished) | failed | published
    done: int = 0
    total: int = 0
    unit: str = "tasks"
    stage_started: float = 0.0  # epoch seconds
    updated: float = 0.0
    cpu: float | None = None    # CPU utilisation of the stage so far: CPU s / (wall s x cores); None: unknown

    @property
    def elapsed(self) -> float:
        return max(self.updated - self.stage_started, 0.0)

    @property
    def eta(self) -> float | None:
        """Seconds left for the tasks known so far at the stage's rate, None before the first task finished."""
        if self.total and self.done >= self.total:
            return 0.0
        if self.done <= 0:
            return None
        return self.elapsed * (self.total - self.done) / self.done

    def line(self) -> str:
        return PREFIX + json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def parse(cls, line: str) -> Progress | None:
        """The progress a stage's output line carries, also as a log line with text around it; None for any other."""
        at = line.find(PREFIX)
        if at < 0:
            return None
        fields, _ = json.JSONDecoder().raw_decode(line, at + len(PREFIX))
        return cls(**fields)

    def stalled(self, now: float | None = None) -> bool:
        """A refresh that has not reported for :data:`STALE_SECONDS` without having failed or published."""
        return self.state in ("running", "done") and (now or time.time()) - self.updated > STALE_SECONDS


def note(text: str) -> None:
    """Print a :data:`NOTE` line on standard output, at once."""
    print(NOTE + text, flush=True)


def clock(seconds: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour on."""
    s = int(round(seconds))
    return f"{s // 60}:{s % 60:02d}" if s < 3600 else f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _location(warehouse: str) -> tuple[pafs.FileSystem, str]:
    fs, root = resolve(warehouse)
    return fs, f"{root.rstrip('/')}/{_FOLDER}"


def write_progress(warehouse: str, progress: Progress) -> None:
    """Replace the warehouse's progress record (written aside, then renamed over the old one)."""
    fs, folder = _location(warehouse)
    fs.create_dir(folder, recursive=True)
    temp = f"{folder}/.{_NAME}.{uuid.uuid4().hex[:8]}"
    with fs.open_output_stream(temp) as out:
        out.write(json.dumps(asdict(progress)).encode())
    fs.move(temp, f"{folder}/{_NAME}")


def read_progress(warehouse: str) -> Progress | None:
    """The latest refresh's progress record, None when no refresh has reported any."""
    fs, folder = _location(warehouse)
    path = f"{folder}/{_NAME}"
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return None
    with fs.open_input_stream(path) as fh:
        return Progress(**json.loads(fh.read().decode()))


def mark_published(warehouse: str, refresh_id: int, started: float) -> None:
    """Record that ``refresh_id`` published its snapshot (the last step of every refresh)."""
    last = read_progress(warehouse)
    steps = last.steps if last is not None and last.refresh_id == refresh_id else 1
    write_progress(warehouse, Progress(refresh_id, "publish", steps, steps, "published", 1, 1, "snapshot",
                                       stage_started=started, updated=time.time()))

