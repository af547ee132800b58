"""The command line as a user meets it: where the warehouse and the configuration come from, help on every flag,
``--version``, tables fitted to the terminal (full values in ``--json``), one message per parameter domain, the
status wording, and the Python API's name for moving to the latest snapshot."""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys

import discovery
from discovery.api import Lakescout
from discovery.data.store import list_snapshots
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.query.params import JOIN_TAU_DOMAIN
from discovery.surfaces.cli import build_parser, main
from discovery.surfaces.cli.output import MIN_WIDTH, fitted, table

BIN = os.path.dirname(sys.executable)


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def commands() -> dict:
    return next(a for a in build_parser()._actions if a.dest == "command").choices


def test_every_flag_has_help_and_lists_its_choices():
    for name, parser in commands().items():
        text = " ".join(parser.format_help().split())
        flags = {s for a in parser._actions for s in a.option_strings}
        if name != "demo-lake":          # the one command that reads neither warehouse nor configuration
            assert {"--warehouse", "--config", "--json"} <= flags, name
        for action in parser._actions:
            if action.option_strings and action.dest != "help":
                assert action.help and action.help.strip(), (name, action.option_strings)
                for choice in action.choices or ():
                    assert str(choice) in text, (name, action.option_strings, choice)
    methods = " ".join(commands()["union"].format_help().split())
    assert "pgtus++, pgtus, pgtus++-approx, starmie, tactus, exact" in methods


def test_version():
    done = subprocess.run([os.path.join(BIN, "lakescout"), "--version"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout == f"lakescout {discovery.__version__}\n"
    assert discovery.__version__ == importlib.metadata.version("lakescout")


def test_the_warehouse_comes_from_the_flag_the_environment_or_the_configuration(indexed_lake, tmp_path, monkeypatch,
                                                                               capsys):
    _, wh = indexed_lake
    monkeypatch.chdir(tmp_path)
    other = str(tmp_path / "other")
    config = tmp_path / "paths.toml"
    config.write_text(open(os.environ["LAKESCOUT_CONFIG"]).read() + f"\n[paths]\nwarehouse = {json.dumps(wh)}\n")

    monkeypatch.setenv("LAKESCOUT_WAREHOUSE", wh)
    code, out, _ = run(["status", "--json"], capsys)
    assert code == 0 and json.loads(out)["warehouse"] == wh
    code, _, err = run(["status", "--warehouse", other], capsys)          # the flag wins
    assert code == 2 and f"no Lakescout warehouse at {other!r}" in err

    monkeypatch.delenv("LAKESCOUT_WAREHOUSE")
    code, out, _ = run(["status", "--config", str(config), "--json"], capsys)
    assert code == 0 and json.loads(out)["warehouse"] == wh
    monkeypatch.setenv("LAKESCOUT_WAREHOUSE", other)                      # the environment wins over the file
    code, _, err = run(["status", "--config", str(config)], capsys)
    assert code == 2 and f"no Lakescout warehouse at {other!r}" in err

    monkeypatch.delenv("LAKESCOUT_WAREHOUSE")
    code, _, err = run(["union", "--query", "x.csv"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "--warehouse" in err and "$LAKESCOUT_WAREHOUSE" in err and "[paths] warehouse" in err
    assert os.environ["LAKESCOUT_CONFIG"] != str(config)                  # --config lasted one command


def test_config_applies_to_every_command(indexed_lake, tmp_path, capsys):
    lake, wh = indexed_lake
    truth = load_ground_truth(lake)["join"][0]
    config = tmp_path / "two.toml"
    config.write_text(open(os.environ["LAKESCOUT_CONFIG"]).read() + "\n[join]\ntop_k = 2\n")
    argv = ["join", "--warehouse", wh, "--query", truth["query_table"], "--column", truth["query_column"], "--json"]
    code, out, _ = run(argv, capsys)
    assert code == 0 and len(json.loads(out)["results"]) > 2
    code, out, _ = run(argv + ["--config", str(config)], capsys)
    assert code == 0 and len(json.loads(out)["results"]) == 2
    missing = str(tmp_path / "missing.toml")
    for command in (["status"], ["union", "--query", "1"], ["join", "--query", "1", "--column", "a"],
                    ["nary", "--query", "1", "--key", "a,b"], ["batch", "--spec", "s.json"],
                    ["refresh", "--lake", str(tmp_path)]):
        code, _, err = run([*command, "--warehouse", wh, "--config", missing], capsys)
        assert code == 2 and f"configuration file {missing!r} does not exist" in err, command


def test_tables_fit_the_terminal_and_json_keeps_every_value(indexed_lake, monkeypatch, capsys):
    lake, wh = indexed_lake
    monkeypatch.delenv("COLUMNS", raising=False)
    query = load_ground_truth(lake)["union"][0]["query_table"]
    argv = ["union", "--warehouse", wh, "--query", query, "-k", "5"]
    code, whole, _ = run(argv, capsys)                  # not a terminal and no $COLUMNS: nothing is cut
    assert code == 0 and max(map(len, whole.splitlines())) > 70 and "…" not in whole
    monkeypatch.setenv("COLUMNS", "70")
    code, fit, _ = run(argv, capsys)
    lines = fit.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["rank", "score"])
    rows = lines[header:header + 7]
    assert code == 0 and all(len(line) <= 70 for line in rows) and any(line.endswith("…") for line in rows)
    code, out, _ = run(argv + ["--json"], capsys)
    first = json.loads(out)["results"][0]
    alignment = ", ".join(f"{q}~{c} ({s:.2f})" for q, c, s in first["alignment"])
    assert alignment in whole and alignment not in fit and len(alignment) > 40


def test_fitting_cuts_the_widest_columns_to_one_width():
    assert fitted([4, 5, 40, 90], 200) == [4, 5, 40, 90]                # room enough: unchanged
    assert fitted([4, 5, 40, 90], 60) == [4, 5, 25, 25]                 # the two wide ones share what is left
    assert fitted([30, 30], 4) == [MIN_WIDTH, MIN_WIDTH]                # never below the floor
    assert fitted([4, 40, 90], 70, [False, False, True]) == [4, 40, 26]  # the flexible column is cut first
    assert fitted([4, 40, 90], 20, [False, False, True]) == [4, 8, 8]    # then all of them
    text = table([{"a": "x" * 30, "b": "short"}], ["a", "b"], width=24)
    assert all(len(line) <= 24 for line in text.splitlines()) and "x" * 14 + "…" in text


def test_a_parameter_has_one_range_message(indexed_lake, capsys):
    lake, wh = indexed_lake
    truth = load_ground_truth(lake)["join"][0]
    messages = []
    for tau in ("-1", "5"):
        code, _, err = run(["join", "--warehouse", wh, "--query", truth["query_table"], "--column",
                            truth["query_column"], "--tau", tau], capsys)
        assert code == 2 and err.count("\n") == 1
        messages.append(re.sub(r", got .*", "", err))
    assert messages[0] == messages[1] and JOIN_TAU_DOMAIN in messages[0]


def test_status_names_rows_and_the_api_names_its_snapshot_move(indexed_lake, monkeypatch, capsys):
    _, wh = indexed_lake
    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, _ = run(["status", "--warehouse", wh], capsys)
    assert code == 0 and "index sizes" not in out
    rows = next(line for line in out.splitlines() if line.startswith("rows "))
    counts = {name: int(n) for name, n in re.findall(r"(\w+) (\d+)", rows)}
    assert counts == {k[5:]: v for k, v in Lakescout(wh).snapshot.counts.items() if k.startswith("rows_") and v}
    ls = Lakescout(wh, snapshot_id=1)
    assert ls.latest() is ls.snapshot and ls.snapshot_id == list_snapshots(ls.warehouse)[-1].snapshot_id
    assert "latest" in Lakescout.refresh.__doc__ and "Deprecated" in Lakescout.refresh.__doc__
    assert ls.status()["snapshot"]["snapshot_id"] == ls.snapshot_id and Lakescout.status.__doc__


def test_an_empty_warehouse_is_refused_not_read_as_the_working_folder(tmp_path, monkeypatch, capsys):
    """``--warehouse ""`` (or blank) is refused by every command that takes it, as an empty ``--lake`` is: one line
    naming the flag, exit 2, nothing written in the working folder; a refresh is refused with a real lake given, so it
    is the warehouse that stops it before Spark; ``discovery.open("")`` raises a ValueError naming the warehouse."""
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "t.csv").write_text("a,b\n1,2\n")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    filler = {"--lake": str(lake), "table": "t.csv", "words": "a"}
    taking = {name: p for name, p in commands().items()
              if any("--warehouse" in a.option_strings for a in p._actions)}
    assert {"refresh", "status", "union", "join", "nary", "batch"} <= set(taking)
    for name, parser in taking.items():
        required = [a for a in parser._actions if a.required]
        required += [g._group_actions[0] for g in parser._mutually_exclusive_groups if g.required]
        args = [v for a in required for v in ([a.option_strings[0]] if a.option_strings else [])
                + [filler.get(a.option_strings[0] if a.option_strings else a.dest, "x")]]
        for empty in ("", "  "):
            code, out, err = run([name, *args, f"--warehouse={empty}"], capsys)
            assert code == 2 and out == "" and err.count("\n") == 1, (name, empty, err)
            assert err == (f"lakescout {name}: --warehouse {empty!r} is empty: give a folder or URI (an empty "
                           "location is not the working folder)\n"), err
    assert os.listdir(cwd) == [] and os.listdir(lake) == ["t.csv"]
    for empty in ("", " "):
        try:
            discovery.open(empty)
        except ValueError as exc:
            assert str(exc).startswith(f"warehouse {empty!r} is empty"), exc
        else:
            raise AssertionError(f"discovery.open({empty!r}) opened the working folder")
    assert os.listdir(cwd) == []


def test_an_empty_warehouse_variable_counts_as_unset(tmp_path, monkeypatch, capsys):
    """``LAKESCOUT_WAREHOUSE=""`` is no setting: the configuration's warehouse answers, and without one the command
    names what to set, as with the variable unset."""
    monkeypatch.chdir(tmp_path)
    configured = str(tmp_path / "configured")
    config = tmp_path / "paths.toml"
    config.write_text(open(os.environ["LAKESCOUT_CONFIG"]).read()
                      + f"\n[paths]\nwarehouse = {json.dumps(configured)}\n")
    for empty in ("", "  "):
        monkeypatch.setenv("LAKESCOUT_WAREHOUSE", empty)
        code, _, err = run(["status", "--config", str(config)], capsys)
        assert code == 2 and f"no Lakescout warehouse at {configured!r}" in err, err
        code, _, err = run(["status"], capsys)
        assert code == 2 and err.startswith("lakescout status: no warehouse given: pass --warehouse PATH"), err
    assert os.listdir(tmp_path) == ["paths.toml"]
