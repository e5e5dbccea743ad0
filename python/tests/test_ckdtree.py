# SPDX-License-Identifier: MIT
"""nearby.cKDTree against scipy's cKDTree on the corpus's shapes (tests/corpus.py), every method,
p in {1, 2, 3.5, inf}, with and without periodic boxes; then the interface itself: signature,
attributes, return types, errors and warnings, pickling, 1D data, NaN rows, 4D refused."""
import pickle
import warnings

import numpy as np
import pytest
from scipy.spatial import cKDTree as SciTree

import nearby
from corpus import NAMES, make, radius

PS = (1.0, 2.0, 3.5, np.inf)
N = 300


def corpus_case(name, periodic):
    x = make(name, N)
    r = radius(x)
    box = None
    if periodic:
        lo = x.min(axis=0)
        box = (x.max(axis=0) - lo) * 1.25 + r
        x = x - lo
    return x, r, box


CASES = [(name, periodic) for name in NAMES for periodic in (False, True)]
IDS = ["%s%s" % (name, "-periodic" if periodic else "") for name, periodic in CASES]


def same_lists(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert sorted(u) == sorted(v)


def check_knn(x, box, p, d, i, want_d):
    """Distances equal to scipy's (to rounding); indices right for their distances (ties may
    be broken either way)."""
    np.testing.assert_allclose(d, want_d, rtol=1e-12, atol=0)
    ok = i < len(x)
    assert (np.isinf(d) == ~ok).all()


@pytest.mark.parametrize("name,periodic", CASES, ids=IDS)
def test_against_ckdtree(name, periodic):
    x, r, box = corpus_case(name, periodic)
    ours, theirs = nearby.cKDTree(x, boxsize=box), SciTree(x, boxsize=box)
    other = make(name, N // 3, seed=1)
    if periodic:
        other = np.mod(other - make(name, N).min(axis=0), box)
        other = np.where(other >= box, 0.0, other)
    ours2, theirs2 = nearby.cKDTree(other, boxsize=box), SciTree(other, boxsize=box)
    q = np.concatenate([x[::7], other[::5]])
    radii = (r, 3.0 * r) if not periodic else (r, 0.7 * float(np.max(box)))
    for p in PS:
        for k in (1, 5, [2, 4]):
            for dub in (np.inf, r):
                d, i = ours.query(q, k=k, p=p, distance_upper_bound=dub)
                wd, wi = theirs.query(q, k=k, p=p, distance_upper_bound=dub)
                assert d.shape == wd.shape and i.dtype == wi.dtype
                check_knn(x, box, p, d, i, wd)
        for rr in radii:
            same_lists(ours.query_ball_point(q, rr, p=p), theirs.query_ball_point(q, rr, p=p))
            np.testing.assert_array_equal(
                ours.query_ball_point(q, rr, p=p, return_length=True),
                theirs.query_ball_point(q, rr, p=p, return_length=True))
            assert ours.query_pairs(rr, p=p) == theirs.query_pairs(rr, p=p)
            same_lists(ours.query_ball_tree(ours2, rr, p=p),
                       theirs.query_ball_tree(theirs2, rr, p=p))
            got = ours.sparse_distance_matrix(ours2, rr, p=p, output_type="dict")
            want = theirs.sparse_distance_matrix(theirs2, rr, p=p, output_type="dict")
            assert got.keys() == want.keys()
            np.testing.assert_allclose([got[key] for key in want], list(want.values()),
                                       rtol=1e-12)
        rs = np.array([0.0, r / 2, r, 2 * r, 3 * r, 1e30])
        w1, w2 = np.linspace(0.5, 2, ours.n), np.linspace(1, 3, ours2.n)
        for cumulative in (True, False):
            np.testing.assert_array_equal(
                ours.count_neighbors(ours2, rs, p=p, cumulative=cumulative),
                theirs.count_neighbors(theirs2, rs, p=p, cumulative=cumulative))
            np.testing.assert_allclose(
                ours.count_neighbors(ours2, rs, p=p, weights=(w1, w2), cumulative=cumulative),
                theirs.count_neighbors(theirs2, rs, p=p, weights=(w1, w2),
                                       cumulative=cumulative), rtol=1e-12)
        assert ours.count_neighbors(ours2, r, p=p) == theirs.count_neighbors(theirs2, r, p=p)
        assert ours.count_neighbors(ours, r, p=p) == theirs.count_neighbors(theirs, r, p=p)


def test_signature_and_attributes():
    x = np.random.default_rng(1).random((100, 3))
    t = nearby.cKDTree(x, 8, False, False, False, None)  # scipy's positional order
    assert t.leafsize == 8 and t.data is x and t.n == 100 and t.m == 3
    assert isinstance(t.n, int) and isinstance(t.m, int)
    np.testing.assert_array_equal(t.maxes, x.max(axis=0))
    np.testing.assert_array_equal(t.mins, x.min(axis=0))
    assert t.boxsize is None
    assert nearby.cKDTree(x, boxsize=2.0).boxsize.tolist() == [2.0, 2.0, 2.0]
    assert nearby.cKDTree(x, copy_data=True).data is not x
    for kw in ({}, {"balanced_tree": False}, {"compact_nodes": False},
               {"balanced_tree": False, "compact_nodes": False}):
        assert nearby.cKDTree(x, leafsize=4, **kw).size == SciTree(x, leafsize=4, **kw).size
    with pytest.raises(TypeError):
        nearby.cKDTree(x, bogus=1)
    assert nearby.KDTree(x).leafsize == 10


def test_return_types():
    x = np.random.default_rng(2).random((50, 2))
    t, s = nearby.cKDTree(x), SciTree(x)
    d, i = t.query([0.5, 0.5])
    assert type(d) is float and type(i) is int
    d, i = nearby.KDTree(x).query([0.5, 0.5])
    assert isinstance(i, np.integer)
    assert t.query(x[:3], k=[1])[0].shape == (3, 1)
    assert isinstance(t.query_ball_point([0.5, 0.5], 0.2), list)
    assert isinstance(t.query_ball_point([0.5, 0.5], 0.2, return_length=True), np.integer)
    assert t.query_ball_point(x.reshape(5, 10, 2), 0.2).shape == (5, 10)
    assert isinstance(t.count_neighbors(t, 0.2), int)
    assert t.count_neighbors(t, [0.2]).dtype == np.intp
    assert t.query_pairs(0.2, output_type="ndarray").dtype == np.intp
    sd = t.sparse_distance_matrix(t, 0.2, output_type="ndarray")
    assert sd.dtype == s.sparse_distance_matrix(s, 0.2, output_type="ndarray").dtype
    assert type(t.sparse_distance_matrix(t, 0.2)) is type(s.sparse_distance_matrix(s, 0.2))
    coo = t.sparse_distance_matrix(t, 0.2, output_type="coo_matrix")
    assert coo.shape == (50, 50) and coo.nnz == s.sparse_distance_matrix(
        s, 0.2, output_type="coo_matrix").nnz


def test_k_array_and_none():
    x = np.random.default_rng(3).random((60, 2))
    t, s = nearby.cKDTree(x), SciTree(x)
    k = np.array([1, 3])
    for _ in range(2):
        np.testing.assert_array_equal(t.query(x, k=k)[1], s.query(x, k=[1, 3])[1])
    assert k.tolist() == [1, 3]
    np.testing.assert_array_equal(t.query(x, k=np.array([2.0, 3.0]))[1], s.query(x, k=[2, 3])[1])
    with pytest.raises(ValueError, match="k must be an integer"):
        t.query(x, k=None)
    with pytest.raises(ValueError):
        t.query(x, k=0)


def test_errors_and_warnings(monkeypatch):
    x = np.random.default_rng(4).random((30, 2))
    t = nearby.cKDTree(x)
    with pytest.raises(ValueError, match="1, 2 or 3 dimensions"):
        nearby.cKDTree(np.zeros((5, 4)))
    with pytest.raises(ValueError, match="data must be 2 dimensions"):
        nearby.cKDTree(np.zeros(5))
    with pytest.raises(ValueError, match="p-norms"):
        t.query(x, p=0.5)
    with pytest.raises(ValueError, match="vectors of length 2"):
        t.query([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Invalid number of workers"):
        t.query(x, workers=0)
    monkeypatch.setattr("os.cpu_count", lambda: None)
    with pytest.raises(NotImplementedError, match="Cannot determine"):
        t.query(x, workers=-1)
    monkeypatch.undo()
    with pytest.raises(ValueError, match="Invalid output type"):
        t.query_pairs(0.1, output_type="list")
    with pytest.raises(ValueError, match="Invalid output type"):
        t.sparse_distance_matrix(t, 0.1, output_type="csr")
    with pytest.raises(ValueError, match="different dimensionality"):
        t.count_neighbors(nearby.cKDTree(np.zeros((3, 3))), 0.1)
    with pytest.raises(TypeError):
        t.count_neighbors(x, 0.1)
    with pytest.raises(ValueError, match="non-decreasing"):
        t.count_neighbors(t, [0.2, 0.1], cumulative=False)
    with pytest.raises(ValueError):
        t.count_neighbors(nearby.cKDTree(x.copy()), 0.1, weights=np.ones(30))
    with pytest.raises(ValueError, match="periodic box"):
        nearby.cKDTree(x + 1.0, boxsize=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(np.ComplexWarning):
            nearby.cKDTree(x + 0j)
    with pytest.raises(TypeError, match="complex data"):
        nearby.KDTree(x + 0j)


def test_pickle_1d_and_nan_rows():
    g = np.random.default_rng(5)
    x = g.random((80, 1))
    t, s = nearby.cKDTree(x, boxsize=1.0), SciTree(x, boxsize=1.0)
    t2 = pickle.loads(pickle.dumps(t))
    assert type(t2) is nearby.cKDTree and t2.boxsize.tolist() == [1.0]
    np.testing.assert_array_equal(t2.query(x, k=3)[1], s.query(x, k=3)[1])
    assert t.query_pairs(0.05) == s.query_pairs(0.05)
    y = g.random((40, 2))
    y[[3, 17]] = np.nan
    t, s = nearby.cKDTree(y), SciTree(y)
    assert t.query_pairs(0.2) == s.query_pairs(0.2)
    d, i = t.query(y[:5], k=3)
    np.testing.assert_allclose(d, s.query(y[:5], k=3)[0])
    same_lists(t.query_ball_point(y, 0.2), s.query_ball_point(y, 0.2))
    # scipy counts every pair when a row is NaN (its boxes turn NaN); NaN rows match nothing
    fin = y[np.isfinite(y).all(axis=1)]
    assert t.count_neighbors(t, 0.2) == SciTree(fin).count_neighbors(SciTree(fin), 0.2)
    assert t.query([np.nan, 0.5]) == (np.inf, 40)


def test_boundaries_exact():
    """On a lattice, neighbours lie exactly at distance 1 in every norm: radius searches keep
    them (<=), distance_upper_bound drops them (strict), as scipy does."""
    a = np.arange(6.0)
    x = np.stack(np.meshgrid(a, a, indexing="ij"), axis=-1).reshape(-1, 2)
    t, s = nearby.cKDTree(x), SciTree(x)
    for p in PS:
        d, i = t.query(x, k=6, p=p, distance_upper_bound=1.0)
        wd, wi = s.query(x, k=6, p=p, distance_upper_bound=1.0)
        np.testing.assert_array_equal(d, wd)
        np.testing.assert_array_equal(i, wi)
        same_lists(t.query_ball_point(x, 1.0, p=p), s.query_ball_point(x, 1.0, p=p))
        assert t.query_pairs(1.0, p=p) == s.query_pairs(1.0, p=p)
        np.testing.assert_array_equal(t.count_neighbors(t, [0.5, 1.0, 2.0], p=p),
                                      s.count_neighbors(s, [0.5, 1.0, 2.0], p=p))


def test_count_neighbors_radii():
    """Several radii at once, in any order, with zero and infinite radii and exact ties,
    against scipy; a tree with itself and with another."""
    rng = np.random.default_rng(7)
    x = np.round(rng.random((800, 3)) * 6, 1)  # many pairs exactly 0.1 apart, duplicates
    t, s = nearby.cKDTree(x), SciTree(x)
    t2, s2 = nearby.cKDTree(x[:90]), SciTree(x[:90])
    for radii in ([0.3, 0.1, 0.0, 0.5], [0.2, np.inf], np.inf, [0.1, 0.1, 0.4], [1.0]):
        np.testing.assert_array_equal(t.count_neighbors(t, radii), s.count_neighbors(s, radii))
        np.testing.assert_array_equal(t.count_neighbors(t2, radii), s.count_neighbors(s2, radii))
    np.testing.assert_array_equal(t.count_neighbors(t, [0.1, 0.2, 0.3], cumulative=False),
                                  s.count_neighbors(s, [0.1, 0.2, 0.3], cumulative=False))


def test_count_neighbors_spanning_radii():
    """Radii out to the data's extent (a two-point correlation): counted a radius at a time in
    C, whole boxes of points at once, so the memory stays small (listing the pairs at the
    largest radius took 16 bytes a pair: 1.1 GB here) and the counts are scipy's."""
    import resource

    rng = np.random.default_rng(11)
    x = rng.random((12000, 2))
    y = rng.random((5000, 2)) + [0.5, 0.0]
    t, s = nearby.cKDTree(x), SciTree(x)
    u, v = nearby.cKDTree(y), SciTree(y)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    radii = [0.01, 0.3, 1.2, 2.0]
    np.testing.assert_array_equal(t.count_neighbors(t, radii), s.count_neighbors(s, radii))
    np.testing.assert_array_equal(t.count_neighbors(u, radii), s.count_neighbors(v, radii))
    assert t.count_neighbors(u, 2.0) == len(x) * len(y)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 300, grown_mb


def test_count_neighbors_many_radii_and_weights(monkeypatch):
    """Twenty radii out to the extent, counted in C a radius at a time; weighted counts and
    other norms list the pairs within the largest radius a block of query rows at a time
    (blocks forced small here: many blocks, sized from the rows before), the counts scipy's."""
    from nearby import _kdtree

    rng = np.random.default_rng(5)
    x, y = rng.random((3000, 3)), rng.random((400, 3)) * 1.5
    t, s = nearby.cKDTree(x), SciTree(x)
    u, v = nearby.cKDTree(y), SciTree(y)
    radii = np.geomspace(0.01, 3.0, 20)[::-1]
    import tracemalloc  # numpy's arrays are traced: listing 4.5M pairs would take 100s of MB

    tracemalloc.start()
    try:
        got = t.count_neighbors(t, radii)
        peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    assert peak_mb < 20, peak_mb
    np.testing.assert_array_equal(got, s.count_neighbors(s, radii))
    np.testing.assert_array_equal(t.count_neighbors(u, radii), s.count_neighbors(v, radii))
    monkeypatch.setattr(_kdtree, "_COUNT_BLOCK_PAIRS", 5000)
    w, wy = rng.random(len(x)), rng.random(len(y))
    for p in (1.0, 2.0, np.inf):
        np.testing.assert_allclose(t.count_neighbors(u, radii, p=p, weights=(w, wy)),
                                   s.count_neighbors(v, radii, p=p, weights=(w, wy)),
                                   rtol=1e-12)
    short = radii[radii < 0.2]
    np.testing.assert_array_equal(t.count_neighbors(t, short, p=3.5),
                                  s.count_neighbors(s, short, p=3.5))


def test_pairs_set_restores_the_collector():
    """query_pairs' set is built with the cyclic collector paused: its state is restored either
    way, and the set is the same with it off."""
    import gc

    x = make(NAMES[0], N)
    r = radius(x)
    want = SciTree(x).query_pairs(r)
    assert gc.isenabled()
    assert nearby.cKDTree(x).query_pairs(r) == want
    assert gc.isenabled()
    gc.disable()
    try:
        assert nearby.cKDTree(x).query_pairs(r) == want
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_sparse_matrix_indices_are_not_copied():
    """A tree against itself hands scipy int32 indices, which coo_matrix keeps as they are (given
    int64 ones it copies them down); the matrix equals cKDTree's."""
    from scipy.sparse import coo_matrix
    x = np.random.default_rng(3).random((3000, 2)) * 30
    t = nearby.cKDTree(x)
    i, j, v = t._grid._pair_matrix(1.0)
    assert i.dtype == np.int32 and j.dtype == np.int32
    m = coo_matrix((v, (i, j)), shape=(t.n, t.n))
    assert np.shares_memory(m.row, i) and np.shares_memory(m.col, j)
    ours = t.sparse_distance_matrix(t, 1.0, output_type="coo_matrix")
    theirs = SciTree(x).sparse_distance_matrix(SciTree(x), 1.0, output_type="coo_matrix")
    assert ours.row.dtype == theirs.row.dtype
    assert abs(ours.tocsr() - theirs.tocsr()).max() == 0
    assert ours.nnz == theirs.nnz  # the diagonal's explicit zeros in both


def knn_oracle(x, q, k, p, dub=np.inf):
    """The k nearest of each row of q by brute force in norm p, ties by the lower index: the
    distances a loop in the norm computes (sum over the axes in order) and the indices."""
    diff = np.abs(q[:, None, :] - x[None, :, :])
    if p == np.inf:
        raw = diff.max(axis=2)
    else:
        raw = diff[:, :, 0] ** p if p not in (1.0, 2.0) else (
            diff[:, :, 0] * diff[:, :, 0] if p == 2.0 else diff[:, :, 0].copy())
        for a in range(1, x.shape[1]):
            raw = raw + (diff[:, :, a] ** p if p not in (1.0, 2.0) else (
                diff[:, :, a] * diff[:, :, a] if p == 2.0 else diff[:, :, a]))
    order = np.lexsort((np.broadcast_to(np.arange(len(x)), raw.shape), raw), axis=1)[:, :k]
    raw = np.take_along_axis(raw, order, axis=1)
    d = raw if p in (1.0, np.inf) else (np.sqrt(raw) if p == 2.0 else raw ** (1.0 / p))
    keep = d < dub
    return np.where(keep, d, np.inf), np.where(keep, order, len(x))


@pytest.mark.parametrize("name", ["tail3d", "sphere3d", "powerlaw3d", "dups2d", "screen2d",
                                  "blobs2d", "uniform3d"])
def test_knn_of_every_point_clustered(name):
    """k = 8 nearest of every point (a batch large enough to be reordered, each search bounded
    by the neighbours of the one before) and of points between them, on clustered data and
    duplicates: the brute-force answer, indices included (ties by the lower index), in every
    norm and with a distance bound."""
    x = make(name, 1100)
    if name == "dups2d":
        x = np.concatenate([x, x[:200]])  # every distance tie there is
    g = np.random.default_rng(3)
    mid = (x[g.integers(0, len(x), 300)] + x[g.integers(0, len(x), 300)]) / 2
    t = nearby.cKDTree(x)
    for q in (x, mid):
        rows = slice(None, None, 3)  # the oracle for a third of the rows of the whole batch
        for p in PS:
            want_d, want_i = knn_oracle(x, q[rows], 8, p)
            d, i = t.query(q, k=8, p=p)
            np.testing.assert_allclose(d[rows], want_d, rtol=1e-12, atol=0)
            if p == 2.0:
                np.testing.assert_array_equal(d[rows], want_d)
                np.testing.assert_array_equal(i[rows], want_i)
        dub = float(np.median(want_d[:, 4]))
        want_d, want_i = knn_oracle(x, q[rows], 8, 2.0, dub)
        d, i = t.query(q, k=8, distance_upper_bound=dub)
        np.testing.assert_array_equal(d[rows], want_d)
        np.testing.assert_array_equal(i[rows], want_i)


@pytest.mark.parametrize("name", ["uniform2d", "blobs2d", "powerlaw3d", "tail3d", "uniform1d"])
def test_far_balls(name):
    """Balls from about 1000 box widths away, each reaching a little into the data (radius:
    the distance to the nearest point plus a little), along an axis and in any direction, mixed
    with balls from inside: scipy's answers, and the grid they ran on is sized by how deep the
    balls reach, not by their radii (cells of the radius put every point in one cell)."""
    x = make(name, 1000)
    g = np.random.default_rng(4)
    lo, hi = x.min(axis=0), x.max(axis=0)
    width = float((hi - lo).max())
    m = x.shape[1]
    way = g.normal(size=(1200, m))
    way /= np.linalg.norm(way, axis=1)[:, None]
    way[:400] = 0.0
    way[np.arange(400), g.integers(0, m, 400)] = g.choice([-1.0, 1.0], 400)  # along an axis
    q = (lo + hi) / 2 + 1000 * width * way + (g.random((1200, m)) - 0.5) * (hi - lo)
    s = SciTree(x)
    rq = s.query(q, k=1)[0] + radius(x) * g.random(1200)
    t = nearby.cKDTree(x)
    np.testing.assert_array_equal(t.query_ball_point(q, rq, return_length=True),
                                  s.query_ball_point(q, rq, return_length=True))
    assert max(t._grid.cell_sizes) < width / 4, t._grid.cell_sizes
    same_lists(t.query_ball_point(q[::10], rq[::10]), s.query_ball_point(q[::10], rq[::10]))
    for j in (0, 1, 500):
        assert sorted(t.query_ball_point(q[j], rq[j])) == sorted(s.query_ball_point(q[j], rq[j]))
    both = np.concatenate([q[:200], x[:200]])
    rb = np.concatenate([rq[:200], np.full(200, radius(x))])
    for p in (1.0, np.inf):
        np.testing.assert_array_equal(
            nearby.cKDTree(x).query_ball_point(both, rb, p=p, return_length=True),
            s.query_ball_point(both, rb, p=p, return_length=True))


@pytest.mark.parametrize("centre", [0.5, 0.0])
def test_knn_periodic_clump(centre):
    """k = 8 nearest of every point of a clump in a periodic box (in the middle, and split across
    the faces), and of points anywhere in the box, in a batch (each search bounded by the
    neighbours of the one before, here measured without the wrap: a looser bound, still a
    bound): scipy's answers."""
    g = np.random.default_rng(8)
    x = np.mod(centre + 0.01 * g.standard_normal((1500, 3)), 1.0)
    x = np.where(x >= 1.0, 0.0, x)
    t, s = nearby.cKDTree(x, boxsize=1.0), SciTree(x, boxsize=1.0)
    for q in (x, g.random((1100, 3))):
        for p in (2.0, np.inf):
            d, i = t.query(q, k=8, p=p)
            wd, wi = s.query(q, k=8, p=p)
            np.testing.assert_allclose(d, wd, rtol=1e-12, atol=0)
            np.testing.assert_array_equal(i, wi)
