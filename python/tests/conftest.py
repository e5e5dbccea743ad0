# SPDX-License-Identifier: MIT
"""Shared data sets for the tests: random and adversarial points, with a printed seed.

NB_SEED=... reproduces a failure (the default seed is fixed).
"""
import os

import numpy as np
import pytest

SEED = int(os.environ.get("NB_SEED", "20261201"))


def pytest_report_header(config):
    import nearby
    return "nearby %s from %s; NB_SEED=%d" % (nearby.__version__, nearby.__file__, SEED)


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


def lattice(side, dim, offset=0.0):
    """The integer lattice {0..side-1}^dim + offset, shuffled: at r = 1 every neighbour pair is
    exactly r apart (d2 == r*r in double, even at 1e6)."""
    axes = np.meshgrid(*[np.arange(side, dtype=float)] * dim, indexing="ij")
    pts = np.stack([a.ravel() for a in axes], axis=1) + offset
    return pts[np.random.default_rng(SEED).permutation(len(pts))]


def datasets(dim):
    """(name, points, radii) for every data set the oracle tests run on."""
    g = np.random.default_rng(SEED + dim)
    n = 1500 if dim == 2 else 1200
    side = (n ** (1.0 / dim))
    uniform = g.random((n, dim)) * side
    centres = g.random((12, dim)) * side * 4
    clusters = (centres[g.integers(0, 12, n)] + g.normal(size=(n, dim)) * 0.3)
    dup = np.repeat(g.random((n // 4, dim)) * side, 4, axis=0)
    far = 1e12 + g.random((n, dim)) * side
    negative = (g.random((n, dim)) - 0.5) * side
    return [
        ("uniform", uniform, [0.0, 0.5, 1.0, 1.75, 4.0]),
        ("clusters", clusters, [0.05, 0.3, 1.0]),
        ("lattice", lattice(11 if dim == 3 else 35, dim), [1.0, 2.0 ** 0.5, 2.0]),
        ("lattice_far", lattice(11 if dim == 3 else 35, dim, 1e6), [1.0, 2.0]),
        ("duplicates", dup, [0.0, 0.7]),
        ("near_1e12", far, [0.8, 2.0]),
        ("negative", negative, [1.0]),
        ("empty", np.empty((0, dim)), [1.0]),
        ("single", np.array([[0.5] * dim]), [0.0, 1.0]),
    ]


def all_datasets():
    return [(dim,) + d for dim in (2, 3) for d in datasets(dim)]


def ids(params):
    return ["%dd-%s" % (p[0], p[1]) for p in params]
