# SPDX-License-Identifier: MIT
"""nearby.Tiles against brute force: entities of 2 groups (some with masks of their own)
inserted, moved and removed, inside and outside the world; radius queries and neighbours by
filter, knn with max_distance, waypoints; and bad input."""
import math
import sys

import numpy as np
import pytest

import nearby

ALL = 0xFFFFFFFF


def d2(a, b):
    return sum((float(x) - float(y)) ** 2 for x, y in zip(a, b))


def passes(cat, mask, fcat, fmask):
    """nearby.h's filter rule between an entity (cat, mask) and a query (fcat, fmask)."""
    return bool(cat & fmask) and bool(fcat & mask)


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
    ents = {}  # handle -> (pos, category, mask, user)
    for step in range(1200):
        op = rng.random()
        if op < 0.45 or len(ents) < 5:
            pos = random_pos(rng, dim, world)
            cat = 1 << int(rng.integers(0, 2))
            mask = ALL if rng.random() < 0.7 else int(rng.integers(0, 4))
            user = ("unit", step)
            handle = t.insert(pos, user, category=cat, mask=mask)
            assert handle not in ents
            ents[handle] = (pos, cat, mask, user)
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
            pos, user, cat, mask = t.get(handle)
            assert (pos, cat, mask) == ents[handle][:3] and user is ents[handle][3]
        for _ in range(3):
            x = random_pos(rng, dim, world)
            for fcat, fmask in ((None, None), (ALL, 0b01), (ALL, 0b10), (1, ALL), (2, 0b11),
                                (ALL, 0)):
                kw = {} if fcat is None else {"category": fcat, "mask": fmask}
                fc, fm = (ALL, ALL) if fcat is None else (fcat, fmask)
                ok = {h: e for h, e in ents.items() if passes(e[1], e[2], fc, fm)}
                for r in (0.0, 3.0, 11.5):
                    want = sorted(e[3][1] for e in ok.values() if d2(e[0], x) <= r * r)
                    got = sorted(u[1] for u in t.query_radius(x, r, **kw))
                    assert got == want
                    asker = list(ents)[rng.integers(0, len(ents))]
                    at = ents[asker][0]
                    want = sorted(e[3][1] for h, e in ok.items()
                                  if h != asker and d2(e[0], at) <= r * r)
                    assert sorted(u[1] for u in t.neighbors(asker, r, **kw)) == want
                # knn with and without a limit: distances in order, values among the ties
                for limit in (math.inf, 5.0):
                    cand = sorted(d2(e[0], x) for e in ok.values()
                                  if d2(e[0], x) <= limit * limit)
                    got = t.knn(x, 4, max_distance=limit, **kw)
                    assert len(got) == min(4, len(cand))
                    for (user, dist), c in zip(got, cand):
                        assert dist == pytest.approx(math.sqrt(c), rel=1e-12, abs=0)
                        assert any(e[3] is user and d2(e[0], x) == c for e in ok.values())


def test_nearest_other_recipe():
    t = nearby.Tiles((0, 0), (10, 10), tiles=(2, 2), groups=2)
    me = t.insert((1.0, 1.0), "me")
    t.insert((9.0, 9.0), "enemy", category=2)
    assert t.knn((1.0, 1.0)) == [("me", 0.0)]
    (u0, _), (user, dist) = t.knn((1.0, 1.0), 2)  # k = 2, then skip the asker
    assert u0 == "me" and user == "enemy" and dist == pytest.approx(math.hypot(8, 8))
    assert t.knn((1.0, 1.0), 2, mask=1) == [("me", 0.0)]
    assert t.knn((1.0, 1.0), 2, max_distance=5.0) == [("me", 0.0)]
    assert t.neighbors(me, 20.0) == ["enemy"]
    assert t.neighbors(me, 20.0, mask=1) == []


def test_mask_zero_entities_are_freed():
    t = nearby.Tiles((0, 0), (10, 10), tile_size=1.0)
    obj = object()
    base = sys.getrefcount(obj)
    h = t.insert((5, 5), obj, mask=0)  # matches nothing, but the grid owns it
    assert t.query_radius((5, 5), 1.0) == [] and len(t) == 1
    assert sys.getrefcount(obj) == base + 1
    t.remove(h)
    assert sys.getrefcount(obj) == base
    t.insert((5, 5), obj, mask=0)
    del t
    assert sys.getrefcount(obj) == base


@pytest.mark.parametrize("dim", [2, 3])
def test_waypoints_against_brute_force(dim, rng):
    world = 40.0
    t = nearby.Tiles((-world / 2, -world / 2), world, tiles=8, dim=dim)
    assert t.knn_waypoints((0.0,) * dim) == []
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
        (wid, dist), = t.knn_waypoints(x)
        best = dist2.min()
        assert dist == pytest.approx(math.sqrt(best), rel=1e-12, abs=0)
        assert wid in [allid[i] for i in np.nonzero(dist2 == best)[0]]
        near = t.knn_waypoints(x, 5, max_distance=6.0)
        assert len(near) == min(5, int((dist2 <= 36.0).sum()))
    t.validate()


def test_user_objects_are_owned():
    t = nearby.Tiles((0, 0), (10, 10), tile_size=1.0)
    obj = object()
    base = sys.getrefcount(obj)
    h = t.insert((5, 5), obj)
    assert sys.getrefcount(obj) == base + 1
    assert t.query_radius((5, 5), 1.0) == [obj]
    t.remove(h)
    assert sys.getrefcount(obj) == base
    t.insert((5, 5), obj)
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
    h = t.insert((1, 1), "a", category=2)
    with pytest.raises(ValueError, match="NOT_FINITE"):
        t.insert((math.nan, 1))
    with pytest.raises(ValueError, match="NOT_FINITE"):
        t.move(h, (1, math.inf))
    for bad in (4, 3, 0):  # past the 2 groups, two bits, none
        with pytest.raises(ValueError, match="OUT_OF_RANGE"):
            t.insert((1, 1), category=bad)
    with pytest.raises(ValueError, match="NOT_FINITE"):
        t.query_radius((math.nan, 0), 1.0)
    with pytest.raises(ValueError, match="OUT_OF_RANGE"):
        t.query_radius((0, 0), -1.0)
    with pytest.raises(ValueError, match="NOT_FINITE"):
        t.knn((0, math.nan))
    with pytest.raises(ValueError, match="OUT_OF_RANGE"):
        t.knn((0, 0), max_distance=-1.0)
    with pytest.raises(ValueError, match="OUT_OF_RANGE"):
        t.knn((0, 0), -1)
    with pytest.raises(ValueError):
        t.query_radius((0, 0), 1.0, mask=-1)
    with pytest.raises(TypeError):
        t.query_radius((0, 0), 1.0, mask="all")
    with pytest.raises(ValueError, match="shape"):
        t.insert((1, 1, 1))
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
    foreign = other.insert((1, 1))
    with pytest.raises(ValueError, match="BAD_HANDLE"):
        t.move(foreign, (1, 1))
    with pytest.raises(ValueError, match="BAD_HANDLE"):
        t.neighbors(foreign, 1.0)
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
                t.insert((i % 100, i // 100), i)
        with pytest.raises(MemoryError):
            t.add_waypoints(np.zeros((1000, 2)))
    finally:
        _nearby._set_alloc_budget(-1)
    t.validate()
    assert t.waypoint_count == 0
