# SPDX-License-Identifier: MIT
"""The big blocks behind query_pairs' arrays: the extension keeps freed blocks of 1 MiB or more
for reuse (up to 8, and 512 MiB of what was written in them), and gives back the blocks freed
longest ago to keep a new one, so that blocks no request fits any more never hold every slot;
the pair block's budget counts the rows written, not the rows reserved (64 a point); the pairs
written into a reused block are exactly the new ones."""
import numpy as np
import pytest
from scipy.spatial import cKDTree

import nearby
from nearby import _nearby
from corpus import make

MIB = 1 << 20


def radius(x, k=10):
    """The median distance to the k-th nearest: about k neighbours a point."""
    return float(np.median(cKDTree(x).query(x, k=k + 1)[0][:, k]))


def sorted_pairs(p):
    p = np.sort(np.asarray(p, dtype=np.int64).reshape(-1, 2), axis=1)
    return p[np.lexsort((p[:, 1], p[:, 0]))]


def fill_with_stale():
    """Leaves the cache holding eight blocks of 1 MiB and a little (no request below fits one):
    first a block of the whole budget (address space only) displaces whatever earlier tests
    left, then the eight displace it."""
    assert _nearby._big_blocks([512 * MIB]) == [512 * MIB]
    stale = [MIB + k * 4096 for k in range(8)]
    assert _nearby._big_blocks(stale) == stale  # every slot taken
    return stale


def test_cache_gives_back_its_oldest_blocks():
    stale = fill_with_stale()
    # a ninth block takes the slot of the first freed
    assert _nearby._big_blocks([MIB + 8 * 4096]) == stale[1:] + [MIB + 8 * 4096]
    # at most 512 MiB kept: a second 300 MiB block (address space only) displaces the first,
    # and the stale ones with it
    assert _nearby._big_blocks([300 * MIB, 300 * MIB]) == [300 * MIB]
    assert _nearby._big_blocks([600 * MIB]) == [300 * MIB]  # beyond the whole budget: freed
    _nearby._big_blocks([MIB] * 8)  # the 300 MiB block given back
    # the budget counts the bytes written: a 600 MiB block written in 1 MiB of it is kept
    fill_with_stale()
    assert _nearby._big_blocks([(600 * MIB, MIB)]) == stale[1:] + [600 * MIB]
    assert _nearby._big_blocks([(700 * MIB, 511 * MIB)]) == [600 * MIB, 700 * MIB]
    _nearby._big_blocks([MIB] * 8)


@pytest.mark.parametrize("name", ["dups2d", "uniform3d"])
def test_pair_block_kept_past_stale_blocks(name):
    """Eight stale blocks fill the cache (as other data sets' grids leave it); query_pairs' block
    (64 pairs a point reserved: 5 MB at 5000 points) is still kept when its array is freed, and
    the next call writes into it exactly its own pairs (fewer than the last call's)."""
    x = make(name, 5000)
    r = radius(x)
    reserved = (64 * len(x) + 4096) * 16
    fill_with_stale()
    big = nearby.Grid(x).query_pairs(2.0 * r, output_type="ndarray")
    np.testing.assert_array_equal(
        sorted_pairs(big), sorted_pairs(cKDTree(x).query_pairs(2.0 * r, output_type="ndarray")))
    del big
    assert reserved in _nearby._big_blocks([])
    got = nearby.Grid(x).query_pairs(r, output_type="ndarray")  # into the block just kept
    want = cKDTree(x).query_pairs(r, output_type="ndarray")
    assert got.dtype == np.intp and got.shape == want.shape
    np.testing.assert_array_equal(sorted_pairs(got), sorted_pairs(want))
    assert reserved not in _nearby._big_blocks([])  # the array holds it
    # the other outputs built from the same block: the set, and the distance matrix's entries
    t = nearby.cKDTree(x)
    assert t.query_pairs(r) == cKDTree(x).query_pairs(r)
    m = t.sparse_distance_matrix(t, r, output_type="ndarray")
    s = cKDTree(x).sparse_distance_matrix(cKDTree(x), r, output_type="ndarray")
    assert len(m) == len(s)
    del got
    assert reserved in _nearby._big_blocks([])


def test_pair_block_counts_its_rows():
    """A pair block is reserved for 64 rows a point and counted by the rows written: beside a
    block holding 511 of the 512 MiB, query_pairs' 5 MB block with under 1 MiB of rows is kept
    and the other stays (counted by its reservation, the other would be given back)."""
    x = make("uniform2d", 5000)
    r = radius(x)
    reserved = (64 * len(x) + 4096) * 16
    assert _nearby._big_blocks([512 * MIB, (600 * MIB, 511 * MIB)]) == [600 * MIB]
    got = nearby.Grid(x).query_pairs(r, output_type="ndarray")
    assert 0 < len(got) * 16 < MIB
    np.testing.assert_array_equal(
        sorted_pairs(got), sorted_pairs(cKDTree(x).query_pairs(r, output_type="ndarray")))
    del got
    assert _nearby._big_blocks([]) == [reserved, 600 * MIB]
    # the set and the distance matrix give their block back the same way
    t = nearby.cKDTree(x)
    assert len(t.query_pairs(r)) > 0
    t.sparse_distance_matrix(t, r, output_type="ndarray")
    assert _nearby._big_blocks([]) == [reserved, 600 * MIB]
    _nearby._big_blocks([MIB] * 8)


def test_empty_and_periodic_pairs_after_reuse():
    """A reused block with nothing to write gives an empty (0, 2) array; periodic pairs across
    the boundary come out whole from a reused block."""
    x = make("uniform2d", 5000)
    r = radius(x)
    fill_with_stale()
    nearby.Grid(x).query_pairs(2.0 * r, output_type="ndarray")  # leaves its block in the cache
    none = nearby.Grid(x).query_pairs(0.0, output_type="ndarray")
    assert none.shape == (0, 2) and none.dtype == np.intp
    box = float(np.ceil(x.max())) + 1.0
    got = nearby.cKDTree(x, boxsize=box).query_pairs(r, output_type="ndarray")
    want = cKDTree(x, boxsize=box).query_pairs(r, output_type="ndarray")
    np.testing.assert_array_equal(sorted_pairs(got), sorted_pairs(want))
