"""What a query loads: the cold CLI path imports no training, Spark or object-storage stack and reads with the system
allocator as Arrow's pool (:mod:`discovery.ground.allocator`), the join encoder's weights are read once
and then mapped, numba's cache (empty, filled, or filled by the install-time warm-up) never changes an answer, and a
warm ``discovery.open`` answers its second query without reading the index tables again.

Behaviour only: no timings are asserted (``benchmarks/latency.py`` measures them).
"""
from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from discovery.data.store import Warehouse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUERIES = {
    "join": ["--query", "partners/vendor_master.csv", "--column", "Vendor"],
    "union": ["--query", "finance/registers/firms.tsv", "-k", "5"],
    "nary": ["--query", "retail/stores/store_locations_q1.csv", "--key", "country,city"],
    "numjoin": ["--query", "geo/weather_stations.csv", "--column", "lat,lng"],
}
#: The CLI command of each kind of query (a numerical join is a ``lakescout join`` on a numeric column).
COMMANDS = {"join": "join", "union": "union", "nary": "nary", "numjoin": "join"}
#: Runs one CLI query in a fresh interpreter; prints the answer, the modules it imported and numba's compilations.
CHILD = """
import io, json, os, sys
compiles = []
if sys.argv[1] == "join":
    from numba.core import event

    class Count(event.Listener):
        def on_start(self, e):
            compiles.append(getattr(e.data.get("dispatcher"), "__qualname__", "?"))

        def on_end(self, e):
            pass

    event.register("numba:compile", Count())
from discovery.surfaces import cli
out, sys.stdout = sys.stdout, io.StringIO()
code = cli.main(sys.argv[1:] + ["--json"])
answer, sys.stdout = sys.stdout.getvalue(), out
import pyarrow as pa
print(json.dumps({"code": code, "answer": json.loads(answer), "modules": sorted(sys.modules), "compiles": compiles,
                  "arrow_pool": pa.default_memory_pool().backend_name}))
sys.stdout.flush()
# as the console script leaves (discovery.surfaces.cli.entry): no interpreter finalisation under Arrow's threads
os._exit(0)
"""


def _run(kind: str, warehouse: str, env: dict | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, COMMANDS[kind], "--warehouse", warehouse, *QUERIES[kind]],
                          capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, **(env or {})))
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["code"] == 0
    return got


def _ranking(answer: dict) -> list:
    return [(r["table_id"], r.get("column"), r.get("joinability", r.get("score")), r.get("matches")) for r in
            answer["results"]]


@pytest.fixture(scope="module")
def warehouse(indexed_lake, tmp_path_factory) -> str:
    """A copy of the indexed sample lake's warehouse (these tests add model files to it)."""
    _, wh = indexed_lake
    copy = str(tmp_path_factory.mktemp("latency") / "warehouse")
    shutil.copytree(wh, copy, ignore=shutil.ignore_patterns("model_files"))
    return copy


@pytest.mark.parametrize("kind", sorted(QUERIES))
def test_a_cli_query_imports_no_training_or_spark_stack(warehouse, kind):
    got = _run(kind, warehouse)
    assert got["answer"]["results"], got["answer"]
    loaded = set(got["modules"])
    for heavy in ("torch", "pyspark", "sklearn", "sentence_transformers", "airflow",  # training, refresh
                  "fsspec", "boto3", "pyiceberg", "scipy.spatial"):  # object storage, lake formats, a baseline
        assert heavy not in loaded, f"a {kind} query imported {heavy}"
    assert got["arrow_pool"] == "system"  # discovery.ground.allocator: the pool that gives freed pages back
    if kind not in ("join", "numjoin"):  # only the join searches run numba kernels
        assert "numba" not in loaded
    if kind == "union":  # the sample lake's assignment problems are small enough to solve without scipy
        assert "scipy.optimize" not in loaded


def test_the_join_encoder_is_mapped_from_its_model_file_with_the_same_answer(warehouse):
    _run("join", warehouse)  # the first query that loads the encoder writes its model file
    files = os.listdir(os.path.join(warehouse, "model_files"))
    assert any(f.startswith("join-") and f.endswith(".bin") for f in files), files
    assert not [f for f in files if f.startswith(".")], "a temporary file was left behind"
    again = _run("join", warehouse)["answer"]
    shutil.rmtree(os.path.join(warehouse, "model_files"))
    fresh = _run("join", warehouse)["answer"]
    assert _ranking(again) == _ranking(fresh) and again["results"]


def test_the_api_reads_with_the_system_allocator_and_leaves_its_children_arrow_default(warehouse):
    """``discovery.open`` in a fresh process imports pyarrow with the system pool; the variable that chose it is gone
    afterwards, so a process it starts keeps Arrow's default; a pool named by the user is kept."""
    script = ("import json, os, subprocess, sys\n"
              "import discovery\n"
              "ls = discovery.open(sys.argv[1])\n"
              "import pyarrow as pa\n"
              "child = subprocess.run([sys.executable, '-c', 'import pyarrow as pa; "
              "print(pa.default_memory_pool().backend_name)'], capture_output=True, text=True).stdout.strip()\n"
              "print(json.dumps([pa.default_memory_pool().backend_name, child,\n"
              "                  os.environ.get('ARROW_DEFAULT_MEMORY_POOL'), len(ls.tables()) > 0]))\n"
              "sys.stdout.flush()\n"
              "os._exit(0)\n")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    runs = {}
    for named in (None, "jemalloc"):
        done = subprocess.run([sys.executable, "-c", script, warehouse], capture_output=True, text=True, cwd=ROOT,
                              env=dict(env, **({"ARROW_DEFAULT_MEMORY_POOL": named} if named else {})))
        assert done.returncode == 0, done.stderr[-3000:]
        runs[named] = json.loads(done.stdout.strip().splitlines()[-1])
    default_pool = runs[None][1]
    assert default_pool != "system"  # Arrow's own default here (mimalloc or jemalloc, by build)
    assert runs[None] == ["system", default_pool, None, True]
    assert runs["jemalloc"] == ["jemalloc", "jemalloc", "jemalloc", True]


def test_union_does_not_load_the_join_encoder(warehouse):
    """The join encoder's weights are most of the models' bytes; a union query has no use for them."""
    import discovery
    from discovery.transforms.encoders import stored
    from discovery.data.store.cache import INDEXES

    INDEXES.clear()
    seen = []
    original = stored.payload
    stored.payload = lambda root, name, version, *a: seen.append(name) or original(root, name, version, *a)
    try:
        discovery.open(warehouse).union("finance/registers/firms.tsv", k=5)
    finally:
        stored.payload = original
    assert "encoder.join" not in seen


def test_numba_cache_empty_filled_or_warmed_up_gives_the_same_answer(warehouse, tmp_path):
    empty = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    first = _run("join", warehouse, empty)
    assert first["compiles"], "an empty numba cache should make the first join query compile its kernels"
    second = _run("join", warehouse, empty)
    assert second["compiles"] == [], "a filled cache should serve every kernel"
    warmed = {"NUMBA_CACHE_DIR": str(tmp_path / "warmed")}
    subprocess.run([sys.executable, "-m", "discovery.indexes.join.warmup"], check=True, cwd=ROOT, capture_output=True,
                   env=dict(os.environ, **warmed))
    after_warmup = _run("join", warehouse, warmed)
    assert after_warmup["compiles"] == [], f"the warm-up missed {after_warmup['compiles']}"
    assert _ranking(first["answer"]) == _ranking(second["answer"]) == _ranking(after_warmup["answer"])
    assert first["answer"]["results"]


def test_a_warm_api_answers_again_without_reading_the_index(warehouse, monkeypatch):
    """The second and later queries of a kept ``discovery.open`` find catalog, models and indexes in memory; the
    join reads only the evidence strings of its results from ``value_vectors``."""
    import discovery

    ls = discovery.open(warehouse)
    calls = {
        "union": lambda: ls.union("finance/registers/firms.tsv", k=5),
        "join": lambda: ls.join("partners/vendor_master.csv", "Vendor"),
        "nary": lambda: ls.nary("retail/stores/store_locations_q1.csv", "country,city"),
    }
    first = {kind: call() for kind, call in calls.items()}
    reads = []
    original = Warehouse.read
    monkeypatch.setattr(Warehouse, "read", lambda self, name, *a, **k: reads.append(name) or original(self, name, *a,
                                                                                                         **k))
    for kind, call in calls.items():
        reads.clear()
        again = call()
        assert _ranking(again) == _ranking(first[kind])
        assert set(reads) <= ({"value_vectors"} if kind == "join" else set()), (kind, reads)


def test_small_assignments_are_solved_exactly_without_scipy():
    """The enumeration that spares union queries scipy's import finds matchings of the same cardinality and weight
    as scipy's solver on the whole problem, on random admissible patterns with ties (up to 7 x 7: all enumerated)."""
    from scipy.optimize import linear_sum_assignment

    from discovery.indexes.union.matching import match_entries

    rng = np.random.default_rng(0)
    for n_rows, n_cols in list(itertools.product(range(1, 8), repeat=2)) * 20:
        ok = rng.random((n_rows, n_cols)) < 0.6
        sims = rng.choice([0.7, 0.75, 0.8, 0.9], size=ok.shape).astype(np.float32).astype(np.float64)
        rows, cols = np.nonzero(ok)
        got = match_entries(rows, cols, sims[rows, cols])
        assert len({r for r, _, _ in got.pairs}) == len(got.pairs) == len({c for _, c, _ in got.pairs})
        assert all(ok[r, c] and s == sims[r, c] for r, c, s in got.pairs)
        bonus = min(ok.shape) * 1.0 + 1.0
        r, c = linear_sum_assignment(np.where(ok, sims + bonus, 0.0), maximize=True)
        keep = ok[r, c]
        assert (len(got.pairs), got.score) == (int(keep.sum()), float(sims[r[keep], c[keep]].sum()))


def test_numerical_join_warm_up_leaves_nothing_to_compile(warehouse, tmp_path):
    """``make venv`` runs ``discovery.indexes.numjoin.warmup``: the first coordinate join after it compiles no kernel
    (it maps the published arrays read-only, a type of its own to numba) and answers as a cold cache does."""
    cold = _run("numjoin", warehouse, {"NUMBA_CACHE_DIR": str(tmp_path / "cold")})
    assert cold["compiles"], "an empty numba cache should make the first numerical join compile its kernels"
    warmed = {"NUMBA_CACHE_DIR": str(tmp_path / "warmed")}
    subprocess.run([sys.executable, "-m", "discovery.indexes.numjoin.warmup"], check=True, cwd=ROOT,
                   capture_output=True,
                   env=dict(os.environ, **warmed))
    after = _run("numjoin", warehouse, warmed)
    assert after["compiles"] == [], f"the warm-up missed {after['compiles']}"
    assert after["answer"]["results"] and _ranking(after["answer"]) == _ranking(cold["answer"])
