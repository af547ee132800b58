"""The serialisable index form: arrays in, the same answers out, without recomputing a distance."""
import io

import numpy as np
import pyarrow as pa

from discovery.indexes.numjoin import NumericIndex
from numjoin_data import coordinate_lake, integer_lake


def test_arrays_round_trip_through_npz_gives_the_same_answers():
    sets, q = coordinate_lake(1)
    ix = NumericIndex.build(sets, "haversine", n_centers=10)
    buf = io.BytesIO()
    np.savez(buf, **ix.to_arrays())
    buf.seek(0)
    back = NumericIndex.from_arrays(dict(np.load(buf)))
    for tau in (0.0, 2000.0, 8000.0):
        a = ix.search(q, tau, T=0.3, exact_scores=True)
        b = back.search(q, tau, T=0.3, exact_scores=True)
        assert a.scores() == b.scores()
        for x, y in zip(a.sets, b.sets):
            np.testing.assert_array_equal(x.pairs, y.pairs)
    assert back.metric.name == "haversine" and back.n_sets == len(sets)


def test_every_array_fits_a_parquet_column():
    sets, _ = integer_lake(0, 3)
    arrays = NumericIndex.build(sets, "euclidean", n_centers=6).to_arrays()
    for name, a in arrays.items():
        a = np.asarray(a)
        col = pa.array(list(a)) if a.ndim == 2 else pa.array(a.reshape(-1))
        assert len(col) == (a.shape[0] if a.ndim else 1), name


def test_evidence_names_rows_of_the_callers_arrays():
    sets, q = integer_lake(2, 2)
    ix = NumericIndex.build(sets, "euclidean", n_centers=5)
    r = ix.search(q, 3.0, T=0.2, exact_scores=True)
    for s in r.sets:
        qi, xi = s.pairs[:, 0].astype(int), s.pairs[:, 1].astype(int)
        np.testing.assert_array_equal(s.query_values, q[qi])
        np.testing.assert_array_equal(s.lake_values, sets[s.set_id][xi])
