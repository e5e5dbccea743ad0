# SPDX-License-Identifier: MIT
"""nearby.Grid.neighbour_lists and neighbour_matrix against cKDTree and a brute-force oracle:
random, clustered and duplicate points in 2D and 3D, a lattice with pairs exactly r apart, a
periodic box, filters, empty rows and an empty set; and the threads they release the GIL to."""
import threading

import numpy as np
import pytest
from scipy.spatial import cKDTree

import nearby
from conftest import SEED, lattice


def oracle_rows(pts, r, period=None, keep=None):
    """(offsets, neighbours, dist2) by brute force: every j != i with d2 <= r*r, ascending."""
    n, dim = pts.shape
    offsets, nbrs, d2s = [0], [], []
    for i in range(n):
        d = np.abs(pts - pts[i])
        if period is not None:
            for a in range(dim):
                if period[a] > 0:
                    d[:, a] = np.minimum(d[:, a], period[a] - d[:, a])
        d2 = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]
        if dim == 3:
            d2 = d2 + d[:, 2] * d[:, 2]
        ok = d2 <= r * r
        ok[i] = False
        if keep is not None:
            ok &= keep[i]
        js = np.nonzero(ok)[0]
        nbrs.extend(js.tolist())
        d2s.extend(d2[js].tolist())
        offsets.append(len(nbrs))
    return np.array(offsets), np.array(nbrs, dtype=np.int64), np.array(d2s)


def sets(rng):
    yield "uniform2d", rng.random((600, 2)) * 20, 1.3
    yield "uniform3d", rng.random((500, 3)) * 7, 1.2
    c = rng.normal(size=(500, 2)) * 0.7 + rng.integers(0, 3, size=(500, 1)) * 5.0
    yield "clusters", c, 0.6
    d = rng.random((300, 3)) * 5
    yield "duplicates", np.concatenate([d, d[:100]]), 0.9
    yield "lattice", lattice(12, 2, offset=1e6), 1.0
    yield "sparse", rng.random((50, 2)) * 1000, 1.0  # mostly empty rows


@pytest.mark.parametrize("name", ["uniform2d", "uniform3d", "clusters", "duplicates", "lattice",
                                  "sparse"])
def test_rows_against_oracle_and_ckdtree(rng, name):
    pts, r = {k: (p, rr) for k, p, rr in sets(rng)}[name]
    g = nearby.Grid(pts)
    offsets, neighbours = g.neighbour_lists(r)
    assert offsets.dtype == np.int32 and neighbours.dtype == np.int32
    want_off, want_nb, want_d2 = oracle_rows(pts, r)
    np.testing.assert_array_equal(offsets, want_off)
    np.testing.assert_array_equal(neighbours, want_nb)
    # cKDTree agrees: row i is query_ball_point(p_i, r) without i, sorted
    tree = cKDTree(pts)
    for i in range(0, len(pts), 7):
        want = sorted(j for j in tree.query_ball_point(pts[i], r) if j != i)
        assert neighbours[offsets[i]:offsets[i + 1]].tolist() == want
    off2, nb2, d2 = g.neighbour_lists(r, distances=True)
    np.testing.assert_array_equal(off2, offsets)
    np.testing.assert_array_equal(nb2, neighbours)
    np.testing.assert_array_equal(d2, want_d2)


def test_matrix_matches_ckdtree(rng):
    pts = rng.random((400, 2)) * 15
    g = nearby.Grid(pts)
    m = g.neighbour_matrix(1.1)
    assert m.shape == (400, 400) and m.has_sorted_indices
    want = cKDTree(pts).sparse_distance_matrix(cKDTree(pts), 1.1).toarray()
    np.fill_diagonal(want, 0.0)
    np.testing.assert_allclose(m.toarray(), want, rtol=0, atol=1e-12)
    assert m.nnz == 2 * g.count_pairs(1.1)


def test_periodic(rng):
    box = np.array([10.0, 8.0])
    pts = rng.random((500, 2)) * box
    pts[0] = [0.0, 0.0]
    pts[1] = [np.nextafter(10.0, 0), np.nextafter(8.0, 0)]
    g = nearby.Grid(pts, boxsize=box)
    offsets, neighbours, d2 = g.neighbour_lists(1.5, distances=True)
    want_off, want_nb, want_d2 = oracle_rows(pts, 1.5, period=box)
    np.testing.assert_array_equal(offsets, want_off)
    np.testing.assert_array_equal(neighbours, want_nb)
    np.testing.assert_array_equal(d2, want_d2)
    with pytest.raises(ValueError):
        g.neighbour_lists(4.5)  # over L / 2


def test_filters(rng):
    pts = rng.random((400, 2)) * 12
    cat = rng.integers(1, 4, size=400).astype(np.uint32)
    mask = rng.integers(0, 4, size=400).astype(np.uint32)
    g = nearby.Grid(pts, category=cat, mask=mask)
    offsets, neighbours = g.neighbour_lists(1.2)
    pairs = g.query_pairs(1.2, output_type="ndarray")
    rows = [[] for _ in range(len(pts))]
    for i, j in pairs.tolist():
        rows[i].append(j)
        rows[j].append(i)
    for i in range(len(pts)):
        assert neighbours[offsets[i]:offsets[i + 1]].tolist() == sorted(rows[i])


def test_empty_and_bad_radius():
    g = nearby.Grid(np.zeros((0, 2)))
    offsets, neighbours = g.neighbour_lists(1.0)
    assert offsets.tolist() == [0] and len(neighbours) == 0
    g = nearby.Grid(np.array([[0.0, 0.0]]))
    assert g.neighbour_lists(1.0)[0].tolist() == [0, 0]
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            g.neighbour_lists(bad)


def test_threads_share_a_grid(rng):
    pts = rng.random((20000, 2)) * 100
    g = nearby.Grid(pts, radius=1.0)
    want = g.neighbour_lists(1.0)
    out = [None] * 4

    def run(k):
        out[k] = g.neighbour_lists(1.0)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got in out:
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("name", ["uniform2d", "uniform3d", "clusters", "duplicates", "lattice",
                                  "sparse"])
def test_cell_order_rows(rng, name):
    """cell_order=True: row p is point order[p], its entries positions q (points order[q]),
    ascending, never p; mapped back, the rows are the brute-force rows, distances included."""
    pts, r = {k: (p, rr) for k, p, rr in sets(rng)}[name]
    g = nearby.Grid(pts)
    offsets, neighbours, order = g.neighbour_lists(r, cell_order=True)
    assert offsets.dtype == np.int32 and neighbours.dtype == np.int32
    assert order.dtype == np.int32 and len(order) == len(pts)
    np.testing.assert_array_equal(np.sort(order), np.arange(len(pts)))
    want_off, want_nb, want_d2 = oracle_rows(pts, r)
    off2, nb2, d2, order2 = g.neighbour_lists(r, distances=True, cell_order=True)
    np.testing.assert_array_equal(off2, offsets)
    np.testing.assert_array_equal(nb2, neighbours)
    np.testing.assert_array_equal(order2, order)
    for p in range(len(pts)):
        row = neighbours[offsets[p]:offsets[p + 1]]
        assert (np.diff(row) > 0).all() and p not in row
        i = order[p]
        got = order[row]
        want = want_nb[want_off[i]:want_off[i + 1]]
        np.testing.assert_array_equal(np.sort(got), want)
        np.testing.assert_array_equal(d2[off2[p]:off2[p + 1]][np.argsort(got)],
                                      want_d2[want_off[i]:want_off[i + 1]])
