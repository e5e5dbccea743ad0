# SPDX-License-Identifier: MIT
"""Bad input gets ValueError / TypeError with the library's message (or NotImplementedError for
what is not built), out of memory a MemoryError; never a crash, and the object stays usable."""
import numpy as np
import pytest

import nearby
from nearby import _nearby

PTS = np.random.default_rng(5).random((300, 2)) * 10
NAN = float("nan")
INF = float("inf")


@pytest.mark.parametrize("points,exc,text", [
    ([[0.0, 0.0], [NAN, 1.0]], ValueError, "points[1]: NaN or infinity"),
    ([[0.0, INF]], ValueError, "NB_ERR_NOT_FINITE"),
    ([[0.0, -INF], [1, 1], [2, 2]], ValueError, "points[0]"),
    (np.zeros((5, 4)), ValueError, "shape (N, 2) or (N, 3)"),
    (np.zeros((5, 1)), ValueError, "shape (N, 2) or (N, 3)"),
    (np.zeros(6), ValueError, "shape (N, 2) or (N, 3)"),
    (np.zeros((2, 3, 2)), ValueError, "shape (N, 2) or (N, 3)"),
    (5.0, ValueError, "shape (N, 2) or (N, 3)"),
    ([["a", "b"]], TypeError, "real numbers"),
    (np.zeros((3, 2), dtype=complex), TypeError, "real numbers"),
    (np.array([[1, 2], [3, None]], dtype=object), TypeError, "real numbers"),
    ([[1.0, 2.0], [3.0]], (ValueError, TypeError), ""),
])
def test_bad_points(points, exc, text):
    with pytest.raises(exc) as info:
        nearby.Grid(points)
    assert text in str(info.value)


@pytest.mark.parametrize("dim", [2, 3])
def test_scan_finds_each_bad_coordinate(dim):
    """The construction's pass over the points (four points a step, blocks of 4096, a scalar
    tail) names the first non-finite coordinate wherever it is, on every axis, packed or
    strided; and its box is exact: a periodic box that one extreme coordinate leaves raises."""
    n = 4096 + 7
    base = np.random.default_rng(dim).random((n, dim)) * 10
    wide = np.zeros((n, dim + 2))
    for i in (0, 3, 4, 4095, 4096, 4100, n - 1):
        for d in range(dim):
            for bad in (NAN, INF, -INF):
                for x in (base.copy(), wide[:, 1:dim + 1]):
                    x[...] = base
                    x[i, d] = bad
                    if i < n - 1:
                        x[n - 1, (d + 1) % dim] = NAN  # a later one never wins
                    with pytest.raises(ValueError, match=r"points\[%d\]: NaN" % i):
                        nearby.Grid(x)
                good = base.copy()
                good[i, d] = 10.0  # the only coordinate at the box's end
                with pytest.raises(ValueError, match="axis %d is at or beyond" % d):
                    nearby.Grid(good, boxsize=10.0)
                good[i, d] = -1e-300  # the only negative one
                with pytest.raises(ValueError, match="axis %d is negative" % d):
                    nearby.Grid(good, boxsize=10.0)


def test_bad_construction():
    with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
        nearby.Grid(PTS, radius=-1.0)
    with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
        nearby.Grid(PTS, radius=NAN)
    with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
        nearby.Grid(PTS, cell_size=INF)
    with pytest.raises(ValueError, match="cell_size must be > 0"):
        nearby.Grid(PTS, cell_size=0)
    with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
        nearby.Grid(PTS, cell_size=-2)
    with pytest.raises(TypeError, match="radius must be a real number"):
        nearby.Grid(PTS, radius="1")
    # a cell number beyond the library's +-2^62
    with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
        nearby.Grid([[1e300, 0.0], [0.0, 0.0]], cell_size=1e-300)
    with pytest.raises(ValueError, match="one entry per point"):
        nearby.Grid(PTS, category=np.ones(5, dtype=np.uint32))
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        nearby.Grid(PTS, mask=np.full(len(PTS), -1))
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        nearby.Grid(PTS, mask=np.full(len(PTS), 2 ** 32))
    with pytest.raises(TypeError, match="integers"):
        nearby.Grid(PTS, category=np.ones(len(PTS)))


def test_bad_queries():
    grid = nearby.Grid(PTS)
    for r in (NAN, INF, -INF):
        with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
            grid.query_pairs(r)
        with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
            grid.count_pairs(r)
        with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
            grid.query_ball_point([1.0, 1.0], r)
        with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
            grid.query_ball_point(PTS[:5], r)
    for call in (lambda: grid.query_pairs(-1.0), lambda: grid.count_pairs(-0.5),
                 lambda: grid.query_ball_point((1.0, 2.0), -1e-9),
                 lambda: grid.query_ball_point(PTS[:4], np.array([1.0, 1.0, -1.0, 1.0]))):
        with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
            call()
    with pytest.raises(ValueError, match=r"x\[2\].*NB_ERR_NOT_FINITE"):
        grid.query_ball_point([[0, 0], [1, 1], [NAN, 1]], 1.0)
    with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
        grid.query([NAN, 0.0])
    bad = PTS[:3000].copy()
    bad[200, 1] = INF
    with pytest.raises(ValueError, match=r"x\[200\].*NB_ERR_NOT_FINITE"):
        grid.query(bad, k=2)
    with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
        grid.query_box([NAN, 0], [1, 1])
    with pytest.raises(ValueError, match="shape"):
        grid.query([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="shape"):
        grid.query_ball_point(np.zeros((4, 3)), 1.0)
    with pytest.raises(ValueError, match="shape"):
        grid.query_box([0, 0, 0], [1, 1])
    with pytest.raises(ValueError, match="r must be a number or an array"):
        grid.query_ball_point(PTS[:4], [1.0, 2.0])
    with pytest.raises(TypeError, match="real numbers"):
        grid.query(["a", "b"])
    with pytest.raises(TypeError):
        grid.query_ball_point([0.0, 0.0], "1")
    with pytest.raises(ValueError, match="k must be >= 1"):
        grid.query([0.0, 0.0], k=0)
    with pytest.raises(ValueError, match="every k"):
        grid.query([0.0, 0.0], k=[1, 0])
    with pytest.raises(ValueError, match="distance_upper_bound"):
        grid.query([0.0, 0.0], distance_upper_bound=-1)
    with pytest.raises(NotImplementedError, match="p must be 2"):
        grid.query([0.0, 0.0], p=1)
    with pytest.raises(NotImplementedError, match="p must be 2"):
        grid.query_pairs(1.0, p=np.inf)
    with pytest.raises(ValueError, match="eps"):
        grid.query_ball_point([0.0, 0.0], 1.0, eps=-1)
    with pytest.raises(ValueError, match="output_type"):
        grid.query_pairs(1.0, output_type="list")
    with pytest.raises(ValueError, match="workers"):
        grid.query(PTS, workers=0)
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        grid.query([0.0, 0.0], category=-1)
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        grid.query_ball_point([0.0, 0.0], 1.0, mask=2 ** 32)
    with pytest.raises(TypeError, match="mask must be an integer"):
        grid.query_box([0, 0], [1, 1], mask=1.5)
    # the grid still answers after every error
    assert grid.count_pairs(1.0) == len(grid.query_pairs(1.0))
    # eps >= 0 is accepted (exact answers meet any eps), as is p=2 spelled as a float
    assert grid.query_ball_point([5.0, 5.0], 1.0, eps=0.5, p=2.0) == \
        grid.query_ball_point([5.0, 5.0], 1.0)


def test_k_beyond_n_and_huge_outputs():
    grid = nearby.Grid(PTS[:3])
    d, i = grid.query([0.0, 0.0], k=5)
    assert np.isinf(d[3:]).all() and (i[3:] == 3).all()
    with pytest.raises(MemoryError):
        grid.query(np.zeros((100000, 2)), k=2 ** 31 - 1)  # 100000 * 2^31 outputs


def test_out_of_memory_is_memory_error():
    """The library's allocations fail one after another (a budget in the extension's
    allocator): every failure is a MemoryError and the object stays usable."""
    try:
        for budget in range(6):
            _nearby._set_alloc_budget(budget)
            try:
                g = nearby.Grid(PTS, radius=1.0)
            except MemoryError as e:
                assert "NB_ERR_OUT_OF_MEMORY" in str(e)
                continue
            finally:
                _nearby._set_alloc_budget(-1)
            assert g.count_pairs(1.0) > 0
        lazy = nearby.Grid(PTS)
        _nearby._set_alloc_budget(0)
        with pytest.raises(MemoryError, match="NB_ERR_OUT_OF_MEMORY"):
            lazy.query_pairs(1.0)
        _nearby._set_alloc_budget(-1)
        assert lazy.cell_sizes == []
        assert len(lazy.query_pairs(1.0)) > 0
        h = nearby.Hash(1.0)
        _nearby._set_alloc_budget(0)
        with pytest.raises(MemoryError, match="NB_ERR_OUT_OF_MEMORY"):
            for k in range(10000):
                h.insert((k * 10.0, 0.0))
        _nearby._set_alloc_budget(-1)
        h.validate()
    finally:
        _nearby._set_alloc_budget(-1)


def test_bad_hash_input():
    with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
        nearby.Hash(0.0)
    with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
        nearby.Hash(NAN)
    with pytest.raises(ValueError, match="dim must be 2 or 3"):
        nearby.Hash(1.0, dim=4)
    h = nearby.Hash(1.0)
    other = nearby.Hash(1.0)
    a = h.insert((1.0, 2.0), 7)
    foreign = other.insert((1.0, 2.0))
    with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
        h.insert((NAN, 0.0))
    with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
        h.move(a, (0.0, INF))
    with pytest.raises(ValueError, match="NB_ERR_BAD_HANDLE"):
        h.move(foreign, (0.0, 0.0))
    with pytest.raises(ValueError, match="NB_ERR_BAD_HANDLE"):
        h.remove(0)
    with pytest.raises(ValueError, match="NB_ERR_BAD_HANDLE"):
        h.get(-5)
    with pytest.raises(ValueError, match="NB_ERR_BAD_HANDLE"):
        h.get(2 ** 70)
    with pytest.raises(TypeError, match="handle is an int"):
        h.remove("a")
    with pytest.raises(ValueError, match="shape"):
        h.insert((1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
        h.query_ball_point((0.0, 0.0), -1.0)
    with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
        h.query_pairs(NAN)
    h.remove(a)
    with pytest.raises(ValueError, match="NB_ERR_BAD_HANDLE"):
        h.remove(a)  # stale
    assert a not in h and foreign not in h and "x" not in h
    with pytest.raises(ValueError, match=r"points\[1\]"):
        h.insert_many([[0.0, 0.0], [NAN, 0.0]])
    assert len(h) == 0  # all or nothing
    h.validate()


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("strided", [False, True])
def test_construction_finds_every_non_finite(dim, strided):
    # The points are scanned in blocks of 4096, four at a time, then a tail: a NaN or infinity
    # anywhere, on any axis, is refused with its index, and huge finite coordinates (whose sums
    # overflow) are not.
    n = 9003
    rng = np.random.default_rng(7)
    base = rng.random((n, dim + 1 if strided else dim)) * 100.0

    def view(a):
        return a[:, :dim] if strided else a

    for at in (0, 3, 4095, 4096, 8191, 9000, n - 1):
        for d in range(dim):
            for bad in (NAN, INF, -INF):
                a = base.copy()
                a[at, d] = bad
                with pytest.raises(ValueError, match=r"points\[%d\].*NB_ERR_NOT_FINITE" % at):
                    nearby.Grid(view(a))
    huge = base.copy()
    huge[: n // 2] = 1.7e308 - huge[: n // 2]
    huge[n // 2:] = -1.7e308 + huge[n // 2:]
    grid = nearby.Grid(view(huge))
    assert grid.n == n
    assert grid.query(view(huge)[4100], k=1)[0] == 0.0
