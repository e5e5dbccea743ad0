# SPDX-License-Identifier: MIT
"""nearby.Tiles against brute force: entities of 2 groups inserted, moved and removed, inside
and outside the world; radius queries by group mask, nearest with exclude and max_distance,
waypoints; and bad input."""
import math
import sys

import numpy as np
import pytest

import nearby


def d2(a, b):
    return sum((float(x) - float(y)) ** 2 for x, y in zip(a, b))


def random_pos(rng, dim, world):
    """Mostly inside [0, world)^2 on the tiled axes, about 1 in 10 well outside."""
    p = rng.random(dim) * world
    if rng.random() < 0.1:
        p = p + (rng.random(dim) - 0.5) * world * 6
    return tuple(float(v) for v in p)


@pytest.mark.parametrize("dim", [2, 3])
def test_tiles_against_brute_force(dim, rng):
    world = 50.0
    t = nearby.Tiles((0.0, 0.0), (world, world), tile_size=(4.0, 6.0), groups=2, dim=dim)
    ents = {}  # handle -> (pos, group, user)
    for step in range(1200):
        op = rng.random()
        if op < 0.45 or len(ents) < 5:
            pos = random_pos(rng, dim, world)
            group = int(rng.integers(0, 2))
            user = ("unit", step)
            handle = t.insert(pos, group, user)
            assert handle not in ents
            ents[handle] = (pos, group, user)
        elif op < 0.85:
            handle = list(ents)[rng.integers(0, len(ents))]
            pos = random_pos(rng, dim, world)
            t.move(handle, pos)
            ents[handle] = (pos,) + ents[handle][1:]
        else:
            handle = list(ents)[rng.integers(0, len(ents))]
            t.remove(handle)
            del ents[handle]
            assert handle not in t
        if step % 40:
            continue
        t.validate()
        assert len(t) == len(ents)
        for handle in list(ents)[:3]:
            pos, group, user = t.get(handle)
            assert pos == ents[handle][0] and group == ents[handle][1] and user is ents[handle][2]
        for _ in range(3):
            x = random_pos(rng, dim, world)
            for mask in (None, 0b01, 0b10, 0b11, 0):
                bits = 0b11 if mask is None else mask
                for r in (0.0, 3.0, 11.5):
                    want = sorted(u[1] for p, g, u in ents.values()
                                  if (bits >> g) & 1 and d2(p, x) <= r * r)
                    got = sorted(u[1] for u in t.query_radius(x, r, groups=mask))
                    assert got == want
                # nearest, excluding one entity (the asker), with and without a limit
                exclude = list(ents)[rng.integers(0, len(ents))]
                for limit in (math.inf, 5.0):
                    cand = [(d2(p, x), u) for h, (p, g, u) in ents.items()
                            if (bits >> g) & 1 and h != exclude and d2(p, x) <= limit * limit]
                    user, dist = t.nearest(x, groups=mask, exclude=exclude, max_distance=limit)
                    if not cand:
                        assert (user, dist) == (None, math.inf)
                    else:
                        best = min(c[0] for c in cand)
                        assert dist == pytest.approx(math.sqrt(best), rel=1e-12, abs=0)
                        assert user in [c[1] for c in cand if c[0] == best]


def test_exclude_is_honoured():
    t = nearby.Tiles((0, 0), (10, 10), tiles=(2, 2), groups=2)
    me = t.insert((1.0, 1.0), 0, "me")
    t.insert((9.0, 9.0), 1, "enemy")
    assert t.nearest((1.0, 1.0)) == ("me", 0.0)
    user, dist = t.nearest((1.0, 1.0), exclude=me)
    assert user == "enemy" and dist == pytest.approx(math.hypot(8, 8))
    assert t.nearest((1.0, 1.0), groups=1 << 0, exclude=me) == (None, math.inf)
    assert t.nearest((1.0, 1.0), exclude=me, max_distance=5.0) == (None, math.inf)


@pytest.mark.parametrize("dim", [2, 3])
def test_waypoints_against_brute_force(dim, rng):
    world = 40.0
    t = nearby.Tiles((-world / 2, -world / 2), world, tiles=8, dim=dim)
    assert t.nearest_waypoint((0.0,) * dim) == (None, math.inf)
    pts = (rng.random((300, dim)) - 0.5) * world
    pts[:20] *= 5  # outside the world
    t.add_waypoints(pts)  # ids 0 .. 299
    ids = np.arange(1000, 1100, dtype=np.uint64) * 3
    more = (rng.random((100, dim)) - 0.5) * world
    t.add_waypoints(more, ids)
    allp = np.vstack([pts, more])
    allid = list(range(300)) + [int(i) for i in ids]
    assert t.waypoint_count == 400
    for _ in range(40):
        x = tuple((rng.random(dim) - 0.5) * world * 2)
        dist2 = ((allp - np.array(x)) ** 2).sum(axis=1)
        for r in (0.0, 2.5, 9.0):
            assert sorted(t.waypoints_within(x, r)) == sorted(
                allid[i] for i in np.nonzero(dist2 <= r * r)[0])
        wid, dist = t.nearest_waypoint(x)
        best = dist2.min()
        assert dist == pytest.approx(math.sqrt(best), rel=1e-12, abs=0)
        assert wid in [allid[i] for i in np.nonzero(dist2 == best)[0]]
    t.validate()


def test_user_objects_are_owned():
    t = nearby.Tiles((0, 0), (10, 10), tile_size=1.0)
    obj = object()
    base = sys.getrefcount(obj)
    h = t.insert((5, 5), 0, obj)
    assert sys.getrefcount(obj) == base + 1
    assert t.query_radius((5, 5), 1.0) == [obj]
    t.remove(h)
    assert sys.getrefcount(obj) == base
    t.insert((5, 5), 0, obj)
    del t
    assert sys.getrefcount(obj) == base


def test_bad_tiles_input():
    with pytest.raises(ValueError, match="NOT_FINITE"):
        nearby.Tiles((0, math.nan), (10, 10), tiles=2)
    with pytest.raises(ValueError, match="OUT_OF_RANGE"):
        nearby.Tiles((0, 0), (-1, 10), tiles=2)
    with pytest.raises(ValueError):
        nearby.Tiles((0, 0), (10, 10))  # neither tiles nor tile_size
    with pytest.raises(ValueError):
        nearby.Tiles((0, 0), (10, 10), tiles=2, groups=33)
    with pytest.raises(ValueError):
        nearby.Tiles((0, 0), (10, 10), tiles=2, dim=4)
    t = nearby.Tiles((0, 0), (10, 10), tiles=(3, 2), groups=2)
    h = t.insert((1, 1), 1, "a")
    with pytest.raises(ValueError, match="NOT_FINITE"):
        t.insert((math.nan, 1), 0)
    with pytest.raises(ValueError, match="NOT_FINITE"):
        t.move(h, (1, math.inf))
    with pytest.raises(ValueError, match="OUT_OF_RANGE"):
        t.insert((1, 1), 2)  # only groups 0 and 1
    with pytest.raises(ValueError, match="NOT_FINITE"):
        t.query_radius((math.nan, 0), 1.0)
    with pytest.raises(ValueError, match="OUT_OF_RANGE"):
        t.query_radius((0, 0), -1.0)
    with pytest.raises(ValueError, match="NOT_FINITE"):
        t.nearest((0, math.nan))
    with pytest.raises(ValueError, match="OUT_OF_RANGE"):
        t.nearest((0, 0), max_distance=-1.0)
    with pytest.raises(ValueError):
        t.query_radius((0, 0), 1.0, groups=-1)
    with pytest.raises(TypeError):
        t.query_radius((0, 0), 1.0, groups="all")
    with pytest.raises(ValueError, match="shape"):
        t.insert((1, 1, 1), 0)
    with pytest.raises(ValueError, match="NOT_FINITE"):
        t.add_waypoints([[0, 0], [math.nan, 0]])
    assert t.waypoint_count == 0  # all or nothing
    with pytest.raises(ValueError):
        t.add_waypoints([[0, 0]], ids=[1, 2])
    # bad, stale and foreign handles
    with pytest.raises(ValueError, match="BAD_HANDLE"):
        t.remove(12345)
    with pytest.raises(ValueError, match="BAD_HANDLE"):
        t.move(-1, (0, 0))
    with pytest.raises(TypeError):
        t.remove("h")
    t.remove(h)
    with pytest.raises(ValueError, match="BAD_HANDLE"):
        t.remove(h)
    with pytest.raises(ValueError, match="BAD_HANDLE"):
        t.get(h)
    other = nearby.Tiles((0, 0), (10, 10), tiles=2)
    foreign = other.insert((1, 1), 0)
    with pytest.raises(ValueError, match="BAD_HANDLE"):
        t.move(foreign, (1, 1))
    with pytest.raises(ValueError, match="BAD_HANDLE"):
        t.nearest((0, 0), exclude=foreign)
    # still usable, nothing changed
    assert len(t) == 0
    t.validate()
    assert "Tiles" in repr(t)


def test_out_of_memory_is_memory_error():
    from nearby import _nearby
    t = nearby.Tiles((0, 0), (100, 100), tiles=50)
    _nearby._set_alloc_budget(0)
    try:
        with pytest.raises(MemoryError):
            for i in range(10000):
                t.insert((i % 100, i // 100), 0, i)
        with pytest.raises(MemoryError):
            t.add_waypoints(np.zeros((1000, 2)))
    finally:
        _nearby._set_alloc_budget(-1)
    t.validate()
    assert t.waypoint_count == 0
