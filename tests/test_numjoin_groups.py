"""Definition 4 and the hash on group centers."""
import numpy as np

from discovery.indexes.numjoin.groups import assign_nearest, build_groups, select_centers
from discovery.indexes.numjoin.metric import chord_pairwise, chord_rows


def test_groups_partition_every_set_with_sorted_lists_and_radii():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 4))
    set_ids = rng.integers(0, 7, 500)
    set_ids[set_ids == 5] = 6                      # set 5 is empty
    centers = select_centers(x, 20, seed=1)
    g = build_groups(x, set_ids, 7, centers)
    assert g.n_sets == 7 and g.set_start[5] == g.set_start[6]
    assert np.array_equal(np.sort(g.member_row[np.repeat(g.set_of, g.size) == 2]), np.arange((set_ids == 2).sum()))
    for i in range(g.n_groups):
        a, b = g.start[i], g.start[i + 1]
        d = g.member_dist[a:b]
        assert b > a and np.all(np.diff(d) >= 0) and g.radius[i] == d[-1]
        assert np.array_equal(d, chord_rows(g.vectors[a:b], np.repeat(centers[g.center[i]][None], b - a, axis=0)))
    for s in range(7):
        cs = g.center[g.set_start[s]:g.set_start[s + 1]]
        assert np.all(np.diff(cs) > 0)
        for c in range(20):
            i = g.group_of(s, c)
            assert (i >= 0) == (c in cs) and (i < 0 or g.center[i] == c and g.set_of[i] == s)


def test_assignment_is_the_nearest_center():
    rng = np.random.default_rng(1)
    x, c = rng.normal(size=(300, 6)), rng.normal(size=(25, 6))
    d = chord_pairwise(x, c)
    got = assign_nearest(x, c)
    assert np.allclose(d[np.arange(300), got], d.min(axis=1), rtol=1e-9)


def test_centers_are_distinct_lake_vectors():
    x = np.repeat(np.arange(5.0)[:, None], 3, axis=0)
    c = select_centers(x, 10)
    assert c.shape == (5, 1) and np.unique(c).size == 5
