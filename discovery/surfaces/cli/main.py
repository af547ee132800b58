"""The ``lakescout`` parser, :func:`main` and the console script's :func:`entry`."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator

from ... import __version__
from ...config import configured_warehouse, load_config
from ...ground.allocator import use_query_pool
from ...storage.uri import nonempty
from . import batch, browse, deliver, demo, find, refresh, search, status
from .common import UsageError

#: The command modules, in the order ``lakescout --help`` lists their commands; each has ``register(subparsers)``.
COMMANDS = [refresh, status, browse, find, batch, demo, search, deliver]


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the command, exit code 2, like every other bad input
    (argparse's own print the whole usage first)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} -h)\n")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="lakescout", description="Find unionable and joinable tables in a data lake.")
    p.add_argument("--version", action="version", version=f"lakescout {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return p


#: What ``lakescout`` alone prints after the command list: the first two commands a newcomer runs.
EXAMPLE = ("example:  lakescout demo-lake sample_lake && lakescout refresh --lake sample_lake --warehouse warehouse "
           "&& lakescout union --warehouse warehouse --query finance/registers/firms.tsv")


def overview(parser: argparse.ArgumentParser) -> str:
    """The commands with their one-line help, and :data:`EXAMPLE`: what ``lakescout`` with no command prints."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    width = max(len(c.dest) for c in sub._choices_actions)
    lines = [f"{parser.description}", "", "commands:"]
    lines += [f"  {c.dest.ljust(width)}  {c.help}" for c in sub._choices_actions]
    lines += ["", EXAMPLE, "lakescout COMMAND -h shows a command's options."]
    return "\n".join(lines)


@contextlib.contextmanager
def configuration(path: str | None) -> Iterator[None]:
    """While a command runs, ``--config`` is ``$LAKESCOUT_CONFIG``: every part of the command that reads the
    configuration without being handed it (a batch and its Spark threshold, the Spark applications a command starts)
    then reads that file.  The searches and writes are handed it too: they open their Lakescout with ``--config``."""
    if path is None:
        yield
        return
    saved = os.environ.get("LAKESCOUT_CONFIG")
    os.environ["LAKESCOUT_CONFIG"] = os.path.abspath(path)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("LAKESCOUT_CONFIG", None)
        else:
            os.environ["LAKESCOUT_CONFIG"] = saved


def run(args) -> int:
    """Run the parsed command: an empty ``--warehouse`` refused and its configuration checked first (a bad value or
    file is named before any work), its warehouse from :func:`~discovery.config.configured_warehouse` when
    ``--warehouse`` was not given.  A command that answers from a snapshot (it takes ``--snapshot``) reads with the
    query processes' Arrow pool (:mod:`discovery.ground.allocator`)."""
    if getattr(args, "warehouse", None) is not None:
        nonempty(args.warehouse, "--warehouse")
    if "snapshot" in args:
        use_query_pool()
    if "config" in args:
        config = load_config()
        if "warehouse" in args and args.warehouse is None:
            args.warehouse = configured_warehouse(config)
            if args.warehouse is None:
                raise UsageError("no warehouse given: pass --warehouse PATH, set $LAKESCOUT_WAREHOUSE, or set "
                                 "[paths] warehouse in the configuration")
    return args.func(args)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        print(overview(parser))
        return 0
    args = parser.parse_args(argv)
    try:
        with configuration(getattr(args, "config", None)):
            return run(args)
    except Exception as exc:
        # Imported here, not at the top: ``--help`` and a refresh's first line come before the store and pyarrow.
        from ...query.resolve import QueryError
        from ...data.store import WarehouseError
        from ..submit import JobFailed

        if isinstance(exc, (UsageError, QueryError, WarehouseError, FileNotFoundError, ValueError)):
            print(f"lakescout {args.command}: {exc}", file=sys.stderr)
            return 2
        if isinstance(exc, JobFailed):
            print(f"lakescout {args.command}: {exc}", file=sys.stderr)
            return 1
        raise


def entry() -> None:
    """Console-script entry point: run a command, then leave without interpreter finalisation.

    A command that has printed its answer has nothing left to clean up, while the native thread pools it used (Arrow
    I/O, torch, delta-rs) can still be winding down; finalising the interpreter underneath them occasionally aborts
    the process after the answer was printed, which would turn a correct run into a crash exit code.
    """
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # the reader of our output left (`lakescout ... | head`): not an error of the command
        code = 0
    try:
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)
