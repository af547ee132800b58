"""The soak, short: two cycles of lake edits, a refresh killed with SIGKILL each cycle, maintenance with log expiry,
searches, each completed refresh checked against a fault-free twin and a fresh full build (``soak_run.py``; the
long run is ``benchmarks/soak.py``).

Seeded throughout; what it asserts (no mismatch, no missing file, no failed search) does not depend on where the
kills land, which varies with the machine's speed."""
from __future__ import annotations

from lake_edits import Editor, make_lake
from soak_run import soak


def test_soak_cycles_agree_with_the_twin_and_a_fresh_build(spark, tmp_path):
    report = soak(spark, str(tmp_path), cycles=2, seed=3, kill_share=1.0, max_kill_delay=12.0, maintain_every=2,
                  fresh_every=2, log=lambda s: None)
    assert report["cycles"] == 2 and report["refreshes"] == 2
    assert report["refresh_attempts_killed"] + report["kill_attempts_ended_first"] == 2
    assert report["maintenance_runs"] == 1
    # every kill after the lease left it held and the next refresh took it over at once (checked: no mismatch below)
    assert report["lease_takeovers"] == sum(n for at, n in report["killed_at"].items() if at != "before the lease")
    assert report["mismatches"] == []
    assert report["missing_files"] == []
    assert report["search_failures"] == []
    assert report["searches"] > 0
    # the goal: the warehouse after maintenance within 1.5x a fresh build; each byte counted once
    (sizes,) = report["size_breakdown"]
    assert sizes["ratio"] <= 1.5
    for side in ("faulted", "fresh"):
        categories = sizes[side]["categories"]
        assert min(categories.values()) >= 0 and sum(categories.values()) == sizes[side]["total"]


def test_lake_edits_are_seeded(tmp_path):
    import random

    done = []
    for run in ("a", "b"):
        rng = random.Random(5)
        make_lake(str(tmp_path / run), rng)
        editor = Editor(str(tmp_path / run), rng)
        done.append([editor.cycle() for _ in range(4)])
    assert done[0] == done[1]
