"""The README is the user's guide; these tests keep it true.

* Every fenced block preceded by ``<!-- runnable -->`` runs, in the order the README gives, in a folder where
  ``sample_lake`` is the sample lake and ``warehouse`` a copy of its index (the session's ``indexed_lake``), with
  ``lakescout`` on ``PATH``: shell blocks under ``bash -euo pipefail``, Python blocks in this interpreter.  A block
  that fails, or prints nothing, fails the test.  An ``<!-- output -->`` block after a runnable one shows what it
  prints; its first line (the column header of the result table) must be a line of the real output.
* The command table lists, per command, exactly the flags that ``lakescout CMD --help`` shows.
* The ``<!-- config -->`` TOML block of ``docs/configuration.md`` holds every configuration key with its default, each
  with a comment.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass

import pytest
from discovery.data.store import Warehouse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
#: A fenced block, with the HTML comment on the line before it when there is one.
FENCE = re.compile(r"(?:^<!-- (?P<mark>[a-z]+) -->\n)?^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


@dataclass(frozen=True)
class Block:
    mark: str | None
    lang: str
    body: str
    line: int

    @property
    def label(self) -> str:
        return f"README.md line {self.line} ({self.lang})"


def blocks(text: str) -> list[Block]:
    return [Block(m["mark"], m["lang"], m["body"], text.count("\n", 0, m.start("body")))
            for m in FENCE.finditer(text)]


def runnable(text: str) -> list[tuple[Block, Block | None]]:
    """Each runnable block with the output block that directly follows it (or None)."""
    found = blocks(text)
    pairs = []
    for i, block in enumerate(found):
        if block.mark == "runnable":
            after = found[i + 1] if i + 1 < len(found) and found[i + 1].mark == "output" else None
            pairs.append((block, after))
    return pairs


def run_block(block: Block, cwd: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if block.lang == "bash":
        cmd = ["bash", "-euo", "pipefail", "-c", block.body]
    elif block.lang == "python":
        cmd = [sys.executable, "-c", block.body]
    else:
        raise AssertionError(f"{block.label}: a runnable block must be bash or python")
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def check_ran(block: Block, expected: Block | None, done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, f"{block.label} failed ({done.returncode}):\n{block.body}\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{block.label} printed nothing"
    if expected is not None:
        header = expected.body.splitlines()[0].split()
        assert any(line.split() == header for line in done.stdout.splitlines()), \
            f"{block.label}: no line of its output is the header the README shows, {' '.join(header)!r}:\n" \
            f"{done.stdout[:3000]}"


def linked_copy(src: str, dst: str) -> None:
    """A copy of a warehouse whose immutable data files are hard links (fast), everything else copied: the runnable
    examples commit to it, and the session's warehouse must stay as it is."""
    def copy(a, b):
        if a.endswith((".parquet", ".bin", ".npy")):
            try:
                os.link(a, b)
                return b
            except OSError:
                pass
        return shutil.copy2(a, b)

    shutil.copytree(src, dst, copy_function=copy, symlinks=True)


@pytest.fixture(scope="module")
def guide_folder(indexed_lake, tmp_path_factory) -> str:
    """Where the README's examples run: ``sample_lake`` and ``warehouse`` as ``make demo`` leaves them."""
    lake, warehouse = indexed_lake
    folder = tmp_path_factory.mktemp("guide")
    os.symlink(lake, folder / "sample_lake")
    linked_copy(warehouse, str(folder / "warehouse"))
    return str(folder)


def readme() -> str:
    with open(README, encoding="utf-8") as fh:
        return fh.read()


# -- runnable examples ---------------------------------------------------------------------------------------------
def test_the_runnable_examples_cover_every_search_the_batch_and_python():
    pairs = runnable(readme())
    shell = "\n".join(b.body for b, _ in pairs if b.lang == "bash")
    for command in ("lakescout status", "lakescout union", "lakescout join", "lakescout nary", "lakescout batch"):
        assert command in shell, f"no runnable example runs {command!r}"
    assert sum(b.lang == "python" for b, _ in pairs) >= 2
    assert sum(out is not None for _, out in pairs) >= 3


@pytest.mark.spark
def test_the_runnable_examples_run_on_the_sample_lake(guide_folder):
    pairs = runnable(readme())
    assert pairs
    for block, expected in pairs:                       # in order: the batch example writes what a later one reads
        check_ran(block, expected, run_block(block, guide_folder))
    check_batches_recorded(pairs, guide_folder)


def check_batches_recorded(pairs: list[tuple[Block, Block | None]], folder: str) -> None:
    """Every ``lakescout batch ... --spec FILE --batch-id ID`` of the examples recorded a result for each query of
    its spec in ``query_results``."""
    from discovery.surfaces.batch import batch_results

    runs = [m for b, _ in pairs if b.lang == "bash"
            for m in re.finditer(r"lakescout batch .*?--spec (\S+) --batch-id (\S+)", b.body)]
    assert runs, "no runnable example runs a batch"
    for m in runs:
        with open(os.path.join(folder, m[1]), encoding="utf-8") as fh:
            queries = json.load(fh)["queries"]
        rows = batch_results(Warehouse(os.path.join(folder, "warehouse")), m[2]).to_pylist()
        assert {(r["query_id"], r["kind"]) for r in rows} == {(q["id"], q["kind"]) for q in queries}, m[0]


@pytest.mark.spark
def test_a_changed_flag_or_output_fails_the_check(guide_folder):
    """The check is not satisfied by any run: a flag the CLI lacks, or a header it does not print, fails it."""
    wrong_flag = Block("runnable", "bash", "lakescout union --warehouse warehouse --query "
                                           "finance/registers/firms.tsv --top 5\n", 0)
    with pytest.raises(AssertionError, match="failed"):
        check_ran(wrong_flag, None, run_block(wrong_flag, guide_folder))
    right = Block("runnable", "bash", "lakescout nary --warehouse warehouse --query "
                                      "retail/stores/store_locations_q1.csv --key country,city -k 2\n", 0)
    done = run_block(right, guide_folder)
    check_ran(right, Block("output", "text", "  rank  J  table_id  path  mapping  not_found  matched\n", 0), done)
    with pytest.raises(AssertionError, match="header"):
        check_ran(right, Block("output", "text", "  rank  J  table_id  path  mapping\n", 0), done)


# -- the command table -----------------------------------------------------------------------------------------------
def readme_commands() -> dict[str, set[str]]:
    """Command -> the flags (and upper-case positionals) of its row in the README's command table."""
    rows = {}
    for line in readme().splitlines():
        m = re.match(r"^\| `lakescout ([a-z-]+)` \| (.*?) \|", line)
        if m:
            rows[m[1]] = set(re.findall(r"`([^`]+)`", m[2]))
    return rows


def _help(*args: str) -> str:
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(["lakescout", *args, "--help"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_command_table_lists_exactly_the_commands_and_flags_of_the_cli():
    from discovery.surfaces.cli import build_parser

    table = readme_commands()
    listed = re.search(r"\{([a-z,-]+)\}", _help()).group(1).split(",")
    assert sorted(table) == sorted(listed), "the README's command table and `lakescout --help` list other commands"
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for command in listed:
        text = _help(command)
        invocations = re.findall(r"^  (-\S.*?)(?: {2,}|$)", text.split("options:", 1)[1], re.M)
        shown = {f for inv in invocations for f in FLAG.findall(inv)} - {"-h", "--help"}
        parser = sub.choices[command]
        flags = {s for a in parser._actions for s in a.option_strings} - {"-h", "--help"}
        assert shown == flags, f"{command}: the help text shows {sorted(shown)}, the parser has {sorted(flags)}"
        positionals = {a.dest.upper() for a in parser._actions if not a.option_strings}
        documented = table[command]
        assert flags - documented == set(), f"README row of {command} lacks {sorted(flags - documented)}"
        extra = documented - flags - positionals
        assert extra == set(), f"README row of {command} lists {sorted(extra)}, which `lakescout {command}` lacks"


# -- configuration ---------------------------------------------------------------------------------------------------
def test_the_configuration_reference_holds_every_key_with_its_default_and_a_comment():
    """``docs/configuration.md``, which the README's Configuration section points to, lists every key."""
    from discovery.config import Config

    with open(os.path.join(ROOT, "docs", "configuration.md"), encoding="utf-8") as fh:
        (block,) = [b for b in blocks(fh.read()) if b.mark == "config"]
    documented = tomllib.loads(block.body)
    defaults = {section: {k: list(v) if isinstance(v, tuple) else v for k, v in keys.items()}
                for section, keys in Config().to_dict().items()}
    assert set(documented) == set(defaults)
    for section, keys in defaults.items():
        assert set(documented[section]) == set(keys), f"[{section}]: documented {sorted(documented[section])}"
        for key, value in keys.items():
            assert documented[section][key] == value, f"[{section}] {key}: documented {documented[section][key]!r}"
    Config.from_dict(documented)                         # the block is a valid configuration file
    for line in block.body.splitlines():
        if "=" in line.split("#")[0]:
            assert re.search(r"#\s*\S", line), f"no comment on configuration line {line!r}"


def test_the_guide_stays_short():
    """About 20 KB, a ten-minute read: room for what a user needs, not for a history of figures."""
    assert len(readme().encode()) <= 21 * 1024
