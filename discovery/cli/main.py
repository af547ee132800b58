"""The ``lakescout`` parser, :func:`main` and the console script's :func:`entry`."""
from __future__ import annotations

import argparse
import os
import sys

from ..query import QueryError
from ..store import WarehouseError
from ..submit import JobFailed
from . import batch, deliver, demo, refresh, search, status
from .common import UsageError

#: The command modules, in the order ``lakescout --help`` lists their commands; each has ``register(subparsers)``.
COMMANDS = [refresh, status, batch, demo, search, deliver]


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the command, exit code 2, like every other bad input
    (argparse's own print the whole usage first)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} -h)\n")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="lakescout", description="Find unionable and joinable tables in a data lake.")
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        print(overview(parser))
        return 0
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, QueryError, WarehouseError, FileNotFoundError, ValueError) as exc:
        print(f"lakescout {args.command}: {exc}", file=sys.stderr)
        return 2
    except JobFailed as exc:
        print(f"lakescout {args.command}: {exc}", file=sys.stderr)
        return 1


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
