# SPDX-License-Identifier: MIT
"""nearby.Grid(boxsize=...) against cKDTree(boxsize=...) and a brute-force minimum-image
oracle: pairs, counts, ball queries, kNN, in 2D and 3D, every axis periodic or some not, on
random points, points exactly on 0 and just below L, lattices with pairs exactly r apart across
the boundary; and the errors (points outside the box, r > L / 2, bad boxsize)."""
import numpy as np
import pytest
from scipy.spatial import cKDTree

import nearby
from conftest import SEED

BOXES = [
    (2, 10.0),
    (2, [10.0, 7.0]),
    (2, [10.0, 0.0]),  # x wraps, y does not
    (3, 6.0),
    (3, [6.0, 0.0, 5.0]),
]


def box_ids():
    return ["%dd-%s" % (dim, box) for dim, box in BOXES]


def periods(dim, box):
    return np.broadcast_to(np.asarray(box, dtype=float), (dim,))


def oracle_d2(pts, x, period):
    """Minimum-image squared distances from x to every point, summed in axis order, as the
    library defines them."""
    d2 = np.zeros(len(pts))
    for a in range(pts.shape[1]):
        d = np.abs(pts[:, a] - x[a])
        if period[a] > 0:
            d = np.minimum(d, period[a] - d)
        d2 = d2 + d * d
    return d2


def oracle_pairs(pts, r, period):
    out = []
    for i in range(len(pts)):
        d2 = oracle_d2(pts[i + 1:], pts[i], period)
        out.extend((i, i + 1 + j) for j in np.nonzero(d2 <= r * r)[0])
    return set(out)


def data(dim, box, n=700):
    """Random points in the box (non-periodic axes span [0, 8)), plus points exactly on 0 and
    just below L on every periodic axis."""
    g = np.random.default_rng(SEED + dim)
    period = periods(dim, box)
    extent = np.where(period > 0, period, 8.0)
    pts = g.random((n, dim)) * extent
    edge = pts[:40].copy()
    for a in range(dim):
        if period[a] > 0:
            edge[:20, a] = 0.0
            edge[20:, a] = np.nextafter(period[a], 0.0)
    return np.concatenate([pts, edge])


def lattice_across(dim, box):
    """Integer lattice points filling [0, L) on periodic axes: neighbours across the boundary
    (0 and L - 1) are exactly 1 apart."""
    period = periods(dim, box)
    axes = [np.arange(int(p) if p > 0 else 4, dtype=float) for p in period]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=1)


def by_rows(pairs):
    """Pairs as an (m, 2) array sorted by (i, j)."""
    pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def grids(pts, box, r):
    yield nearby.Grid(pts, boxsize=box)
    yield nearby.Grid(pts, radius=r, boxsize=box)
    yield nearby.Grid(pts, cell_size=0.37, boxsize=box)


@pytest.mark.parametrize("dim,box", BOXES, ids=box_ids())
def test_pairs_match_ckdtree(dim, box):
    period = periods(dim, box)
    half = min(p for p in period if p > 0) / 2
    for pts in (data(dim, box), lattice_across(dim, box)):
        tree = cKDTree(pts, boxsize=box)
        for r in (0.0, 0.3, 1.0, 1.7, half):
            want = tree.query_pairs(r)
            if len(pts) < 800 and r in (1.0, half):
                assert want == oracle_pairs(pts, r, period)
            want_arr = by_rows(tree.query_pairs(r, output_type="ndarray"))
            for at, grid in enumerate(grids(pts, box, r)):
                if at == 0:  # the set form (the others share its search; sets are slow to compare)
                    assert grid.query_pairs(r) == want, (r, grid)
                arr = grid.query_pairs(r, output_type="ndarray")
                assert arr.shape == (len(want), 2) and (arr[:, 0] < arr[:, 1]).all()
                np.testing.assert_array_equal(by_rows(arr), want_arr)
                assert grid.count_pairs(r) == len(want)


@pytest.mark.parametrize("dim,box", BOXES, ids=box_ids())
def test_lattice_pairs_across_the_boundary(dim, box):
    pts = lattice_across(dim, box)
    period = periods(dim, box)
    pairs = nearby.Grid(pts, boxsize=box).query_pairs(1.0)
    # Every lattice point has a neighbour exactly 1 away across each periodic face.
    for a in range(dim):
        if period[a] > 0:
            zero = np.nonzero(pts[:, a] == 0.0)[0][0]
            other = pts[zero].copy()
            other[a] = period[a] - 1.0
            j = int(np.nonzero((pts == other).all(axis=1))[0][0])
            assert (min(zero, j), max(zero, j)) in pairs
    assert pairs == oracle_pairs(pts, 1.0, period)


@pytest.mark.parametrize("dim,box", BOXES, ids=box_ids())
def test_query_ball_point_matches_ckdtree(dim, box):
    pts = data(dim, box)
    tree = cKDTree(pts, boxsize=box)
    g = np.random.default_rng(SEED)
    period = periods(dim, box)
    extent = np.where(period > 0, period, 8.0)
    # In the box, on its faces, and outside it (wrapped on the periodic axes, as cKDTree does).
    xs = np.concatenate([pts[:30], g.random((30, dim)) * extent * 1.6 - extent * 0.3])
    for r in (0.0, 0.5, 1.3):
        want = tree.query_ball_point(xs, r)
        for grid in grids(pts, box, r):
            got = grid.query_ball_point(xs, r)
            assert got.shape == want.shape
            for a, b in zip(got, want):
                assert a == sorted(b)
            assert grid.query_ball_point(xs[0], r) == sorted(tree.query_ball_point(xs[0], r))
            np.testing.assert_array_equal(grid.query_ball_point(xs, r, return_length=True),
                                          tree.query_ball_point(xs, r, return_length=True))
    # The oracle, for query points in the box.
    grid = nearby.Grid(pts, boxsize=box)
    for x in xs[:30]:
        want = np.nonzero(oracle_d2(pts, x, period) <= 1.3 * 1.3)[0].tolist()
        assert grid.query_ball_point(x, 1.3) == want


@pytest.mark.parametrize("dim,box", BOXES, ids=box_ids())
def test_knn_matches_ckdtree(dim, box):
    pts = data(dim, box)
    tree = cKDTree(pts, boxsize=box)
    g = np.random.default_rng(SEED + 1)
    period = periods(dim, box)
    extent = np.where(period > 0, period, 8.0)
    xs = g.random((200, dim)) * extent * 1.6 - extent * 0.3
    for k in (1, 5):
        want_d, want_i = tree.query(xs, k=k)
        for grid in grids(pts, box, 1.0):
            got_d, got_i = grid.query(xs, k=k)
            np.testing.assert_allclose(got_d, want_d, rtol=1e-12, atol=1e-12)
            # The points on the faces tie (several at the origin): every index found is at
            # the distance reported, and the first 700 points (random: no ties) agree exactly.
            got_i2 = np.asarray(got_i).reshape(len(xs), -1)
            got_d2 = np.asarray(got_d).reshape(len(xs), -1)
            for q in range(len(xs)):
                x = np.where(period > 0, np.mod(xs[q], np.where(period > 0, period, 1.0)), xs[q])
                d2 = oracle_d2(pts[got_i2[q]], x, period)
                np.testing.assert_allclose(np.sqrt(d2), got_d2[q], rtol=1e-12, atol=1e-12)
        rand = pts[:700]
        want_d, want_i = cKDTree(rand, boxsize=box).query(xs, k=k)
        got_d, got_i = nearby.Grid(rand, boxsize=box).query(xs, k=k)
        np.testing.assert_array_equal(got_i, want_i)
        np.testing.assert_allclose(got_d, want_d, rtol=1e-12, atol=1e-12)
    d, i = nearby.Grid(pts, boxsize=box).query(xs[0])
    wd, wi = tree.query(xs[0])
    assert i == wi and d == pytest.approx(wd, rel=1e-12)
    # The oracle, for query points in the box: the nearest by minimum-image distance.
    grid = nearby.Grid(pts, boxsize=box)
    for x in pts[:20] + 0.01:
        x = np.where(period > 0, np.mod(x, np.where(period > 0, period, 1.0)), x)
        d2 = oracle_d2(pts, x, period)
        d, i = grid.query(x)
        assert i == int(np.argmin(d2)) and d == pytest.approx(np.sqrt(d2.min()), rel=1e-12)


def test_points_outside_the_box_raise():
    with pytest.raises(ValueError, match="periodic box"):
        nearby.Grid([[10.0, 1.0]], boxsize=10.0)
    with pytest.raises(ValueError, match="negative"):
        nearby.Grid([[-0.1, 1.0]], boxsize=10.0)
    with pytest.raises(ValueError, match="axis 1"):
        nearby.Grid([[1.0, 7.0]], boxsize=[10.0, 7.0])
    # A non-periodic axis takes any coordinate.
    grid = nearby.Grid([[1.0, -70.0], [9.5, -70.0]], boxsize=[10.0, 0.0])
    assert grid.query_pairs(1.5) == {(0, 1)}
    # The largest double below L is in the box.
    nearby.Grid([[np.nextafter(10.0, 0.0), 0.0]], boxsize=10.0)


def test_radius_beyond_half_the_box_raises():
    pts = data(2, 10.0)
    for grid in grids(pts, 10.0, 1.0):
        for call in (lambda: grid.query_pairs(5.01), lambda: grid.count_pairs(5.01),
                     lambda: grid.query_ball_point(pts[0], 5.01)):
            with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
                call()
        assert grid.count_pairs(5.0) == len(cKDTree(pts, boxsize=10.0).query_pairs(5.0))
    with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
        nearby.Grid(pts, radius=5.5, boxsize=10.0)
    # A cell_size beyond half the box is fine: the grid is built for L / 2.
    grid = nearby.Grid(pts, cell_size=8.0, boxsize=10.0)
    assert grid.count_pairs(1.0) == len(cKDTree(pts, boxsize=10.0).query_pairs(1.0))
    # kNN has no radius limit: k = N finds everything.
    d, i = nearby.Grid(pts, boxsize=10.0).query(pts[0], k=len(pts))
    assert sorted(i.tolist()) == list(range(len(pts)))


def test_bad_boxsize():
    pts = [[1.0, 1.0]]
    with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
        nearby.Grid(pts, boxsize=-1.0)
    with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
        nearby.Grid(pts, boxsize=np.inf)
    with pytest.raises(ValueError, match="one per axis"):
        nearby.Grid(pts, boxsize=[1.0, 2.0, 3.0])
    with pytest.raises(TypeError):
        nearby.Grid(pts, boxsize="10")
    # 0 on every axis is the plain grid.
    assert nearby.Grid(pts, boxsize=0.0).query_pairs(1.0) == set()
    assert nearby.Grid(pts, boxsize=[5, 5]).boxsize.tolist() == [5.0, 5.0]
