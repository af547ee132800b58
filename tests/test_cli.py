"""The lakescout command line: refresh through spark-submit, status as text and JSON, clear errors."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import psutil
import pytest

from discovery.config import load_config
from discovery.data.store import Warehouse

BIN = os.path.dirname(sys.executable)


def _cli(*args, timeout=600):
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), PYSPARK_PYTHON=sys.executable)
    return subprocess.run([os.path.join(BIN, "lakescout"), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.mark.spark
def test_refresh_then_status(small_lake, tmp_path):
    wh = str(tmp_path / "wh")
    proc = _cli("refresh", "--lake", small_lake, "--warehouse", wh, "--master", "local[2]")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "published snapshot 1" in proc.stdout and "scan" in proc.stdout
    # Each stage's summary line and the final line give seconds and CPU utilisation (a local master: known).
    for stage in ("scan", "profile", "embed", "centroids", "pivots", "xash", "numeric"):
        assert re.search(rf"^  {stage} +ok .* \d+\.\d s  cpu \d+%$", proc.stdout, re.MULTILINE), proc.stdout
    final = proc.stdout.splitlines()[-1]
    assert re.fullmatch(r"published snapshot 1 .* \(stages \d+\.\d s  cpu \d+%\); (\d+) tables failed: (.*) "
                        r"\(lakescout status says why\)", final), final
    # What it does shows from the first line: the checks, then Spark starting, before any stage reports.
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("lakescout refresh: checking the lake")
    first_stage = next(i for i, line in enumerate(lines) if line.startswith("  scan"))
    assert {"lakescout refresh: starting Spark (local[2])", "lakescout refresh: Spark started (local[2], 2 cores)",
            "lakescout refresh: taking the warehouse lease, checking the index tables"} <= set(lines[:first_stage])
    st = _cli("status", "--warehouse", wh, "--json")
    assert st.returncode == 0
    data = json.loads(st.stdout)
    assert data["snapshot"]["snapshot_id"] == 1
    assert data["tables"]["error"] == len(data["errors"]) > 0
    assert all(e["reason"] for e in data["errors"])
    # The final line names the tables this refresh could not index (the first five, then how many more).
    failed = sorted(e["path"] for e in data["errors"])
    count, named = re.fullmatch(r".*; (\d+) tables failed: (.*) \(lakescout status says why\)", final).groups()
    more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
    assert int(count) == len(failed) and named == ", ".join(failed[:5]) + more
    catalog = Warehouse(wh).read("catalog").sort_by("path").to_pylist()
    live = [r["format"] for r in catalog if r["status"] != "deleted"]
    assert data["formats"] == {f: live.count(f) for f in sorted(set(live))}
    assert [e["path"] for e in data["errors"]] == [r["path"] for r in catalog if r["status"] in ("error", "stale")]
    warned = [r["path"] for r in catalog if r["status"] == "ok" and r["warnings"] not in (None, "", "[]")]
    assert [w["path"] for w in data["warnings"]] == warned and warned
    text = _cli("status", "--warehouse", wh).stdout
    assert "failed and stale tables" in text and "header only: no data rows" in text
    # The CLI returned at the application's answer; the application then ends on its own: none of its processes
    # (spark-submit's JVM, the Python driver: their command lines name the warehouse) stays.
    deadline = time.monotonic() + 120
    while _naming(wh) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _naming(wh)


def _naming(text: str) -> list[int]:
    """Live processes with ``text`` in their command line."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and any(text in a for a in proc.info["cmdline"] or ()):
            found.append(proc.pid)
    return found
    assert "refresh" in text and "profile" in text


def test_clear_errors_for_bad_input(tmp_path):
    missing = _cli("status", "--warehouse", str(tmp_path / "none"))
    assert missing.returncode == 2 and "no Lakescout warehouse" in missing.stderr and "Traceback" not in missing.stderr
    nolake = _cli("refresh", "--lake", str(tmp_path / "nolake"), "--warehouse", str(tmp_path / "wh"))
    assert nolake.returncode == 2 and "does not exist" in nolake.stderr and "Traceback" not in nolake.stderr
    unset = {k: v for k, v in os.environ.items() if k not in ("LAKESCOUT_WAREHOUSE", "LAKESCOUT_CONFIG")}
    usage = subprocess.run([os.path.join(BIN, "lakescout"), "status"], capture_output=True, text=True, env=unset,
                           cwd=tmp_path)
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1
    assert "--warehouse" in usage.stderr and "$LAKESCOUT_WAREHOUSE" in usage.stderr


def test_argument_errors_are_one_line(tmp_path):
    """argparse's own refusals (missing, unknown or unconvertible options, unknown commands) read like every other
    bad input: one stderr line naming the command, exit 2 (tests/test_params_fuzz.py drives the values)."""
    wh = str(tmp_path)
    for args in (["union", "--warehouse", wh], ["union", "--warehouse", wh, "--query", "q.csv", "-k", "ten"],
                 ["nary", "--bogus"], ["no-such-command"]):
        proc = _cli(*args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (args, proc.stderr)
        assert proc.stderr.startswith("lakescout") and "Traceback" not in proc.stderr and "usage:" not in proc.stderr


def test_bad_config_is_named(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[limits]\nmax_rowz = 3\n")
    proc = _cli("refresh", "--lake", str(tmp_path), "--warehouse", str(tmp_path / "wh"), "--config", str(cfg))
    assert proc.returncode == 2 and "max_rowz" in proc.stderr


def test_a_bad_encoder_is_named_when_the_configuration_is_read(tmp_path):
    """``[embed] header_encoder`` / ``column_encoder`` naming no encoder stops a command before any work (not the
    embed stage, after the scan and profile): the file, section, key and the allowed values on one line, exit 2."""
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "t.csv").write_text("a,b\n1,2\n")
    for key, command in (("header_encoder", ["refresh", "--lake", str(lake)]),
                         ("column_encoder", ["union", "--query", "t.csv"])):
        cfg = tmp_path / f"{key}.toml"
        cfg.write_text(f'[embed]\n{key} = "bert"\n')
        said = (f"configuration file {str(cfg)!r}: [embed] {key} = 'bert' is not an encoder; allowed: 'hash', "
                "'sentence-transformers'")
        with pytest.raises(ValueError) as refused:
            load_config(cfg)
        assert str(refused.value) == said
        proc = _cli(*command, "--warehouse", str(tmp_path / "wh"), "--config", str(cfg))
        assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"lakescout {command[0]}: {said}\n")
    assert not (tmp_path / "wh").exists() and os.listdir(lake) == ["t.csv"]
    cfg.write_text('[embed]\ncolumn_encoder = "sentence-transformers"\nmodel_dir = ""\n')
    with pytest.raises(ValueError, match=r"column_encoder.toml.*'sentence-transformers' needs \[embed\] model_dir"):
        load_config(cfg)
    cfg.write_text('[embed]\ncolumn_encoder = "sentence-transformers"\nheader_encoder = "hash"\n')
    embed = load_config(cfg).embed
    assert (embed.column_encoder, embed.header_encoder) == ("sentence-transformers", "hash")


def test_a_value_of_the_wrong_kind_is_named_when_the_configuration_is_read(tmp_path):
    """A string where a number belongs, a flag where a number belongs, a pattern where a list belongs, a header
    channel the embed stage could not weigh: refused when the file is read, one line naming the file, section and
    key, before any work; a whole number where a number belongs is a number."""
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "t.csv").write_text("a,b\n1,2\n")
    cases = [('[limits]\nmax_rows = "ten"\n', "[limits] max_rows = 'ten' must be a whole number"),
             ("[union]\ndrift_threshold = true\n", "[union] drift_threshold = True must be a number"),
             ('[lake]\ninclude = "sales/**"\n', "[lake] include = 'sales/**' must be a list"),
             ("[embed]\nheader_dim = 0\n", "[embed] header_dim must be at least 1, not 0"),
             ("[embed]\nheader_weight = 1.5\n", "[embed] header_weight must be in [0, 1), not 1.5")]
    cfg = tmp_path / "lakescout.toml"
    for text, said in cases:
        cfg.write_text(text)
        with pytest.raises(ValueError) as refused:
            load_config(cfg)
        assert str(refused.value) == f"configuration file {str(cfg)!r}: {said}"
        proc = _cli("refresh", "--lake", str(lake), "--warehouse", str(tmp_path / "wh"), "--config", str(cfg))
        assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"lakescout refresh: {refused.value}\n")
    assert not (tmp_path / "wh").exists()
    cfg.write_text("[union]\ndrift_threshold = 1\n[join]\nmemory_budget_mb = 0.5\n[lake]\ninclude = [\"*.csv\"]\n")
    loaded = load_config(cfg)  # a number key takes a whole number, and a fraction even when its default is whole
    assert (loaded.union.drift_threshold, loaded.join.memory_budget_mb, list(loaded.lake.include)) == \
        (1, 0.5, ["*.csv"])


def test_demo_lake_command(tmp_path):
    proc = _cli("demo-lake", str(tmp_path / "lake"), "--json")
    assert proc.returncode == 0
    summary = json.loads(proc.stdout)
    from discovery.data.lake import list_lake

    tables = {t.path: t.format for t in list_lake(str(tmp_path / "lake"))}
    assert summary["n_tables"] == len(tables) == 300
    # one union family laid out as the lakehouse datasets a lake holds, each listed as one table of its format
    kinds = {layout: tables[path] for layout, path in summary["lakehouse_tables"].items()}
    assert kinds["delta"] == "delta" and kinds["iceberg"] == "iceberg" and kinds["csv.gz"] == "csv.gz"
    assert kinds["jsonl"] == "json" and kinds["parts"] == "parts/parquet"
    assert kinds["hive"].startswith(("hive/", "parts/"))


@pytest.mark.spark
def test_batch_command_records_results(indexed_lake, tmp_path):
    from discovery.orchestration.demo_lake import load_ground_truth
    from test_readme import linked_copy

    lake, wh = indexed_lake[0], str(tmp_path / "wh")
    linked_copy(indexed_lake[1], wh)          # it records a batch: the session's warehouse stays as it is

    q = load_ground_truth(lake)["union"][0]["query_table"]
    spec = tmp_path / "batch.json"
    spec.write_text(json.dumps({"queries": [{"kind": "union", "query": q, "k": 3}]}))
    proc = _cli("batch", "--warehouse", wh, "--spec", str(spec), "--batch-id", "cli-test", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["batch_id"] == "cli-test"
    from discovery.data.store import Warehouse

    rows = [r for r in Warehouse(wh).read("query_results").to_pylist() if r["batch_id"] == "cli-test"]
    assert [r["rank"] for r in rows] == [1, 2, 3] and all(r["kind"] == "union" for r in rows)
    human = _cli("batch", "--warehouse", wh, "--spec", str(spec), "--batch-id", "cli-test")   # recorded already
    assert human.returncode == 0 and re.fullmatch(
        rf"batch cli-test \(batch\)  snapshot {summary['snapshot_id']}  1 query, 3 results in \d+\.\d s, recorded in "
        "query_results", human.stdout.splitlines()[0]), human.stdout
    header, rule, row = human.stdout.splitlines()[1:4]
    assert header.split() == ["id", "kind", "query", "results", "score", "best"]
    assert row.split()[:4] == [summary["queries"][0]["id"], "union", q, "3"]
    assert row.split()[-1] == summary["queries"][0]["top"][0]["path"]
    spec.write_text(json.dumps({"queries": [{"kind": "union", "query": "missing.csv"}]}))
    bad = _cli("batch", "--warehouse", wh, "--spec", str(spec))
    assert bad.returncode == 2 and "query 0" in bad.stderr and "Traceback" not in bad.stderr


def test_no_command_prints_the_commands_and_an_example():
    proc = _cli()
    assert proc.returncode == 0 and proc.stderr == ""
    for command in ("refresh", "status", "batch", "demo-lake", "union", "join", "nary"):
        assert re.search(rf"^  {command} +\S", proc.stdout, re.MULTILINE), command
    assert "example:  lakescout demo-lake" in proc.stdout


#: Run ``lakescout ARGS`` in a fresh interpreter and print, on the last line, which heavy modules it had imported.
HEAVY = ("torch", "numba", "pyarrow", "pandas", "pyiceberg", "boto3", "s3fs", "scipy")
_IMPORTS = """
import contextlib, io, json, os, sys
from discovery.surfaces.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(json.loads(sys.argv[1]))
    except SystemExit as exc:  # --help
        code = exc.code
print(json.dumps({"code": code, "loaded": sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)}))
sys.stdout.flush()
# as the console script leaves (discovery.surfaces.cli.entry): no interpreter finalisation under native threads
os._exit(0)
"""


def _imported(*args) -> dict:
    proc = subprocess.run([sys.executable, "-c", _IMPORTS, json.dumps(args), json.dumps(HEAVY)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_help_and_union_queries_load_only_what_they_use(indexed_lake):
    """Imports follow the command: ``--help`` loads none of the heavy libraries, a union or n-ary query no torch
    (nor numba, whose kernels only joins run), a text join no torch (its encoder computes in numpy)."""
    _, wh = indexed_lake
    assert _imported("--help") == {"code": 0, "loaded": []}
    assert _imported("refresh", "--help") == {"code": 0, "loaded": []}
    union = _imported("union", "--warehouse", wh, "--query", "finance/registers/firms.tsv", "-k", "3")
    assert union["code"] == 0 and not {"torch", "numba"} & set(union["loaded"])
    nary = _imported("nary", "--warehouse", wh, "--query", "retail/stores/store_locations_q1.csv", "--key",
                     "country,city")
    assert nary["code"] == 0 and not {"torch", "numba"} & set(nary["loaded"])
    join = _imported("join", "--warehouse", wh, "--query", "partners/vendor_master.csv", "--column", "Vendor")
    assert join["code"] == 0 and "torch" not in join["loaded"]
