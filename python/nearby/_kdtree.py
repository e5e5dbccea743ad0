# SPDX-License-Identifier: MIT
"""nearby.cKDTree and nearby.KDTree: scipy.spatial's kd-tree classes, answered by the grid.

Every method of scipy's cKDTree with its arguments, defaults, return types and shapes, for 1D,
2D and 3D data. The Euclidean case (p = 2) goes straight to the C paths of nearby.Grid. Other
Minkowski norms (1 <= p <= inf) run the same Euclidean searches at a radius that contains the
L_p ball (||d||_2 <= c ||d||_p with c = 1 for p <= 2 and m ** (1/2 - 1/p) above), then keep
exactly the candidates that pass the comparison a brute-force loop in that norm makes:
``sum(|d_i| ** p) <= r ** p`` (``max |d_i| <= r`` for p = inf, ``sum |d_i| <= r`` for p = 1).
1D data runs as 2D with y = 0. Answers are exact, so every ``eps`` is honoured.
"""
import math
import numbers
import os

import numpy as _np

from ._nearby import _Grid

__all__ = ["cKDTree", "KDTree", "cKDTreeNode"]

# Candidate radii are widened by this much, so that rounding in the Euclidean search can never
# drop a point the exact p-norm test keeps (the test itself is exact).
_WIDEN = 1.0 + 1e-9
# Rows of brute-force distances computed at once where the grid cannot answer (a periodic box
# with a radius above half a period).
_BRUTE_BYTES = 1 << 24
# count_neighbors in Python (weights, or p != 2) takes the query rows in blocks of about this many
# pairs, so that its memory stays bounded however many pairs lie within the largest radius
_COUNT_BLOCK_PAIRS = 1 << 21


def _widened(r, eps):
    """The radius a range search answers at: r itself, or r * (1 + eps) for eps > 0. scipy's
    contract for eps lets an approximate search return any point within r * (1 + eps) (and miss
    none within r / (1 + eps)); nearby answers the widest set exactly, which is what callers
    passing eps to absorb rounding expect (scipy's own test_query_pairs_eps does so)."""
    eps = float(eps)
    if eps > 0.0:
        return _np.asarray(r, dtype=_np.float64) * (1.0 + eps)
    return r


def _check_p(p):
    p = float(p)
    if not p >= 1.0:
        raise ValueError("Only p-norms with 1<=p<=infinity permitted")
    return p


def _workers(workers):
    """workers as scipy takes it: None or 1 = one thread, -1 = every CPU, n > 0 = n threads."""
    if workers is None:
        return 1
    if not isinstance(workers, (numbers.Integral, _np.integer)):
        raise TypeError("workers must be an integer, got %r" % (workers,))
    workers = int(workers)
    if workers == -1:
        count = os.cpu_count()
        if count is None:
            raise NotImplementedError("Cannot determine the number of cpus using os.cpu_count(), "
                                      "cannot use -1 for the number of workers")
        return count
    if workers <= 0:
        raise ValueError("Invalid number of workers %d, must be -1 or > 0" % workers)
    return workers


def _raw_radius(r, p):
    """r in the space the comparison is made in: r*r for p = 2, r ** p for other finite p (the C
    library's pow, as the distances get), r for 1 and inf. A negative or NaN radius becomes -1:
    nothing is within it."""
    r = _np.asarray(r, dtype=_np.float64)
    if p == 2.0:
        raw = r * r
    elif p == 1.0 or p == _np.inf:
        raw = r.copy()
    else:
        raw = _np.array([math.pow(v, p) if v >= 0.0 else 0.0 for v in r.ravel().tolist()])
        raw = raw.reshape(r.shape)
    return _np.where(r >= 0.0, raw, -1.0)


def _from_raw(raw, p):
    """Distances from the raw comparison values."""
    if p == 2.0:
        return _np.sqrt(raw)
    if p == 1.0 or p == _np.inf:
        return raw
    return raw ** (1.0 / p)


def _euclid_factor(p, m):
    """c with ||d||_2 <= c * ||d||_p for every d in m dimensions."""
    if p <= 2.0:
        return 1.0
    if p == _np.inf:
        return float(_np.sqrt(m))
    return float(m ** (0.5 - 1.0 / p))


class cKDTreeNode:
    """A node of the kd-tree a cKDTree would build (``tree``): level, split_dim (-1 for a
    leaf), split, children (the number of points), start_idx, end_idx, lesser, greater,
    indices and data_points. Built on first access, by scipy's rules (the searches do not use
    it)."""

    __slots__ = ("level", "split_dim", "split", "children", "start_idx", "end_idx", "lesser",
                 "greater", "_owner")

    def __init__(self, owner, level, start, end):
        self._owner = owner
        self.level = level
        self.start_idx = start
        self.end_idx = end
        self.children = end - start
        self.split_dim = -1
        self.split = 0.0
        self.lesser = None
        self.greater = None

    @property
    def indices(self):
        return self._owner._tree_state()[1][self.start_idx:self.end_idx]

    @property
    def data_points(self):
        return self._owner.data[self.indices]


def _build_tree(owner, data, leafsize, compact, balanced):
    """The kd-tree scipy's cKDTree builds: split the widest side of the node's box (the points'
    own box with compact_nodes, else the box inherited from the splits) at the median
    (balanced_tree) or the middle, sliding the split to the nearest point when one side would
    be empty; a node of at most leafsize points, or of identical points, is a leaf. Returns
    (root, indices, nodes in pre-order)."""
    n, m = data.shape
    indices = _np.arange(n, dtype=_np.intp)
    nodes = []
    if n == 0:
        root = cKDTreeNode(owner, 0, 0, 0)
        nodes.append(root)
        return root, indices, nodes
    lo0 = _np.nan_to_num(_np.nanmin(data, axis=0)) if n else _np.zeros(m)
    hi0 = _np.nan_to_num(_np.nanmax(data, axis=0)) if n else _np.zeros(m)
    # an explicit stack (pre-order): (node, maxes, mins, parent, side)
    root = cKDTreeNode(owner, 0, 0, n)
    stack = [(root, hi0, lo0)]
    while stack:
        node, maxes, mins = stack.pop()
        nodes.append(node)
        start, end = node.start_idx, node.end_idx
        if end - start <= leafsize:
            continue
        idx = indices[start:end]
        pts = data[idx]
        tight_hi, tight_lo = pts.max(axis=0), pts.min(axis=0)
        if compact:
            maxes, mins = tight_hi, tight_lo
        spread = maxes - mins
        d = int(_np.argmax(spread))
        if not tight_hi[d] > tight_lo[d] or not spread[d] > 0.0:
            if not (tight_hi > tight_lo).any():
                continue  # identical points: a leaf
            if not spread[d] > 0.0:
                continue
        col = pts[:, d]
        if balanced:
            k = (end - start) // 2
            split = float(_np.partition(col, k)[k])
        else:
            split = float((maxes[d] + mins[d]) / 2.0)
        left = col < split
        count = int(left.sum())
        if count == 0:  # nothing below the split: the smallest point goes left alone
            j = int(_np.argmin(col))
            split = float(col[j])
            left = _np.zeros(len(col), dtype=bool)
            left[j] = True
            count = 1
        elif count == len(col):  # nothing above: the largest goes right alone
            j = int(_np.argmax(col))
            split = float(col[j])
            left = _np.ones(len(col), dtype=bool)
            left[j] = False
            count -= 1
        indices[start:end] = _np.concatenate([idx[left], idx[~left]])
        node.split_dim = d
        node.split = split
        p = start + count
        node.lesser = cKDTreeNode(owner, node.level + 1, start, p)
        node.greater = cKDTreeNode(owner, node.level + 1, p, end)
        less_hi, more_lo = maxes.copy(), mins.copy()
        less_hi[d] = split
        more_lo[d] = split
        # pre-order: the lesser subtree first, so it is pushed last
        stack.append((node.greater, maxes, more_lo))
        stack.append((node.lesser, less_hi, mins))
    return root, indices, nodes


class cKDTree:
    """cKDTree(data, leafsize=16, compact_nodes=True, copy_data=False, balanced_tree=True,
    boxsize=None)

    scipy.spatial.cKDTree's interface over nearby's grid, for 1D, 2D and 3D data (four or more
    dimensions raise ValueError). ``leafsize``, ``compact_nodes`` and ``balanced_tree`` shape
    only the ``tree`` attribute (built on first access, as scipy would); the searches do not use
    a tree, and every answer is exact. ``copy_data=True`` copies the points (else a float64
    array is used where it lies: do not change it afterwards). ``boxsize``: periodic boxes, as
    scipy's (a number or one per axis; 0 or less means the axis does not wrap), with the points
    in [0, L) on every periodic axis.
    """

    _complex_error = False  # KDTree refuses complex input, cKDTree casts it with a warning

    def __init__(self, data, leafsize=16, compact_nodes=True, copy_data=False,
                 balanced_tree=True, boxsize=None):
        data = self._as_float(data, copy_data)
        if data.ndim != 2:
            raise ValueError("data must be 2 dimensions")
        n, m = data.shape
        if not 1 <= m <= 3:
            raise ValueError("nearby's cKDTree supports 1, 2 or 3 dimensions; the data has %d "
                             "(shape %s)" % (m, data.shape))
        leafsize = int(leafsize)
        if leafsize < 1:
            raise ValueError("leafsize must be at least 1")
        self.data = data
        self.n, self.m = int(n), int(m)
        self.leafsize = leafsize
        self._compact, self._balanced = bool(compact_nodes), bool(balanced_tree)
        self._tree = None
        self._bounds = None
        self._gm = 2 if m == 1 else m
        self._setup_box(boxsize)
        self._setup_grid()

    # ---- construction ----

    @classmethod
    def _as_float(cls, x, copy=False):
        arr = _np.asarray(x)
        if arr.dtype.kind == "c":
            if cls._complex_error:
                raise TypeError("KDTree does not work with complex data")
        elif arr.dtype.kind not in "biuf":
            arr = _np.asarray(arr, dtype=_np.float64)  # strings that parse, objects: numpy's error
        if copy:
            return _np.array(arr, dtype=_np.float64, copy=True)
        return _np.asarray(arr, dtype=_np.float64)  # complex: numpy's ComplexWarning

    def _setup_box(self, boxsize):
        self._box_arg = boxsize
        if boxsize is None:
            self.boxsize = None
            self._period = None
            self._half = _np.inf
            return
        box = _np.empty(self.m, dtype=_np.float64)
        box[:] = boxsize
        self.boxsize = box
        period = _np.where(box > 0.0, box, 0.0)
        if not (period > 0.0).any():
            self._period = None
            self._half = _np.inf
            return
        if not _np.isfinite(period).all():
            raise ValueError("boxsize must be finite")
        data = self.data
        for d in range(self.m):
            if period[d] > 0.0 and self.n:
                col = data[:, d]
                if (col < 0.0).any():
                    raise ValueError("Negative input data are outside of the periodic box.")
                if (col >= period[d]).any():
                    raise ValueError("Some input data are greater than the size of the periodic "
                                     "box.")
        self._period = _np.concatenate([period, _np.zeros(self._gm - self.m)])
        self._half = float(period[period > 0.0].min() / 2.0)

    def _setup_grid(self):
        data = self.data
        finite = _finite_rows(data)
        # Rows with NaN or infinity are never within a finite distance of anything (as in
        # scipy): the grid holds the others, and _keep maps its indices back.
        self._keep = None if finite is None else _np.flatnonzero(finite)
        pts = data if self._keep is None else data[self._keep]
        if self.m == 1:
            pts = _np.column_stack([pts[:, 0], _np.zeros(len(pts))])
        self._pts = pts
        period = None if self._period is None else tuple(float(v) for v in self._period)
        self._grid = _Grid(pts, None, None, None, None, period)
        self._nf = len(pts)

    def __reduce__(self):
        return (type(self), (self.data, self.leafsize, self._compact, False, self._balanced,
                             self._box_arg))

    # ---- attributes computed on first access ----

    def _bounds_pair(self):
        if self._bounds is None:
            self._bounds = _column_bounds(self.data) if self.n else (_np.zeros(self.m),
                                                                     _np.zeros(self.m))
        return self._bounds

    @property
    def maxes(self):
        """The largest coordinate on each axis (as scipy, NaN where a row has NaN)."""
        return self._bounds_pair()[0]

    @property
    def mins(self):
        """The smallest coordinate on each axis."""
        return self._bounds_pair()[1]

    # ---- the kd-tree attributes, built on demand ----

    def _tree_state(self):
        if self._tree is None:
            self._tree = _build_tree(self, self.data, self.leafsize, self._compact,
                                     self._balanced)
        return self._tree

    @property
    def tree(self):
        """The root cKDTreeNode of the kd-tree scipy would build (built on first access)."""
        return self._tree_state()[0]

    @property
    def size(self):
        """The number of nodes of that kd-tree."""
        return len(self._tree_state()[2])

    @property
    def indices(self):
        """The points' order in that kd-tree (leaves in order)."""
        return self._tree_state()[1]

    def _build_weights(self, weights):
        """The total weight under every node of that kd-tree, in pre-order."""
        weights = _np.asarray(weights, dtype=_np.float64)
        if weights.shape != (self.n,):
            raise ValueError("Number of weights differ from the number of data points")
        _, indices, nodes = self._tree_state()
        cum = _np.concatenate([[0.0], _np.cumsum(weights[indices])])
        return _np.array([cum[nd.end_idx] - cum[nd.start_idx] for nd in nodes])

    # ---- queries: shared steps ----

    def _queries(self, x):
        """x as (M, gm) float64 query points (1D padded with y = 0; wrapped into a periodic
        box), with the leading shape and the mask of finite rows (None when all are)."""
        x = self._as_float(x)
        if x.ndim == 0 or x.shape[-1] != self.m:
            raise ValueError("x must consist of vectors of length %d but has shape %s"
                             % (self.m, _np.shape(x)))
        lead = x.shape[:-1]
        q = x.reshape(-1, self.m)
        if self.m == 1:
            q = _np.column_stack([q[:, 0], _np.zeros(len(q))])
        finite = _finite_rows(q)
        if finite is not None:
            q = _np.where(finite[:, None], q, 0.0)
        if self._period is not None:
            q = _np.array(q, dtype=_np.float64)  # a copy: the caller's array stays as it was
            for d, period in enumerate(self._period):
                if period > 0.0:
                    col = _np.mod(q[:, d], period)
                    q[:, d] = _np.where(col >= period, 0.0, col)  # a tiny negative x rounds to L
        return _np.ascontiguousarray(q), lead, finite

    def _raw(self, a, b, p):
        """The raw p-norm comparison values between rows a[i] and b[i] (see _raw_radius), summed
        axis by axis in order, as a brute-force loop does."""
        total = None
        for d in range(self.m):
            diff = _np.abs(a[:, d] - b[:, d])
            if self._period is not None and self._period[d] > 0.0:
                period = self._period[d]
                diff = _np.where(diff > 0.5 * period, period - diff, diff)
            if p == 2.0:
                term = diff * diff
            elif p == 1.0 or p == _np.inf:
                term = diff
            else:
                term = diff ** p
            if total is None:
                total = term
            elif p == _np.inf:
                total = _np.maximum(total, term)
            else:
                total = total + term
        return total

    def _fits(self, radius):
        """True when the grid can answer a Euclidean search at this radius (always, unless the
        box is periodic and the radius is above half the smallest period)."""
        return bool(_np.all(radius <= self._half))

    def _rows(self, q, r, p, raw_wanted, workers=1, sort=True):
        """The points within r (one number, or one per query) of each query row, in norm p:
        (offsets, grid indices, raw values or None). Exact."""
        m_rows = len(q)
        r = _np.asarray(r, dtype=_np.float64)
        rraw = _raw_radius(r, p)
        wide = r * (_euclid_factor(p, self.m) * _WIDEN) if p != 2.0 else r
        wide = _np.where(r >= 0.0, wide, 0.0)
        if self._nf == 0 or m_rows == 0:
            return _np.zeros(m_rows + 1, dtype=_np.int64), _np.zeros(0, dtype=_np.intp), \
                (_np.zeros(0) if raw_wanted else None)
        if not self._fits(wide):
            return self._rows_brute(q, rraw, p, raw_wanted)
        wide = wide if wide.ndim else float(wide)
        if p == 2.0 and not raw_wanted:
            off, idx = self._grid._rows(q, wide, sort, workers)
            return off, idx, None
        # the exact test in the norm, in C: only the points within r are returned, with their
        # raw distances
        lim = r if r.ndim else float(r)
        off, idx, raw = self._grid._rows(q, wide, sort, workers, p, lim)
        return off, idx, (raw if raw_wanted else None)

    def _rows_brute(self, q, rraw, p, raw_wanted):
        """_rows by brute force, in blocks (a periodic box searched beyond half a period)."""
        pts, n = self._pts, self._nf
        block = max(1, _BRUTE_BYTES // (8 * max(n, 1)))
        idx_parts, raw_parts, counts = [], [], []
        for s in range(0, len(q), block):
            qb = q[s:s + block]
            a = _np.repeat(qb, n, axis=0)
            b = _np.tile(pts, (len(qb), 1))
            raw = self._raw(a, b, p).reshape(len(qb), n)
            lim = rraw[s:s + block, None] if rraw.ndim else rraw
            hit = raw <= lim
            qi, pi = _np.nonzero(hit)
            idx_parts.append(pi.astype(_np.intp))
            raw_parts.append(raw[qi, pi])
            counts.append(hit.sum(axis=1))
        counts = _np.concatenate(counts) if counts else _np.zeros(0, dtype=_np.int64)
        off = _np.concatenate([[0], _np.cumsum(counts)]).astype(_np.int64)
        idx = _np.concatenate(idx_parts) if idx_parts else _np.zeros(0, dtype=_np.intp)
        raw = _np.concatenate(raw_parts) if raw_parts else _np.zeros(0)
        return off, idx, (raw if raw_wanted else None)

    def _to_data(self, idx):
        """Grid indices as indices into data."""
        return idx if self._keep is None else self._keep[idx]

    def _same_kind(self, other, what):
        if not isinstance(other, cKDTree):
            raise TypeError("Argument 'other' has incorrect type (expected a nearby cKDTree, got "
                            "%s)" % type(other).__name__)
        if other.m != self.m:
            raise ValueError("Trees passed to %s have different dimensionality" % what)

    # ---- query ----

    @staticmethod
    def _ranks(k):
        """k as (kmax, 0-based ranks or None, squeeze): an int, or a sequence of 1-based
        ranks."""
        if k is None:
            raise ValueError("k must be an integer or a sequence of integers")
        if _np.ndim(k) == 0:
            if isinstance(k, (bool, _np.bool_)):
                raise TypeError("k must be an integer or a sequence of integers")
            kv = float(k)
            if kv != int(kv):
                raise TypeError("k must be an integer or a sequence of integers, got %r" % (k,))
            k = int(kv)
            if k < 1:
                raise ValueError("k must be at least 1, got %d" % k)
            return k, None, k == 1
        arr = _np.asarray(k)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError("k must be an integer or a one-dimensional sequence of integers")
        if arr.dtype.kind == "f" and not (arr == _np.trunc(arr)).all():
            raise TypeError("k must be an integer or a sequence of integers")
        if arr.dtype.kind not in "iuf":
            raise TypeError("k must be an integer or a sequence of integers")
        ranks = arr.astype(_np.intp)
        if (ranks < 1).any():
            raise ValueError("every k must be at least 1")
        return int(ranks.max()), ranks - 1, False

    def query(self, x, k=1, eps=0, p=2, distance_upper_bound=_np.inf, workers=1):
        """The k nearest neighbours of x in norm p: (distances, indices) shaped like x without
        its last axis (plus one axis of k unless k == 1); Python scalars for one point and
        k = 1. A missing neighbour is distance inf and index n. distance_upper_bound is strict.
        eps: exact answers satisfy any eps >= 0."""
        kmax, ranks, squeeze = self._ranks(k)
        p = _check_p(p)
        workers = _workers(workers)
        dub = float(distance_upper_bound)
        if not dub >= 0.0:
            dub = 0.0  # a negative bound keeps nothing
        q, lead, finite = self._queries(x)
        kout = kmax if ranks is None else len(ranks)
        if p == 2.0 and finite is None and self._keep is None:
            # the common case: the grid's kNN, as it is
            k_arg = kmax if ranks is None else ranks + 1
            d, i = _Grid.query(self._grid, q, k_arg, 0, 2, dub, workers)
            d = _np.asarray(d).reshape(lead + ((kout,) if not squeeze else ()))
            i = _np.asarray(i).reshape(lead + ((kout,) if not squeeze else ()))
        else:
            if finite is None and self._keep is None and len(q):
                # other norms, in C (periodic boxes too: the walk takes the minimum image in
                # the norm): one Euclidean kNN and one search a query
                d, i = self._grid._knn_p(q, kmax, p, dub, workers)
            else:
                d, i = self._knn_general(q, finite, kmax, p, dub, workers)
            if ranks is not None:
                d, i = d[:, ranks], i[:, ranks]
            shape = lead + ((kout,) if not squeeze else ())
            d, i = d.reshape(shape), i.reshape(shape)
        if d.ndim == 0:
            return float(d), self._index_scalar(i)
        return d, i

    @staticmethod
    def _index_scalar(i):
        return int(i)

    def _knn_general(self, q, finite, kmax, p, dub, workers):
        """(M, kmax) distances and data indices in norm p, for any p and non-finite rows: the
        Euclidean k nearest bound the radius that must hold the p-nearest, a radius search
        there, then the exact p-distances sorted (by distance, then index)."""
        m_rows = len(q)
        dist = _np.full((m_rows, kmax), _np.inf)
        index = _np.full((m_rows, kmax), self.n, dtype=_np.intp)
        rows = _np.arange(m_rows) if finite is None else _np.flatnonzero(finite)
        if self._nf == 0 or len(rows) == 0:
            return dist, index
        qf = q[rows]
        # The Euclidean nearest, more than k of them: a row is complete when its farthest one
        # (Euclidean) lies beyond c * (the k-th smallest p-distance among them), since every
        # point p-nearer than that is Euclidean-nearer than c times it. The other rows search
        # a radius of c times that p-distance.
        kc = min(self._nf, kmax * (2 if self.m <= 2 else 4) + 8)
        de, ie = _Grid.query(self._grid, qf, kc if kc > 1 else [1], 0, 2, _np.inf, workers)
        de = _np.asarray(de).reshape(len(qf), kc)
        ie = _np.asarray(ie).reshape(len(qf), kc)
        raw = self._raw(_np.repeat(qf, kc, axis=0), self._pts[ie.ravel()], p).reshape(len(qf), kc)
        dub_raw = _raw_radius(dub, p) if dub < _np.inf else _np.inf
        short = _np.zeros(len(qf), dtype=bool)
        kk = min(kmax, kc)
        if kc < self._nf:
            kth = _np.partition(raw, kmax - 1, axis=1)[:, kmax - 1]
            # widened: the bound goes through a root and back; extra candidates are dropped
            bound = _np.minimum(_from_raw(kth, p) * _WIDEN, dub)
            short = de[:, -1] <= bound * (_euclid_factor(p, self.m) * _WIDEN)
        done = _np.flatnonzero(~short)
        if len(done):
            # complete rows: the k smallest of their candidates, by distance then index
            rd, idd = raw[done], ie[done]
            if kk < kc:
                sel = _np.argpartition(rd, kk - 1, axis=1)[:, :kk]
                rd, idd = _np.take_along_axis(rd, sel, 1), _np.take_along_axis(idd, sel, 1)
            order = _np.lexsort((idd, rd), axis=-1)
            rd, idd = _np.take_along_axis(rd, order, 1), _np.take_along_axis(idd, order, 1)
            hit = rd < dub_raw
            out = rows[done]
            dist[out, :kk] = _np.where(hit, _from_raw(rd, p), _np.inf)
            index[out, :kk] = _np.where(hit, self._to_data(idd), self.n)
        if short.any():
            rows_s = _np.flatnonzero(short)
            off, idx, raw_s = self._rows(qf[rows_s], bound[rows_s], p, True, workers,
                                         sort=False)
            qid = _np.repeat(_np.arange(len(rows_s)), _np.diff(off))
            keep = raw_s < dub_raw
            qid, idx, raw_s = qid[keep], idx[keep], raw_s[keep]
            order = _np.lexsort((idx, raw_s, qid))
            qid, idx, raw_s = qid[order], idx[order], raw_s[order]
            starts = _np.concatenate([[0], _np.cumsum(_np.bincount(qid, minlength=len(rows_s)))])
            rank = _np.arange(len(qid)) - starts[qid]
            sel = rank < kmax
            out = rows[rows_s[qid[sel]]]
            dist[out, rank[sel]] = _from_raw(raw_s[sel], p)
            index[out, rank[sel]] = self._to_data(idx[sel])
        return dist, index

    # ---- radius queries ----

    def query_ball_point(self, x, r, p=2.0, eps=0, workers=1, return_sorted=None,
                         return_length=False):
        """The points within distance r (<=) of x in norm p: a list for one point, else an
        object array of lists shaped like x without its last axis; with return_length, the
        counts instead. r is a number or one per point (broadcast). return_sorted=None sorts
        the lists of a batch, not a single point's (as scipy); True sorts, False need not."""
        p = _check_p(p)
        workers = _workers(workers)
        q, lead, finite = self._queries(x)
        r = _np.asarray(r, dtype=_np.float64)
        if r.ndim:
            try:
                r = _np.broadcast_to(r, lead)
            except ValueError:
                raise ValueError("r must be a number or broadcast to x's shape without its last "
                                 "axis %s, got shape %s" % (lead, r.shape)) from None
            r = _np.ascontiguousarray(r).reshape(-1)
        _check_radius(r)
        r = _widened(r, eps)
        single = len(lead) == 0
        sort = bool(return_sorted) if return_sorted is not None else not single
        if p == 2.0 and finite is None and self._keep is None and self._fits(r):
            r_arg = float(r) if r.ndim == 0 else r.reshape(lead)
            res = _Grid.query_ball_point(self._grid, q.reshape(lead + (self._gm,)), r_arg, 2,
                                         0, workers, sort, bool(return_length))
            if single and return_length:
                return _np.intp(res)
            return res
        off, idx, _ = self._rows_for_q(q, finite, r, p, workers, sort)
        counts = _np.diff(off)
        if return_length:
            out = counts.astype(_np.intp).reshape(lead)
            return _np.intp(out) if single else out
        lists = idx.tolist()
        if single:
            return lists
        res = _np.empty(len(counts), dtype=object)
        for j in range(len(counts)):
            res[j] = lists[off[j]:off[j + 1]]
        return res.reshape(lead)

    def _rows_for_q(self, q, finite, r, p, workers, sort, raw_wanted=False):
        """_rows_for over query rows already prepared by _queries."""
        if finite is None:
            off, idx, raw = self._rows(q, r, p, raw_wanted, workers, sort)
        else:
            sub = self._rows(q[finite], r[finite] if r.ndim else r, p, raw_wanted, workers, sort)
            counts = _np.zeros(len(q), dtype=_np.int64)
            counts[finite] = _np.diff(sub[0])
            off = _np.concatenate([[0], _np.cumsum(counts)]).astype(_np.int64)
            idx, raw = sub[1], sub[2]
        return off, self._to_data(idx), raw

    def query_ball_tree(self, other, r, p=2.0, eps=0):
        """For each point of this tree, the list of indices of other's points within r (sorted)."""
        self._same_kind(other, "query_ball_tree")
        p = _check_p(p)
        r = float(r)
        _check_radius(_np.asarray(r))
        r = float(_widened(r, eps))
        q, _, finite = other._queries(self.data)
        if p == 2.0 and finite is None and other._keep is None and other._fits(r) and len(q):
            # the common case: the lists built in C
            return _Grid.query_ball_point(other._grid, q, r, 2, 0, 1, True, False).tolist()
        off, idx, _ = other._rows_for_q(q, finite, _np.asarray(r), p, 1, True)
        lists = idx.tolist()
        return [lists[a:b] for a, b in zip(off[:-1].tolist(), off[1:].tolist())]

    def query_pairs(self, r, p=2.0, eps=0, output_type="set"):
        """Every pair (i, j), i < j, within distance r in norm p: a set of tuples, or with
        output_type='ndarray' an (K, 2) intp array (rows sorted)."""
        if output_type not in ("set", "ndarray"):
            raise ValueError("Invalid output type")
        p = _check_p(p)
        r = float(r)
        _check_radius(_np.asarray(r))
        r = float(_widened(r, eps))
        if output_type == "set" and p == 2.0 and self._fits(r) and self._keep is None:
            return self._grid._pairs_set(r)  # built in C
        pairs = self._pairs(r, p)
        if output_type == "ndarray":
            return pairs
        return set(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()))

    def _pairs(self, r, p):
        if p == 2.0 and self._fits(r):
            pairs = self._grid._query_pairs(r, 1)
        else:
            off, idx, _ = self._rows(self._pts, _np.asarray(r), p, False, 1, True)
            qid = _np.repeat(_np.arange(self._nf, dtype=_np.intp), _np.diff(off))
            upper = qid < idx
            pairs = _np.stack([qid[upper], idx[upper]], axis=1)
        if self._keep is not None:
            pairs = self._keep[pairs]
        return pairs

    # ---- counts and distance matrices ----

    def count_neighbors(self, other, r, p=2.0, weights=None, cumulative=True):
        """The number of pairs (x1 of this tree, x2 of other) with distance(x1, x2) <= r, for a
        number r (a number back) or a 1D array of radii (an array back; cumulative=False counts
        r[i-1] < d <= r[i] instead, r then non-decreasing). weights: a pair (self_weights,
        other_weights), either None, or one array when other is self; the counts are then
        sums of w1 * w2 (floats)."""
        from ._nearby import _count_radii
        walks = 8
        self._same_kind(other, "count_neighbors")
        p = _check_p(p)
        r_arr = _np.asarray(r, dtype=_np.float64)
        if r_arr.ndim > 1:
            raise ValueError("r must be either a single value or a one-dimensional array of "
                             "values")
        if _np.isnan(r_arr).any():
            raise ValueError("r must not be NaN")
        scalar = r_arr.ndim == 0
        radii = r_arr.reshape(-1)
        if not cumulative and (_np.diff(radii) < 0).any():
            raise ValueError("r must be non-decreasing for non-cumulative counting.")
        w_self, w_other = self._weights_pair(other, weights)
        weighted = w_self is not None or w_other is not None
        uniq, back = _np.unique(radii, return_inverse=True)
        cum_u = _np.zeros(len(uniq), dtype=_np.float64 if weighted else _np.intp)
        done = int(_np.searchsorted(uniq, 0.0))  # negative radii count nothing
        first = done
        if (not weighted and p == 2.0 and other._keep is None and self._keep is None
                and self._nf and other._nf):
            # the smallest radii, counts only, by the grid's pair walks, a radius at a time (all
            # pairs within it of one tree (n + 2 * pairs), or of two): each costs about the
            # pairs within its radius, where the one dual walk below tests every pair of two
            # leaves that a radius cuts (many more, at a radius of a few neighbours); up to
            # `walks` radii, while they find fewer than `cheap` pairs a point
            cheap = 16 * (self.n + other.n)
            while (done < len(uniq) and done - first < walks and uniq[done] < _np.inf
                   and other._fits(uniq[done])
                   and (done == first or cum_u[done - 1] <= cheap)):
                cum_u[done] = self._count_c(other, float(uniq[done]))
                done += 1
        rest = uniq[done:]
        inner = rest[_np.isfinite(rest)]
        if len(inner):
            # the other radii in one dual walk over trees of boxes (nb_grid_*_pairs_radii), in
            # the norm's own comparison; a negative radius counts nothing, an infinite one every
            # pair of finite points
            ws = _finite_weights(self, w_self)
            wo = _finite_weights(other, w_other)
            period = other._period
            if self._nf == 0 or other._nf == 0:
                got = _np.zeros(len(inner))
            elif other is self and (w_self is w_other or w_self is None and w_other is None):
                # each unordered pair once, doubled, and every point with itself (d = 0)
                got = _count_radii(self._pts, None, inner, p, period, ws, None, True)
                own = self._nf if ws is None else float(_np.dot(ws, ws))
                got = own + 2 * got
            else:
                got = _count_radii(self._pts, other._pts, inner, p, period, ws, wo, True)
            cum_u[done + _np.searchsorted(rest, inner)] = got
        if len(rest) and rest[-1] == _np.inf:
            ws = _finite_weights(self, w_self)
            wo = _finite_weights(other, w_other)
            cum_u[uniq == _np.inf] = (ws.sum() if ws is not None else self._nf) * \
                (wo.sum() if wo is not None else other._nf)
        cum = cum_u[back]
        if not cumulative:
            cum = _np.diff(_np.concatenate([_np.zeros(1, dtype=cum.dtype), cum]))
        if scalar:
            return cum[0] if weighted else int(cum[0])
        return cum

    def _count_c(self, other, r):
        """The pairs (x1 of self, x2 of other) within r (p = 2, finite points), in C."""
        if self.n == 0 or other.n == 0:
            return 0
        if other is self:
            return self.n + 2 * self._grid.count_pairs(r)
        if self._period is None and other._period is None:
            return self._grid._count_cross(other._grid, r)
        q, _, _ = other._queries(self.data)
        lengths = _Grid.query_ball_point(other._grid, q, r, 2, 0, 1, False, True)
        return int(lengths.sum())

    def _weights_pair(self, other, weights):
        if weights is None:
            return None, None
        if isinstance(weights, tuple):
            w_self, w_other = weights
        elif other is self:
            w_self = w_other = weights
        else:
            raise ValueError("Two different trees are used: give weights as a tuple "
                             "(self_weights, other_weights).")

        def one(w, tree):
            if w is None:
                return None
            w = _np.asarray(w, dtype=_np.float64)
            if w.shape != (tree.n,):
                raise ValueError("Number of weights differ from the number of data points")
            return w
        return one(w_self, self), one(w_other, other)

    def _span_norm(self, other, p):
        """An upper bound on the p-distance between any point of self and any of other."""
        if self._nf == 0 or other._nf == 0:
            return 0.0
        (hi_a, lo_a), (hi_b, lo_b) = _column_bounds(self._pts), _column_bounds(other._pts)
        hi, lo = _np.maximum(hi_a, hi_b), _np.minimum(lo_a, lo_b)
        span = hi - lo
        if other._period is not None:
            span = _np.where(other._period > 0.0, _np.minimum(span, other._period / 2.0), span)
        if p == _np.inf:
            return float(span.max())
        return float((span ** p).sum() ** (1.0 / p)) if p != 1.0 else float(span.sum())

    def _cumulative_counts(self, other, radii, p, w_self, w_other):
        """Weighted counts of pairs with d <= radii[b], for every b (radii in any order)."""
        order = _np.argsort(radii, kind="stable")
        rs = radii[order]
        ws_f = _finite_weights(self, w_self)
        wo_f = _finite_weights(other, w_other)
        total = (ws_f.sum() if ws_f is not None else self._nf) * \
            (wo_f.sum() if wo_f is not None else other._nf)
        # radii at or beyond the span count every pair; the rest are counted from the pairs
        # within the largest of them
        span = self._span_norm(other, p) * _WIDEN * _WIDEN
        below = rs < span
        cum = _np.zeros(len(rs))
        if below.any():
            r_top = float(rs[below].max())
            q, _, finite = other._queries(self.data)
            rraw = _raw_radius(rs, p)
            per_bin = _np.zeros(len(rs) + 1)
            # the pairs within r_top, binned by radius a block of query rows at a time: about
            # _COUNT_BLOCK_PAIRS pairs a block (the first block as if every point were within
            # r_top of each row; then sized from the pairs a row the blocks so far had)
            rows = max(1, _COUNT_BLOCK_PAIRS // max(other.n, 1))
            start = 0
            while start < len(q):
                end = min(len(q), start + rows)
                off, idx, raw = other._rows_for_q(
                    q[start:end], None if finite is None else finite[start:end],
                    _np.asarray(max(r_top, 0.0)), p, 1, False, raw_wanted=True)
                qid = start + _np.repeat(_np.arange(end - start), _np.diff(off))
                bins = _np.searchsorted(rraw, raw, side="left")
                w = None
                if w_self is not None:
                    w = w_self[qid]
                if w_other is not None:
                    w = w_other[idx] if w is None else w * w_other[idx]
                per_bin += _np.bincount(bins, weights=w, minlength=len(rs) + 1)
                per_row = max(len(idx), 1) / (end - start)
                rows = int(min(8 * rows, max(1, _COUNT_BLOCK_PAIRS / per_row)))
                start = end
            cum = _np.cumsum(per_bin[:len(rs)])
        cum = _np.where(below, cum, total)
        out = _np.empty(len(rs))
        out[order] = cum
        return out

    def sparse_distance_matrix(self, other, max_distance, p=2.0, output_type="dok_matrix"):
        """Distances between the points of this tree and other's, where at most max_distance:
        a dok_matrix (default), coo_matrix, dict {(i, j): d} or structured ndarray with fields
        i, j, v, in no particular order (as scipy's); pairs at distance 0 are kept (explicit
        zeros in the coo_matrix)."""
        if output_type not in ("dok_matrix", "coo_matrix", "dict", "ndarray"):
            raise ValueError("Invalid output type")
        self._same_kind(other, "sparse_distance_matrix")
        p = _check_p(p)
        r = float(max_distance)
        _check_radius(_np.asarray(r))
        if other is self and p == 2.0 and self._fits(r) and self._keep is None:
            # a tree against itself: the grid's all pairs, both ways, and the diagonal
            i, j, v = self._grid._pair_matrix(r)
        else:
            q, _, finite = other._queries(self.data)
            off, j, raw = other._rows_for_q(q, finite, _np.asarray(r), p, 1, True,
                                            raw_wanted=True)
            i = _np.repeat(_np.arange(self.n, dtype=_np.intp), _np.diff(off))
            v = _from_raw(raw, p)
        if output_type == "ndarray":
            res = _np.empty(len(v), dtype=_np.dtype([("i", _np.intp), ("j", _np.intp),
                                                      ("v", _np.float64)], align=True))
            res["i"], res["j"], res["v"] = i, j, v
            return res
        if output_type == "dict":
            return dict(zip(zip(i.tolist(), j.tolist()), v.tolist()))
        from scipy.sparse import coo_matrix
        coo = coo_matrix((v, (i, j)), shape=(self.n, other.n))
        return coo if output_type == "coo_matrix" else coo.todok()

    def __repr__(self):
        box = "" if self.boxsize is None else ", boxsize=%s" % self.boxsize.tolist()
        return "nearby.cKDTree(n=%d, m=%d%s)" % (self.n, self.m, box)


def _column_bounds(a):
    """(maxima, minima) of the columns of a non-empty (N, m) array, column by column: numpy's
    reductions along axis 0 of such an array are many times slower."""
    return (_np.array([a[:, d].max() for d in range(a.shape[1])]),
            _np.array([a[:, d].min() for d in range(a.shape[1])]))


def _finite_rows(a):
    """None when every value of the (N, m) array a is finite, else the boolean mask of its
    finite rows. One vectorised sum says so in the common case (a NaN or infinity makes it
    non-finite; an overflowing sum only sends it to the exact check)."""
    if a.size == 0 or _np.isfinite(_np.add.reduce(a, axis=None)):
        return None
    finite = _np.isfinite(a).all(axis=1)
    return None if finite.all() else finite


def _finite_weights(tree, w):
    if w is None or tree._keep is None:
        return w
    return w[tree._keep]


def _check_radius(r):
    """A radius (or radii) must be a number >= 0 (scipy answers a negative r as if it were
    |r|): ValueError otherwise."""
    if not _np.all(r >= 0.0):
        raise ValueError("r must be >= 0 and not NaN")


class KDTree(cKDTree):
    """KDTree(data, leafsize=10, compact_nodes=True, copy_data=False, balanced_tree=True,
    boxsize=None)

    scipy.spatial.KDTree's interface: cKDTree's, with a leafsize of 10, complex data refused
    (TypeError), the index of a single kNN answer a numpy integer, and ``tree`` made of
    KDTree.innernode / KDTree.leafnode objects.
    """

    _complex_error = True

    class node:
        """A kd-tree node as scipy's KDTree shows it (wrapping a cKDTreeNode)."""

        @staticmethod
        def _create(ckdtree_node=None):
            if ckdtree_node is None:
                return KDTree.node(ckdtree_node)
            if ckdtree_node.split_dim == -1:
                return KDTree.leafnode(ckdtree_node)
            return KDTree.innernode(ckdtree_node)

        def __init__(self, ckdtree_node=None):
            self._node = ckdtree_node

        def __lt__(self, other):
            return id(self) < id(other)

        def __gt__(self, other):
            return id(self) > id(other)

        def __le__(self, other):
            return id(self) <= id(other)

        def __ge__(self, other):
            return id(self) >= id(other)

        def __eq__(self, other):
            return id(self) == id(other)

        __hash__ = object.__hash__

        @property
        def children(self):
            return 0 if self._node is None else self._node.children

    class leafnode(node):
        @property
        def idx(self):
            return self._node.indices

    class innernode(node):
        def __init__(self, ckdtree_node):
            super().__init__(ckdtree_node)
            self.less = KDTree.node._create(ckdtree_node.lesser)
            self.greater = KDTree.node._create(ckdtree_node.greater)

        @property
        def split_dim(self):
            return self._node.split_dim

        @property
        def split(self):
            return self._node.split

    def __init__(self, data, leafsize=10, compact_nodes=True, copy_data=False,
                 balanced_tree=True, boxsize=None):
        super().__init__(data, leafsize, compact_nodes, copy_data, balanced_tree, boxsize)

    @property
    def tree(self):
        return KDTree.node._create(self._tree_state()[0])

    @staticmethod
    def _index_scalar(i):
        return _np.intp(i)

    def __repr__(self):
        return "nearby.KDTree(n=%d, m=%d)" % (self.n, self.m)


# scipy's names, for isinstance checks and pickles
cKDTree.__module__ = KDTree.__module__ = cKDTreeNode.__module__ = "nearby"
