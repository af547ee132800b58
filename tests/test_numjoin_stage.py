"""Publishing the numerical join: the columnar families equal the sets read one row at a time, and their indexes
equal the per-set build."""
import numpy as np
import pyarrow as pa
import pytest

from discovery.data.store import SCHEMAS
from discovery.indexes.numjoin import NumericIndex
from discovery.indexes.numjoin.columns import KIND_METRICS
from discovery.indexes.numjoin.stage import SET_FIELDS, families, family_name


def _rows(seed: int) -> pa.Table:
    """numeric_sets rows of random tables, in random order: numbers, coordinates, 3-d vectors with zero vectors
    (one set all zeros), and tables without a group."""
    rng = np.random.default_rng(seed)
    out = {k: [] for k in SCHEMAS["numeric_sets"].names}
    for tid in rng.permutation(40):
        kinds = rng.choice(["number", "coordinates", "vector", "none"], size=int(rng.integers(1, 4)))
        for no, kind in enumerate(kinds):
            if kind == "none":
                kind, no, values = "none", -1, np.zeros((0, 0))
            else:
                n = int(rng.integers(1, 9))
                values = {"number": lambda n=n: rng.integers(0, 50, (n, 1)).astype(float),
                          "coordinates": lambda n=n: rng.uniform(-60, 60, (n, 2)),
                          "vector": lambda n=n: rng.integers(-1, 2, (n, 3)).astype(float)}[kind]()
                if kind == "vector" and tid % 7 == 0:
                    values[:] = 0.0
            row = {"table_id": int(tid), "content_hash": f"h{tid}", "set_no": no, "kind": kind, "ordinals": [no],
                   "names": [f"c{no}"], "dim": int(values.shape[1]), "size": int(values.shape[0]),
                   "total": int(values.shape[0]), "spread": 1.0, "unit": None, "values": values.reshape(-1),
                   "quantity": "count" if kind == "number" and tid % 2 else "", "rule": "r"}
            for k in out:
                out[k].append(row[k])
    return pa.table(out, schema=SCHEMAS["numeric_sets"])


def _reference(rows: pa.Table) -> dict:
    """{family: (set descriptions, per-set values)}, one Python row at a time."""
    out: dict = {}
    for r in sorted(rows.to_pylist(), key=lambda r: (r["table_id"], r["set_no"])):
        if r["kind"] == "none":
            continue
        values = np.array(r["values"]).reshape(-1, r["dim"])
        for metric in KIND_METRICS[r["kind"]]:
            v = values[np.einsum("ij,ij->i", values, values) > 0] if metric == "angular" else values
            if v.shape[0]:
                sets, vals = out.setdefault(family_name(metric, r["dim"]), ([], []))
                sets.append({f: r[f] for f in SET_FIELDS})
                vals.append(v)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_columnar_families_equal_the_sets_read_row_by_row(seed):
    rows = _rows(seed)
    want = _reference(rows)
    got = list(families(rows))
    assert [f.name for f in got] == sorted(want)
    for fam in got:
        sets, vals = want[fam.name]
        assert fam.sets.to_pylist() == sets
        assert len(fam.offsets) == len(vals) + 1
        for i, v in enumerate(vals):
            np.testing.assert_array_equal(fam.values[fam.offsets[i]:fam.offsets[i + 1]], v)
        flat, per_set = fam.build(seed=seed).to_arrays(), NumericIndex.build(vals, fam.metric, seed=seed).to_arrays()
        assert flat.keys() == per_set.keys()
        for key in flat:
            np.testing.assert_array_equal(np.asarray(flat[key]), np.asarray(per_set[key]), err_msg=key)


def test_a_vector_set_of_zero_vectors_has_no_angular_set():
    rows = _rows(0)
    fams = {f.name: f for f in families(rows)}
    zero = {t for t in range(40) if t % 7 == 0}
    assert zero & set(fams["euclidean-3"].sets["table_id"].to_pylist())
    assert not zero & set(fams["angular-3"].sets["table_id"].to_pylist())
