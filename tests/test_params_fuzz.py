"""Hostile parameters through every entry point: ``Lakescout.union/join/nary`` and every ``lakescout`` command.

Property-based (hypothesis, derandomized so a run is reproducible): random and hostile values (negative and huge
counts, thresholds <= 0 or > 1, NaN, infinities, bools and strings where numbers go, empty, blank and unicode column
names, keys with commas, unknown methods and parameters, missing files, a directory as the query) against the sample
lake indexed once per session.  The expected outcome comes from a model of the parameter domains written here, apart
from :mod:`discovery.query.params`:

* API: when the model finds a parameter out of its domain, a :class:`ParameterError` naming one of those parameters;
  otherwise an answer (at most k results, ranked) or, for a query that cannot be read, a ``QueryError``; every message
  one line.
* CLI: exit 2 with exactly one stderr line and no traceback whenever the model (after argparse's own conversions)
  finds a problem; otherwise exit 0 with the answer.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import json
import math
import os
import shutil

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from discovery.api import Lakescout
from discovery.config import load_config
from discovery.indexes.join.search import METHODS as JOIN_METHODS
from discovery.indexes.join.service import join_search
from discovery.indexes.nary.search import METHODS as NARY_METHODS
from discovery.indexes.nary.service import nary_search
from discovery.indexes.union.search import METHODS as UNION_METHODS, UnionIndex
from discovery.indexes.union.service import union_search
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.orchestration.searches import SEARCHES
from discovery.query.params import ParameterError
from discovery.query.resolve import QueryError, resolve_query
from discovery.surfaces.cli import main

pytestmark = [pytest.mark.spark]

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BITS = (128, 256, 512)
MAX_ID = 2 ** 63 - 1
#: How a join refuses a column that is neither text nor numbers (a property of the data, not a parameter).
NUMERIC_COLUMN = "neither text nor numbers"
NUMERIC_METHODS = ("pexeso", "pnodom", "exact")


# -- the lake and its queries ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def env(indexed_lake, tmp_path_factory):
    """The indexed sample lake, its queries by kind, and hostile query names (missing file, a directory, ...)."""
    lake, warehouse = indexed_lake
    root = tmp_path_factory.mktemp("fuzz")
    comma = root / "städte, comma.csv"
    comma.write_text('"city, state",country,name\n"Lyon, ARA",France,Ana\n"Graz, ST",Austria,Ben\n'
                     '"Porto, N",Portugal,Caro\n', encoding="utf-8")
    (root / "a_directory.csv").mkdir()
    gt = load_ground_truth(lake)
    ls = Lakescout(warehouse)
    catalog = ls.snapshot.read("catalog", columns=["table_id", "path", "status"]).to_pylist()
    ok = {r["path"]: r["table_id"] for r in catalog if r["status"] == "ok"}
    union_q = gt["union"][0]["query_table"]
    join_q = gt["join"][0]["query_table"]
    nary_q = gt["nary"][0]["query_table"]
    resolved = {q: resolve_query(ls.snapshot, q) for q in (union_q, join_q, nary_q, str(comma))}
    good = {q: t.names for q, t in resolved.items()}
    kinds = {tuple(t.names): t.kinds() for t in resolved.values()}
    # (query, what the model expects of it, its columns): "ok" resolves, "unreadable" is a QueryError about the
    # query, "param" is refused as a parameter before anything is read
    queries = [*((q, "ok", names) for q, names in good.items()),
               (str(ok[union_q]), "ok", good[union_q]), (ok[join_q], "ok", good[join_q]),
               *((q, "unreadable", None) for q in (str(root / "missing.csv"), str(root / "a_directory.csv"),
                                                   "no/such/lake/path.csv", str(MAX_ID), "-3")),
               *((q, "param", None) for q in ("", "   ", "²", "9" * 25, 2 ** 70, -1, True, 1.5, None))]
    return {"lake": lake, "warehouse": warehouse, "ls": ls, "root": root, "queries": queries, "union": union_q,
            "join": (join_q, gt["join"][0]["query_column"]), "nary": (nary_q, list(gt["nary"][0]["query_columns"])),
            "comma": str(comma), "tables": ls.snapshot.counts["tables_ok"], "kinds": kinds}


# -- hostile values, mostly in range so that most calls reach a search -------------------------------------------
HUGE = st.sampled_from([2 ** 31, MAX_ID, 2 ** 63, 2 ** 70, 10 ** 30])
ODD_TEXT = st.sampled_from(["nan", "inf", "-inf", "", " ", "1e400", "1_0", "٣", "0x10", "ten", " 7 ", "+3", "-0",
                            "0.5", "1.0"])
TEXT = st.one_of(st.text(max_size=10), ODD_TEXT)
HOSTILE = st.one_of(st.integers(-3, 40), HUGE, st.integers(),
                    st.floats(), st.sampled_from([0.0, -0.0, 1.0, 1e-300, 1.0000001, -1.0, math.nan, math.inf]),
                    TEXT, st.booleans(), st.none(), st.lists(TEXT, max_size=3))
COLUMN_NAMES = st.sampled_from(["", " ", "Vendör", "VENDOR", "city", "city, state", "a,b", "ÄÖÜ ß", "\t", "nope",
                                "country"])


def mostly(good, bad=HOSTILE):
    """``good`` four times in five, else ``bad``: most calls stay valid, so that searches run as well as fail."""
    return st.sampled_from([True] * 4 + [False]).flatmap(lambda ok: good if ok else bad)


def queries(env):
    ok = [q for q in env["queries"] if q[1] == "ok"]
    return mostly(st.sampled_from(ok), st.sampled_from([q for q in env["queries"] if q[1] != "ok"]))


def with_unknown(params):
    """Now and then a parameter no search has."""
    return st.tuples(params, st.sampled_from([False] * 14 + [True])).flatmap(
        lambda pu: HOSTILE.map(lambda v: {**pu[0], "colour": v}) if pu[1] else st.just(pu[0]))


UNION_PARAMS = with_unknown(st.fixed_dictionaries({}, optional={
    "k": mostly(st.integers(1, 40)), "method": mostly(st.sampled_from(UNION_METHODS)),
    "tau": mostly(st.floats(0.05, 1.0)), "phi_c": mostly(st.integers(1, 8)), "phi_ref": mostly(st.integers(1, 200)),
    "phi_r": mostly(st.integers(1, 60)), "k_prime": mostly(st.integers(1, 500)),
    "tau_abs": mostly(st.floats(-1, 1)), "tau_drop": mostly(st.floats(0, 2)), "lexical": mostly(st.floats(0, 1))}))


def join_params(names):
    return st.fixed_dictionaries({"column": mostly(st.sampled_from(names or ["x"]), st.one_of(COLUMN_NAMES, HOSTILE))},
                                 optional={"tau": mostly(st.floats(0.005, 0.2)), "T": mostly(st.floats(0, 1)),
                                           "top_k": mostly(st.integers(1, 40)),
                                           "method": mostly(st.sampled_from(JOIN_METHODS))})


def nary_keys(names):
    names = names or ["x", "y"]
    pair = st.lists(st.sampled_from(names), min_size=2, max_size=3, unique=True)
    hostile = st.one_of(st.lists(st.one_of(st.sampled_from(names), COLUMN_NAMES), max_size=4), HOSTILE)
    return mostly(st.one_of(pair, pair.map(",".join)), st.one_of(hostile, hostile.map(
        lambda v: ",".join(map(str, v)) if isinstance(v, list) else v)))


def nary_params(names):
    return st.fixed_dictionaries({"key": nary_keys(names)}, optional={
        "k": mostly(st.integers(1, 40)), "method": mostly(st.sampled_from(NARY_METHODS)),
        "bits": mostly(st.sampled_from(BITS + (None,))),
        "initial_column": mostly(st.sampled_from(names or ["x"]), st.one_of(COLUMN_NAMES, HOSTILE))})


# -- the model of the parameter domains -------------------------------------------------------------------------------
def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _real(v, lo, hi, lo_open=False, hi_open=False) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return False
    return (lo < v if lo_open else lo <= v) and (v < hi if hi_open else v <= hi)


def _count(v) -> bool:
    return _int(v) and v >= 1


def _ordinal(names: list[str], name: str) -> int | None:
    if name in names:
        return names.index(name)
    folded = [n.casefold() for n in names]
    return folded.index(name.casefold()) if name.casefold() in folded else None


def union_problems(p: dict) -> set[str]:
    bad = {n for n in p if n not in ("k", "method", "tau", "phi_c", "phi_ref", "phi_r", "k_prime", "tau_abs",
                                      "tau_drop", "lexical")}
    bad |= {n for n in ("k", "phi_c") if n in p and not _count(p[n])}
    bad |= {n for n in ("phi_ref", "phi_r", "k_prime") if p.get(n) is not None and not _count(p[n])}  # None: default
    if "tau" in p and not _real(p["tau"], 0, 1, lo_open=True):
        bad.add("tau")
    if "tau_abs" in p and not _real(p["tau_abs"], -1, 1):
        bad.add("tau_abs")
    if "tau_drop" in p and not _real(p["tau_drop"], 0, 2):
        bad.add("tau_drop")
    if "lexical" in p and not _real(p["lexical"], 0, 1):
        bad.add("lexical")
    if "method" in p and not (isinstance(p["method"], str) and p["method"] in UNION_METHODS):
        bad.add("method")
    k = p.get("k", 10)
    if _count(k):
        bad |= {n for n in ("phi_ref", "phi_r") if _count(p.get(n)) and p[n] < k}
    return bad


def join_problems(p: dict, names: list[str] | None, kinds: list[str] | None = None) -> tuple[set[str], set[str]]:
    """(parameters out of their domain, parameters naming no column of the query).  ``kinds``: the query's column
    types, when known: a number column goes to the numerical join, whose tau is a distance >= 0 in the column's
    units and whose methods are :data:`NUMERIC_METHODS`; text columns keep the semantic join's domains."""
    bad = set()
    col = p.get("column")
    if not isinstance(col, str) or not col.strip():
        bad.add("column")
    at = _ordinal(names, col) if "column" not in bad and names is not None else None
    numeric = at is not None and kinds is not None and kinds[at] in ("int", "float")
    if p.get("tau") is not None and not _real(p["tau"], 0, math.inf):
        bad.add("tau")
    if "method" in p and not (isinstance(p["method"], str) and p["method"] in JOIN_METHODS + NUMERIC_METHODS):
        bad.add("method")
    if p.get("T") is not None and not _real(p["T"], 0, 1):
        bad.add("T")
    if p.get("top_k") is not None and not _count(p["top_k"]):
        bad.add("top_k")
    if p.get("T") is not None and p.get("top_k") is not None:
        bad.add("T")                      # threshold search or top-k search, not both
    missing = {"column"} if "column" not in bad and names is not None and at is None else set()
    if not bad and not missing and at is not None and kinds is not None:
        # checked against the column once the query is read
        if numeric and p.get("method") not in (None, *NUMERIC_METHODS):
            bad.add("method")
        text = kinds[at] in ("string", "date", "datetime")  # other kinds are refused as data, not parameters
        if text and p.get("method") not in (None, *JOIN_METHODS):
            bad.add("method")
        if text and p.get("tau") is not None and not _real(p["tau"], 0, 1, True, True):
            bad.add("tau")
    return bad, missing


def key_names(key) -> list[str] | None:
    if isinstance(key, str):
        names = [n.strip() for n in key.split(",")]
    elif isinstance(key, (list, tuple)) and all(isinstance(n, str) for n in key):
        names = [n.strip() for n in key]
    else:
        return None
    return names if all(names) and len(names) >= 2 and len(set(names)) == len(names) else None


def nary_problems(p: dict, names: list[str] | None) -> tuple[set[str], set[str]]:
    bad = set()
    key = key_names(p.get("key"))
    if key is None:
        bad.add("key")
    if "k" in p and not _count(p["k"]):
        bad.add("k")
    if "method" in p and not (isinstance(p["method"], str) and p["method"] in NARY_METHODS):
        bad.add("method")
    if p.get("bits") is not None and not (_int(p["bits"]) and p["bits"] in BITS):
        bad.add("bits")
    init = p.get("initial_column")
    if init is not None:
        if not isinstance(init, str) or not init.strip():
            bad.add("initial_column")
        elif key is not None and init.casefold() not in [n.casefold() for n in key]:
            bad.add("initial_column")
    missing = set()
    if key is not None and names is not None:
        ordinals = [_ordinal(names, n) for n in key]
        if None in ordinals or len(set(ordinals)) != len(ordinals):
            missing.add("key")
    return bad, missing


# -- checking an outcome --------------------------------------------------------------------------------------------
def one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message, repr(message)


def api_outcome(call, query_state: str, bad: set[str], missing: set[str], k_cap: int | None):
    """Run ``call`` and check its outcome against what the model expects."""
    try:
        out = call()
    except ParameterError as exc:
        event(f"ParameterError {exc.param}")
        one_line(str(exc))
        expected = bad or ({"query"} if query_state == "param" else set()) or (
            missing if query_state == "ok" else set())
        assert exc.param in expected, (exc.param, expected, str(exc))
        assert exc.param in str(exc) or exc.param.replace("_", " ") in str(exc), str(exc)
        return None
    except QueryError as exc:
        event("QueryError")
        one_line(str(exc))
        assert not bad and query_state == "unreadable", (bad, query_state, str(exc))
        return None
    event("answer")
    assert not bad and query_state == "ok" and not missing, (bad, query_state, missing)
    ranks = [r["rank"] for r in out["results"]]
    assert ranks == list(range(1, len(ranks) + 1))
    if k_cap is not None:
        assert len(ranks) <= k_cap
    return out


# -- the Python API ---------------------------------------------------------------------------------------------------
@FUZZ
@given(data=st.data())
def test_union_api(env, data):
    query, state, _ = data.draw(queries(env))
    params = data.draw(UNION_PARAMS)
    k = params.get("k", 10)
    api_outcome(lambda: env["ls"].union(query, **params), state, union_problems(params), set(),
                min(k, env["tables"]) if _count(k) else None)


@FUZZ
@given(data=st.data())
def test_join_api(env, data):
    query, state, names = data.draw(queries(env))
    params = data.draw(join_params(names))
    bad, missing = join_problems(params, names, env["kinds"].get(tuple(names or ())))
    api_outcome(lambda: _join_or_numeric(env["ls"], query, params), state, bad, missing, params.get("top_k"))


def _join_or_numeric(ls: Lakescout, query, params: dict) -> dict:
    """A join answer; a numeric or empty query column is refused by the search as a property of the data, not of a
    parameter, and is turned into an empty answer here so that the outcome check applies to parameters only."""
    try:
        return ls.join(query, **params)
    except ParameterError:
        raise
    except QueryError as exc:
        if NUMERIC_COLUMN in str(exc) or "is empty" in str(exc):
            one_line(str(exc))
            return {"results": []}
        raise


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_nary_api(env, data):
    query, state, names = data.draw(queries(env))
    params = data.draw(nary_params(names))
    bad, missing = nary_problems(params, names)
    k = params.get("k", 10)
    api_outcome(lambda: env["ls"].nary(query, **params), state, bad, missing,
                min(k, env["tables"]) if _count(k) else None)


def test_every_union_search_parameter_is_checked():
    """A keyword the union search takes but its search kind does not know would be refused to users."""
    sig = inspect.signature(UnionIndex.search)
    internal = {"exclude_table_id", "query_table_vector", "query_quantities",  # derived from the query
                "lexical_cosines"}
    keywords = {p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY} - internal
    assert keywords | {"k", "method"} == set(SEARCHES["union"].parameters)


def test_named_domains(env):
    """The values the issue names are refused with the parameter's name; huge counts answer as the lake's size."""
    ls, q = env["ls"], env["union"]
    for params, name in [({"tau": 0}, "tau"), ({"tau": -0.5}, "tau"), ({"tau": 1.5}, "tau"),
                         ({"tau": math.nan}, "tau"), ({"phi_c": 0}, "phi_c"), ({"k": 5, "phi_ref": 4}, "phi_ref"),
                         ({"k": True}, "k"), ({"k": "10"}, "k"), ({"method": "PGTUS++"}, "method")]:
        with pytest.raises(ParameterError, match=name) as err:
            ls.union(q, **params)
        assert err.value.param == name
    assert len(ls.union(q, tau=1.0, k=3)["results"]) <= 3      # the closed end of (0, 1] is a threshold like others
    # a count above the lake's size answers as the search itself does with a large k it can still represent
    for method in ("pgtus++", "exact"):
        assert ls.union(q, k=2 ** 70, method=method)["results"] == union_search(
            ls.snapshot, q, k=10 ** 9, method=method)["results"]
    join_q, column = env["join"]
    cfg = load_config().join
    assert ls.join(join_q, column, top_k=2 ** 70)["results"] == join_search(
        ls.snapshot, join_q, column, tau=cfg.tau, top_k=10 ** 9, context_margin=cfg.context_margin,
        category_margin=cfg.category_margin)["results"]
    with pytest.raises(ParameterError, match="not both"):
        ls.join(join_q, column, T=0.5, top_k=3)
    nary_q, key = env["nary"]
    assert ls.nary(nary_q, key, k=2 ** 70)["results"] == nary_search(ls.snapshot, nary_q, key, k=10 ** 9)["results"]
    with pytest.raises(ParameterError, match="key") as err:
        ls.nary(env["comma"], "city, state,country")
    assert "has a comma in its name" in str(err.value)
    assert ls.nary(env["comma"], ["city, state", "country"])["key"] == ["city, state", "country"]


# -- the command line -----------------------------------------------------------------------------------------------
def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def cli_error(code: int, out: str, err: str, names: set[str] = frozenset()) -> None:
    assert code == 2, (code, out[-500:], err)
    assert err.endswith("\n") and err.count("\n") == 1 and "Traceback" not in err, repr(err)
    assert err.startswith("lakescout"), err
    if names:
        assert any(n in err or n.replace("_", "-") in err or n.replace("_", " ") in err for n in names), (names, err)


def as_arg(value) -> str:
    """A value as a command line carries it (a list as a comma-separated key)."""
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def convert(value: str, kind):
    """What argparse makes of an option value (its ``type``), or None when it refuses it."""
    try:
        return kind(value)
    except ValueError:
        return None


def cli_search(env, command: str, query, state: str, params: dict, options: dict[str, tuple], names=None):
    """Run ``lakescout <command>`` with ``params`` as options and check the outcome against the model.

    ``options``: parameter -> (option, argparse type or None for text).
    """
    argv = [command, "--warehouse", env["warehouse"], f"--query={query}", "--json"]
    values = {}
    for name, value in params.items():
        option, kind = options[name]
        argv.append(f"{option}={as_arg(value)}")
        values[name] = convert(as_arg(value), kind) if kind else as_arg(value)
    # argparse refuses what its types cannot convert, and --T with --top-k (mutually exclusive)
    refused = None in values.values() or (command == "join" and {"T", "top_k"} <= set(values))
    if refused:
        bad, missing = set(), set()
    elif command == "union":
        bad, missing = union_problems(values), set()
    elif command == "join":
        bad, missing = join_problems(values, names, env["kinds"].get(tuple(names or ())))
    else:
        bad, missing = nary_problems(values, names)
    code, out, err = run_cli(argv)
    event(f"exit {code}")
    if refused or bad or missing or state != "ok":
        cli_error(code, out, err, bad)
    elif not (command == "join" and code == 2 and (NUMERIC_COLUMN in err or "is empty" in err)):
        assert code == 0, (argv, err)
        assert json.loads(out)["snapshot_id"] == env["ls"].snapshot_id


def cli_queries(env):
    """Queries as a command line gives them: text (a negative id is then a file name, missing: still refused)."""
    return queries(env).filter(lambda q: isinstance(q[0], (str, int)) and not isinstance(q[0], bool))


@FUZZ
@given(data=st.data())
def test_union_cli(env, data):
    query, state, _ = data.draw(cli_queries(env))
    params = {n: v for n, v in data.draw(UNION_PARAMS).items() if n in ("k", "tau", "phi_c", "phi_ref", "phi_r",
                                                                          "method")}
    cli_search(env, "union", query, state, params, {
        "k": ("-k", int), "tau": ("--tau", float), "phi_c": ("--phi-c", int), "phi_ref": ("--phi-ref", int),
        "phi_r": ("--phi-r", int), "method": ("--method", None)})


@FUZZ
@given(data=st.data())
def test_join_cli(env, data):
    query, state, names = data.draw(cli_queries(env))
    cli_search(env, "join", query, state, data.draw(join_params(names)), {
        "column": ("--column", None), "tau": ("--tau", float), "T": ("--T", float), "top_k": ("--top-k", int),
        "method": ("--method", None)}, names)


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_nary_cli(env, data):
    query, state, names = data.draw(cli_queries(env))
    cli_search(env, "nary", query, state, data.draw(nary_params(names)), {
        "key": ("--key", None), "k": ("-k", int), "bits": ("--bits", int), "method": ("--method", None),
        "initial_column": ("--initial-column", None)}, names)


@settings(FUZZ, max_examples=30)
@given(snapshot=mostly(st.just(1), HOSTILE))
def test_snapshot_option(env, snapshot):
    code, out, err = run_cli(["union", "--warehouse", env["warehouse"], f"--query={env['union']}", "-k", "2",
                              f"--snapshot={as_arg(snapshot)}", "--json"])
    if convert(as_arg(snapshot), int) == 1:
        assert code == 0 and len(json.loads(out)["results"]) <= 2, err
    else:
        cli_error(code, out, err, {"snapshot"} if convert(as_arg(snapshot), int) is None else set())


def test_comma_key_cli_names_the_limit(env):
    code, out, err = run_cli(["nary", "--warehouse", env["warehouse"], "--query", env["comma"],
                              "--key", "city, state,country"])
    cli_error(code, out, err, {"key"})
    assert "has a comma in its name" in err and "'city, state'" in err


@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_status_cli(env, data):
    root = env["root"]
    choices = {env["warehouse"]: True, str(root / "nowhere"): False, str(root / "a_directory.csv"): False,
               env["comma"]: False, env["lake"]: False, "": False, "ünïcødé/wh": False}
    warehouse = data.draw(st.sampled_from(sorted(choices)))
    extra = data.draw(st.lists(st.sampled_from(["--json", "--jsn", "--warehouse", "-k=3"]), max_size=2))
    code, out, err = run_cli(["status", f"--warehouse={warehouse}", *extra])
    if choices[warehouse] and set(extra) <= {"--json"}:
        assert code == 0, err
        if "--json" in extra:
            assert json.loads(out)["snapshot"]["snapshot_id"] == env["ls"].snapshot_id
    else:
        cli_error(code, out, err)


@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_refresh_cli_arguments(env, data):
    """Every refresh argument list here is refused before Spark starts: the lake never names an existing folder."""
    root = env["root"]
    lake = data.draw(st.sampled_from([str(root / "no_lake"), env["comma"], "", "ünïcødé", str(root / "a, b")]))
    args = [f"--lake={lake}", f"--warehouse={data.draw(TEXT)}"]
    args = data.draw(st.sampled_from([args, args[:1], args[1:], args + ["--full"],
                                      args + [f"--master={data.draw(TEXT)}"],
                                      args + [f"--config={data.draw(TEXT)}"], args + ["--fast"]]))
    cli_error(*run_cli(["refresh", *args]))


@settings(FUZZ, max_examples=15)
@given(seed=st.one_of(st.integers(max_value=-1), st.floats(), st.booleans(), st.none(), st.lists(TEXT, max_size=3),
                      TEXT.filter(lambda v: convert(v, int) is None)))
def test_demo_lake_cli_refuses_bad_seeds(env, seed):
    cli_error(*run_cli(["demo-lake", str(env["root"] / "never_written"), f"--seed={as_arg(seed)}"]), {"seed"})
    assert not (env["root"] / "never_written").exists()


def test_demo_lake_cli_refuses_an_unwritable_folder(env):
    cli_error(*run_cli(["demo-lake", os.path.join(env["comma"], "lake")]))


# -- batches ----------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def batch_wh(env, tmp_path_factory):
    """A copy of the indexed warehouse that batches may record into (the session's index stays untouched)."""
    dest = tmp_path_factory.mktemp("fuzzbatch") / "wh"
    shutil.copytree(env["warehouse"], dest)
    return str(dest)


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_batch_cli(env, batch_wh, data):
    kind = data.draw(st.sampled_from(["union", "join", "nary"]))
    query, state, names = data.draw(queries(env))
    if kind == "union":
        params = data.draw(UNION_PARAMS)
        bad, missing = union_problems(params), set()
    elif kind == "join":
        params = data.draw(join_params(names))
        bad, missing = join_problems(params, names, env["kinds"].get(tuple(names or ())))
    else:
        params = data.draw(nary_params(names))
        bad, missing = nary_problems(params, names)
    spec = {"queries": [{"kind": kind, "query": query, **params}]}
    snapshot = data.draw(st.one_of(st.none(), mostly(st.just(1), HOSTILE)))
    if snapshot is not None:
        spec["snapshot_id"] = snapshot
    snapshot_ok = snapshot is None or (_int(snapshot) and snapshot == 1)
    path = env["root"] / "spec.json"
    path.write_text(json.dumps(spec, allow_nan=True), encoding="utf-8")
    code, out, err = run_cli(["batch", "--warehouse", batch_wh, f"--spec={path}", "--json"])
    event(f"exit {code}")
    numeric = kind == "join" and (NUMERIC_COLUMN in err or "is empty" in err)
    if bad or missing or state != "ok" or not snapshot_ok or numeric:
        cli_error(code, out, err, bad if state == "ok" and snapshot_ok else set())
    else:
        assert code == 0, (spec, err)
        assert json.loads(out)["queries"][0]["kind"] == kind


@settings(FUZZ, max_examples=20)
@given(content=st.one_of(st.binary(max_size=40), st.text(max_size=40).map(str.encode)))
def test_batch_cli_hostile_spec_files(env, batch_wh, content):
    path = env["root"] / "hostile.json"
    path.write_bytes(content)
    cli_error(*run_cli(["batch", "--warehouse", batch_wh, f"--spec={path}"]))


def test_batch_cli_spec_not_a_file(env, batch_wh):
    for spec in (env["root"] / "a_directory.csv", env["root"] / "missing.json"):
        cli_error(*run_cli(["batch", "--warehouse", batch_wh, f"--spec={spec}"]), {"spec"})
