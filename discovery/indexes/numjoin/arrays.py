"""Numerical join query arrays: each family's :class:`~.index.NumericIndex` as ``.npy`` files, versioned with
``numeric_sets``.

The refresh writes them when it publishes a snapshot (before the snapshot row) as the query-array folder
:data:`NUMERIC_ARRAYS` (:mod:`discovery.data.store.arrays`, the protocol the union's folder follows too) named
``numeric-v<FORMAT>-ns<v>``, one subfolder per family, v the Delta version of ``numeric_sets`` the snapshot pins: the
indexes follow from that version alone (the build is seeded), so snapshots pinning it share the folder.
Each family folder holds :meth:`NumericIndex.to_arrays`'s arrays and ``sets.arrow`` (what each set id is, an Arrow
IPC file of :data:`~.stage.SET_FIELDS` mapped like the arrays); the
folder's ``meta.json``, written last, lists the families and marks it complete.  A query process maps the arrays
(:func:`open_numeric`) and rebuilds the index without computing a distance (:meth:`NumericIndex.from_arrays`).

A snapshot without the folder (or a process that cannot bring it to a local folder) gets the same indexes built in
memory from its ``numeric_sets`` rows (:func:`build_numeric`): same rows, same seed, same index.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa

from ...data.store.arrays import ArrayFolder
from .index import NumericIndex
from .stage import Family, families

FORMAT = 3


def numeric_arrays_name(versions: dict) -> str | None:
    v = versions.get("numeric_sets")
    return None if v is None else f"numeric-v{FORMAT}-ns{int(v)}"


def _rows(warehouse, versions: dict):
    return warehouse.read("numeric_sets", versions["numeric_sets"],
                          columns=["table_id", "set_no", "kind", "names", "ordinals", "spread", "total", "dim",
                                   "values", "quantity"])


def build_numeric(warehouse, versions: dict) -> dict[str, tuple[NumericIndex, pa.Table]]:
    """Every family's index and set descriptions, built in memory from the pinned ``numeric_sets`` rows."""
    return {fam.name: (fam.build(), fam.sets) for fam in families(_rows(warehouse, versions))}


def _save_family(folder: str, fam: Family) -> dict:
    os.makedirs(folder)
    index = fam.build()
    for key, value in index.to_arrays().items():
        np.save(os.path.join(folder, f"{key}.npy"), np.asarray(value), allow_pickle=False)
    with pa.OSFile(os.path.join(folder, "sets.arrow"), "wb") as sink, \
            pa.ipc.new_file(sink, fam.sets.schema) as writer:
        writer.write_table(fam.sets)
    return {"metric": fam.metric, "sets": fam.sets.num_rows, "values": int(fam.values.shape[0]),
            "bytes": index.nbytes}


def _fill(warehouse, versions: dict, folder: str) -> None:
    """Every family's arrays into its subfolder of ``folder``, then ``meta.json`` listing them."""
    meta = {fam.name: _save_family(os.path.join(folder, fam.name), fam)
            for fam in families(_rows(warehouse, versions))}
    with open(os.path.join(folder, "meta.json"), "w") as fh:
        json.dump({"format": FORMAT, "numeric_sets": int(versions["numeric_sets"]), "families": meta}, fh)


def load_array(path: str):
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError:  # 0-d and empty arrays cannot be mapped
        return np.load(path, allow_pickle=False)


def open_numeric(warehouse, versions: dict) -> dict[str, tuple[NumericIndex, pa.Table]] | None:
    """The stored families of the snapshot pinning ``versions``, mapped (a remote warehouse's from their local
    copy), or None when it has none."""
    path = NUMERIC_ARRAYS.open(warehouse, versions)
    if path is None:
        return None
    with open(os.path.join(path, "meta.json")) as fh:
        meta = json.load(fh)
    out = {}
    for fam in meta["families"]:
        folder = os.path.join(path, fam)
        arrays = {f[:-4]: load_array(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".npy")}
        sets = pa.ipc.open_file(pa.memory_map(os.path.join(folder, "sets.arrow"))).read_all()
        out[fam] = (NumericIndex.from_arrays(arrays), sets)
    return out


#: The numerical join's query-array folder (:mod:`discovery.data.store.arrays`).
NUMERIC_ARRAYS = ArrayFolder(numeric_arrays_name, _fill)
