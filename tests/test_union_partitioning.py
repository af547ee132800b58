"""Algorithm 1 per table and the nearest-centroid map."""
import numpy as np
import pytest

from discovery.indexes.union import assign_to_centroids, flatten_partitions, partition_table
from discovery.indexes.union.partitioning import CASCADE


def unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("seed", range(20))
def test_assign_is_euclidean_argmin(seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((50, 6)).astype(np.float32)
    c = rng.standard_normal((7, 6)).astype(np.float32)
    want = np.argmin(((v[:, None, :] - c[None]) ** 2).sum(-1), axis=1)
    assert np.array_equal(assign_to_centroids(v, c), want)


def reference_merge(ids, centroids, m, rho_h):
    groups = [[c] for c in sorted(set(ids.tolist()))]
    while len(groups) > 1 and len(groups) / m >= rho_h:
        best = None
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                g = max(float(centroids[x] @ centroids[y]) for x in groups[a] for y in groups[b])
                if best is None or g > best[0]:
                    best = (g, a, b)
        _, a, b = best
        groups[a] = groups[a] + groups[b]
        del groups[b]
    return sorted(sorted(g) for g in groups)


@pytest.mark.parametrize("seed", range(40))
def test_partitions_cover_table_and_follow_dispersion(seed):
    rng = np.random.default_rng(seed)
    d, n_cent = 8, 12
    centroids = unit(rng.standard_normal((n_cent, d)))
    m = int(rng.integers(1, 15))
    spread = int(rng.integers(1, n_cent + 1))
    ids = rng.choice(spread, size=m)
    vectors = unit(centroids[ids] + 0.3 * rng.standard_normal((m, d)))
    ordinals = np.arange(m) * 2 + 1
    rho_l, rho_h = 0.3, 0.7
    parts = partition_table(vectors, ids, centroids, rho_l, rho_h, col_ordinals=ordinals, seed=1)
    members = np.concatenate([p.members for p in parts])
    assert sorted(members.tolist()) == sorted(ordinals.tolist())  # disjoint cover of V_i
    counts = {}
    for p in parts:
        assert len(p.group_centroid_ids) >= 1
        assert p.centroid_counts.sum() == len(p.members)
        for c, n in zip(p.centroid_ids, p.centroid_counts):
            counts[int(c)] = counts.get(int(c), 0) + int(n)
    assert counts == {int(c): int(n) for c, n in zip(*np.unique(ids, return_counts=True))}  # I_w
    rho = len(np.unique(ids)) / m
    if rho <= rho_l:
        assert all(np.all(p.group_centroid_ids == CASCADE) for p in parts)
        assert len(parts) <= max(1, int(np.ceil((rho_l + rho_h) / 2 * m)))
    elif rho >= rho_h:
        assert len(parts) == 1 or len(parts) / m < rho_h
        got = sorted(sorted(p.group_centroid_ids.tolist()) for p in parts)
        assert got == reference_merge(ids, centroids.astype(np.float64), m, rho_h)
        for p in parts:
            assert set(ids[(p.members - 1) // 2].tolist()) <= set(p.group_centroid_ids.tolist())
    else:
        assert sorted(int(p.group_centroid_ids[0]) for p in parts) == sorted(set(ids.tolist()))
    assert partition_table(vectors, ids, centroids, rho_l, rho_h, col_ordinals=ordinals, seed=1)[0].members.tolist() \
        == parts[0].members.tolist()


def test_flatten_layout():
    rng = np.random.default_rng(0)
    centroids = unit(rng.standard_normal((4, 5)))
    tables = []
    for _ in range(3):
        ids = rng.integers(4, size=4)
        tables.append(partition_table(unit(centroids[ids]), ids, centroids))
    flat = flatten_partitions([10, 11, 12], tables)
    assert len(flat.table_ids) == sum(len(p) for p in tables)
    assert flat.member_offsets[-1] == 12
    assert flat.iw_counts.sum() == 12
