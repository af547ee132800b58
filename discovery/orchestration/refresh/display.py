"""What ``lakescout refresh`` shows while its Spark application runs: the stages' progress lines, drawn.

On a terminal, a ``rich`` progress bar per stage (Spark tasks done of those known so far, percentage, elapsed time,
time remaining); the summary line of a finished stage, with its seconds and CPU utilisation, is printed above the
bars.  Anywhere else (a pipe, a log file, CI) plain lines: one per stage at most every :data:`PLAIN_SECONDS` and its
final count, then the stage's summary line.
"""
from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bars, TaskProgressColumn, TextColumn,
                           TaskID, TimeElapsedColumn, TimeRemainingColumn)

from ...stages.progress import Progress, clock

PLAIN_SECONDS = 10.0


def plain_line(p: Progress) -> str:
    share = f"{100 * p.done / p.total:3.0f}%" if p.total else "   -"
    eta = clock(p.eta) if p.eta is not None else "?"
    cpu = "" if p.cpu is None else f"  cpu {100 * p.cpu:.0f}%"
    return f"  {p.stage:<10} {p.done:>5}/{p.total:<5} {p.unit}  {share}  elapsed {clock(p.elapsed)}  eta {eta}{cpu}"


def usage_text(seconds: float | None, cpu: float | None) -> str:
    """``12.3 s  cpu 87%``: a stage's wall seconds and CPU utilisation (CPU s / (wall s x cores)), as known."""
    parts = [] if seconds is None else [f"{seconds:.1f} s"]
    return "  ".join(parts + ["cpu " + ("?" if cpu is None else f"{100 * cpu:.0f}%")])


def summary_line(s: dict) -> str:
    """The line of a finished stage (its ``refresh_runs`` counters, seconds and CPU utilisation)."""
    return (f"  {s['stage']:<10} {s['status']:<7} processed {s['tables_processed']:>6}  added {s['tables_added']}  "
            f"changed {s['tables_changed']}  deleted {s['tables_deleted']}  failed {s['tables_failed']}  "
            f"{usage_text(s.get('seconds'), s.get('cpu'))}")


#: Failed tables the final line of a refresh names (the rest are counted; ``lakescout status`` lists them all).
FAILED_SHOWN = 5


def failed_text(failed: dict) -> str:
    """``; 2 tables failed: a.csv, b.tsv (lakescout status says why)``: the tables this refresh could not index
    (``failed_tables`` of its result), or nothing."""
    count, paths = failed.get("count", 0), failed.get("paths", [])[:FAILED_SHOWN]
    if not count:
        return ""
    more = f" and {count - len(paths)} more" if count > len(paths) else ""
    return f"; {count} table{'s' if count != 1 else ''} failed: {', '.join(paths)}{more} (lakescout status says why)"


def totals(stages: list[dict]) -> dict:
    """Stage seconds summed, and the CPU utilisation over them (seconds-weighted; None if any stage's is unknown)."""
    seconds = sum(s["seconds"] for s in stages)
    known = stages and all(s.get("cpu") is not None for s in stages)
    cpu = round(sum(s["cpu"] * s["seconds"] for s in stages) / seconds, 3) if known and seconds > 0 else None
    return {"stage_seconds": round(seconds, 3), "cpu": cpu}


class RefreshDisplay:
    """Context manager fed with a refresh's progress records and stage reports, in the order the stages print them."""

    def __init__(self, console: Console | None = None, quiet: bool = False):
        self.console = console or Console(highlight=False)
        self.quiet = quiet
        self._bars: Bars | None = None
        self._tasks: dict[str, TaskID] = {}
        self._shown: dict[str, tuple[float, int, int]] = {}

    def __enter__(self) -> RefreshDisplay:
        if not self.quiet and self.console.is_terminal:
            self._bars = Bars(TextColumn("  {task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                              TextColumn("{task.fields[unit]}"), TaskProgressColumn(), TimeElapsedColumn(),
                              TimeRemainingColumn(), console=self.console)
            self._bars.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._bars is not None:
            self._bars.stop()

    def progress(self, p: Progress) -> None:
        if self.quiet:
            return
        if self._bars is None:
            self._plain(p)
            return
        if p.stage not in self._tasks:
            self._tasks[p.stage] = self._bars.add_task(p.stage, total=None, unit=p.unit)
        task = self._tasks[p.stage]
        if p.state == "running":
            self._bars.update(task, completed=p.done, total=p.total or None)
        else:  # a finished stage fills its bar (a stage without Spark tasks too); a failed one stops where it was
            total = p.total or 1
            self._bars.update(task, completed=total if p.state == "done" else p.done, total=total)
            self._bars.stop_task(task)

    def _plain(self, p: Progress) -> None:
        now = time.monotonic()
        last = self._shown.get(p.stage)
        final = p.state != "running" and (last is None or last[1:] != (p.done, p.total))
        if last is None or now - last[0] >= PLAIN_SECONDS or final:
            self._shown[p.stage] = (now, p.done, p.total)
            print(plain_line(p), flush=True)

    def note(self, text: str) -> None:
        """A line about what the refresh is doing between stages (starting Spark, taking the lease)."""
        if self.quiet:
            return
        if self._bars is None:
            print(f"lakescout refresh: {text}", flush=True)
        else:
            self._bars.console.print(f"lakescout refresh: {text}", markup=False, highlight=False, soft_wrap=True)

    def stage_finished(self, report: dict) -> None:
        if self.quiet:
            return
        if self._bars is None:
            print(summary_line(report), flush=True)
        else:
            self._bars.console.print(summary_line(report), markup=False, highlight=False, soft_wrap=True)
