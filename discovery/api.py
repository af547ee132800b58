"""Python API: ``discovery.open(warehouse)`` returns a :class:`Lakescout` pinned to one snapshot.

Methods mirror the CLI.  The object keeps answering from the snapshot it was opened on until :meth:`refresh` moves
it to the latest one, so a long-running service sees a consistent index between refreshes.
"""
from __future__ import annotations

from .status import warehouse_status
from .store import Snapshot, Warehouse, load_snapshot


class Lakescout:
    def __init__(self, warehouse: str, snapshot_id: int | None = None):
        self.warehouse = Warehouse(warehouse)
        self.snapshot: Snapshot = load_snapshot(self.warehouse, snapshot_id)

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.snapshot_id

    def refresh(self) -> Snapshot:
        """Move to the latest published snapshot."""
        self.snapshot = load_snapshot(self.warehouse)
        return self.snapshot

    def status(self) -> dict:
        return warehouse_status(self.warehouse, self.snapshot)

    def union(self, query: str | int, k: int = 10, method: str = "pgtus++", **params) -> dict:
        """Top-k tables unionable with ``query`` (a file, a catalogued lake path or a lake table id).

        ``method``: pgtus++ (default) | pgtus | starmie | exact (Definition 5 scores) | tactus (dual-evidence
        score).  ``params``: tau, phi_c, phi_ref, phi_r, k_prime, tau_abs, tau_drop (see :mod:`discovery.union`).
        """
        from .union.service import union_search

        return union_search(self.snapshot, query, k=k, method=method, **params)

    def join(self, query: str | int, column: str, tau: float | None = None, T: float | None = None,
             top_k: int | None = None, method: str = "pexeso") -> dict:
        """Lake columns semantically joinable with ``column`` of ``query`` (PEXESO), with matched value pairs.

        ``tau``: distance threshold as a fraction of the maximum distance (default from ``[join] tau``); ``T``: share
        of the query column's distinct values that must find a match (default ``[join] T``); ``top_k``: the k most
        joinable columns instead of all above T.  ``method``: pexeso | pexeso-h | exact (identical answers).
        """
        from .config import load_config
        from .join.service import join_search

        cfg = load_config().join
        return join_search(self.snapshot, query, column, cfg.tau if tau is None else tau, cfg.T if T is None else T,
                           top_k, method)

    def nary(self, query: str | int, key: str | list[str], k: int = 10, method: str = "mate",
             bits: int | None = None, initial_column: str | None = None) -> dict:
        """Top-k tables joinable with ``query`` on a multi-column ``key`` (MATE): table, J and column mapping.

        ``method``: mate | scr | bloom | exhaustive (all return the same exact top-k).  ``bits`` other than the
        index's size rebuilds the super keys in memory from the same postings; see :mod:`discovery.nary.loader`.
        """
        from .nary.service import nary_search

        return nary_search(self.snapshot, query, key, k=k, method=method, bits=bits, initial_column=initial_column)


def open_warehouse(warehouse: str, snapshot_id: int | None = None) -> Lakescout:
    return Lakescout(warehouse, snapshot_id)
