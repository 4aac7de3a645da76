"""RowIdIndex: row id -> row address over live rows, against a plain dict."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from pyroaring import BitMap

from lancefmt.errors import CorruptFileError
from lancefmt.table.deletion import DeletionVector
from lancefmt.table.rowids import (
    MISSING_ADDRESS,
    RowIdIndex,
    RowIdSequence,
    encode_row_ids,
    row_address,
    split_addresses,
)


@st.composite
def datasets(draw):
    """Fragments with disjoint row ids in all shapes, plus deletions."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    universe = rng.permutation(5000).astype(np.uint64) * np.uint64(draw(st.sampled_from([1, 7])))
    frags, pos = [], 0
    for fid in range(draw(st.integers(0, 5))):
        n = draw(st.integers(0, 600))
        style = draw(st.sampled_from(["range", "sorted", "unsorted", "holes"]))
        if style == "range":
            start = 100_000 * (fid + 1)
            ids = np.arange(start, start + n, dtype=np.uint64)
        else:
            ids = universe[pos:pos + n].copy()
            pos += n
            if style == "sorted":
                ids.sort()
            elif style == "holes":
                ids = np.delete(np.arange(10**7 * (fid + 1), 10**7 * (fid + 1) + n + 10,
                                          dtype=np.uint64), [1, 3, 4, 8, 9])[:n]
        deleted = rng.choice(max(ids.size, 1), size=min(ids.size, draw(st.integers(0, 50))),
                             replace=False) if ids.size else np.empty(0, np.int64)
        form = draw(st.sampled_from(["dv", "bitmap", "offsets", "mask", "none"]))
        if form == "none":
            deleted = np.empty(0, np.int64)
            dels = None
        elif form == "dv":
            dels = DeletionVector.from_offsets(deleted)
        elif form == "bitmap":
            dels = BitMap(deleted.tolist())
        elif form == "offsets":
            dels = deleted
        else:
            dels = np.ones(ids.size, dtype=bool)
            dels[deleted] = False
        source = draw(st.sampled_from(["bytes", "seq", "array"]))
        if source == "bytes":
            row_ids = encode_row_ids(ids)
        elif source == "seq":
            row_ids = RowIdSequence.from_array(ids)
        else:
            row_ids = ids
        frags.append((fid * 3 + 1, row_ids, dels, ids, set(int(d) for d in deleted)))
    return frags


@settings(max_examples=150, deadline=None)
@given(datasets(), st.data())
def test_lookup_matches_dict(frags, data):
    expected = {}
    for fid, _, _, ids, deleted in frags:
        for off, rid in enumerate(ids.tolist()):
            if off not in deleted:
                expected[rid] = (fid << 32) | off
    index = RowIdIndex.build([(f[0], f[1], f[2]) for f in frags])
    assert len(index) == len(expected)
    all_ids = [rid for f in frags for rid in f[3].tolist()]
    probes = all_ids + data.draw(st.lists(st.integers(0, 2**64 - 1), max_size=30))
    got = index.lookup(np.array(probes, dtype=np.uint64))
    want = [expected.get(p, int(MISSING_ADDRESS)) for p in probes]
    assert got.tolist() == want
    assert index.contains(np.array(probes, dtype=np.uint64)).tolist() == [p in expected for p in probes]


def test_ranges_are_single_runs():
    index = RowIdIndex.build([(0, encode_row_ids(np.arange(1_000_000, dtype=np.uint64))),
                              (1, RowIdSequence.from_range(1_000_000, 1_500_000))])
    assert index.run_ids.size == 2 and index.single_ids.size == 0
    addrs = index.lookup([0, 999_999, 1_000_000, 1_499_999, 1_500_000])
    assert addrs.tolist() == [0, 999_999, 1 << 32, (1 << 32) | 499_999, int(MISSING_ADDRESS)]
    frag, off = split_addresses(addrs[:4])
    assert frag.tolist() == [0, 0, 1, 1] and off.tolist() == [0, 999_999, 0, 499_999]
    assert row_address(3, 7) == (3 << 32) | 7


def test_deleted_rows_do_not_resolve_and_moved_rows_do():
    # Update with stable row ids: rows 3, 4 of fragment 0 move to fragment 1 (same ids).
    index = RowIdIndex.build([
        (0, RowIdSequence.from_range(0, 10), DeletionVector.from_offsets([3, 4])),
        (1, RowIdSequence.from_array(np.array([3, 4], dtype=np.uint64))),
    ])
    assert index.lookup([2, 3, 4, 5]).tolist() == [2, 1 << 32, (1 << 32) | 1, 5]


def test_live_duplicates_are_corrupt():
    with pytest.raises(CorruptFileError, match="row id 3"):
        RowIdIndex.build([(0, RowIdSequence.from_range(0, 10)),
                          (1, RowIdSequence.from_array(np.array([3], dtype=np.uint64)))],
                         path="_versions/5.manifest")
    with pytest.raises(CorruptFileError):
        RowIdIndex.build([(0, RowIdSequence.from_range(0, 10)),
                          (1, RowIdSequence.from_range(5, 12))])
    with pytest.raises(CorruptFileError):
        RowIdIndex.build([(0, np.array([7, 9], dtype=np.uint64)),
                          (1, np.array([9], dtype=np.uint64))])


def test_empty_index():
    index = RowIdIndex.build([])
    assert len(index) == 0
    assert index.lookup([0, 1]).tolist() == [int(MISSING_ADDRESS)] * 2
    assert index.lookup(np.empty(0, np.uint64)).size == 0
