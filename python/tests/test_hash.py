# SPDX-License-Identifier: MIT
"""nearby.Hash against brute force over random sequences of insert / move / remove, in 2D and
3D, with far-flung and negative coordinates and filter bits."""
import numpy as np
import pytest

import nearby


ALL = 0xFFFFFFFF


def brute_within(items, x, r):
    """Items within r that the unfiltered query sees: NB_FILTER_ALL against each item's bits,
    so an item whose mask is 0 matches nothing."""
    return {h for h, (p, _, c, m) in items.items()
            if ((np.array(p) - x) ** 2).sum() <= r * r and passes(c, m, ALL, ALL)}


def passes(item_cat, item_mask, cat, mask):
    return (item_cat & mask) != 0 and (cat & item_mask) != 0


@pytest.mark.parametrize("dim", [2, 3])
def test_hash_against_brute_force(dim, rng):
    h = nearby.Hash(1.5, dim=dim)
    items = {}  # handle -> (pos, user, category, mask)
    world = 40.0
    for step in range(1500):
        op = rng.random()
        if op < 0.45 or len(items) < 5:
            pos = tuple((rng.random(dim) - 0.5) * world)
            if rng.random() < 0.05:
                pos = tuple(np.array(pos) + 1e9)  # far away: the hash has no bounds
            cat = int(1 << rng.integers(0, 3))
            mask = int(rng.integers(0, 8))
            user = int(rng.integers(0, 2 ** 64, dtype=np.uint64))
            handle = h.insert(pos, user, category=cat, mask=mask)
            assert handle not in items
            items[handle] = (pos, user, cat, mask)
        elif op < 0.8:
            handle = list(items)[rng.integers(0, len(items))]
            pos = tuple(np.array(items[handle][0]) + rng.normal(size=dim) * 2.0)
            h.move(handle, pos)
            items[handle] = (pos,) + items[handle][1:]
        else:
            handle = list(items)[rng.integers(0, len(items))]
            h.remove(handle)
            del items[handle]
        if step % 50:
            continue
        h.validate()
        assert len(h) == len(items)
        for handle in list(items)[:5]:
            assert handle in h
            pos, user = h.get(handle)
            assert pos == pytest.approx(items[handle][0], rel=0, abs=0) and user == items[handle][1]
        x = (rng.random(dim) - 0.5) * world
        for r in (0.0, 1.0, 3.7):
            assert set(h.query_ball_point(x, r)) == brute_within(items, x, r)
            got = sorted(h.query_ball_point(x, r, return_user=True))
            assert got == sorted(items[k][1] for k in brute_within(items, x, r))
            want = {k for k in brute_within(items, x, r)
                    if passes(items[k][2], items[k][3], 0b011, 0b110)}
            assert set(h.query_ball_point(x, r, category=0b011, mask=0b110)) == want
        lo, hi = x - 3.0, x + 2.0
        assert set(h.query_box(lo, hi)) == {
            k for k, v in items.items() if (np.array(v[0]) >= lo).all() and
            (np.array(v[0]) <= hi).all() and passes(v[2], v[3], ALL, ALL)}
        d, got = h.query(x, k=4)
        dist = sorted(np.sqrt(((np.array(v[0]) - x) ** 2).sum()) for v in items.values()
                      if passes(v[2], v[3], ALL, ALL))
        np.testing.assert_allclose(d, dist[:4], rtol=1e-12)
        assert len(got) == min(4, len(dist))
        r = 2.0
        keys = list(items)
        p = np.array([items[k][0] for k in keys])
        c = np.array([items[k][2] for k in keys], dtype=np.int64)
        m = np.array([items[k][3] for k in keys], dtype=np.int64)
        d2 = ((p[:, None, :] - p[None, :, :]) ** 2).sum(axis=2)
        ok = (d2 <= r * r) & ((c[:, None] & m[None, :]) != 0) & ((c[None, :] & m[:, None]) != 0)
        a_idx, b_idx = np.nonzero(np.triu(ok, 1))
        want_pairs = {frozenset((keys[a], keys[b])) for a, b in zip(a_idx, b_idx)}
        pairs = h.query_pairs(r)
        assert pairs.dtype == np.uint64
        assert {frozenset(map(int, p)) for p in pairs} == want_pairs
        assert h.count_pairs(r) == len(want_pairs)
        some = keys[0]
        want_nb = {k for k in brute_within(items, np.array(items[some][0]), r) if k != some}
        assert set(h.neighbors(some, r)) == want_nb


def test_hash_bulk(rng):
    pts = rng.random((2000, 2)) * 50
    h = nearby.Hash(1.0, capacity=2000)
    handles = h.insert_many(pts)
    assert handles.dtype == np.uint64 and len(h) == 2000
    assert sorted(h.query_ball_point(pts[0], 0.0, return_user=True)) == [0]
    moved = pts + 0.3
    h.move_many(handles, moved)
    assert h.get(int(handles[7]))[0] == pytest.approx(tuple(moved[7]))
    # A bad row anywhere (a stale handle, a NaN) moves none of the rows.
    gone = h.insert((1.0, 1.0))
    h.remove(gone)
    for bad_handles, bad_points in (
        (np.append(handles[:5], np.uint64(gone)), np.vstack([pts[:5], [[2.0, 2.0]]])),
        (handles[:6], np.vstack([pts[:5], [[np.nan, 2.0]]])),
    ):
        with pytest.raises(ValueError):
            h.move_many(bad_handles, bad_points)
        assert h.get(int(handles[0]))[0] == pytest.approx(tuple(moved[0]))
    users = np.arange(2000, dtype=np.uint64) * 3
    h2 = nearby.Hash(1.0)
    h2.insert_many(pts, users)
    assert h2.query(pts[5], k=1, return_user=True)[1] == [15]
    h.clear()
    assert len(h) == 0 and int(handles[0]) not in h
    assert h.memory_bytes() > 0 and h.cell_size >= 1.0 and h.dim == 2
    assert "nearby.Hash" in repr(h)
