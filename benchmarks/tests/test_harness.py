"""The harness's measurements: a child's own CPU time, peak RSS and output, a process's high-water mark; and the
fivethirtyeight ground truth."""
from __future__ import annotations

import os
import sys
import threading

import pytest

import harness

#: A child that holds ``argv[1]`` MB resident, burns CPU, and prints a JSON line after a line of chatter.
CHILD = """
import json, sys
block = bytearray(int(sys.argv[1]) << 20)
block[::4096] = b"x" * len(block[::4096])  # touched, so resident
total = sum(range(3_000_000))
print("working")
print(json.dumps({"mb": int(sys.argv[1]), "total": total}))
"""


def test_a_child_is_measured_alone():
    big = harness.python(CHILD, 200)
    assert big.json() == {"mb": 200, "total": sum(range(3_000_000))}
    assert big.peak_rss_mb >= 200 and big.cpu > 0 and big.wall > 0
    held = bytearray(300 << 20)
    held[::4096] = b"x" * len(held[::4096])
    small = harness.python(CHILD, 10)
    # neither the earlier, larger child nor this process's own 300 MB is counted in the small one's peak
    assert harness.peak_rss_mb() >= 300 and small.peak_rss_mb < 100


def test_children_run_from_threads_keep_their_own_figures():
    runs = {}
    threads = [threading.Thread(target=lambda mb: runs.__setitem__(mb, harness.python(CHILD, mb)), args=(mb,))
               for mb in (10, 300)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert runs[300].peak_rss_mb >= 300 > 100 > runs[10].peak_rss_mb


#: A parent that starts a long child holding ``argv[1]`` MB (its command line carries ``held-child``) and, while it
#: runs, many children that end at once: a reading of the watched processes meets children gone mid-reading.
PARENT = """
import subprocess, sys
held = ("import sys, time; b = bytearray(int(sys.argv[1]) << 20); b[::4096] = b'x' * len(b[::4096]); "
        "time.sleep(3)")
child = subprocess.Popen([sys.executable, "-c", held, sys.argv[1], "held" + "-child"])  # only the child's names it
while child.poll() is None:
    subprocess.run([sys.executable, "-S", "-c", "pass"])
"""


def test_a_watched_child_is_read_while_others_come_and_go():
    done = harness.run([sys.executable, "-c", PARENT, "150"], watch=("held-child", "no such child"))
    assert done.watched_peaks["held-child"] >= 150 and done.watched_peaks["no such child"] == 0
    assert done.watched_peak_mb == done.watched_peaks["held-child"]


def test_a_failed_run_raises_with_its_stderr_unless_told_not_to():
    failing = [sys.executable, "-c", "import sys; sys.exit('no such table')"]
    with pytest.raises(harness.RunFailed, match="no such table"):
        harness.run(failing)
    done = harness.run(failing, check=False)
    assert done.returncode == 1 and "no such table" in done.stderr
    with pytest.raises(ValueError, match="no JSON"):
        done.json()


def test_peak_rss_is_the_high_water_mark_of_a_process():
    block = b"x" * (64 << 20)  # written, so resident
    assert block[-1:] == b"x" and harness.peak_rss_mb(os.getpid()) >= 64
    del block
    assert harness.peak_rss_mb() >= 64  # a high-water mark: freeing does not lower it
    with open("/proc/sys/kernel/pid_max") as fh:
        assert harness.peak_rss_mb(int(fh.read()) + 1) is None  # no such process


def test_summary_of_repeats():
    assert harness.summary([3.0, 1.0, 2.0]) == {"median": 2.0, "mean": 2.0, "min": 1.0, "max": 3.0, "runs": 3}


def test_fivethirtyeight_truth_unions_the_files_of_one_article_folder(tmp_path):
    for rel in ("polls/a.csv", "polls/b.csv", "polls/2020/c.csv", "alone/x.csv", "notes/readme.txt", "top.csv"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("h\n1\n")
    assert harness.fivethirtyeight_truth(tmp_path) == {"polls/2020/c.csv": {"polls/a.csv", "polls/b.csv"}}
