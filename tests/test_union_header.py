"""The header channel of column vectors: its words, the exact weighted cosine, and its effect on union search
through ``lakescout refresh`` + ``discovery.open(...).union`` (and the ``[embed] header_weight = 0`` switch)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import discovery
from discovery.config import EmbedConfig
from discovery.data.store import Warehouse, load_snapshot
from discovery.transforms.encoders import HashEncoder
from discovery.transforms.encoders.base import ColumnConfig
from discovery.transforms.encoders.hash_encoder import HashEncoderConfig
from discovery.transforms.encoders.header import header_vectors, header_words
from discovery.transforms.encoders.stored import column_encoder
from discovery.transforms.encoders.table_encoder import TableEncoderConfig, train_table_encoder


def test_header_words_split_case_punctuation_digits_and_plurals():
    assert header_words("releaseYear") == ["release", "year"]
    assert header_words("Release_Years (2020)") == ["release", "year"]
    assert header_words("HTTPStatus") == ["http", "status"]
    assert header_words("countryCities") == ["country", "city"]
    assert header_words("address") == ["address"]
    assert header_words("column_7") == [] and header_words("column_7_2") == [] and header_words("") == []
    assert header_words(None) == []
    vecs = header_vectors(["City", "cities", "column_3", "Population"], 64)
    assert np.allclose(np.linalg.norm(vecs, axis=1), [1, 1, 0, 1])
    assert vecs[0] @ vecs[1] > 0.5 > abs(vecs[0] @ vecs[3])


@pytest.mark.parametrize("w", [0.25, 0.4, 0.7])
def test_column_cosine_is_the_weighted_sum_of_both_channels(w):
    rng = np.random.default_rng(int(w * 100))
    words = ["city", "town", "name", "year", "amount", "total", "country", "code"]
    with_header = HashEncoder(HashEncoderConfig(dim=64), ColumnConfig(header_weight=w, header_dim=32))
    values_only = HashEncoder(HashEncoderConfig(dim=64), ColumnConfig())
    assert with_header.column_dim == 96 and values_only.column_dim == 64
    for _ in range(20):
        cols, names = [], []
        for _ in range(2):
            cols.append([str(v) for v in rng.choice(["a", "b", "c", "lisbon", "oslo", "7", "12.5"], size=6)])
            names.append("_".join(rng.choice(words, size=rng.integers(1, 3))))
        a, b = (with_header.encode_column(c, name=n).astype(np.float64) for c, n in zip(cols, names))
        va, vb = (values_only.encode_column(c).astype(np.float64) for c in cols)
        ha, hb = header_vectors(names, 32, seed=ColumnConfig().seed)
        assert a @ b == pytest.approx(w * (ha @ hb) + (1 - w) * (va @ vb), abs=2e-6)
        assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-6)


def test_header_weight_enters_versions_and_the_table_encoder_follows():
    on = column_encoder(EmbedConfig(header_weight=0.4))
    off = column_encoder(EmbedConfig(header_weight=0.0))
    assert on.version != off.version and on.column_dim == on.dim + 128 and off.column_dim == off.dim
    tables = [[["a", "b", "c", "d"], [str(i) for i in range(4)]], [["x", "y", "z", "w"], ["1", "2", "3", "4"]],
              [["p", "q", "r", "s"], ["5", "6", "7", "8"]]]
    names = [["city", "population"], ["town", "inhabitants"], ["product", "price"]]
    table = train_table_encoder(tables, on, TableEncoderConfig(epochs=1, batch_size=3, out_dim=16), None, names)
    assert table.table_input_dim == on.column_dim
    vecs = np.stack([on.encode_column(c, name=n) for c, n in zip(tables[0], names[0])])
    assert table.encode_table(vecs).shape == (16,)
    for bad in (1.0, -0.1, math.nan):  # refused when the configuration is built, before any encoder
        with pytest.raises(ValueError, match="header_weight"):
            EmbedConfig(header_weight=bad)


# -- through the pipeline -------------------------------------------------------------------------------------------
CITIES = ["lisbon", "oslo", "madrid", "paris", "berlin", "rome", "vienna", "prague", "warsaw", "dublin", "athens",
          "sofia", "riga", "tallinn", "vilnius", "zagreb", "bern", "brussels", "amsterdam", "copenhagen"]
OTHER = ["porto", "bergen", "seville", "lyon", "munich", "milan", "graz", "brno", "krakow", "cork"]


def _write(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(",".join(header) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))


@pytest.fixture(scope="module")
def header_lake(tmp_path_factory):
    """A query about cities and populations; lake table ``named`` shares its column names but only half of its
    cities, table ``unnamed`` has exactly its cities under other names; four unrelated tables."""
    root = tmp_path_factory.mktemp("header_lake")
    lake = root / "lake"
    pops = [1000 * (i + 3) for i in range(20)]
    _write(root / "query.csv", ["City", "Population"], zip(CITIES, pops))
    _write(lake / "named.csv", ["city", "population"], zip(CITIES[:10] + OTHER, [p + 500 for p in pops]))
    _write(lake / "unnamed.csv", ["ref", "amount"], zip(CITIES, [p + 700 for p in pops]))
    fillers = [(["product", "colour"], ["chair", "red"]), (["species", "habitat"], ["owl", "forest"]),
               (["author", "title"], ["austen", "emma"]), (["team", "coach"], ["ajax", "ten"])]
    for i, (h, vals) in enumerate(fillers):
        _write(lake / f"other_{i}.csv", h, [[f"{vals[0]} {j}", f"{vals[1]} {j % 3}"] for j in range(15)])
    return root


def _ranked(spark, root, name, config_text):
    config = root / f"{name}.toml"
    config.write_text(config_text)
    from spark_jobs.refresh import refresh

    warehouse = str(root / name)
    out = refresh(spark, warehouse, str(root / "lake"), config_path=str(config))
    assert out.get("published"), out
    ls = discovery.open(warehouse)
    got = ls.union(str(root / "query.csv"), k=6)
    exact = ls.union(str(root / "query.csv"), k=6, method="exact")
    assert [(r["table_id"], r["score"]) for r in got["results"]] == \
        [(r["table_id"], r["score"]) for r in exact["results"]]
    dim = len(load_snapshot(Warehouse(warehouse)).read("column_vectors", columns=["vector"])
              .column("vector")[0])
    return [r["path"] for r in got["results"]], dim


@pytest.mark.spark
def test_header_channel_ranks_the_named_table_first_and_the_switch_turns_it_off(spark, header_lake):
    base = "[embed]\njoin_steps = 30\ntable_epochs = 2\ntrain_tables = 64\n"
    ranked, dim = _ranked(spark, header_lake, "with_header", base)
    assert dim == EmbedConfig().dim + EmbedConfig().header_dim
    assert ranked.index("named.csv") < ranked.index("unnamed.csv")
    ranked_off, dim_off = _ranked(spark, header_lake, "values_only", base + "header_weight = 0.0\n")
    assert dim_off == EmbedConfig().dim
    assert ranked_off.index("unnamed.csv") < ranked_off.index("named.csv")
