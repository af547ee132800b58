"""A session of work on one warehouse: the warehouse with its backend and the resolved configuration, built once.

Each surface (the CLI, the API object, the page and the JSON API, a DAG task, a Spark driver) builds one
:class:`Session` from what it was given (a location, a TOML file) and hands it down, as a ``SparkSession`` or a
pyiceberg ``Catalog`` is handed down: services take the session, never a location to wrap again or a configuration
to read again.  So a batch, a standing query or a server answers with the configuration its surface resolved,
whatever the environment of the process says later, and the warehouse's backend (a local folder, an object store)
is resolved once.  The pinned snapshot a query answers from is the API object's (:class:`discovery.api.Lakescout`),
which holds a session; a refresh's stages carry theirs in :class:`discovery.stages.context.StageContext`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...config import Config
from .warehouse import Warehouse


@dataclass(frozen=True)
class Session:
    """``warehouse`` and ``config`` of one unit of work (module docstring)."""

    warehouse: Warehouse
    config: Config

    @classmethod
    def at(cls, warehouse: str | Warehouse, config: Config) -> Session:
        """The session of ``warehouse`` (a location, checked as :class:`Warehouse` checks it) under ``config``."""
        return cls(warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse), config)

    @property
    def root(self) -> str:
        return self.warehouse.root
