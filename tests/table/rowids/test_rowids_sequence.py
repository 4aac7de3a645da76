"""RowIdSequence helpers the scan/delete/compaction layers use: select, filter, slice, mask,
rechunk."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lancefmt.errors import InvalidArgumentError
from lancefmt.table.deletion import DeletionVector
from lancefmt.table.rowids import (
    EncodedU64Array,
    RowIdSequence,
    SegmentKind,
    U64Segment,
    rechunk_sequences,
)


def _mixed():
    return RowIdSequence.from_arrays([
        np.arange(0, 100, dtype=np.uint64),
        np.array([500, 300, 400], dtype=np.uint64),
        np.delete(np.arange(1000, 1200, dtype=np.uint64), [5, 50]),
        np.arange(2000, 2400, 3, dtype=np.uint64),
        np.arange(5000, 5010, dtype=np.uint64),
    ])


@st.composite
def sequences(draw):
    pieces = []
    base = 0
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["range", "holes", "bitmap", "sparse", "unsorted"]))
        n = draw(st.integers(1, 300))
        if kind == "range":
            v = np.arange(base, base + n)
        elif kind == "holes":
            v = np.delete(np.arange(base, base + n + 3), [1, n // 2 + 1])
        elif kind == "bitmap":
            v = np.arange(base, base + 2 * n, 2)
        elif kind == "sparse":
            v = np.arange(base, base + 1000 * n, 1000)
        else:
            v = np.arange(base, base + n)[::-1]
        pieces.append(v.astype(np.uint64))
        base = int(v.max()) + draw(st.integers(0, 3)) + 1
    return RowIdSequence.from_arrays(pieces)


@settings(max_examples=150, deadline=None)
@given(sequences(), st.data())
def test_select_filter_slice_match_numpy(seq, data):
    values = seq.to_numpy()
    n = values.size
    assert len(seq) == n
    idx = np.array(data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=50)) if n else [],
                   dtype=np.int64)
    np.testing.assert_array_equal(seq.select(idx), values[idx])
    np.testing.assert_array_equal(seq.select(idx.astype(np.uint32)), values[idx])
    live = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    np.testing.assert_array_equal(seq.filter(live), values[live])
    if n:
        off = data.draw(st.integers(0, n - 1))
        ln = data.draw(st.integers(0, n - off))
        np.testing.assert_array_equal(seq.slice(off, ln), values[off:off + ln])


def test_select_on_ranges_does_not_decode():
    seq = RowIdSequence.from_arrays([np.arange(10, 20, dtype=np.uint64),
                                     np.arange(100, 200, dtype=np.uint64)])
    assert all(s.kind == SegmentKind.RANGE for s in seq.segments)
    np.testing.assert_array_equal(seq.select([0, 9, 10, 109]), [10, 19, 100, 199])


def test_live_row_ids_from_deletion_vector():
    seq = _mixed()
    dv = DeletionVector.from_offsets([0, 5, 100, 101, len(seq) - 1])
    kept = dv.kept_indices(len(seq))
    np.testing.assert_array_equal(seq.select(kept), seq.to_numpy()[dv.live_mask(len(seq))])


def test_bad_selections():
    seq = RowIdSequence.from_range(0, 10)
    with pytest.raises(InvalidArgumentError):
        seq.select([10])
    with pytest.raises(InvalidArgumentError):
        seq.select([-1])
    with pytest.raises(InvalidArgumentError):
        seq.filter(np.ones(9, dtype=bool))
    with pytest.raises(InvalidArgumentError):
        seq.slice(5, 6)
    with pytest.raises(InvalidArgumentError):
        seq.select(np.array([0.5]))


@settings(max_examples=150, deadline=None)
@given(sequences(), st.data())
def test_mask_drops_positions(seq, data):
    values = seq.to_numpy()
    n = values.size
    positions = sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n)) if n else [])
    masked = seq.mask(positions)
    keep = np.ones(n, dtype=bool)
    keep[positions] = False
    np.testing.assert_array_equal(masked.to_numpy(), values[keep])
    assert all(len(s) for s in masked.segments) or not positions
    # Segments without deleted rows keep their exact shape.
    offset = 0
    untouched = []
    for s in seq.segments:
        if not any(offset <= p < offset + len(s) for p in positions):
            untouched.append(s)
        offset += len(s)
    for s in untouched:
        assert any(s.same_shape(m) for m in masked.segments)


def test_mask_keeps_array_kind():
    seq = RowIdSequence.from_array(np.array([9, 1, 2, 3, 4], dtype=np.uint64))
    assert seq.segments[0].kind == SegmentKind.ARRAY
    masked = seq.mask([0])
    assert masked.segments[0].kind == SegmentKind.ARRAY  # sorted now, still an Array
    np.testing.assert_array_equal(masked.to_numpy(), [1, 2, 3, 4])
    # Sorted shapes are re-shaped by the rule: deleting the middle of a range -> holes/bitmap.
    r = RowIdSequence.from_range(0, 100).mask([50])
    assert r.segments[0].kind == SegmentKind.RANGE_WITH_HOLES
    assert RowIdSequence.from_range(0, 3).mask([0, 1, 2]).segments == ()


@settings(max_examples=150, deadline=None)
@given(st.lists(sequences(), max_size=4), st.data())
def test_rechunk(seqs, data):
    total = sum(len(s) for s in seqs)
    sizes = []
    left = total
    while left:
        k = data.draw(st.integers(1, left))
        sizes.append(k)
        left -= k
    chunks = rechunk_sequences(seqs, sizes)
    assert [len(c) for c in chunks] == sizes
    everything = np.concatenate([s.to_numpy() for s in seqs]) if seqs else np.empty(0, np.uint64)
    got = np.concatenate([c.to_numpy() for c in chunks]) if chunks else np.empty(0, np.uint64)
    np.testing.assert_array_equal(got, everything)
    for c in chunks:
        for s in c.segments:
            # every piece is shaped by the rule from its values
            assert s.same_shape(U64Segment.from_values(s.to_numpy())) or s.kind == SegmentKind.RANGE
        for a, b in zip(c.segments, c.segments[1:]):
            assert not (a.kind == b.kind == SegmentKind.RANGE and a.end == b.start)


def test_rechunk_errors_and_incomplete():
    seq = RowIdSequence.from_range(0, 10)
    with pytest.raises(InvalidArgumentError):
        rechunk_sequences([seq], [4, 4])
    with pytest.raises(InvalidArgumentError):
        rechunk_sequences([seq], [4, 8])
    short = rechunk_sequences([seq], [4, 8], allow_incomplete=True)
    assert [len(c) for c in short] == [4, 6]


def test_rechunk_reshapes_slices():
    # An array piece that happens to be sorted and contiguous becomes a Range after slicing.
    seq = RowIdSequence.from_array(np.array([3, 4, 5, 6, 1], dtype=np.uint64))
    first, second = rechunk_sequences([seq], [4, 1])
    assert first.segments[0].kind == SegmentKind.RANGE
    assert (first.segments[0].start, first.segments[0].end) == (3, 7)
    assert second.segments[0].kind == SegmentKind.RANGE


def test_segment_validation():
    with pytest.raises(ValueError):
        U64Segment(SegmentKind.RANGE, 5, 3)
    with pytest.raises(ValueError):
        U64Segment(SegmentKind.SORTED_ARRAY)
    with pytest.raises(ValueError):
        U64Segment(SegmentKind.RANGE_WITH_BITMAP, 0, 16, bitmap=b"\x01")
    with pytest.raises(ValueError):
        EncodedU64Array(64, 5, np.array([1], dtype=np.uint64))
    assert repr(_mixed()).startswith("RowIdSequence([Range(0..100)")


def test_live_row_ids_forms():
    from pyroaring import BitMap

    from lancefmt.table.rowids import live_row_ids

    seq = _mixed()
    values = seq.to_numpy()
    deleted = [0, 7, 100, len(seq) - 1]
    keep = np.ones(len(seq), dtype=bool)
    keep[deleted] = False
    for form in (DeletionVector.from_offsets(deleted), BitMap(deleted), np.array(deleted), keep):
        np.testing.assert_array_equal(live_row_ids(seq, form), values[keep])
        np.testing.assert_array_equal(live_row_ids(seq.to_bytes(), form), values[keep])
    np.testing.assert_array_equal(live_row_ids(seq), values)
    np.testing.assert_array_equal(live_row_ids(seq, DeletionVector.empty()), values)


@pytest.mark.parametrize("first, n", [(0, 0), (0, 5), (7, 131_073), ((1 << 63) + 3, 1000)])
def test_fill_range_writes_the_ids_of_a_range(first, n):
    from lancefmt.table._rowids import fill_range

    out = np.full(n, 99, np.uint64)
    fill_range(out, first)
    assert np.array_equal(out, np.uint64(first) + np.arange(n, dtype=np.uint64))
