"""Union quality against k in the benchmarks: the TACTUS §6.1 metrics at every cut-off, and the plot drawn from them."""
from __future__ import annotations

import json
import os

import numpy as np
import plots
import pytest

from harness import metric_curves, metrics


def test_curves_at_every_cutoff_are_the_metrics_of_the_prefix():
    rng = np.random.default_rng(0)
    for _ in range(50):
        ranked = [str(x) for x in rng.integers(0, 30, 20)]
        truth = {str(x) for x in rng.integers(0, 30, 8)}
        map_at, p_at, r_at = metric_curves(ranked, truth, 20)
        for i in range(1, 21):
            assert (map_at[i - 1], p_at[i - 1], r_at[i - 1]) == pytest.approx(metrics(ranked[:i], truth, i))


def test_metrics_by_hand_and_short_answers_count_as_misses():
    # hits at ranks 1 and 3: P@1..3 = 1, 1/2, 2/3; MAP@3 = (1 + 1/2 + 2/3) / 3
    assert metrics(["a", "x", "b"], {"a", "b", "c", "d"}, 3) == pytest.approx((13 / 18, 2 / 3, 1 / 2))
    assert metrics(["a"], {"a"}, 3) == pytest.approx(((1 + 1 / 2 + 1 / 3) / 3, 1 / 3, 1.0))
    assert metrics([], {"a"}, 2) == (0.0, 0.0, 0.0)
    assert metrics([str(i) for i in range(12)], {"0"}) == pytest.approx(metrics([str(i) for i in range(10)], {"0"}))


def test_k_plot_from_a_run_records_its_curves(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = [0.5, 0.4, 0.3]
    rows = [{"method": m, "MAP@k": curve, "P@k": curve, "R@k": curve,
             "at": {"1": {"MAP": 0.6, "P": 0.6, "R": 0.2, "differs_from_prefix": 2 if m == "tactus" else 0}}}
            for m in ("exact", "pgtus++", "tactus")]
    results = tmp_path / "results"
    results.mkdir()
    (results / "union_quality_ugen.json").write_text(json.dumps(
        {"at": "2026-11-26T05:00:00", "k": 3, "lakes": [{"lake": "UGEN-V1", "queries": 50, "results": rows}]}))
    monkeypatch.setattr(plots, "RESULTS", str(results))
    monkeypatch.setattr(plots, "UNION_K_RECORDED", str(tmp_path / "recorded.json"))
    png = plots.plot_union_quality_vs_k(plt, str(tmp_path), record=True)
    assert os.path.getsize(png) > 0
    recorded = json.loads((tmp_path / "recorded.json").read_text())["lakes"]["UGEN-V1"]
    assert recorded["k"] == 3 and recorded["methods"]["exact"]["MAP@k"] == curve
    # only an answer that is not the prefix of the top-k one is kept as a marker
    assert recorded["methods"]["tactus"]["direct"] == {"1": {"MAP": 0.6, "P": 0.6, "R": 0.2}}
    assert recorded["methods"]["exact"]["direct"] == {}
    # with no run, the plot is drawn from the recorded curves
    monkeypatch.setattr(plots, "RESULTS", str(tmp_path / "none"))
    assert plots.union_k_curves(False)[0]["UGEN-V1"]["methods"] == recorded["methods"]
