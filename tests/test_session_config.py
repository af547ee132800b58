"""One configuration per session object: ``discovery.open(warehouse, config=...)`` resolves it once and every search
and write of the object takes its defaults from it, so two objects on one warehouse in one process answer each with
its own, whatever ``$LAKESCOUT_CONFIG`` says (the process's here: the test configuration, with the defaults of
``[join]``, ``[numjoin]`` and ``[materialize]``).  Answers on the sample lake's planted joins
(``_ground_truth/join.csv`` and ``numeric.csv``)."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

import discovery
from discovery.config import Config, load_config
from discovery.surfaces.materialize import METADATA_KEY
from discovery.surfaces.materialize.augment import FanOutError

pytestmark = pytest.mark.spark

VENDORS, VENDOR = "partners/vendor_master.csv", "Vendor"            # joins purchase_orders.csv "supplier name"
ORDERS, SUPPLIER = "finance/payables/purchase_orders.csv", "supplier name"
STATIONS, SENSORS = "geo/weather_stations.csv", "environment/air/sensor_readings.csv"  # within 50 m
FIRMS = "finance/registers/firms.tsv"                                 # 7 columns; its union tables align 4 to 6


def _own(base: Config) -> Config:
    """``base`` with every default these tests read changed: no key keeps the process's value."""
    return replace(base, join=replace(base.join, tau=0.05, top_k=3),
                   numjoin=replace(base.numjoin, tau_metres=100.0),
                   materialize=replace(base.materialize, precision=0.8, max_matches=3, stack_min_columns=0.6))


@pytest.fixture(scope="module")
def sessions(indexed_lake) -> tuple:
    """(a session with the process's configuration, one with :func:`_own`) on the same warehouse."""
    warehouse = indexed_lake[1]
    return discovery.open(warehouse), discovery.open(warehouse, config=_own(load_config()))


def _source(out) -> dict:
    return json.loads(out.schema.metadata[METADATA_KEY])["sources"][0]


def test_each_session_keeps_the_configuration_it_was_opened_with(sessions):
    default, own = sessions
    assert default.config == load_config() and own.config == _own(load_config()) != default.config
    given = own.config
    own.latest()
    assert own.config is given


def test_the_join_defaults_are_the_sessions(sessions):
    """``[join] tau`` and ``top_k``: the search without them answers as the one naming the session's values."""
    default, own = sessions
    mine, theirs = own.join(VENDORS, VENDOR), default.join(VENDORS, VENDOR)
    assert (mine["tau"], mine["top_k"], len(mine["results"])) == (0.05, 3, 3)
    assert (theirs["tau"], theirs["top_k"]) == (0.04, 10) and len(theirs["results"]) <= 10
    assert mine["results"] == default.join(VENDORS, VENDOR, tau=0.05, top_k=3)["results"]
    assert theirs["results"] == own.join(VENDORS, VENDOR, tau=0.04, top_k=10)["results"]


def test_a_written_text_join_states_the_sessions_precision_target_and_tau(sessions):
    """``[materialize] precision`` is the matcher's target the description states; the search's pairs of a named
    lake column are taken within the session's ``[join] tau``."""
    default, own = sessions
    assert _source(own.augment(VENDORS, VENDOR))["precision_target"] == 0.8
    assert _source(default.augment(VENDORS, VENDOR))["precision_target"] == 0.95
    for ls in sessions:
        found = ls.pairs(VENDORS, VENDOR, table=ORDERS, lake_column=SUPPLIER, matcher="search")
        assert _source(found)["tau"] == ls.config.join.tau


def test_the_fan_out_bound_is_the_sessions(sessions):
    """``[materialize] max_matches``: a vendor of four purchase orders passes the default bound (100) and is refused
    by the session's (3)."""
    default, own = sessions
    written = json.loads(default.augment(VENDORS, VENDOR, fan_out="all").schema.metadata[METADATA_KEY])
    assert written["max_matches"] == 100
    with pytest.raises(FanOutError, match="matches 4 lake rows, more than max_matches 3 "):
        own.augment(VENDORS, VENDOR, fan_out="all")


def test_a_stack_keeps_the_tables_that_fill_the_sessions_share_of_columns(sessions):
    """``[materialize] stack_min_columns``: the union search answers alike in both sessions (it reads no key of
    the configuration); each stacks the tables whose alignment fills its own share of the query's 7 columns."""
    default, own = sessions
    results = default.union(FIRMS, k=10)["results"]
    assert own.union(FIRMS, k=10)["results"] == results
    for ls, left_out in ((default, 0), (own, 6)):
        share = ls.config.materialize.stack_min_columns
        described = json.loads(ls.stack(FIRMS, k=10).schema.metadata[METADATA_KEY])
        assert [s["path"] for s in described["sources"]] == [r["path"] for r in results
                                                             if len(r["alignment"]) >= share * 7]
        notes = [w for w in described["warnings"] if "is not stacked" in w]
        assert len(notes) == left_out and all(f"min_columns {share:g} " in w for w in notes)


def test_a_written_numerical_join_takes_the_sessions_default_tau(sessions):
    """``[numjoin] tau_metres`` reaches the value mapping of a named lake table's coordinates (no search runs)."""
    for ls in sessions:
        out = ls.augment(STATIONS, "lat,lng", table=SENSORS, lake_column="latitude,longitude")
        assert (_source(out)["tau"], _source(out)["units"]) == (ls.config.numjoin.tau_metres, "metres")
    assert [ls.config.numjoin.tau_metres for ls in sessions] == [50.0, 100.0]


def test_open_reads_a_configuration_file_once(indexed_lake, tmp_path, monkeypatch):
    """A path (str or PathLike) is read with :func:`~discovery.config.load_config`; a session opened without one
    keeps what the environment named when it was opened."""
    warehouse = indexed_lake[1]
    path = tmp_path / "two.toml"
    path.write_text("[join]\ntop_k = 2\n[materialize]\nprecision = 0.7\n")
    before = discovery.open(warehouse)
    for given in (str(path), path):
        ls = discovery.open(warehouse, config=given)
        assert ls.config == load_config(path) and ls.config.materialize.precision == 0.7
        assert len(ls.join(VENDORS, VENDOR)["results"]) == 2
    monkeypatch.setenv("LAKESCOUT_CONFIG", str(path))
    assert len(discovery.open(warehouse).join(VENDORS, VENDOR)["results"]) == 2
    assert before.join(VENDORS, VENDOR)["top_k"] == 10
    with pytest.raises(FileNotFoundError, match="missing.toml"):
        discovery.open(warehouse, config=str(tmp_path / "missing.toml"))


def test_a_batch_and_a_served_search_answer_with_their_sessions_configuration(sessions):
    """What the CLI's ``batch``, the DAGs and the server hand down: the :class:`~discovery.data.store.Session` their
    surface built.  A batch without ``tau`` / ``top_k`` answers with the session's, and so does a served search,
    whatever this process's configuration file says."""
    from discovery.surfaces.batch import run_batch
    from discovery.surfaces.serving import Served
    from discovery.data.store import Session

    default, own = sessions
    query = [{"id": "v", "kind": "join", "query": VENDORS, "column": VENDOR}]
    mine = run_batch(Session.at(own.warehouse, own.config), query, "session-own", served=True)["queries"][0]
    theirs = run_batch(Session.at(default.warehouse, default.config), query, "session-default",
                       served=True)["queries"][0]
    assert mine["results"] == 3 and theirs["results"] > 3
    answer = Served(Session.at(own.warehouse, own.config)).search("join", VENDORS, {"column": VENDOR}, user="ada",
                                                                  record=False)["answer"]
    assert (answer["tau"], answer["top_k"]) == (0.05, 3)
    assert answer["results"] == own.join(VENDORS, VENDOR)["results"]


def test_a_session_and_a_configuration_are_not_both_given(sessions):
    from discovery.api import Lakescout

    own = sessions[1]
    with pytest.raises(ValueError, match="session carries its configuration"):
        Lakescout(own.session, config=load_config())
    assert Lakescout(own.session).config is own.config


def test_the_former_name_of_latest_warns_and_moves_to_the_newest_snapshot(sessions):
    own = sessions[1]
    before = own.snapshot_id
    with pytest.warns(DeprecationWarning, match="call latest"):
        snap = own.refresh()
    assert snap.snapshot_id == own.snapshot_id >= before and own.config == _own(load_config())
