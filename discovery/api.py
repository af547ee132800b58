"""Python API: ``discovery.open(warehouse)`` returns a :class:`Lakescout` pinned to one snapshot.

Methods mirror the CLI.  The object keeps answering from the snapshot it was opened on until :meth:`latest` moves it
to the newest one, so a long-running service sees a consistent index between refreshes.  (Building a snapshot is the
CLI's ``lakescout refresh`` or the ``lake_refresh`` DAG; nothing here writes the index.)
"""
from __future__ import annotations

import os
import warnings
from typing import Any, TypeAlias

from .config import Config, load_config
from .data.store import Session, Snapshot, Warehouse, load_snapshot
from .orchestration.searches import Plan, limits, search_kind
from .orchestration.status import warehouse_status
from .query.params import DEFAULT_K, check_id, check_query
from .query.resolve import resolve_query


#: What a search takes as its query: a file path, a catalogued lake path, a lake table id, or a table in memory (a
#: pyarrow Table or a pandas DataFrame; :func:`discovery.query.params.check_query` says which).
Query = Any
#: A written answer: a ``pyarrow.Table`` (its schema metadata holding the description), or with ``output`` the
#: description (a dict).  Any, because pyarrow ships no type information for its Table.
Written: TypeAlias = Any
#: A configuration: the object itself, the path of a TOML file, or None for the file ``load_config`` finds.
ConfigLike = Config | str | os.PathLike[str] | None


class Lakescout:
    def __init__(self, warehouse: str | Session, snapshot_id: int | None = None,
                 config: ConfigLike = None):
        """``warehouse``: a location, or a :class:`~discovery.data.store.Session` (a server's, which carries its
        configuration: then ``config`` stays None).  ``config``: a :class:`~discovery.config.Config`, the path of a
        TOML file, or None for the file :func:`~discovery.config.load_config` finds.  It is resolved here, once, and
        every search and write of this object takes its defaults from it (``self.config``), so two objects in one
        process can answer with different configurations and a search answers as the object was opened, whatever the
        environment says later."""
        if isinstance(warehouse, Session):
            if config is not None:
                raise ValueError("config: a session carries its configuration; give a session or a configuration")
            self.session = warehouse
        else:
            self.session = Session.at(warehouse, config if isinstance(config, Config) else load_config(config))
        self.config: Config = self.session.config
        self.warehouse: Warehouse = self.session.warehouse
        self.snapshot: Snapshot = load_snapshot(self.warehouse,
                                                None if snapshot_id is None else check_id("snapshot_id", snapshot_id))

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.snapshot_id

    def latest(self) -> Snapshot:
        """Move to the latest published snapshot (later searches answer from it) and return it; the configuration
        stays the one the object was opened with."""
        self.snapshot = load_snapshot(self.warehouse)
        return self.snapshot

    def refresh(self) -> Snapshot:
        """Deprecated: the former name of :meth:`latest`, kept so existing code runs, with a warning.  It moves to
        the latest snapshot and builds nothing; "refresh" means building a snapshot (``lakescout refresh``, the
        ``lake_refresh`` DAG)."""
        warnings.warn("Lakescout.refresh() is deprecated and builds nothing: call latest() to move to the newest "
                      "snapshot (lakescout refresh or the lake_refresh DAG builds one)", DeprecationWarning,
                      stacklevel=2)
        return self.latest()

    def status(self) -> dict[str, Any]:
        """What ``lakescout status --json`` prints, for this object's snapshot: the snapshot, table counts by status
        and format, failed and stale tables with their reasons, tables indexed with warnings, rows of each index
        table, and the stages of the recent refreshes of the warehouse."""
        return warehouse_status(self.warehouse, self.snapshot)

    def tables(self, path: str | list[str] | None = None, format: str | list[str] | None = None,
               status: str | list[str] | None = None) -> list[dict[str, Any]]:
        """The lake tables this snapshot catalogues, by path, with format, status, rows, columns, bytes and the
        version indexed; filtered by gitignore-style ``path`` patterns, ``format`` and ``status`` (each a value or a
        list; default status: all but deleted).  See :func:`discovery.indexes.browse.list_tables`."""
        from .indexes.browse import list_tables

        return list_tables(self.snapshot, path, format, status)

    def describe(self, table: str | int) -> dict[str, Any]:
        """One lake table (an id or a catalogued path) as this snapshot knows it: catalog row, warnings, and each
        column's inferred type, counts, the indexes it is in and why not the others.  See
        :func:`discovery.indexes.browse.describe_table`."""
        from .indexes.browse import describe_table

        return describe_table(self.snapshot, table if isinstance(table, str) else check_id("table", table))

    def find(self, words: str | list[str], k: int = DEFAULT_K, values: bool = False) -> dict[str, Any]:
        """The ``k`` lake tables whose table and column names best match ``words`` (a list of terms, each a name or
        part of one, in any case and with any separators; a string is one term), by spelling or through a synonym of
        the shipped lexicon, with the name (and synonym) each term matched; ``values``: also match terms against the
        distinct values sampled from text columns.  See :mod:`discovery.indexes.find`."""
        from .indexes.find import find_tables
        from .query.params import ParameterError, count

        terms = [words] if isinstance(words, str) else words
        if not isinstance(terms, (list, tuple)) or not all(isinstance(t, str) for t in terms):
            raise ParameterError("words", "words must be a list of strings (names or parts of names)")
        if not isinstance(values, bool):
            raise ParameterError("values", f"values must be true or false, got {values!r}")
        return find_tables(self.snapshot, list(terms), count("k", k), values)

    def plan(self, kind: str, query: Query, **params: Any) -> Plan:
        """The search of ``kind`` (:data:`discovery.orchestration.searches.SEARCHES`) that ``query`` and ``params``
        make, checked and routed, ready to run (``.run(snapshot)``): one-line
        :class:`~discovery.query.params.ParameterError` naming a bad parameter; counts of tables or columns are capped
        at how many the snapshot indexes; the defaults the configuration sets are this object's (:attr:`config`)."""
        spec = search_kind(kind)
        checked = spec.check(params, limits(self.snapshot))
        return spec.plan(checked, resolve_query(self.snapshot, check_query(query)), self.config)

    def search(self, kind: str, query: Query, **params: Any) -> dict[str, Any]:
        """A search of any kind of :data:`discovery.orchestration.searches.SEARCHES` (``union``, ``join``, ``nary``,
        ...) with its parameters by name: what :meth:`union`, :meth:`join` and :meth:`nary` call, and what batches
        run."""
        return self.plan(kind, query, **params).run(self.snapshot)

    def union(self, query: Query, k: int = DEFAULT_K, method: str | None = None, **params: Any) -> dict[str, Any]:
        """Top-k tables unionable with ``query`` (a file, a catalogued lake path or a lake table id).

        ``method``: pgtus++ (default) | pgtus | exact (Definition 5 scores, exact's top-k) | pgtus++-approx |
        starmie (Definition 5 scores of approximate candidates) | tactus (dual-evidence score).  ``params``: tau,
        phi_c, phi_ref (pgtus++-approx), phi_r, k_prime, tau_abs, tau_drop (see :mod:`discovery.indexes.union`).
        """
        return self.search("union", query, k=k, **given(method=method), **params)

    def join(self, query: Query, column: str, tau: float | None = None, T: float | None = None,
             top_k: int | None = None, method: str | None = None, tau_share: float | None = None,
             similarity: str | None = None, metric: str | None = None) -> dict[str, Any]:
        """Lake columns joinable with ``column`` of ``query``, with matched value pairs.

        A text column: the semantic join (PEXESO over value vectors).  ``tau``: distance threshold as a fraction of
        the maximum distance (default ``[join] tau``); ``method``: pexeso (default) | pexeso-h | exact (identical
        answers).

        A number column, a coordinate pair (``column="lat,lng"``, latitude first or named so) or a column of
        fixed-length numeric lists: the numerical join (PEXESO over the values themselves,
        :mod:`discovery.indexes.numjoin`). ``tau`` is then a distance in the data's units (metres for coordinates), or
        ``tau_share`` a fraction of the query column's spread (default: ``[numjoin] tau_metres`` for coordinates,
        ``tau_share`` otherwise); ``similarity``: hit (distinct query values with a match, default) | all (matched
        pairs); ``metric`` for lists: euclidean (default) | angular; ``method``: pexeso (default) | pnodom | exact
        (identical answers).

        ``top_k``: the k columns of highest joinability, any match counting; ``T``: instead, every column in which at
        least that share of the query column's distinct values find a match.  With neither, the ``top_k`` (10) most
        joinable columns.
        """
        return self.search("join", query, column=column, **given(tau=tau, T=T, top_k=top_k, method=method,
                                                                   tau_share=tau_share, similarity=similarity,
                                                                   metric=metric))

    def nary(self, query: Query, key: str | list[str], k: int = DEFAULT_K, method: str | None = None,
             bits: int | None = None, initial_column: str | None = None) -> dict[str, Any]:
        """Top-k tables joinable with ``query`` on a multi-column ``key`` (MATE): table, J and column mapping.

        ``method``: mate (default) | scr | bloom | exhaustive (all return the same exact top-k).
        ``bits`` other than the
        index's size rebuilds the super keys in memory from the same postings; see :mod:`discovery.indexes.nary.loader`.
        """
        return self.search("nary", query, key=key, k=k, **given(method=method, bits=bits,
                                                                 initial_column=initial_column))

    # -- acting on answers -----------------------------------------------------------------------------------------
    def stack(self, query: Query, *, tables: list[int | str] | None = None, k: int = DEFAULT_K,
              min_score: float | None = None, method: str = "pgtus++", tau: float | None = None,
              min_columns: float | None = None, query_rows: bool = True, dedupe: bool = False,
              strict: bool = False, output: str | None = None, format: str | None = None, overwrite: bool = False,
              master: str | None = None) -> Written:
        """The union a union search describes, as one table: the query's rows (unless ``query_rows`` is False),
        then each result table's rows with its columns placed by the alignment that scored it (unaligned query
        columns null), and provenance columns naming each row's lake table, its indexed version and the snapshot.

        Which tables: the top ``k`` of the search (``method``, ``tau``), those of them scoring at least
        ``min_score``, or the ``tables`` named (ids or lake paths); of the search's, those whose alignment fills at
        least ``min_columns`` (``[materialize] stack_min_columns``, 0.5) of the query's columns, the others named in
        warnings.  Lake columns no query column aligns with are named in ``left_out`` and a warning.  A query that
        is a lake table gives its own rows its id and version.  ``dedupe`` keeps the first of identical rows.
        Lake tables are read at the versions the snapshot indexed; a plain file changed since is used with a
        warning, or refused with ``strict``.  Types: :mod:`discovery.surfaces.materialize.coerce`.

        Returns a ``pyarrow.Table`` (``.to_pandas()``) whose schema metadata ``b"lakescout"`` holds the JSON
        description (rows, columns, sources, warnings); with ``output`` (a path or URI; ``format`` parquet, csv or
        delta, else from the ending) writes it instead and returns the description.  With a Spark ``master`` and
        lake tables of at least ``[materialize] spark_min_bytes``, the write runs as a Spark job.
        """
        from .surfaces.materialize.actions import stack

        return stack(self, query, tables=tables, k=k, min_score=min_score, method=method, tau=tau,
                     min_columns=min_columns,
                     query_rows=query_rows, dedupe=dedupe, strict=strict, output=output, format=format,
                     overwrite=overwrite, master=master)

    def augment(self, query: Query, column: str | None = None, *, key: str | list[str] | None = None,
                rank: int | None = None, table: int | str | None = None, lake_column: str | None = None,
                lake_key: str | list[str] | None = None, columns: str | list[str] | None = None,
                fan_out: str = "nearest", max_matches: int | None = None, tau: float | None = None,
                tau_share: float | None = None, metric: str | None = None, matcher: str | None = None,
                precision: float | None = None, strict: bool = False, output: str | None = None,
                format: str | None = None, overwrite: bool = False, master: str | None = None) -> Written:
        """The query's rows with columns of a lake table added through a join's matched values.

        ``column`` joins a text column (or, with ``table`` and ``lake_column``, several comma-joined, ``"first,last"``,
        whose rows the matcher writes as one lake value by string programs, :mod:`discovery.transforms.match.programs`)
        through the two-table matcher (``matcher`` ``auto``, the default of
        ``[materialize] matcher``: each query value to the lake value it names, chosen without labels for the
        ``precision`` target; every added row carries ``<short>.match_score``, its estimated precision, and
        ``<short>.match_rule``), or through the search's own pairs (``matcher="search"``: each query value's
        nearest lake value within ``tau``); numbers, coordinates, vectors join their nearest lake value within tau
        as :meth:`join` finds it; ``key``
        joins on a multi-column key as :meth:`nary` does (equal normalised tuples).  The lake table is the
        search's result at ``rank`` (default: the first, or for a category column the first whose lake column holds
        one row per value), or ``table`` (id or path) through ``lake_column`` / ``lake_key``, else through its most
        joinable column.  ``columns``: the lake columns to add (default all), named
        ``<table short name>.<column>``, with ``<short>.distance``.

        ``fan_out``: ``nearest`` (one row per query row: the first matching lake row in the table's order),
        ``all`` (every matching lake row; more than ``max_matches``, default ``[materialize] max_matches``, for one
        query row is refused) or
        ``aggregate`` (count, first values, min / max / mean of number columns).  Several augmentations compose:
        pass the returned table as the next ``query``.  Returns and writes as :meth:`stack` does.
        """
        from .surfaces.materialize.actions import augment

        return augment(self, query, column, key=key, rank=rank, table=table, lake_column=lake_column,
                       lake_key=lake_key, columns=columns, fan_out=fan_out, max_matches=max_matches, tau=tau,
                       tau_share=tau_share, metric=metric, matcher=matcher, precision=precision, strict=strict,
                       output=output, format=format, overwrite=overwrite, master=master)

    def pairs(self, query: Query, column: str, *, rank: int | None = None, table: int | str | None = None,
              lake_column: str | None = None, tau: float | None = None, tau_share: float | None = None,
              metric: str | None = None, matcher: str | None = None, precision: float | None = None,
              output: str | None = None, format: str | None = None, overwrite: bool = False) -> Written:
        """Every matched value pair of a join result (the result at ``rank``, or ``table`` / ``lake_column`` as in
        :meth:`augment`, paired by ``matcher`` as it pairs them): ``query_value``, ``lake_value``, ``distance``,
        for text ``score`` and ``rule``, and how many query rows and lake rows hold each, nearest first.  Returns
        and writes as :meth:`stack` does."""
        from .surfaces.materialize.actions import pairs

        return pairs(self, query, column, rank=rank, table=table, lake_column=lake_column, tau=tau,
                     tau_share=tau_share, metric=metric, matcher=matcher, precision=precision, output=output,
                     format=format, overwrite=overwrite)


def given(**params: Any) -> dict[str, Any]:
    """The parameters a caller gave (not None): the search kind fills in the others' defaults."""
    return {k: v for k, v in params.items() if v is not None}


def open_warehouse(warehouse: str, snapshot_id: int | None = None,
                   config: ConfigLike = None) -> Lakescout:
    return Lakescout(warehouse, snapshot_id, config)
