"""The whole value mapping of one semantic-join result: each query value with its nearest lake value within tau.

A search reports each result column's matched values with their witnesses (the column's nearest value,
:meth:`~.search.JoinIndex._nearest`), five of them as evidence.  Writing the joined table needs all of them, for a
column chosen by the user as well as for one a search returned: :func:`column_pairs` loads the partition that holds
the column (the one index of a one-partition build, kept in the cache) and resolves every query value against the
column with :meth:`~.search.JoinIndex.witnesses`, which gives exactly the pairs a search reports for that column.

The query values are the search's own (:func:`discovery.query.vectors.query_value_vectors`: the same sample, encoded by
the same call, so the same bits), followed, when the query column has more distinct values than the search samples
(``[embed] join_max_values``), by the rest, encoded in a second call: a joined table links every row it can, and
the values the search sampled keep the vectors, and so the pairs, the search computed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc

from ...data.store import Snapshot
from ...query.resolve import QueryError, QueryTable
from ...query.vectors import ColumnValues, column_values, query_value_vectors, snapshot_encoders
from ...transforms.encoders.columns import ColumnProfile, priority_sample, profile_column
from .stage import COLUMN_KEY_BASE, values_at


@dataclass(frozen=True)
class ValuePairs:
    """Matched values of one (query column, lake column): ``lake[i]`` is the nearest lake value of ``query[i]``
    at ``distance[i]``; ``values`` every distinct query value searched (matched or not)."""

    query: list[str]
    lake: list[str]
    distance: np.ndarray
    values: list[str]


def all_query_values(snapshot: Snapshot, q: QueryTable, ordinal: int) -> ColumnValues:
    """Every distinct value of the query column with its vectors: the search's sample first, as the search encodes
    it, then the values beyond the cap, encoded apart (see the module docstring)."""
    sampled = query_value_vectors(snapshot, q, ordinal)
    if not sampled.capped:
        return sampled
    cells = q.columns[ordinal]
    profile = profile_column(cells)
    spec = snapshot_encoders(snapshot).refs.spec
    chosen = set(priority_sample(profile.values, profile.counts, spec.join_max_values).tolist())
    rest = [i for i in range(len(profile.values)) if i not in chosen]
    join = snapshot_encoders(snapshot).join
    if join is None:  # a capped sample was encoded, so the snapshot has the join encoder
        raise ValueError("the snapshot has no join encoder to encode the values beyond the sample")
    extra = column_values(join,
                          ColumnProfile([profile.values[i] for i in rest], profile.counts[rest], np.empty(0)),
                          ordinal, len(rest), spec.join_segments, cells)
    n = len(sampled.values)
    return ColumnValues(ordinal, sampled.values + extra.values, np.r_[sampled.frequency, extra.frequency],
                        np.vstack([sampled.vectors, extra.vectors]), len(profile.values),
                        np.r_[sampled.value_of, extra.value_of + n], np.r_[sampled.segment, extra.segment])


def _partition(snapshot: Snapshot, n_partitions: int, table_id: int, ordinal: int) -> int | None:
    if n_partitions == 1:
        return 0
    flt = (pc.field("table_id") == table_id) & (pc.field("ordinal") == ordinal)
    found = snapshot.read("pivot_mappings", columns=["partition"], filter=flt)
    return int(found.column("partition")[0].as_py()) if found.num_rows else None


def column_pairs(snapshot: Snapshot, qv: ColumnValues, table_id: int, ordinal: int, tau: float) -> ValuePairs:
    """Every value of ``qv`` with its nearest value of lake column (``table_id``, ``ordinal``) within ``tau`` (a
    fraction of the maximum distance), as a search that returns the column reports it."""
    from .service import loaded_index, table_values

    loaded = loaded_index(snapshot)
    key = table_id * COLUMN_KEY_BASE + ordinal
    p = _partition(snapshot, loaded.model.n_partitions, table_id, ordinal)
    first_rows: dict[int, int] = {}
    index = loaded.partition(p, first_rows, []) if p is not None else None
    if index is None or key not in first_rows:
        raise QueryError(f"lake column {ordinal} of table {table_id} is not in the semantic-join index (a text "
                         f"column with at least [embed] join_min_distinct distinct values)")
    pairs = index.witnesses(qv.vectors, key, tau, value_ids=qv.value_of)
    ranks = [int(j) - first_rows[key] for j in pairs[:, 1]]
    strings = values_at(lambda ids: table_values(snapshot, ids), {key: ranks})
    return ValuePairs([qv.values[int(i)] for i in pairs[:, 0]], [strings[(key, r)] for r in ranks],
                      pairs[:, 2].astype(np.float64), list(qv.values))
