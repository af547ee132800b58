"""Training the ``join`` and ``table`` encoders on a bounded, deterministic sample of the lake.

Both encoders learn from the lake itself (self-supervised).  The sample is at most ``train_tables`` ok tables chosen
by a seeded stable hash of their path: the same lake gives the same sample, and a growing lake keeps most of the
previous sample, so retraining moves the model no more than the data did.  The join encoder sees the distinct values
of those tables' join-candidate columns (each column's values capped exactly as value vectors are, then at most
``join_train_values`` values overall, again by stable hash) and which column holds which of them (its hard
negatives are near duplicates of one column); the table encoder sees the tables themselves.

Steps of the join encoder are ``min(join_steps, join_epochs * values / batch)``: a large lake trains for the
configured bound, a small one for a few passes over its values instead of hundreds (its variations would only be
repeated), which keeps refreshes of small lakes quick.

Training time is bounded by ``[embed] train_seconds`` per encoder as well as by steps (:class:`StepBudget`).  A
wall-clock bound must not make two builds of the same lake differ, so the clock decides only between a few fixed
step counts: the first :data:`PROBE_STEPS` steps are timed, and if the planned steps would overrun the budget at that
pace, training stops at the planned count halved as often as needed (never below the probe).  Stopping early equals
training with that many steps (the learning rates do not depend on the step count), the steps used are recorded in
the model's params.  The default (600 s) is a cap for lakes too large to train in full, chosen from measurements so
that the benchmark lakes never meet it, even on a loaded machine: fivethirtyeight's 1,500 join steps took about
140 s, the longest measured, and UGEN-V1's 234 join and 320 table steps 40-110 s each; on this shared 2-core machine
under a load average of 25 a step slowed to about 2.5 s, and a 150 s budget then cut UGEN-V1's join training to 58
of 234 steps, a model that a quiet machine would not build.  For every lake that fits the budget the model is a pure
function of the sample and the configuration; only a lake that would overrun it gets a step count that depends on
the machine's pace, and then only in halvings.

Every function here runs with one torch thread, so it can run in a Spark task next to another training task.  More
threads are not used: torch's multi-threaded kernels sum in a thread-count-dependent order (a 2-thread join step
gives weights that differ in the last bits from a 1-thread one), so a build on a cluster of one-core executors would
not equal a local build, and on a shared 2-core machine a second thread made a join step about 7x slower.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields, replace

import numpy as np
import pyarrow as pa

from discovery.config import EmbedConfig, Limits
from discovery.data.lake import LakeFileError, infer_type, read_lake_table

from .base import Encoder
from .columns import priority_sample, profile_column
from .join_encoder import JoinEncoderConfig
from .join_training import train_join_encoder
from .ngrams import stable_uniform
from .serialization import content_digest, content_version
from .stored import JOIN_MODEL, TABLE_MODEL, model_version
from .table_encoder import TableEncoderConfig, held_out_tables, table_steps, train_table_encoder

_SAMPLE_SEED = 0x5A3
#: Paths hashed at a time when sampling tables.
_HASH_BATCH = 8_192
#: Steps timed before a training decides whether its time budget lets it run every planned step.
PROBE_STEPS = 10
#: A sampled lake table: its columns, their inferred kinds and their names.
SampledTable = tuple[list[pa.Array], list[str], list[str]]


@dataclass(frozen=True)
class TrainedModel:
    name: str
    version: str
    params: dict
    payload: bytes
    seconds: float


def _options(cls, options: dict, section: str) -> dict:
    known = {f.name for f in fields(cls)}
    unknown = set(options) - known
    if unknown:
        raise ValueError(f"unknown key(s) in [embed] {section}: {', '.join(sorted(unknown))}")
    return dict(options)


def join_config(config: EmbedConfig) -> JoinEncoderConfig:
    """Join encoder parameters: the encoder's defaults, ``[embed] seed`` and ``join_options``; one torch thread."""
    return replace(JoinEncoderConfig(), **{"seed": config.seed, **_options(JoinEncoderConfig, config.join_options,
                                                                            "join_options"), "threads": 1})


def table_config(config: EmbedConfig) -> TableEncoderConfig:
    """TACTUS parameters: defaults, ``table_epochs``, ``table_max_rows``, ``seed``, ``table_options``; one thread."""
    base = {"epochs": config.table_epochs, "max_rows": config.table_max_rows, "seed": config.seed}
    return replace(TableEncoderConfig(), **{**base, **_options(TableEncoderConfig, config.table_options,
                                                               "table_options"), "threads": 1})


def join_requires(config: EmbedConfig, type_agreement: float) -> dict:
    """What join value vectors depend on besides the weights: which values get vectors, and how it was trained."""
    return {"values": {"type_agreement": type_agreement, "join_min_distinct": config.join_min_distinct,
                       "join_max_values": config.join_max_values},
            "train": {"join_steps": config.join_steps, "join_epochs": config.join_epochs,
                      "train_seconds": config.train_seconds,
                      "join_train_values": config.join_train_values, "train_tables": config.train_tables,
                      "seed": config.seed, "join_options": config.join_options}}


def table_requires(config: EmbedConfig, column_version: str) -> dict:
    """What table vectors depend on besides the weights: the column encoder, and how it was trained."""
    return {"column_version": column_version,
            "train": {"table_epochs": config.table_epochs, "table_max_rows": config.table_max_rows,
                      "train_seconds": config.train_seconds,
                      "train_tables": config.train_tables, "seed": config.seed,
                      "table_options": config.table_options}}


def sample_tables(ok: pa.Table, limit: int, seed: int) -> pa.Table:
    """At most ``limit`` catalog rows chosen by a seeded stable hash of the path, in ``table_id`` order.

    The paths are hashed 8,192 at a time (the hash is per string), so the driver never holds the lake's paths as
    Python strings."""
    if ok.num_rows <= limit:
        return ok.sort_by("table_id")
    paths = ok.column("path")
    rank = np.concatenate([stable_uniform(paths.slice(i, _HASH_BATCH).to_pylist(), _SAMPLE_SEED + seed)
                           for i in range(0, ok.num_rows, _HASH_BATCH)])
    keep = np.sort(np.lexsort((ok.column("table_id").to_numpy(), rank))[:limit])
    return ok.take(pa.array(keep)).sort_by("table_id")


def read_sample(sample: pa.Table, lake: str, limits: Limits, type_agreement: float
                ) -> list[SampledTable]:
    """Columns, inferred kinds and column names of each sampled table that can still be read (others skipped)."""
    out = []
    for item in sample.to_pylist():
        try:
            parsed = read_lake_table(lake, item["path"], item["format"], item["bytes"], limits)
        except (LakeFileError, OSError):
            continue
        if parsed.columns:
            out.append((parsed.columns, [infer_type(c, type_agreement) for c in parsed.columns], parsed.names))
    return out


def join_training_columns(tables: list[SampledTable], config: EmbedConfig, seed: int
                          ) -> tuple[list[str], list[list[str]]]:
    """Distinct normalised values of the join-candidate columns, capped per column and overall, and the values of
    each column among them: the join encoder's hard negatives are near duplicates within one column."""
    per_column: list[list[str]] = []
    for columns, kinds, _ in tables:
        for col, kind in zip(columns, kinds):
            if kind != "string":
                continue
            prof = profile_column(col)
            if len(prof.values) >= config.join_min_distinct:
                per_column.append([prof.values[i] for i in priority_sample(prof.values, prof.counts,
                                                                           config.join_max_values)])
    ordered = sorted({v for c in per_column for v in c})
    if len(ordered) > config.join_train_values:
        rank = stable_uniform(ordered, _SAMPLE_SEED + seed)
        ordered = [ordered[i] for i in np.sort(np.argsort(rank, kind="stable")[:config.join_train_values])]
        kept = set(ordered)
        per_column = [[v for v in c if v in kept] for c in per_column]
    return ordered, per_column


class StepBudget:
    """``stop(steps_done)`` for a training loop: ends it at ``planned`` steps, or, when the pace of the first
    :data:`PROBE_STEPS` steps says ``planned`` would take longer than ``seconds``, at ``planned`` halved until it fits
    (never below the steps already done); ``seconds <= 0`` means no budget.  ``limit`` is the step count chosen."""

    def __init__(self, seconds: float, planned: int):
        self.seconds, self.planned, self.limit = seconds, planned, planned
        self.step_seconds: float | None = None
        self._first: tuple[int, float] | None = None

    def __call__(self, done: int) -> bool:
        now = time.perf_counter()
        if self._first is None:
            self._first = (done, now)
        elif self.step_seconds is None and done - self._first[0] >= PROBE_STEPS:
            self.choose((now - self._first[1]) / (done - self._first[0]), done)
        return done >= self.limit

    def choose(self, step_seconds: float, done: int = PROBE_STEPS) -> int:
        """Fix the step count for a probed pace of ``step_seconds`` per step, ``done`` steps in, and return it."""
        self.step_seconds = step_seconds
        if self.seconds > 0:
            while self.limit > done and step_seconds * self.limit > self.seconds:
                self.limit //= 2
            self.limit = max(self.limit, min(done, self.planned))
        return self.limit

    def record(self, steps: int) -> dict:
        """What the model's params keep: steps planned and trained, what stopped training short of the plan (the
        time budget, or the held-out loss no longer falling), and the probed pace."""
        stopped = None if steps >= self.planned else "time budget" if steps >= self.limit else "held-out loss"
        return {"planned_steps": self.planned, "steps": steps, "stopped": stopped,
                "step_seconds": None if self.step_seconds is None else round(self.step_seconds, 4)}


def join_steps(config: EmbedConfig, n_values: int) -> int:
    batch = min(join_config(config).batch_size, n_values)
    return max(1, min(config.join_steps, math.ceil(config.join_epochs * n_values / max(batch, 1))))


def train_join_model(tables: list[SampledTable], config: EmbedConfig, type_agreement: float,
                     lake_tables: int, reason: str) -> TrainedModel | None:
    """The ``encoder.join`` model trained on the sample's candidate values; None with fewer than two values."""
    started = time.perf_counter()
    values, columns = join_training_columns(tables, config, config.seed)
    if len(values) < 2:
        return None
    steps = join_steps(config, len(values))
    budget = StepBudget(config.train_seconds, steps)
    encoder = train_join_encoder(values, replace(join_config(config), steps=steps), stop=budget, columns=columns)
    return _trained(JOIN_MODEL, encoder, join_requires(config, type_agreement), started,
                    {"lake_tables": lake_tables, "sample_tables": len(tables), "values": len(values),
                     **budget.record(encoder.config.steps), "reason": reason})


def train_table_model(tables: list[SampledTable], config: EmbedConfig, column: Encoder,
                      column_version: str, lake_tables: int, reason: str) -> TrainedModel | None:
    """The ``encoder.table`` model (TACTUS) trained on the sampled tables; None with fewer than two tables."""
    started = time.perf_counter()
    if len(tables) < 2:
        return None
    cfg = table_config(config)
    budget = StepBudget(config.train_seconds, table_steps(cfg, len(tables) - held_out_tables(cfg, len(tables))))
    encoder = train_table_encoder([t for t, _, _ in tables], column, cfg, [k for _, k, _ in tables],
                                  [n for _, _, n in tables], stop=budget)
    return _trained(TABLE_MODEL, encoder, table_requires(config, column_version), started,
                    {"lake_tables": lake_tables, "sample_tables": len(tables), "epochs": cfg.epochs,
                     **budget.record(encoder.config.max_steps or budget.planned), "reason": reason})


def _trained(name: str, encoder: Encoder, requires: dict, started: float, extra: dict) -> TrainedModel:
    data = encoder.to_bytes()  # serialised once: ``encoder.version`` would pack the 100 MB of a join encoder again
    digest = content_digest(data)
    seconds = time.perf_counter() - started
    params = {"requires": requires, "encoder_version": content_version(encoder.kind, data, digest),
              "seconds": round(seconds, 3), **extra}
    return TrainedModel(name, model_version(encoder.kind, data, requires, digest), params, data, seconds)
