# SPDX-License-Identifier: MIT
"""nearby: exact fixed-radius and k-nearest neighbour queries over numpy arrays.

``nearby.Grid`` is shaped like ``scipy.spatial.cKDTree``: the same method names, argument
names and return shapes where they overlap (``query_pairs``, ``query_ball_point``, ``query``),
plus ``count_pairs``, ``query_box`` and category/mask filters. ``nearby.Hash`` is a thin class
over the spatial hash: items stored by handle that move. ``nearby.cKDTree`` (and ``KDTree``)
take scipy's own arguments and answer every method of scipy's classes for 1D-3D data: switching
is ``from nearby import cKDTree``. See python/README.md.
"""
import numpy as _np

from ._nearby import ALL, _Grid, _Hash, _Quadtree, _Tiles, library_version
from ._kdtree import KDTree, cKDTree, cKDTreeNode

__all__ = ["Grid", "Hash", "Quadtree", "Tiles", "cKDTree", "KDTree", "cKDTreeNode", "ALL",
           "library_version"]
__version__ = library_version()


def _bits(values, name, n):
    """Per-point category or mask bits as a contiguous uint32 array of n entries, or None."""
    if values is None:
        return None
    arr = _np.asarray(values)
    if arr.ndim == 0:
        arr = _np.full(n, arr)
    if arr.dtype.kind not in "iub":
        raise TypeError("%s must be integers, got dtype %s" % (name, arr.dtype))
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError("%s must have one entry per point (%d), got shape %s"
                         % (name, n, arr.shape))
    if arr.size and (arr.min() < 0 or arr.max() > 0xFFFFFFFF):
        raise ValueError("%s must be in [0, 2**32)" % name)
    return _np.ascontiguousarray(arr, dtype=_np.uint32)


def _rows(points):
    """The number of rows of whatever the C side will be given (for the bit arrays)."""
    shape = _np.shape(points)
    return shape[0] if len(shape) >= 1 else 0


class Grid(_Grid):
    """A uniform grid over N points in 2D or 3D, for exact neighbour queries.

    Grid(points, *, radius=None, cell_size=None, boxsize=None, category=None, mask=None)

    Everything after the points is keyword-only (``Grid(x, 16)`` would read as cKDTree's
    leafsize; ``nearby.cKDTree`` takes cKDTree's own arguments).

    points: (N, 2) or (N, 3) array-like. A float64 array is read where it lies, whatever its
        row stride (x[:, :2] of a wider array, a column slice of a structured buffer); float32,
        integer, Fortran-ordered or byte-swapped arrays are converted to float64 once. Do not
        change the array afterwards: grids are built from it lazily (as cKDTree with
        copy_data=False).
    radius: the query radius to tune for. Given, one grid with cells of about this edge is built
        now and answers every query (exactly, at any radius). Omitted, grids are built on
        demand: a radius query at r builds (once) a grid with cells of about r, a kNN query one
        with about k points a cell; up to 8 are kept.
    cell_size: the cell edge, overriding the tuning (one grid, built now).
    boxsize: periodic boxes, as cKDTree's boxsize: a number L (every axis wraps with period L)
        or one per axis, where 0 (or None for all) means the axis does not wrap. Distances are
        then minimum-image distances, the points must lie in [0, L) on a periodic axis
        (ValueError otherwise), query points are wrapped into the box first, and a radius
        above L / 2 raises ValueError.
    category, mask: uint32 filter bits per point (Box2D's rule): query_pairs and count_pairs
        report (i, j) only when ``cat[i] & mask[j] and cat[j] & mask[i]``. Queries take the
        asker's own ``category=`` and ``mask=`` keywords.
    """

    def __init__(self, points, *, radius=None, cell_size=None, boxsize=None, category=None,
                 mask=None):
        n = _rows(points)
        period = _period(boxsize, points)
        super().__init__(points, radius, cell_size, _bits(category, "category", n),
                         _bits(mask, "mask", n), period)
        self.boxsize = None if period is None else _np.array(period)
        if period is not None:
            # Only a periodic grid pays for wrapping its query points (the plain one keeps the
            # C methods' fast calls): instance attributes shadow the methods.
            self._period = period
            self.query = self._query_wrapped
            self.query_ball_point = self._query_ball_point_wrapped

    def _wrap(self, x):
        """Query points moved into the periodic box, as cKDTree does: x mod L on each
        periodic axis (anything not shaped (..., m) goes to the C side as is, to be refused)."""
        try:
            arr = _np.array(x, dtype=_np.float64)
        except (TypeError, ValueError):
            return x  # strings, objects: the C side raises its usual TypeError
        if arr.ndim == 0 or arr.shape[-1] != self.m:
            return x
        for d, period in enumerate(self._period):
            if period > 0:
                col = _np.mod(arr[..., d], period)
                # A tiny negative x rounds to L; NaN and infinity stay NaN, refused in C.
                arr[..., d] = _np.where(col >= period, 0.0, col)
        return arr

    def _query_wrapped(self, x, *args, **kwargs):
        return _Grid.query(self, self._wrap(x), *args, **kwargs)

    def _query_ball_point_wrapped(self, x, *args, **kwargs):
        return _Grid.query_ball_point(self, self._wrap(x), *args, **kwargs)

    def query_pairs(self, r, p=2.0, eps=0, output_type="set", *, workers=1):
        """All pairs (i, j), i < j, with distance <= r, as cKDTree.query_pairs.

        output_type: 'set' (a set of tuples, the default as in scipy) or 'ndarray' (an (K, 2)
        intp array in a deterministic order, by cell). workers: threads for the search
        (-1 = every CPU); the order of the array does not depend on it.
        """
        _check_p_eps(p, eps)
        if output_type not in ("set", "ndarray"):
            raise ValueError("output_type must be 'set' or 'ndarray', got %r" % (output_type,))
        pairs = self._query_pairs(r, workers)
        if output_type == "ndarray":
            return pairs
        return set(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()))

    def neighbour_lists(self, r, *, distances=False, cell_order=False):
        """Every point's neighbours within r, in both directions, as compressed rows.

        Returns (offsets, neighbours): int32 arrays, point i's neighbours being
        neighbours[offsets[i]:offsets[i + 1]], ascending, never i itself (duplicates of a
        point are its neighbours). With distances=True, (offsets, neighbours, dist2), the
        squared distance of each entry. Category/mask filters apply as in query_pairs. The
        search runs without the GIL.

        With cell_order=True the rows come in the grid's cell order, the fast form (one pass
        over the cells, no sort), and an int32 `order` is appended to the tuple: row p is
        point order[p], and its entries are positions q, meaning points order[q] (ascending
        positions, never p). Gather your arrays by order (x[order]) and positions are indices
        into them, near in memory when near in space.
        """
        return self._neighbour_lists(r, bool(distances), bool(cell_order))

    def neighbour_matrix(self, r):
        """The neighbour lists within r as a scipy.sparse.csr_matrix of shape (n, n): entry
        (i, j) is the distance between points i and j (an explicit 0.0 for duplicates), for
        every pair within r in both directions, as cKDTree.sparse_distance_matrix(self, r)
        without the diagonal. Column indices are sorted."""
        from scipy.sparse import csr_matrix
        offsets, neighbours, dist2 = self._neighbour_lists(r, True)
        return csr_matrix((_np.sqrt(dist2), neighbours, offsets), shape=(self.n, self.n))

    def __repr__(self):
        box = "" if self.boxsize is None else ", boxsize=%s" % self.boxsize.tolist()
        return "nearby.Grid(n=%d, m=%d%s, cells=%s)" % (self.n, self.m, box, self.cell_sizes)


def _period(boxsize, points):
    """boxsize as the C side takes it: None, or a tuple of one float per axis (0 = no wrap)."""
    if boxsize is None:
        return None
    arr = _np.asarray(boxsize)
    if arr.dtype.kind not in "iuf":
        raise TypeError("boxsize must be a number or one number per axis, got dtype %s"
                        % arr.dtype)
    shape = _np.shape(points)
    dim = shape[1] if len(shape) == 2 else 0
    if arr.ndim == 0:
        arr = _np.full(dim, arr)
    if arr.ndim != 1 or len(arr) != dim:
        raise ValueError("boxsize must be a number or one per axis (%d), got shape %s"
                         % (dim, arr.shape))
    return tuple(float(v) for v in arr)


def _check_p_eps(p, eps):
    if p != 2:
        raise NotImplementedError("nearby measures Euclidean distance only: p must be 2")
    if not eps >= 0:
        raise ValueError("eps must be >= 0")


class Hash(_Hash):
    """The spatial hash: points that move, stored by handle, in an unbounded world.

    Hash(cell_size, dim=2, capacity=0)

    insert() returns a handle (an int); move(), remove(), get() take it; a removed or foreign
    handle raises ValueError. Queries return handles, or with return_user=True the user values
    given at insert. While query_pairs or count_pairs runs in one thread (they release the GIL),
    a mutation from another raises RuntimeError.
    """

    def __repr__(self):
        return "nearby.Hash(items=%d, dim=%d, cell_size=%g)" % (len(self), self.dim,
                                                                self.cell_size)


class Quadtree(_Quadtree):
    """A thin class over the quadtree of rectangles (``<nearby/quadtree.h>``).

    Quadtree(rects)

    rects: an (N, 4) array of minx, miny, maxx, maxy; rectangle i is named i in every result.
    Rectangles are closed (a shared edge or corner touches); zero width or height is fine;
    NaN, infinity or min > max raise ValueError with the library's message.
    """

    def query_window(self, window):
        """Indices (ascending intp array) of the rectangles touching the closed window
        (minx, miny, maxx, maxy)."""
        return _np.sort(self._query_window(tuple(float(v) for v in window)))

    def overlaps(self):
        """Every pair of touching rectangles: an (M, 2) intp array, i < j, rows sorted."""
        pairs = self._overlaps()
        return pairs[_np.lexsort((pairs[:, 1], pairs[:, 0]))]

    def ray_cast(self, origin, direction, max_distance=_np.inf):
        """(index, distance) of the first rectangle the ray hits, distance along the
        normalised direction (0 when the origin is inside one), or (-1, inf). Ties go to
        the library's lower handle slot (the lower index after a build)."""
        return self._ray_cast(tuple(float(v) for v in origin),
                              tuple(float(v) for v in direction), float(max_distance))

    def __len__(self):
        return self.n

    def __repr__(self):
        return "nearby.Quadtree(n=%d)" % self.n


class Tiles(_Tiles):
    """A thin class over the tile grid (``<nearby/tiles.h>``): a bounded world cut into tiles,
    entities by group that move, stored by handle, and static waypoints with ids.

    Tiles(origin, size, tiles=None, tile_size=None, groups=1, dim=2)

    origin, size: the world's low corner and extent on the two tiled axes (x, y in 2D; x, z in
    3D); a number means the same on both. Give ``tiles`` (tiles per axis) or ``tile_size``
    (tiles wins when both are given). Positions outside the world are fine: they live in the
    edge tiles, and every query stays exact. Positions have ``dim`` coordinates; distances are
    full 2D or 3D.

    insert(pos, user=None, *, category=1, mask=None) returns a handle (an int); move(),
    remove(), get() and neighbors() take it; a removed or foreign handle raises ValueError. An
    entity's group is its category bit (group g is ``1 << g``), its mask the groups it finds.
    Queries take the asker's ``category=`` and ``mask=`` (None: all bits): an entity matches when
    ``category & its mask and its category & mask``, so ``mask`` names the groups searched. An
    entity's user value is any Python object: query_radius(), neighbors() and knn() return these;
    knn() and knn_waypoints() return (value, distance) pairs, nearest first, within
    ``max_distance``.
    """

    def __repr__(self):
        return "nearby.Tiles(entities=%d, waypoints=%d, dim=%d)" % (len(self),
                                                                    self.waypoint_count, self.dim)
