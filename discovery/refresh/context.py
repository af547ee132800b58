"""What every stage of a refresh knows: where the lake and the warehouse are, which refresh and attempt it is."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..config import Config
from ..store import Warehouse


@dataclass(frozen=True)
class StageContext:
    warehouse: str
    lake: str
    refresh_id: int
    attempt: str
    full: bool = False
    config: Config = field(default_factory=Config)

    @property
    def store(self) -> Warehouse:
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
