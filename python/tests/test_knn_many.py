# SPDX-License-Identifier: MIT
"""query(x, k) of many points at once (the library's nb_grid_knn_many: 2D sets and periodic
boxes, 64 queries and more) against cKDTree and against the one-query path (a query at a time,
which breaks ties by the lower index as the batch must): the k nearest of every point and of
points anywhere, random and clustered data, lattices whose neighbours tie, duplicates, periodic
boxes, k ranks, distance_upper_bound, workers, and a NaN query."""
import numpy as np
import pytest
from scipy.spatial import cKDTree

import nearby
from conftest import SEED, lattice


def one_at_a_time(tree, xs, k, **kw):
    """The one-query path's answers (a single point never takes the batch)."""
    rows = [tree.query(x, k=k, **kw) for x in xs]
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def sets(dim):
    g = np.random.default_rng(SEED + dim)
    clusters = np.concatenate([g.normal(c, 0.02, size=(400, dim)) for c in (0.2, 0.5, 0.8)])
    dups = np.repeat(g.random((60, dim)), 9, axis=0)
    return {
        "uniform": g.random((1500, dim)),
        "clusters": np.concatenate([clusters, g.random((300, dim))]),
        "lattice": lattice(12 if dim == 3 else 40, dim),
        "duplicates": dups[g.permutation(len(dups))],
    }


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("name", ["uniform", "clusters", "lattice", "duplicates"])
@pytest.mark.parametrize("k", [1, 8, 20])
def test_every_point_matches(dim, name, k):
    pts = sets(dim)[name]
    got_tree = nearby.cKDTree(pts)
    got_d, got_i = got_tree.query(pts, k=k)
    want_d, want_i = cKDTree(pts).query(pts, k=k)
    np.testing.assert_allclose(got_d, want_d, rtol=1e-12, atol=0.0)
    if name == "uniform":  # no ties: the same points
        np.testing.assert_array_equal(got_i, want_i)
    some = np.random.default_rng(SEED).choice(len(pts), 40, replace=False)
    one_d, one_i = one_at_a_time(got_tree, pts[some], k)
    np.testing.assert_array_equal(got_d[some], one_d)
    np.testing.assert_array_equal(got_i[some], one_i)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("box", [None, 1.0])
def test_queries_anywhere(dim, box):
    g = np.random.default_rng(SEED)
    pts = sets(dim)["clusters"]
    if box is not None:
        pts = pts - np.floor(pts)
        pts[pts >= 1.0] = 0.0
    lo, hi = (0.0, 1.0) if box is not None else (-0.3, 1.3)
    xs = g.uniform(lo, hi, size=(300, dim))
    if box is not None:
        xs[xs >= 1.0] = 0.0
    got_tree = nearby.cKDTree(pts, boxsize=box)
    for k in (1, 8):
        got_d, got_i = got_tree.query(xs, k=k)
        want_d, want_i = cKDTree(pts, boxsize=box).query(xs, k=k)
        np.testing.assert_allclose(got_d, want_d, rtol=1e-12, atol=0.0)
        np.testing.assert_array_equal(got_i, want_i)
        one_d, one_i = one_at_a_time(got_tree, xs[:30], k)
        np.testing.assert_array_equal(got_d[:30], one_d)
        np.testing.assert_array_equal(got_i[:30], one_i)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("centre", [0.5, 0.0], ids=["middle", "faces"])
def test_periodic_every_point(dim, centre):
    g = np.random.default_rng(SEED + 7)
    pts = np.concatenate([g.normal(centre, 0.01, size=(1200, dim)), g.random((100, dim))])
    pts -= np.floor(pts)
    pts[pts >= 1.0] = 0.0
    for k in (1, 8, 33):
        got_d, got_i = nearby.cKDTree(pts, boxsize=1.0).query(pts, k=k)
        want_d, want_i = cKDTree(pts, boxsize=1.0).query(pts, k=k)
        np.testing.assert_allclose(got_d, want_d, rtol=1e-12, atol=0.0)
        np.testing.assert_array_equal(got_i, want_i)


def test_ranks_bound_workers():
    pts = sets(2)["uniform"]
    got_tree, want_tree = nearby.cKDTree(pts), cKDTree(pts)
    for kw in ({"k": [1, 3, 8]}, {"k": 8, "distance_upper_bound": 0.02}, {"k": 5, "workers": 2},
               {"k": 2000}):
        got_d, got_i = got_tree.query(pts, **kw)
        want_d, want_i = want_tree.query(pts, **kw)
        np.testing.assert_allclose(got_d, want_d, rtol=1e-12, atol=0.0)
        np.testing.assert_array_equal(got_i, want_i)


def test_nan_query():
    """nearby.Grid names the bad query; the cKDTree drop-in answers it as cKDTree does."""
    pts = sets(2)["uniform"]
    xs = pts[:100].copy()
    xs[70, 1] = np.nan
    with pytest.raises(ValueError, match=r"x\[70\]"):
        nearby.Grid(pts).query(xs, k=4)
    got_d, got_i = nearby.cKDTree(pts).query(xs, k=4)
    want_d, want_i = cKDTree(pts).query(xs, k=4)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_allclose(got_d, want_d, rtol=1e-12, atol=0.0)
