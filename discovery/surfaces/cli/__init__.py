"""``lakescout`` command line: human tables by default, ``--json`` for machines, exit code 2 on bad input.

One module per command group, each exposing ``register(subparsers)``; :data:`main.COMMANDS` lists them in the order
``lakescout --help`` shows them, so a new command is one module and one entry there.
"""
from .main import build_parser, entry, main

__all__ = ["build_parser", "entry", "main"]
