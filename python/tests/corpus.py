# SPDX-License-Identifier: MIT
"""Small numpy versions of the benchmark corpus's point sets (bench/corpus.h), with fixed seeds:
the shapes of the data people bring (uniform, Gaussian blobs, power-law clusters, towns on a
sphere, roads, a scanned surface, UTM-like and far-off coordinates, a screen, heavy duplicates,
a heavy tail about one centre).
The draws differ from the C generators'; the shapes are the same. Each set comes with the radius
at which a point has about 10 neighbours."""
import numpy as np

NAMES = ("uniform2d", "uniform3d", "blobs2d", "powerlaw3d", "sphere3d", "roads2d", "lidar3d",
         "utm2d", "screen2d", "offset2d", "dups2d", "uniform1d", "tail3d")


def _unit_vectors(g, n):
    v = g.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1)[:, None]


def make(name, n, seed=0):
    """The set `name` with n points (float64, (n, dim))."""
    g = np.random.default_rng(1000 * NAMES.index(name) + 7919 * seed + 20261206)
    if name in ("uniform2d", "offset2d"):
        x = g.random((n, 2)) * np.sqrt(n)
        return x + 1e9 if name == "offset2d" else x
    if name == "uniform3d":
        return g.random((n, 3)) * np.cbrt(n)
    if name == "uniform1d":
        return g.random((n, 1)) * n
    if name in ("blobs2d", "utm2d"):
        k = max(3, n // 200)
        centres = g.random((k, 2)) * 1.5 * np.sqrt(n)
        sizes = 8.0 * np.exp(g.normal(size=k))
        which = g.integers(0, k, n)
        x = centres[which] + sizes[which, None] * g.normal(size=(n, 2))
        return x + np.array([5e5, 4e6]) if name == "utm2d" else x
    if name == "powerlaw3d":
        side = 2.0 * np.cbrt(n)
        k = max(4, n // 50)
        centres = g.random((k, 3)) * side
        sizes = 3.0 * np.exp(0.7 * g.normal(size=k))
        which = (k * g.random(n) ** 2).astype(int)
        x = centres[which] + (sizes[which] * g.random(n))[:, None] * _unit_vectors(g, n)
        field = g.random(n) < 0.1
        x[field] = g.random((field.sum(), 3)) * side
        return x
    if name == "sphere3d":
        k = max(2, n // 100)
        towns = _unit_vectors(g, k)
        spread = (1.0 + 30.0 * g.random(k)) / 6371.0
        which = np.minimum((k * g.random(n) ** 2.5).astype(int), k - 1)
        v = towns[which] + spread[which, None] * g.normal(size=(n, 3))
        rural = g.random(n) < 0.25
        v[rural] = _unit_vectors(g, rural.sum())
        return 6371.0 * v / np.linalg.norm(v, axis=1)[:, None]
    if name == "roads2d":
        side = 2.0 * np.sqrt(n)
        k = max(2, n // 100)
        start = g.random((k, 2)) * side
        angle = 2 * np.pi * g.random(k)
        length = 0.1 * side * np.exp(0.8 * g.normal(size=k))
        which = g.integers(0, k, n)
        t = g.random(n)
        step = np.stack([np.cos(angle), np.sin(angle)], axis=1) * length[:, None]
        return start[which] + t[:, None] * step[which] + 0.3 * g.normal(size=(n, 2))
    if name == "lidar3d":
        size = 0.5 * np.sqrt(n)
        x = np.empty((n, 3))
        u = g.random(n)
        ground = u < 0.55
        a, r = 2 * np.pi * g.random(ground.sum()), 1 + 0.5 * size * g.random(ground.sum()) ** 2
        x[ground] = np.stack([size / 2 + r * np.cos(a), size / 2 + r * np.sin(a),
                              np.zeros(len(a))], axis=1)
        wall = (u >= 0.55) & (u < 0.8)
        m = wall.sum()
        base = g.random((12, 2)) * size
        o = np.pi * g.random(12)
        w = g.integers(0, 12, m)
        along = (g.random(m) - 0.5) * 20
        x[wall] = np.stack([base[w, 0] + along * np.cos(o[w]), base[w, 1] + along * np.sin(o[w]),
                            g.random(m) * 10], axis=1)
        crown = u >= 0.8
        m = crown.sum()
        centres = np.column_stack([g.random((30, 2)) * size, 2 + 6 * g.random(30)])
        c = g.integers(0, 30, m)
        v = _unit_vectors(g, m)
        v[:, 2] = np.abs(v[:, 2])
        x[crown] = centres[c] + 2.0 * v
        x[:, 2] += 0.03 * x[:, 0] + 0.01 * x[:, 1]
        return x + 0.005 * g.normal(size=(n, 3))
    if name == "screen2d":
        return g.random((n, 2)) * np.array([1920.0, 1080.0])
    if name == "dups2d":
        sites = g.random((max(1, n // 4), 2)) * np.sqrt(n)
        return sites[g.integers(0, len(sites), n)]
    if name == "tail3d":  # log-normal distances from one centre: a dense core, a sparse halo
        return _unit_vectors(g, n) * np.exp(3.0 * g.normal(size=n))[:, None]
    raise ValueError(name)


def radius(x, neighbours=10.0):
    """The radius at which a point has about `neighbours` others within it (all pairs)."""
    n = len(x)
    d = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2))
    d = np.sort(d[np.triu_indices(n, 1)])
    k = min(len(d) - 1, int(neighbours * n / 2))
    r = d[k] if len(d) else 1.0
    return float(r) if r > 0 else 1.0
