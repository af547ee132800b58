"""Delta index store: table schemas, the write path for workers and drivers, snapshots for readers."""
from .files import DataFile, new_attempt_token, write_data_file
from .lease import Lease, LeaseHeld, LeaseLost, release_refresh
from .models import StoredModel, latest_model, save_model, snapshot_model
from .orphans import cleanup_orphans, cleanup_warehouse
from .rewrite import candidate_files, drop_table_ids, read_rows
from .schema import INDEX_TABLES, PER_TABLE, SCHEMAS
from .session import Session
from .snapshot import Snapshot, list_snapshots, load_snapshot, result_names
from .warehouse import CommitResult, KeptOpenWarehouse, Warehouse, WarehouseError

__all__ = ["StoredModel", "latest_model", "save_model", "snapshot_model", "candidate_files", "drop_table_ids",
           "read_rows", "DataFile", "new_attempt_token", "write_data_file", "INDEX_TABLES", "PER_TABLE", "SCHEMAS",
           "Snapshot", "list_snapshots", "load_snapshot", "result_names", "CommitResult", "KeptOpenWarehouse",
           "Warehouse", "WarehouseError", "Session", "Lease", "LeaseHeld", "LeaseLost", "release_refresh",
           "cleanup_orphans", "cleanup_warehouse"]
