"""What every command shares: the error that ends a command and the options every command takes (a command starts a
Spark application through :mod:`discovery.surfaces.submit`)."""
from __future__ import annotations

from collections.abc import Callable, Iterator


class UsageError(Exception):
    """Bad input from the user: printed as one clear line, exit code 2, never a traceback."""


class Choices:
    """An option's choices read from the module that owns them only when argparse needs them (``--help``, or a
    value to check), so that naming them costs no import on every call and no second list that could disagree."""

    def __init__(self, load: Callable[[], tuple]):
        self._load = load
        self._names: tuple | None = None

    def _all(self) -> tuple:
        if self._names is None:
            self._names = tuple(self._load())
        return self._names

    def __iter__(self) -> Iterator:
        return iter(self._all())

    def __contains__(self, value) -> bool:
        return value in self._all()

    def __len__(self) -> int:
        return len(self._all())


def methods(kind: str) -> Choices:
    """The methods of search ``kind`` (:data:`discovery.orchestration.searches.SEARCHES`), the default first."""
    def load() -> tuple:
        from ...orchestration.searches import SEARCHES

        return SEARCHES[kind].methods

    return Choices(load)


def add_warehouse(p) -> None:
    p.add_argument("--warehouse", default=None, metavar="PATH",
                   help="warehouse folder or URI (default: $LAKESCOUT_WAREHOUSE, else [paths] warehouse of the "
                        "configuration)")


def session(args):
    """The command's :class:`~discovery.data.store.Session`: its ``--warehouse`` and the configuration ``--config`` (or
    the environment) names, resolved once and handed to what the command runs."""
    from ...config import load_config
    from ...data.store import Session

    return Session.at(args.warehouse, load_config(args.config))


def add_snapshot(p) -> None:
    p.add_argument("--snapshot", type=int, default=None, metavar="ID", help="snapshot id (default: the latest)")


def add_common(p, func, config: bool = True) -> None:
    """``--config`` (every command that reads the configuration) and ``--json``, and the function that runs it."""
    if config:
        p.add_argument("--config", default=None, metavar="FILE",
                       help="TOML configuration file (default: $LAKESCOUT_CONFIG, else ./lakescout.toml)")
    p.add_argument("--json", action="store_true", help="print JSON with every value in full instead of tables")
    p.set_defaults(func=func)
