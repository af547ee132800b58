"""``benchmarks/refresh.py --scale``: the scales it accepts, and lakes assembled from generated parts."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from discovery.data.lake import list_lake
from discovery.orchestration.demo_lake import load_ground_truth
from harness import ROOT
from refresh_scale import PART, assemble, build_parts, parse_scales


def test_scales_are_sorted_multiples_of_a_part():
    assert parse_scales("4000, 1000,1000") == [1000, 4000]
    for bad in ("", "100", "1001", "-250", "1k"):
        with pytest.raises(ValueError, match="--scale"):
            parse_scales(bad)


def test_bad_scale_is_a_one_line_error_with_exit_2():
    out = subprocess.run([sys.executable, "benchmarks/refresh.py", "--scale", "1k"], cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["error: --scale: expected comma-separated table counts, got '1k'"]


def test_lake_holds_distinct_parts_without_their_ground_truth(tmp_path):
    parts = build_parts(str(tmp_path), 2)
    assert build_parts(str(tmp_path), 2) == parts  # generated parts are reused
    lake = assemble(str(tmp_path), parts, 2 * PART)
    listed = list_lake(lake)
    assert len(listed) == 2 * PART and not any(p.startswith("_") for p in os.listdir(os.path.join(lake, "p000")))
    for i, part in enumerate(parts):
        gt = {t["path"] for t in load_ground_truth(part)["tables"]}
        assert {f.path[5:] for f in listed if f.path.startswith(f"p{i:03d}/")} == gt
    first, second = (sorted(os.listdir(os.path.join(lake, p))) for p in ("p000", "p001"))
    same = [f for f in set(first) & set(second) if os.path.isfile(os.path.join(lake, "p000", f))]
    assert all(open(os.path.join(lake, "p000", f), "rb").read() != open(os.path.join(lake, "p001", f), "rb").read()
               for f in same)  # other seeds: other content (and content hashes)
