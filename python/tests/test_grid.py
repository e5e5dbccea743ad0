# SPDX-License-Identifier: MIT
"""nearby.Grid against scipy's cKDTree: every method, on random and adversarial data (lattices
with pairs exactly r apart, duplicates, points near 1e12, negative, empty, a single point), in
2D and 3D, lazily tuned and with a fixed radius or cell size."""
import numpy as np
import pytest
from scipy.spatial import cKDTree

import nearby
from conftest import all_datasets, ids

CASES = all_datasets()


def sorted_pairs(pairs):
    pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def queries(pts, dim, count=60):
    """Query points: some data points (so pairs at exactly r occur), some between and outside."""
    g = np.random.default_rng(len(pts) + dim)
    if len(pts) == 0:
        return g.random((count, dim)) * 10
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    inside = pts[g.integers(0, len(pts), count // 2)]
    spread = lo + (g.random((count - count // 2, dim)) * 1.4 - 0.2) * np.maximum(hi - lo, 1.0)
    return np.concatenate([inside, spread])


def grids(pts, r):
    """The grid variants that must give the same answers: lazy, tuned to r, odd cell sizes."""
    yield nearby.Grid(pts)
    yield nearby.Grid(pts, radius=r)
    scale = r if r > 0 else 1.0
    yield nearby.Grid(pts, cell_size=scale * 0.37)
    yield nearby.Grid(pts, cell_size=scale * 2.9)


@pytest.mark.parametrize("dim,name,pts,radii", CASES, ids=ids(CASES))
def test_pairs_and_counts(dim, name, pts, radii):
    tree = cKDTree(pts)
    for r in radii:
        want = tree.query_pairs(r)
        want_arr = sorted_pairs(sorted(want))
        for grid in grids(pts, r):
            got = grid.query_pairs(r, output_type="ndarray")
            assert got.dtype == np.intp and got.shape == (len(want), 2), (name, r, grid)
            assert (got[:, 0] < got[:, 1]).all()
            np.testing.assert_array_equal(sorted_pairs(got), want_arr)
            assert grid.query_pairs(r) == want
            assert grid.count_pairs(r) == len(want)


@pytest.mark.parametrize("dim,name,pts,radii", CASES, ids=ids(CASES))
def test_query_ball_point(dim, name, pts, radii):
    tree = cKDTree(pts)
    xs = queries(pts, dim)
    for r in radii:
        want = tree.query_ball_point(xs, r)
        for grid in grids(pts, r):
            got = grid.query_ball_point(xs, r)
            assert got.shape == want.shape and got.dtype == object
            for a, b in zip(got, want):
                assert a == sorted(b)
            lengths = grid.query_ball_point(xs, r, return_length=True)
            np.testing.assert_array_equal(lengths, [len(b) for b in want])
            # one point: a tuple, a list, an array; each the same list
            for q, b in zip(xs[:10], want[:10]):
                assert grid.query_ball_point(tuple(q), r) == sorted(b)
                assert grid.query_ball_point(list(q), r) == sorted(b)
                assert grid.query_ball_point(q, r) == sorted(b)
                assert grid.query_ball_point(q, r, return_length=True) == len(b)
                unsorted = grid.query_ball_point(q, r, return_sorted=False)
                assert sorted(unsorted) == sorted(b)
    # a radius per point, and a leading shape kept as scipy keeps it
    rs = np.linspace(0.0, max(radii), len(xs))
    want = tree.query_ball_point(xs, rs)
    got = nearby.Grid(pts).query_ball_point(xs, rs)
    assert [sorted(b) for b in want] == list(got)
    grid = nearby.Grid(pts)
    shaped = grid.query_ball_point(xs[:12].reshape(3, 4, dim), radii[-1])
    assert shaped.shape == (3, 4)
    assert list(shaped.ravel()) == [sorted(b) for b in tree.query_ball_point(xs[:12], radii[-1])]


def check_knn(pts, xs, d, i, want_d, k_ranks):
    """Distances equal scipy's; every index is at its reported distance (ties may pick other
    indices than scipy's, so indices are checked against the points, not against scipy)."""
    np.testing.assert_allclose(d, want_d, rtol=1e-12, atol=0)
    n = len(pts)
    x2 = np.atleast_2d(xs)
    d2 = np.asarray(d, dtype=float).reshape(len(x2), -1)
    i2 = np.asarray(i).reshape(len(x2), -1)
    for q in range(len(x2)):
        found = i2[q][i2[q] < n]
        assert len(set(found.tolist())) == len(found), "an index twice"
        assert (i2[q][np.isinf(d2[q])] == n).all(), "a missing neighbour's index is n"
        if len(found):
            true = np.sqrt(((pts[found] - x2[q]) ** 2).sum(axis=1))
            np.testing.assert_allclose(true, d2[q][i2[q] < n], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("dim,name,pts,radii", CASES, ids=ids(CASES))
def test_query_knn(dim, name, pts, radii):
    tree = cKDTree(pts)
    xs = queries(pts, dim)
    for k in (1, 2, 5, 17):
        want_d, want_i = tree.query(xs, k=k)
        for grid in (nearby.Grid(pts), nearby.Grid(pts, radius=radii[-1])):
            d, i = grid.query(xs, k=k)
            assert d.shape == want_d.shape and i.shape == want_i.shape
            assert d.dtype == np.float64 and i.dtype == np.intp
            check_knn(pts, xs, d, i, want_d, k)
    grid = nearby.Grid(pts)
    # one point: k = 1 gives Python scalars, k > 1 arrays of shape (k,)
    for q in xs[:8]:
        wd, wi = tree.query(q, k=1)
        d, i = grid.query(tuple(q), k=1)
        assert isinstance(d, float) and isinstance(i, int)
        assert d == pytest.approx(wd, rel=1e-12, abs=0)
        d, i = grid.query(q, k=3)
        assert d.shape == (3,) and i.shape == (3,)
        check_knn(pts, q, d, i, tree.query(q, k=3)[0], 3)
    # k as a list of 1-based ranks
    d, i = grid.query(xs, k=[1, 3])
    wd, wi = tree.query(xs, k=[1, 3])
    assert d.shape == wd.shape
    check_knn(pts, xs, d, i, wd, None)
    # distance_upper_bound is strict, as in scipy
    for dub in radii:
        wd, wi = tree.query(xs, k=4, distance_upper_bound=dub)
        d, i = grid.query(xs, k=4, distance_upper_bound=dub)
        check_knn(pts, xs, d, i, wd, 4)
        np.testing.assert_array_equal(i == len(pts), wi == len(pts))
    # leading shape
    d, i = grid.query(xs[:12].reshape(2, 6, dim), k=2)
    assert d.shape == (2, 6, 2)
    d, i = grid.query(xs[:12].reshape(2, 6, dim))
    assert d.shape == (2, 6)


@pytest.mark.parametrize("dim,name,pts,radii", CASES, ids=ids(CASES))
def test_query_box(dim, name, pts, radii):
    xs = queries(pts, dim, 20)
    grid = nearby.Grid(pts)
    for q in xs:
        for half in (0.0, 0.5, 2.0):
            lo, hi = q - half, q + half
            want = np.flatnonzero(((pts >= lo) & (pts <= hi)).all(axis=1))
            np.testing.assert_array_equal(grid.query_box(lo, hi), want)
    everything = grid.query_box([-np.inf] * dim, [np.inf] * dim)
    np.testing.assert_array_equal(everything, np.arange(len(pts)))
    assert len(grid.query_box([1.0] * dim, [0.0] * dim)) == 0  # an empty box


def test_input_layouts(rng):
    """Strided float64 is read in place; float32, ints, Fortran order, reversed rows and
    byte-swapped data are converted once; every layout gives the same answers."""
    base = rng.random((800, 2)) * 20
    tree = cKDTree(base)
    want = tree.query_pairs(1.0)
    wide = np.zeros((800, 5))
    wide[:, 1:3] = base
    layouts = {
        "contiguous": base,
        "strided": wide[:, 1:3],
        "fortran": np.asfortranarray(base),
        "byteswapped": base.astype(">f8"),
        "list": base.tolist(),
    }
    for name, pts in layouts.items():
        grid = nearby.Grid(pts)
        assert grid.query_pairs(1.0) == want, name
    # no copy for strided float64: the grid's data is a view of the caller's array
    grid = nearby.Grid(wide[:, 1:3])
    assert np.shares_memory(grid.data, wide)
    assert np.shares_memory(nearby.Grid(base).data, base)
    # reversed rows: indices still refer to the array given
    rev = base[::-1]
    assert nearby.Grid(rev).query_pairs(1.0) == cKDTree(rev).query_pairs(1.0)
    # float32 and integers: converted once, answers as for float64 of the same values
    f32 = base.astype(np.float32)
    assert nearby.Grid(f32).query_pairs(1.0) == cKDTree(f32.astype(np.float64)).query_pairs(1.0)
    assert nearby.Grid(f32).data.dtype == np.float64
    ints = (base * 3).astype(np.int32)
    assert nearby.Grid(ints).query_pairs(2.0) == cKDTree(ints.astype(float)).query_pairs(2.0)


def test_filters(rng):
    pts = rng.random((1500, 2)) * 30
    cat = rng.integers(0, 4, len(pts)).astype(np.uint32)
    cat = np.uint32(1) << cat  # one of 4 teams a point
    mask = np.where(rng.random(len(pts)) < 0.1, 0, ~cat)  # meet other teams; some meet nothing
    mask = mask.astype(np.uint32)
    grid = nearby.Grid(pts, category=cat, mask=mask)
    r = 1.5
    want = {(i, j) for i, j in cKDTree(pts).query_pairs(r)
            if (cat[i] & mask[j]) and (cat[j] & mask[i])}
    assert grid.query_pairs(r) == want
    assert grid.count_pairs(r) == len(want)
    np.testing.assert_array_equal(grid.category, cat)
    tree = cKDTree(pts)
    xs = rng.random((40, 2)) * 30
    asker_cat, asker_mask = 0b0001, 0b0110  # team 0, looking for teams 1 and 2
    passes = np.flatnonzero(((cat & asker_mask) != 0) & ((asker_cat & mask) != 0))
    for q in xs:
        got = grid.query_ball_point(q, 3.0, category=asker_cat, mask=asker_mask)
        want_q = sorted(i for i in tree.query_ball_point(q, 3.0) if i in set(passes.tolist()))
        assert got == want_q
    batch = grid.query_ball_point(xs, 3.0, category=asker_cat, mask=asker_mask)
    assert [len(b) for b in batch] == [
        len(grid.query_ball_point(q, 3.0, category=asker_cat, mask=asker_mask)) for q in xs]
    sub = cKDTree(pts[passes])
    wd, wi = sub.query(xs, k=3)
    d, i = grid.query(xs, k=3, category=asker_cat, mask=asker_mask)
    np.testing.assert_allclose(d, wd, rtol=1e-12)
    assert set(i.ravel().tolist()) <= set(passes.tolist())
    box = grid.query_box([5, 5], [15, 15], category=asker_cat, mask=asker_mask)
    inside = np.flatnonzero(((pts >= 5) & (pts <= 15)).all(axis=1))
    np.testing.assert_array_equal(box, np.intersect1d(inside, passes))
    # scalar bits apply to every point
    assert nearby.Grid(pts, category=1, mask=1).query_pairs(r) == tree.query_pairs(r)
    assert nearby.Grid(pts, category=1, mask=2).count_pairs(r) == 0


def test_workers_same_answers(rng):
    pts = rng.random((20000, 2)) * 140
    grid = nearby.Grid(pts)
    one = grid.query_pairs(1.2, output_type="ndarray")
    two = grid.query_pairs(1.2, output_type="ndarray", workers=2)
    np.testing.assert_array_equal(sorted_pairs(one), sorted_pairs(two))
    xs = rng.random((5000, 2)) * 140
    d1, i1 = grid.query(xs, k=6)
    d2, i2 = grid.query(xs, k=6, workers=-1)
    np.testing.assert_array_equal(d1, d2)
    np.testing.assert_array_equal(i1, i2)
    b1 = grid.query_ball_point(xs, 1.5)
    b2 = grid.query_ball_point(xs, 1.5, workers=3)
    assert list(b1) == list(b2)
    # a batch this large runs in cell order: each answer still lands in its own row
    assert list(b1) == [sorted(b) for b in cKDTree(pts).query_ball_point(xs, 1.5)]
    wd, _ = cKDTree(pts).query(xs, k=6)
    np.testing.assert_allclose(d1, wd, rtol=1e-12)


def test_deterministic_order(rng):
    pts = rng.random((3000, 2)) * 50
    a = nearby.Grid(pts).query_pairs(1.0, output_type="ndarray")
    b = nearby.Grid(pts).query_pairs(1.0, output_type="ndarray")
    np.testing.assert_array_equal(a, b)


def test_lazy_grids_are_reused(rng):
    pts = rng.random((2000, 2)) * 40
    grid = nearby.Grid(pts)
    assert grid.cell_sizes == []
    grid.query_pairs(1.0)
    grid.count_pairs(1.1)  # close enough: the same grid
    grid.query_ball_point([1.0, 1.0], 0.9)
    assert len(grid.cell_sizes) == 1
    grid.count_pairs(5.0)  # far: a second grid
    assert len(grid.cell_sizes) == 2
    tree = cKDTree(pts)
    for r in np.geomspace(0.01, 300, 25):  # at most 8 grids, answers stay exact
        assert grid.count_pairs(r) == (tree.count_neighbors(tree, r) - len(pts)) // 2
    assert len(grid.cell_sizes) <= 8
    fixed = nearby.Grid(pts, radius=1.0)
    fixed.count_pairs(7.0)
    assert len(fixed.cell_sizes) == 1
    assert fixed.memory_bytes() > 0
    assert fixed.n == 2000 and fixed.m == 2
    assert "nearby.Grid" in repr(fixed)


def test_rebuilt_every_frame(rng):
    """Grids and pair arrays of 1 MiB and more reuse freed blocks (the extension's cache of
    big blocks): frames of different sizes, results dropped or kept, stay exact."""
    kept = []
    for n in (150000, 60000, 150000, 120000, 150000):
        pts = rng.random((n, 2)) * np.sqrt(n)
        got = nearby.Grid(pts).query_pairs(1.3, output_type="ndarray")
        want = cKDTree(pts).query_pairs(1.3, output_type="ndarray")
        np.testing.assert_array_equal(sorted_pairs(got), sorted_pairs(want))
        if n == 120000:
            kept.append((got.copy(), got))  # an array still alive keeps its block
    np.testing.assert_array_equal(kept[0][0], kept[0][1])


def test_k_array_left_unchanged(rng):
    """A k array is the caller's: a query must not change it (it used to be made 0-based in
    place), so the same array gives the same answer twice, and [2, 3] means ranks 2 and 3."""
    pts = rng.random((200, 2))
    grid, tree = nearby.Grid(pts), cKDTree(pts)
    for k in (np.array([1, 3]), np.array([2, 3]), np.array([1, 3], dtype=np.int32)):
        before = k.copy()
        first = grid.query(pts[:20], k=k)
        np.testing.assert_array_equal(k, before)
        second = grid.query(pts[:20], k=k)
        np.testing.assert_array_equal(first[1], second[1])
        np.testing.assert_allclose(first[0], tree.query(pts[:20], k=before)[0], rtol=1e-12)


def test_knobs_are_keyword_only(rng):
    """Grid(x, 16) would silently mean radius 16 to a cKDTree user (leafsize 16): refused."""
    pts = rng.random((50, 2))
    for args in ((16,), (1.0, 0.5), (None, None, 1.0)):
        with pytest.raises(TypeError):
            nearby.Grid(pts, *args)
    assert nearby.Grid(pts, radius=0.1).cell_sizes
    assert nearby.Grid(pts, cell_size=0.1, boxsize=1.0).boxsize.tolist() == [1.0, 1.0]


def _local_spacing_oracle(x, quantile=0.75):
    """The spacing that nearby.Grid tunes its kNN grids from, recomputed by brute force: the box's
    mean spacing, or the 3rd quartile (`quantile`) of a sample's nearest distances (every n / s-th
    point, s = 2048) scaled to the whole set, when smaller."""
    n, dim = x.shape
    lo, hi = x.min(axis=0), x.max(axis=0)
    box = (np.prod(hi - lo) / n) ** (1.0 / dim)
    s = min(n, 2048)
    sample = x[(np.arange(s, dtype=np.int64) * n) // s]
    # each sample point's nearest other sample point, by scipy (exact; a 2048 x 2048 distance
    # matrix took seconds)
    nearest = cKDTree(sample).query(sample, k=2)[0][:, 1]
    q = np.sort(nearest)[int(quantile * (s - 1))]
    local = q * (2.0 if dim == 2 else 1.8) * (s / n) ** (1.0 / dim)
    spacing = local if 0 < q < np.inf and local < box else box
    return spacing


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("shape", ["uniform", "clusters", "one_cluster"])
def test_knn_tuning_matches_brute_force(dim, shape):
    """The sample's nearest distances (a walk over its close pairs where they are few, a bounded
    kNN search a point where they are many) give the same cell as a brute-force search; 3D grids
    for k >= 2 (and k = 1 where the box's mean spacing is above 4x the local one) take the
    box's mean spacing."""
    rng = np.random.default_rng(11 + dim)
    n = 20000
    if shape == "uniform":
        x = rng.random((n, dim)) * 100
    elif shape == "clusters":
        centres = rng.random((40, dim)) * 1000
        x = centres[rng.integers(0, 40, n)] + rng.normal(0, 1, (n, dim))
    else:  # most points in one tight cluster: many close pairs in the sample
        x = rng.random((n, dim)) * 1000
        x[: n * 9 // 10] = 500 + rng.normal(0, 0.01, (n * 9 // 10, dim))
        x = x[rng.permutation(n)]
    spacing = _local_spacing_oracle(x)
    box = (np.prod(x.max(axis=0) - x.min(axis=0)) / n) ** (1.0 / dim)
    for k in (1, 8, 32):
        g = nearby.Grid(x)
        g.query(x[:2], k=k)
        per_cell = k if dim == 3 else max(k / 2.5, 1.0)  # 2D: about k / 2.5 points a cell
        want = spacing * per_cell ** (1.0 / dim)
        if dim == 3 and (k >= 2 or box > 4.0 * spacing):
            want = box  # 3D: the kNN index answers; cells of the box's mean spacing
        assert g.cell_sizes[-1] == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("shape", ["uniform", "tail"])
def test_pairs_tuning_matches_brute_force(dim, shape):
    """All pairs and counts run on cells of r, floored at an eighth of the spacing at the first
    decile of the sample's nearest distances (where the pairs are): on a heavy tail about a dense
    core (log-normal distances from one centre), the radius that finds a few neighbours a point
    gets cells of r, not cells sized for the sparse halo; a radius far below the spacing gets
    the floor. The pairs are cKDTree's either way."""
    rng = np.random.default_rng(21 + dim)
    n = 10000
    if shape == "uniform":
        x = rng.random((n, dim)) * 100
    else:
        u = rng.normal(size=(n, dim))
        x = u / np.linalg.norm(u, axis=1)[:, None] * np.exp(rng.normal(0, 3, n))[:, None]
    floor = 0.125 * _local_spacing_oracle(x, 0.1)
    d1 = np.sort(cKDTree(x).query(x, k=2)[0][:, 1])
    for r in (d1[n // 2], floor / 10):
        g = nearby.Grid(x)
        got = g.query_pairs(r, output_type="ndarray")
        assert g.cell_sizes == [pytest.approx(max(r, floor), rel=1e-6)]
        assert g.count_pairs(r) == len(got)
        want = cKDTree(x).query_pairs(r, output_type="ndarray")
        np.testing.assert_array_equal(sorted_pairs(got), sorted_pairs(want))


@pytest.mark.parametrize("dim", [2, 3])
def test_large_pair_arrays(dim):
    """query_pairs(r, output_type='ndarray') past the rows the library writes through the cache
    (32768; the rest are streamed): the same pairs as cKDTree, on uniform points and on
    duplicates, 400 a spot, whose 80k pairs a spot overrun the binding's first reservation (64 a
    point) and run the search again into a block of the exact size."""
    rng = np.random.default_rng(40 + dim)
    uniform = rng.random((12000, dim)) * (60.0 if dim == 2 else 16.0)
    dups = np.repeat(rng.random((3, dim)) * 1000.0, 400, axis=0)
    for x, r in ((uniform, 1.3), (dups, 0.5)):
        want = cKDTree(x).query_pairs(r, output_type="ndarray")
        assert len(want) > 2 * 32768
        for grid in (nearby.Grid(x), nearby.Grid(x, radius=r)):
            got = grid.query_pairs(r, output_type="ndarray")
            assert got.dtype == np.intp and got.flags.c_contiguous
            np.testing.assert_array_equal(sorted_pairs(got), sorted_pairs(want))
            assert grid.count_pairs(r) == len(want)
