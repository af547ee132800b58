"""Where the shared data and the results are, printing a table, writing a result file, the machine's load."""
from __future__ import annotations

import json
import os
import sys
import threading
from datetime import datetime, UTC

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("LAKESCOUT_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
#: Seconds between two load-average samples of a :class:`LoadSampler`.
LOAD_EVERY = 5.0


def shared_path(*parts: str) -> str | None:
    """Path of a shared benchmark data set, or None (with a message) when it is not there."""
    path = os.path.join(SHARED, "benchmarks", *parts)
    if not os.path.exists(path):
        print(f"skipping: {path} not found (set LAKESCOUT_SHARED to the folder holding benchmarks/)", file=sys.stderr)
        return None
    return path


def print_table(rows: list[dict], columns: list[str]) -> None:
    cells = [[_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 100 else f"{v:.1f}"
    return "" if v is None else str(v)


def result_path(name: str) -> str:
    return os.path.join(RESULTS, f"{name}.json")


def previous_result(name: str, keys: tuple[str, ...] | None = None, path: str | None = None) -> dict:
    """The last run's result file (``keys`` of it only, when given), or {}: scripts whose parts run one at a time
    keep the parts a run did not measure again."""
    path = path or result_path(name)
    if not os.path.exists(path):
        return {}
    with open(path) as fh:
        old = json.load(fh)
    return old if keys is None else {k: v for k, v in old.items() if k in keys}


def write_result(name: str, payload: dict, *, stamp: bool = True, path: str | None = None, indent: int = 2,
                 default=str) -> str:
    """Write ``payload`` to ``benchmarks/results/<name>.json`` (or ``path``); ``stamp`` adds the benchmark's name, the
    time and the machine's CPU count in front."""
    path = str(path or result_path(name))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if stamp:
        payload = {"benchmark": name, "at": datetime.now(UTC).isoformat(),
                   "machine": {"cpus": os.cpu_count()}, **payload}
    with open(path, "w") as fh:
        json.dump(payload, fh, indent=indent, default=default)
    print(f"\nwrote {path}")
    return path


def load_average() -> str:
    """The 1, 5 and 15-minute load averages, as ``uptime`` prints them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class LoadSampler:
    """The 1-minute load average every :data:`LOAD_EVERY` seconds while a ``with`` block lasts (first sample at its
    start): the machine may be shared, and a figure is read beside the load it was measured under."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(LOAD_EVERY):
                return

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict:
        return {"min": min(self.samples), "mean": sum(self.samples) / len(self.samples), "max": max(self.samples)}
