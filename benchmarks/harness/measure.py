"""Running and timing: a command or the CLI in a child process (wall, CPU, peak resident memory), repeats and their
summary, and a process's memory figures from ``/proc``.

A command runs under a small launcher (:data:`LAUNCHER`) that forks it, waits for it and reports what ``wait4`` says
of it: its wall time from fork to exit, CPU time and peak RSS (with the processes it waited for).  The launcher is
what makes the peak the command's own: Linux carries a process's high-water mark across ``exec`` into its resource
accounting, so a command started straight from the benchmark (``subprocess`` forks, or vforks, and execs) reports at
least the benchmark's own peak, hundreds of MB once it has refreshed a lake; forked from the launcher, a few MB of
interpreter, it starts from the launcher's.  ``wait4`` also keeps runs started from threads apart, which differences
of ``RUSAGE_CHILDREN`` would mix.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

#: The venv's ``lakescout``: the console script beside the interpreter running the benchmark.
LAKESCOUT = os.path.join(os.path.dirname(sys.executable), "lakescout")
#: Seconds between two readings of a watched descendant's memory.
WATCH_EVERY = 0.2
#: The launcher: forks the command, waits for it, writes "wall cpu maxrss_kb" to the descriptor it was given and
#: exits with the command's code (128 + signal when a signal ended it).  It runs with ``-S -E`` (no site, no
#: environment options), so it starts in milliseconds and what it forks starts small.
LAUNCHER = r"""
import os, sys, time
fd = int(sys.argv[1])
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.close(fd)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as exc:
        os.write(2, f"{sys.argv[2]}: {exc}\n".encode())
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(fd, f"{time.perf_counter() - started} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}".encode())
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""


@dataclass
class Run:
    """One finished command as :func:`run` saw it."""

    cmd: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall: float
    cpu: float
    peak_rss_mb: float
    #: Peak RSS of the watched descendants (see :func:`run`), or None.
    watched_peak_mb: float | None = None
    #: Each watched substring's peak RSS (MiB).
    watched_peaks: dict = field(default_factory=dict)

    def json(self):
        """The last line of stdout that is a JSON object or array (what ``--json`` and the child programs print)."""
        lines = [ln for ln in self.stdout.splitlines() if ln.startswith(("{", "["))]
        if not lines:
            raise ValueError(f"{' '.join(self.cmd[:3])} printed no JSON: {self.stdout[-500:]!r}")
        return json.loads(lines[-1])


class RunFailed(RuntimeError):
    pass


def run(cmd: list[str], *, env: dict | None = None, cwd: str | None = None, check: bool = True,
        watch: str | tuple[str, ...] | None = None) -> Run:
    """Run ``cmd`` to its end under :data:`LAUNCHER`: wall seconds from fork to exit, CPU seconds (user + system)
    and peak RSS of the command and the processes it waited for.  ``watch``: a substring (or several) of the command
    line of descendants (e.g. the Python driver a ``spark-submit`` starts; not a JVM, whose command line names the
    application too) whose own high-water mark (``VmHWM``) is read every :data:`WATCH_EVERY` seconds while the
    command runs (growth in its last moments can escape the reading); each substring's peak is in
    :attr:`Run.watched_peaks`, the highest in :attr:`Run.watched_peak_mb`."""
    cmd = [str(c) for c in cmd]
    report, write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-S", "-E", "-c", LAUNCHER, str(write), *cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, pass_fds=(write,))
    os.close(write)
    streams: dict[str, str] = {}
    readers = [threading.Thread(target=lambda name, fh: streams.__setitem__(name, fh.read()), args=(name, fh))
               for name, fh in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    for t in readers:
        t.start()
    watched, peaks = None, {}
    if watch is not None:
        import psutil

        names = (watch,) if isinstance(watch, str) else tuple(watch)
        peaks = dict.fromkeys(names, 0)
        while proc.poll() is None:
            try:
                children = psutil.Process(proc.pid).children(recursive=True)
            except psutil.Error:
                children = []
            for child in children:
                try:           # one child gone between the listing and the reading skips that child only
                    line = child.cmdline()
                except psutil.Error:
                    continue
                if not line or os.path.basename(line[0]) == "java":
                    continue
                for name in names:
                    if name in " ".join(line):
                        peaks[name] = max(peaks[name], proc_status("VmHWM", child.pid) or 0)
            time.sleep(WATCH_EVERY)
        peaks = {name: peak / 2 ** 20 for name, peak in peaks.items()}
        watched = max(peaks.values())
    proc.wait()
    for t in readers:
        t.join()
    with os.fdopen(report) as fh:
        wall, cpu, maxrss_kb = (float(x) for x in fh.read().split())
    done = Run(cmd, proc.returncode, streams["stdout"], streams["stderr"], wall, cpu, maxrss_kb / 1024, watched,
               peaks)
    if check and done.returncode != 0:
        raise RunFailed(f"{' '.join(cmd[:4])} ... exited with {done.returncode}:\n{done.stderr[-3000:]}")
    return done


def cli(*args: str, env: dict | None = None, check: bool = True, watch: str | tuple[str, ...] | None = None) -> Run:
    """``lakescout <args>`` as a user runs it, timed by :func:`run`."""
    return run([LAKESCOUT, *args], env=env, check=check, watch=watch)


def python(program: str, *args: str, env: dict | None = None, cwd: str | None = None) -> Run:
    """``python -c <program> <args>`` in a fresh interpreter (the venv's), timed by :func:`run`: what a measured
    step costs on its own, imports included unless the program times itself."""
    return run([sys.executable, "-c", program, *map(str, args)], env=env, cwd=cwd)


def proc_status(field: str, pid: int | str = "self") -> int | None:
    """A byte figure of a process from ``/proc/<pid>/status`` (``VmHWM``, ``VmRSS``, ``RssAnon``, ...); None where
    the process or the field is missing."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            kb = next((int(line.split()[1]) for line in fh if line.startswith(field + ":")), None)
    except OSError:
        return None
    return None if kb is None else kb * 1024


def peak_rss_mb(pid: int | str = "self") -> float | None:
    """Peak resident memory of a process in MB (its kernel high-water mark ``VmHWM``; None where /proc has none)."""
    peak = proc_status("VmHWM", pid)
    return None if peak is None else peak / 2 ** 20


def timed(fn, *args, **kwargs) -> tuple[object, float, float]:
    """``fn(*args, **kwargs)`` in this process: (its result, wall seconds, CPU seconds of this process)."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0, time.process_time() - c0


def summary(values: list[float]) -> dict:
    """Median, mean, min and max of repeated measurements."""
    return {"median": statistics.median(values), "mean": statistics.fmean(values), "min": min(values),
            "max": max(values), "runs": len(values)}
