"""Encoders as versioned models of the warehouse ``models`` table, and the rules for when to train them again.

Four model names:

* ``encoder.column`` - the column encoder (hash or sentence-transformers) with the type agreement that decides which
  columns get numeric features; no training, its version changes only with its configuration.
* ``encoder.table`` - the TACTUS table encoder, trained on the lake on top of one ``encoder.column`` version.
* ``encoder.join`` - the contrastive value encoder of semantic joins, trained on the lake's join-candidate values.
* ``embed.encoders`` - the set of versions one embed stage encoded with, plus the settings that decide which values
  get value vectors.  A snapshot pins it, so a query loads exactly the encoders its index was built with.

A model version is a content hash of the encoder's bytes *and* of everything else its vectors depend on
(``requires``), so two rows with equal ``encoder_version`` always hold vectors computed the same way.  Rows are read
without their payload to decide, and payloads are loaded by (name, version) with a pushed-down filter and cached per
process: a Spark worker loads an encoder once for all its tasks.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

import pyarrow as pa
import pyarrow.dataset as pads

from discovery.config import EmbedConfig
from discovery.store import SCHEMAS, Warehouse, WarehouseError

from .base import ColumnConfig, Encoder
from .hash_encoder import HashEncoder, HashEncoderConfig
from .registry import encoder_from_bytes
from .sentence import SentenceTransformerEncoder

COLUMN_MODEL = "encoder.column"
TABLE_MODEL = "encoder.table"
JOIN_MODEL = "encoder.join"
SET_MODEL = "embed.encoders"


@dataclass(frozen=True)
class ModelRow:
    """A ``models`` row without its payload."""

    name: str
    version: str
    params: dict
    created_at: datetime
    refresh_id: int


def model_version(kind: str, payload: bytes, requires: dict) -> str:
    """``<kind>-<hash>`` of the model bytes and of the JSON of what its vectors also depend on."""
    digest = hashlib.blake2b(payload, digest_size=8)
    digest.update(json.dumps(requires, sort_keys=True, default=str).encode())
    return f"{kind}-{digest.hexdigest()}"


def column_encoder(config: EmbedConfig) -> Encoder:
    """The column encoder the configuration asks for."""
    column = ColumnConfig(max_values=config.column_values)
    if config.column_encoder == "hash":
        return HashEncoder(HashEncoderConfig(dim=config.dim), column)
    if config.column_encoder == "sentence-transformers":
        if not config.model_dir:
            raise ValueError("[embed] column_encoder = 'sentence-transformers' needs [embed] model_dir")
        return SentenceTransformerEncoder(config.model_dir, column)
    raise ValueError(f"[embed] column_encoder must be 'hash' or 'sentence-transformers', "
                     f"not {config.column_encoder!r}")


def column_requires(type_agreement: float) -> dict:
    """Besides its bytes, column vectors depend on the type inference that marks columns numeric."""
    return {"type_agreement": type_agreement}


def model_rows(warehouse: Warehouse, name: str) -> list[ModelRow]:
    """Every stored row of ``name`` (no payload), oldest first."""
    t = warehouse.read("models", columns=["name", "version", "params", "created_at", "refresh_id"],
                       filter=pads.field("name") == name)
    rows = [ModelRow(r["name"], r["version"], json.loads(r["params"] or "{}"), r["created_at"], r["refresh_id"])
            for r in t.to_pylist()]
    return sorted(rows, key=lambda r: r.created_at)


def latest_row(warehouse: Warehouse, name: str) -> ModelRow | None:
    """The newest row of ``name``: the version the next snapshot pins."""
    rows = model_rows(warehouse, name)
    return rows[-1] if rows else None


def model_table(name: str, version: str, params: dict, payload: bytes, refresh_id: int) -> pa.Table:
    """One ``models`` row, ready to be written as a data file by a worker or the driver."""
    row = {"name": name, "version": version, "created_at": datetime.now(timezone.utc), "refresh_id": refresh_id,
           "params": json.dumps(params, sort_keys=True, default=str), "payload": payload}
    return pa.Table.from_pylist([row], schema=SCHEMAS["models"])


def payload(warehouse_root: str, name: str, version: str, table_version: int | None = None) -> tuple[bytes, dict]:
    """Payload and params of one stored model version (filter pushed down to the file statistics)."""
    wh = Warehouse(warehouse_root)
    t = wh.read("models", table_version, columns=["payload", "params"],
                filter=(pads.field("name") == name) & (pads.field("version") == version))
    if t.num_rows == 0:
        raise WarehouseError(f"model {name!r} version {version} is missing from {warehouse_root!r}")
    return t.column("payload")[0].as_py(), json.loads(t.column("params")[0].as_py() or "{}")


@lru_cache(maxsize=16)
def stored_encoder(warehouse_root: str, name: str, version: str) -> Encoder:
    """The encoder stored as (name, version), loaded once per process.  Versions are immutable content hashes, so
    the cache never goes stale."""
    data, _ = payload(warehouse_root, name, version)
    return encoder_from_bytes(data)


def needs_training(row: ModelRow | None, requires: dict, ok_tables: int, full: bool, growth: float) -> str | None:
    """Why a trained encoder must be (re)trained now, or None: first build, full rebuild, a changed setting or
    column encoder it depends on, or a lake that grew past ``growth`` since the last training."""
    if row is None:
        return "first build"
    if full:
        return "full rebuild"
    if not usable(row, requires):
        return "settings changed"
    trained_on = int(row.params.get("lake_tables", 0))
    if ok_tables > trained_on * (1.0 + growth):
        return f"lake grew from {trained_on} to {ok_tables} tables"
    return None


def usable(row: ModelRow | None, requires: dict) -> bool:
    """A stored trained encoder can serve this refresh when it was trained under the same requirements."""
    return row is not None and row.params.get("requires") == _canonical(requires)


def _canonical(requires: dict) -> dict:
    """``requires`` as it reads back from the stored JSON params (tuples become lists)."""
    return json.loads(json.dumps(requires, sort_keys=True, default=str))
