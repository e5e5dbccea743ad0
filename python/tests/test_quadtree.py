# SPDX-License-Identifier: MIT
"""nearby.Quadtree against brute force: windows, overlaps and ray casts on random rectangles
of mixed sizes, with shared edges, zero-size rectangles and duplicates; and bad input."""
import numpy as np
import pytest

import nearby
from conftest import SEED


def rects(n=600):
    g = np.random.default_rng(SEED)
    lo = np.round(g.random((n, 2)) * 100, 1)
    size = np.round(g.exponential(2.0, (n, 2)), 1)
    size[:20] = 0.0  # points
    r = np.concatenate([lo, lo + size], axis=1)
    r[20:30] = r[30:40]  # duplicates
    r[40:50, 0] = r[50:60, 2]  # shared edges: minx of one = maxx of another
    r[40:50, 2] = r[40:50, 0] + 1.0
    r[40:50, 1::2] = r[50:60, 1::2]
    return r


def touching(r, w):
    return np.nonzero((r[:, 0] <= w[2]) & (w[0] <= r[:, 2]) & (r[:, 1] <= w[3])
                      & (w[1] <= r[:, 3]))[0]


def test_query_window():
    r = rects()
    qt = nearby.Quadtree(r)
    assert len(qt) == len(r)
    g = np.random.default_rng(SEED + 1)
    windows = [r[i] for i in range(0, 80, 3)]
    for _ in range(60):
        lo = np.round(g.random(2) * 110 - 5, 1)
        windows.append(np.concatenate([lo, lo + np.round(g.random(2) * 15, 1)]))
    windows.append([-np.inf, -np.inf, np.inf, np.inf])
    for w in windows:
        got = qt.query_window(w)
        assert got.dtype == np.intp
        np.testing.assert_array_equal(got, touching(r, np.asarray(w, dtype=float)))


def test_overlaps():
    r = rects()
    want = [(i, j) for i in range(len(r)) for j in touching(r, r[i]) if j > i]
    got = nearby.Quadtree(r).overlaps()
    assert got.shape == (len(want), 2)
    np.testing.assert_array_equal(got, np.array(want, dtype=np.intp).reshape(-1, 2))


def ray_entry(r, o, d, max_distance):
    """Slab test: the distance along the normalised d at which the ray enters r, or inf."""
    d = np.asarray(d, dtype=float) / np.hypot(*d)
    t0, t1 = 0.0, max_distance
    for a in range(2):
        if d[a] == 0.0:
            if not r[a] <= o[a] <= r[a + 2]:
                return np.inf
            continue
        ta, tb = (r[a] - o[a]) / d[a], (r[a + 2] - o[a]) / d[a]
        t0, t1 = max(t0, min(ta, tb)), min(t1, max(ta, tb))
    return t0 if t0 <= t1 else np.inf


def test_ray_cast():
    r = rects()
    qt = nearby.Quadtree(r)
    g = np.random.default_rng(SEED + 2)
    hits = 0
    for k in range(150):
        o = g.random(2) * 120 - 10
        d = g.normal(size=2) if k % 5 else np.array([1.0, 0.0])
        max_distance = np.inf if k % 3 else 20.0
        t = np.array([ray_entry(x, o, d, max_distance) for x in r])
        i, dist = qt.ray_cast(o, d, max_distance)
        if np.isinf(t.min()):
            assert (i, dist) == (-1, np.inf)
            continue
        hits += 1
        assert dist == pytest.approx(t.min(), rel=1e-9, abs=1e-9)
        assert t[i] == pytest.approx(t.min(), rel=1e-9, abs=1e-9)
    assert hits > 50
    # From inside a rectangle: distance 0.
    i, dist = qt.ray_cast(r[100, :2], (1.0, 1.0))
    assert dist == 0.0 and touching(r[i:i + 1], np.concatenate([r[100, :2]] * 2)).size == 1


def test_empty_and_bad_input():
    qt = nearby.Quadtree(np.zeros((0, 4)))
    assert qt.query_window((0, 0, 1, 1)).size == 0
    assert qt.overlaps().shape == (0, 2)
    assert qt.ray_cast((0, 0), (1, 0)) == (-1, np.inf)
    with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
        nearby.Quadtree([[1.0, 0.0, 0.0, 1.0]])  # minx > maxx
    with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
        nearby.Quadtree([[0.0, np.nan, 1.0, 1.0]])
    with pytest.raises(ValueError, match="shape"):
        nearby.Quadtree([[0.0, 0.0, 1.0]])
    qt = nearby.Quadtree([[0.0, 0.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
        qt.ray_cast((0, 0), (0, 0))
    with pytest.raises(ValueError, match="NB_ERR_NOT_FINITE"):
        qt.query_window((0, np.nan, 1, 1))
    with pytest.raises(ValueError, match="NB_ERR_OUT_OF_RANGE"):
        qt.query_window((1, 0, 0, 1))
    assert qt.query_window((1, 1, 2, 2)).tolist() == [0]  # a corner touches
