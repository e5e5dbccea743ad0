# SPDX-License-Identifier: MIT
"""nearby.cKDTree(boxsize=1) against cKDTree(boxsize=1) on points in one Gaussian clump of a
periodic box, in its middle or split across the faces, 2D and 3D: the k nearest (k = 1 and 8)
in the L1, L2 and Linf norms of every point and of points anywhere in the box. A clump fills
a small part of the box, which sizes the kNN grid's cells apart from uniform points'."""
import numpy as np
import pytest
from scipy.spatial import cKDTree

import nearby
from conftest import SEED


def clump(dim, centre, n=1500):
    g = np.random.default_rng(SEED + dim)
    pts = g.normal(centre, 0.01, size=(n, dim))
    pts -= np.floor(pts)
    pts[pts >= 1.0] = 0.0
    return pts


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("centre", [0.5, 0.0], ids=["middle", "faces"])
@pytest.mark.parametrize("p", [1.0, 2.0, np.inf])
def test_clump_knn_matches_ckdtree(dim, centre, p):
    pts = clump(dim, centre)
    anywhere = np.random.default_rng(SEED).random((100, dim))
    want_tree = cKDTree(pts, boxsize=1.0)
    got_tree = nearby.cKDTree(pts, boxsize=1.0)
    for xs in (pts, anywhere):
        for k in (1, 8):
            want_d, want_i = want_tree.query(xs, k=k, p=p)
            got_d, got_i = got_tree.query(xs, k=k, p=p)
            np.testing.assert_array_equal(got_i, want_i)
            np.testing.assert_allclose(got_d, want_d, rtol=1e-12, atol=0.0)
