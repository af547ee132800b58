"""Seeded vector sets, stored-index rows and an independent float64 brute force shared by the join tests (no tests of
their own)."""
import numpy as np
import pyarrow as pa


def unit(x):
    x = np.asarray(x, dtype=np.float64)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def uniform_lake(rng, n_cols=60, dim=8, max_size=30):
    sizes = rng.integers(1, max_size, n_cols)
    ids = np.repeat(rng.choice(10_000, n_cols, replace=False), sizes)
    return unit(rng.normal(size=(sizes.sum(), dim))), ids


def clustered_lake(rng, n_cols=80, dim=16, n_entities=150, intrinsic=4, noise=0.05, max_size=40):
    """Entities on a low-dimensional sphere, columns = noisy variants of entity subsets."""
    basis = rng.normal(size=(intrinsic, dim))
    entities = unit(rng.normal(size=(n_entities, intrinsic)) @ basis)
    sizes = rng.integers(2, max_size, n_cols)
    parts, ids = [], []
    for c, s in enumerate(sizes):
        picked = rng.choice(n_entities, min(s, n_entities), replace=False)
        parts.append(entities[picked] + rng.normal(size=(picked.size, dim)) * noise / np.sqrt(dim))
        ids.append(np.full(picked.size, 3 * c + 7))
    return unit(np.vstack(parts)), np.concatenate(ids), entities


def query_from(rng, entities, size, dim_noise=0.05):
    picked = rng.choice(entities.shape[0], size, replace=False)
    return unit(entities[picked] + rng.normal(size=(size, entities.shape[1])) * dim_noise / np.sqrt(entities.shape[1]))


def brute_force(lake, column_ids, query, tau_fraction, T, metric="euclidean", value_of=None):
    """Reference answer in float64, independent of the package: {column id: matched query values}; ``value_of``
    names the value of each query vector (default: one value each), and a value matches when any of its vectors does."""
    value_of = np.arange(query.shape[0]) if value_of is None else np.asarray(value_of)
    lake = lake.astype(np.float64)
    query = query.astype(np.float64)
    if metric == "angular":
        lake = lake / np.linalg.norm(lake, axis=1, keepdims=True)
        query = query / np.linalg.norm(query, axis=1, keepdims=True)
        cos = np.clip(query @ lake.T, -1.0, 1.0)
        dist = np.arccos(cos)
        tau = tau_fraction * np.pi
    else:
        dist = np.sqrt(((query[:, None, :] - lake[None, :, :]) ** 2).sum(-1))
        tau = tau_fraction * 2.0
    hit = dist <= tau
    need = max(1, int(np.ceil(round(T * np.unique(value_of).size, 9))))
    out = {}
    for c in np.unique(column_ids):
        n = int(np.unique(value_of[hit[:, column_ids == c].any(axis=1)]).size)
        if n >= need:
            out[int(c)] = n
    return out


def top_k_reference(answer, k):
    ranked = sorted(answer.items(), key=lambda kv: (-kv[1], kv[0]))
    return dict(ranked[:k])


def stored_rows(lake: np.ndarray, keys: np.ndarray, pivots: np.ndarray, levels: int = 3, values=None, segment=None):
    """(pivot model, ``value_vectors`` rows, ``pivot_mappings`` rows) of a lake of vectors with column keys, as the
    pivots stage stores them: what the service builds its index from (``index_from_rows``).  ``values`` and
    ``segment`` name each row's value and segment number (default: a value of its own, segment 0)."""
    from discovery.indexes.join import GridSpec
    from discovery.indexes.join.pivots import map_to_pivots
    from discovery.indexes.join.stage import COLUMN_KEY_BASE, PivotModel, mapping_rows

    model = PivotModel("pivots-test", pivots, GridSpec.fit(map_to_pivots(lake, pivots), levels), "euclidean",
                       "join-test", 2, np.zeros(0, np.int64), np.zeros((1, 0)), np.zeros(1), {"by": "configuration"})
    vv = pa.table({"table_id": pa.array(keys // COLUMN_KEY_BASE, pa.int64()),
                   "content_hash": pa.array(["h"] * len(keys)),
                   "ordinal": pa.array(keys % COLUMN_KEY_BASE, pa.int32()),
                   "value": pa.array(values if values is not None else [f"v{i:05d}" for i in range(len(keys))]),
                   "vector": pa.array([v.tolist() for v in lake], pa.list_(pa.float32())),
                   "segment": pa.array(np.zeros(len(keys)) if segment is None else segment, pa.int32())})
    return model, vv, mapping_rows(vv, model)


def check_context_order(matches, slack: int) -> None:
    """The order rule of context (:mod:`discovery.indexes.join.service`): no result ranks above one whose count exceeds
    its own by more than ``slack`` matches."""
    for i, a in enumerate(matches):
        assert all(b - a <= slack for b in matches[i + 1:]), (matches, slack)


def check_context_top_k(answer, expected: dict, k: int, slack: int) -> None:
    """A served top-k ``answer`` [(column key, matched)] in rank order against brute force ``expected``
    {column key: matched, every column with a match}: the counts exact; the exact top-k set except within ``slack``
    of the k-th count, where context may choose among the columns; the order rule kept."""
    got = dict(answer)
    assert len(got) == len(answer) == min(k, len(expected))
    assert all(expected.get(key) == m for key, m in answer), (answer, expected)
    if answer:
        kth = sorted(expected.values(), reverse=True)[len(answer) - 1]
        assert all(key in got for key, m in expected.items() if m > kth + slack), (answer, expected, slack)
        assert all(m >= kth - slack for _, m in answer)
    check_context_order([m for _, m in answer], slack)


def context_slack(result: dict) -> int:
    """The slack, in matches, the served join ordered ``result`` with (0 where context ordered nothing)."""
    return int(result["stats"].get("context_slack", 0))
