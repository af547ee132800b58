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

import contextlib
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime, UTC

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads

from discovery.config import EmbedConfig
from discovery.data.store import SCHEMAS, Warehouse, WarehouseError
from discovery.data.store.cache import INDEXES
from discovery.transforms.quantities import RULE as QUANTITY_RULE

from ... import storage
from .base import ColumnConfig, Encoder
from .hash_encoder import HashEncoder, HashEncoderConfig
from .pretrained import model_dim
from .registry import encoder_from_bytes
from .serialization import content_digest
from .sentence import SentenceTransformerEncoder
from .terms import RULE as TERMS_RULE

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


def model_version(kind: str, payload, requires: dict, digest: hashlib.blake2b | None = None) -> str:
    """``<kind>-<hash>`` of the model bytes and of the JSON of what its vectors also depend on (``digest``: the
    bytes' :func:`~.serialization.content_digest` when already computed, extended here without changing it)."""
    digest = digest.copy() if digest is not None else content_digest(payload)
    digest.update(json.dumps(requires, sort_keys=True, default=str).encode())
    return f"{kind}-{digest.hexdigest()}"


def column_encoder(config: EmbedConfig) -> Encoder:
    """The column encoder the configuration asks for (its name, model folder and header channel were checked when it
    was read: :class:`~discovery.config.EmbedConfig`)."""
    pretrained_names = config.header_encoder == "sentence-transformers" and config.header_weight > 0
    column = ColumnConfig(max_values=config.column_values, header_weight=config.header_weight,
                          header_dim=model_dim(config.model_dir) if pretrained_names else config.header_dim,
                          header_model=config.model_dir if pretrained_names else "")
    if config.column_encoder == "hash":
        return HashEncoder(HashEncoderConfig(dim=config.dim), column)
    return SentenceTransformerEncoder(config.model_dir, column)


def column_requires(type_agreement: float) -> dict:
    """Besides its bytes, column vectors depend on the type inference that marks columns numeric, and the rows that
    hold them on the rule that gives number columns their quantity (:mod:`discovery.transforms.quantities`) and on the
    rule of their terms (:mod:`.terms`): rows made under another rule are re-encoded by the next refresh."""
    return {"type_agreement": type_agreement, "quantity_rule": QUANTITY_RULE, "terms_rule": TERMS_RULE}


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
    """One ``models`` row, ready to be written as a data file by a worker or the driver.  The payload becomes the
    row's value without a copy: a join encoder's is about 100 MB, and each fresh copy of it is time a first build
    waits for (first touches of new memory cost about 2 ms a MB on a shared 2-core machine)."""
    row = {"name": name, "version": version, "created_at": datetime.now(UTC), "refresh_id": refresh_id,
           "params": json.dumps(params, sort_keys=True, default=str)}
    data = pa.py_buffer(payload)
    offsets = pa.array([0, data.size], pa.int32()).buffers()[1]
    schema = SCHEMAS["models"]
    return pa.table([pa.Array.from_buffers(pa.binary(), 1, [None, offsets, data]) if f.name == "payload"
                     else pa.array([row[f.name]], f.type) for f in schema], schema=schema)


def payload(wh: Warehouse, name: str, version: str, table_version: int | None = None) -> tuple[bytes, dict]:
    """Payload and params of one stored model version (filter pushed down to the file statistics)."""
    t = wh.read("models", table_version, columns=["payload", "params"],
                filter=(pads.field("name") == name) & (pads.field("version") == version))
    if t.num_rows == 0:
        raise WarehouseError(f"model {name!r} version {version} is missing from {wh.root!r}")
    return t.column("payload")[0].as_py(), json.loads(t.column("params")[0].as_py() or "{}")


#: Folder of a local warehouse holding each loaded model version's payload as a plain file (``<version>.bin``).
MODEL_FILES = "model_files"
_SAFE_VERSION = re.compile(r"[A-Za-z0-9._-]+")


def stored_encoder(wh: Warehouse, name: str, version: str) -> Encoder:
    """The encoder stored as (name, version), loaded once per process while it fits the process's index cache
    (``discovery.data.store.INDEXES``, bounded in bytes with the indexes it serves).  Versions are immutable content
    hashes, so the cache never goes stale.  Its bytes come from :func:`mapped_payload`."""
    return INDEXES.get(("encoder", wh.root, name, version),
                       lambda: encoder_from_bytes(mapped_payload(wh, name, version)))


def mapped_payload(wh: Warehouse, name: str, version: str):
    """A model version's payload, memory-mapped from ``<warehouse>/model_files/<version>.bin`` when that file exists.

    A join encoder's payload is about 100 MB (2^18 hashed buckets x 96 dimensions); reading it from the ``models``
    table means decompressing and copying all of it, most of a cold join query's time, although encoding a query
    column touches only the embedding rows of its values' n-grams.  So the first process that reads a version from
    the table also writes it as a plain file (atomically: a temporary file renamed into place), and later processes
    map that file and read only the pages they touch.  The file is named by the version, a content hash, so it
    cannot go stale.  A warehouse on an object store, or a folder this process may not write (a read-only
    installation), is simply read from the table every time.
    """
    path = _payload_path(wh, version)
    if path is None:
        return payload(wh, name, version)[0]
    with contextlib.suppress(OSError, ValueError):  # missing, empty or not readable by this user: read the table
        return np.memmap(path, dtype=np.uint8, mode="r")
    data, _ = payload(wh, name, version)
    keep_payload_file(wh, version, data)
    return data


def _payload_path(wh: Warehouse, version: str) -> str | None:
    """Where :func:`mapped_payload` keeps a version's payload file; None off a local warehouse."""
    root = storage.on_disk(wh.root)
    if root is None or not _SAFE_VERSION.fullmatch(version):
        return None
    return os.path.join(root, MODEL_FILES, f"{version}.bin")


def keep_payload_file(wh: Warehouse, version: str, data) -> None:
    """Write a model version's payload where :func:`mapped_payload` maps it (atomically: a temporary file renamed
    into place), unless it is there.  The embed stage's training task calls it with the payload it just trained, so
    the encoding tasks after it map the file instead of each reading 100 MB back from the table.  A warehouse off a
    local folder, or one this process may not write, keeps the table as the only copy."""
    path = _payload_path(wh, version)
    if path is None or os.path.exists(path):
        return
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{version}.")
    except OSError:  # not writable here
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o644)  # readable by the other processes serving this warehouse
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


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
