"""What every stage of a refresh knows: where the lake and the warehouse are, which refresh and attempt it is.

:class:`StageContext` is a refresh's session object: built once by the stage's driver (the CLI's application, a DAG
task's ``spark-submit``) from its arguments and configuration, handed to the stage body and shipped to its Spark
tasks, which open the warehouse through it (:attr:`StageContext.store`, built once per process that holds it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

from .. import storage
from ..config import Config
from ..data.store import Warehouse


@dataclass(frozen=True)
class StageContext:
    warehouse: str
    lake: str
    refresh_id: int
    attempt: str
    full: bool = False
    config: Config = field(default_factory=Config)
    include: tuple = ()       # lake path patterns of this run; empty: the config's
    exclude: tuple = ()
    storage_env: dict = field(default_factory=storage.client_env)   # see __setstate__

    def __post_init__(self):
        # Spark tasks run in their executor's working folder, not the driver's: a local path is made absolute here,
        # on the driver, before the context is shipped to them.
        object.__setattr__(self, "lake", storage.normalize(self.lake))
        object.__setattr__(self, "warehouse", storage.normalize(self.warehouse))

    def __getstate__(self) -> dict:
        """The fields, not the opened warehouse: a task opens its own once the driver's settings are in place."""
        return {k: v for k, v in self.__dict__.items() if k != "store"}

    def __setstate__(self, state: dict) -> None:
        """Unpickled in a Spark task: the driver's object-storage settings (``AWS_*``, ``PYICEBERG_*``) become the
        task's environment, so executors reach the lake and the warehouse as the driver does whatever environment
        their JVM was started with (a local session started before the settings, a cluster's workers)."""
        for key, value in state.items():
            object.__setattr__(self, key, value)
        os.environ.update(self.storage_env)

    def patterns(self) -> tuple[tuple, tuple]:
        """(include, exclude) patterns of the lake tables this refresh indexes: the run's, else the config's."""
        return (tuple(self.include or self.config.lake.include), tuple(self.exclude or self.config.lake.exclude))

    @cached_property
    def store(self) -> Warehouse:
        """The warehouse, opened once per process that holds this context."""
        return Warehouse(self.warehouse)


@dataclass
class StageReport:
    """Counters a stage records in ``refresh_runs``."""

    stage: str
    tables_added: int = 0
    tables_changed: int = 0
    tables_deleted: int = 0
    tables_failed: int = 0
    tables_processed: int = 0
    rows_written: int = 0
    status: str = "ok"
    message: str = ""
