"""Byte format of encoder weights: a JSON header (kind, config, array layout) followed by raw little-endian arrays.

Chosen over ``np.savez``/``torch.save`` because those embed timestamps or pickles: here the same model always yields
the same bytes, so the content hash of the bytes is a faithful model version for the warehouse, and loading never
executes code.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np

MAGIC = b"LAKESCOUT-ENCODER-1\n"


def pack(kind: str, config: dict, arrays: dict[str, np.ndarray]) -> bytes:
    """Serialise an encoder's kind, JSON-able config and named arrays."""
    layout, blobs = [], []
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        layout.append([name, arr.dtype.str, list(arr.shape)])
        blobs.append(arr.reshape(-1).view(np.uint8).data)  # joined below: one copy of the weights, not two
    header = json.dumps({"kind": kind, "config": config, "arrays": layout}, sort_keys=True).encode()
    return MAGIC + len(header).to_bytes(8, "little") + header + b"".join(blobs)


def unpack(data) -> tuple[str, dict, dict[str, np.ndarray]]:
    """Inverse of :func:`pack`; raises ``ValueError`` on foreign or truncated bytes.

    The arrays are read-only views of ``data`` (any object with the buffer protocol): a join encoder's weights are
    about 100 MB, and copying them twice was most of the time a cold join query spent loading its encoder.
    """
    view = memoryview(data).cast("B")
    if bytes(view[:len(MAGIC)]) != MAGIC:
        raise ValueError("not a Lakescout encoder (bad magic bytes)")
    pos = len(MAGIC)
    size = int.from_bytes(view[pos:pos + 8], "little")
    pos += 8
    header = json.loads(bytes(view[pos:pos + size]))
    pos += size
    arrays = {}
    for name, dtype, shape in header["arrays"]:
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        end = pos + count * dt.itemsize
        if end > len(view):
            raise ValueError(f"encoder bytes truncated in array {name!r}")
        arrays[name] = np.frombuffer(view[pos:end], dtype=dt).reshape(shape)  # read-only views, no copy
        pos = end
    return header["kind"], header["config"], arrays


def content_digest(data) -> hashlib.blake2b:
    """The content hash of an encoder's bytes, which its version (:func:`content_version`) and its model version
    (:func:`~.stored.model_version`) both start from: hashed once, a join encoder's 100 MB are not read twice."""
    return hashlib.blake2b(data, digest_size=8)


def content_version(kind: str, data, digest: hashlib.blake2b | None = None) -> str:
    """Version string of an encoder: its kind and a content hash of its serialised config and weights (``digest``:
    that hash when already computed by :func:`content_digest`)."""
    return f"{kind}-{(digest if digest is not None else content_digest(data)).hexdigest()}"
