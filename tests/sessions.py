"""The session a surface builds, for tests that call services directly."""
from __future__ import annotations

from discovery.config import load_config
from discovery.data.store import Session


def session(warehouse) -> Session:
    """The session of ``warehouse`` (a location or an opened warehouse) with this process's configuration (the
    test run's file), as the CLI builds it."""
    return Session.at(warehouse, load_config())
