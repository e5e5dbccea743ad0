# SPDX-License-Identifier: MIT
"""cKDTree.count_neighbors at many radii (the grid's pair walks for the smallest radii, one dual
walk over trees of boxes for the rest) against scipy's: scalar and array r, radii from none to
every pair, repeated, negative and infinite; weights as a tuple, one-sided, one array for a
tree with itself; cumulative or not; p in {1, 2, 3.5, inf}; periodic boxes; 1D data, rows with
NaN; self and cross."""
import numpy as np
import pytest
from scipy.spatial import cKDTree as SciTree

import nearby
from corpus import make

PS = (1.0, 2.0, 3.5, np.inf)


def radii_for(x, count, rng):
    """count radii from 0 out past the data's extent (sorted)."""
    span = float(np.linalg.norm(x.max(axis=0) - x.min(axis=0)))
    return np.sort(np.concatenate([[0.0, span * 1.01], rng.random(count - 2) * span]))


def agree(ours, theirs, weighted):
    if weighted:
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)
    else:
        assert np.asarray(ours).dtype == np.asarray(theirs).dtype
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("name", ["uniform3d", "powerlaw3d", "blobs2d", "dups2d", "uniform1d"])
@pytest.mark.parametrize("p", PS)
def test_against_scipy(name, p):
    rng = np.random.default_rng(7)
    x, y = make(name, 300), make(name, 120, seed=1)
    ours, theirs = nearby.cKDTree(x), SciTree(x)
    ours2, theirs2 = nearby.cKDTree(y), SciTree(y)
    w1, w2 = rng.random(len(x)), rng.random(len(y))
    for count in (3, 40):
        rs = radii_for(x, count, rng)
        for cumulative in (True, False):
            for o, t in ((ours, theirs), (ours2, theirs2)):
                agree(ours.count_neighbors(o, rs, p=p, cumulative=cumulative),
                      theirs.count_neighbors(t, rs, p=p, cumulative=cumulative), False)
            agree(ours.count_neighbors(ours2, rs, p=p, weights=(w1, w2), cumulative=cumulative),
                  theirs.count_neighbors(theirs2, rs, p=p, weights=(w1, w2),
                                         cumulative=cumulative), True)
            agree(ours.count_neighbors(ours2, rs, p=p, weights=(None, w2), cumulative=cumulative),
                  theirs.count_neighbors(theirs2, rs, p=p, weights=(None, w2),
                                         cumulative=cumulative), True)
            agree(ours.count_neighbors(ours, rs, p=p, weights=w1, cumulative=cumulative),
                  theirs.count_neighbors(theirs, rs, p=p, weights=w1, cumulative=cumulative),
                  True)
            agree(ours.count_neighbors(ours, rs, p=p, weights=(w1, None), cumulative=cumulative),
                  theirs.count_neighbors(theirs, rs, p=p, weights=(w1, None),
                                         cumulative=cumulative), True)
    r = float(radii_for(x, 3, rng)[1])
    got = ours.count_neighbors(ours2, r, p=p)
    assert isinstance(got, int) and got == theirs.count_neighbors(theirs2, r, p=p)
    got = ours.count_neighbors(ours2, r, p=p, weights=(w1, w2))
    assert np.isclose(got, theirs.count_neighbors(theirs2, r, p=p, weights=(w1, w2)))


@pytest.mark.parametrize("p", PS)
def test_periodic(p):
    rng = np.random.default_rng(11)
    box = np.array([10.0, 10.0, 0.0])  # periodic in x and y
    x = rng.random((300, 3)) * [10.0, 10.0, 4.0]
    y = rng.random((100, 3)) * [10.0, 10.0, 4.0]
    ours, theirs = nearby.cKDTree(x, boxsize=box), SciTree(x, boxsize=box)
    ours2, theirs2 = nearby.cKDTree(y, boxsize=box), SciTree(y, boxsize=box)
    w1 = rng.random(len(x))
    rs = np.sort(np.concatenate([[0.0, 4.0, 5.0, 9.0], rng.random(30) * 9.0]))  # past P / 2
    for cumulative in (True, False):
        agree(ours.count_neighbors(ours2, rs, p=p, cumulative=cumulative),
              theirs.count_neighbors(theirs2, rs, p=p, cumulative=cumulative), False)
        agree(ours.count_neighbors(ours, rs, p=p, cumulative=cumulative),
              theirs.count_neighbors(theirs, rs, p=p, cumulative=cumulative), False)
        agree(ours.count_neighbors(ours, rs, p=p, weights=w1, cumulative=cumulative),
              theirs.count_neighbors(theirs, rs, p=p, weights=w1, cumulative=cumulative), True)


def test_ties_repeats_and_odd_radii():
    # an integer lattice: many distances exactly at the integer radii
    g = np.arange(6, dtype=np.float64)
    x = np.array(np.meshgrid(g, g, g)).reshape(3, -1).T
    ours, theirs = nearby.cKDTree(x), SciTree(x)
    rs = np.array([0.0, 1.0, 1.0, np.sqrt(2.0), 2.0, 3.0, 3.0, 5.0, 9.0])
    for p in PS:
        for cumulative in (True, False):
            agree(ours.count_neighbors(ours, rs, p=p, cumulative=cumulative),
                  theirs.count_neighbors(theirs, rs, p=p, cumulative=cumulative), False)
    # unsorted and infinite radii (cumulative); a negative radius counts nothing (scipy's
    # answer there depends on p and on whether r is an array)
    rs = np.array([3.0, -1.0, np.inf, 0.5, 2.0, 1.0, 4.0, 2.5, 1.5, 0.0, 7.0])
    pos = rs >= 0.0
    w = np.linspace(0.5, 2.0, len(x))
    for p in PS:
        got = ours.count_neighbors(ours, rs, p=p)
        agree(got[pos], theirs.count_neighbors(theirs, rs[pos], p=p), False)
        assert got[1] == 0
        got = ours.count_neighbors(ours, rs, p=p, weights=w)
        agree(got[pos], theirs.count_neighbors(theirs, rs[pos], p=p, weights=w), True)
        assert got[1] == 0.0


def test_nan_rows_and_empty():
    # rows with NaN match nothing (scipy counts every pair of them): the finite rows' counts
    rng = np.random.default_rng(3)
    x = rng.random((300, 2))
    x[::17] = np.nan
    keep = np.isfinite(x).all(axis=1)
    y = rng.random((100, 2))
    ours, theirs = nearby.cKDTree(x), SciTree(x[keep])
    ours2, theirs2 = nearby.cKDTree(y), SciTree(y)
    rs = np.linspace(0.0, 1.5, 25)
    w1, w2 = rng.random(len(x)), rng.random(len(y))
    agree(ours.count_neighbors(ours2, rs), theirs.count_neighbors(theirs2, rs), False)
    agree(ours.count_neighbors(ours, rs), theirs.count_neighbors(theirs, rs), False)
    agree(ours.count_neighbors(ours2, rs, weights=(w1, w2)),
          theirs.count_neighbors(theirs2, rs, weights=(w1[keep], w2)), True)
    agree(ours.count_neighbors(ours, rs, weights=w1),
          theirs.count_neighbors(theirs, rs, weights=w1[keep]), True)
    empty = nearby.cKDTree(np.zeros((0, 2)))
    agree(ours.count_neighbors(empty, rs),
          theirs.count_neighbors(SciTree(np.zeros((0, 2))), rs), False)
