"""RowDatasetVersionSequence: per-row created-at / last-updated-at versions."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lancefmt.errors import InvalidArgumentError
from lancefmt.table.rowids import (
    RowDatasetVersionSequence,
    SegmentKind,
    U64Segment,
    decode_versions,
    encode_versions,
    new_fragment_versions,
    rechunk_version_sequences,
)
from rowid_reference import reference_decode_versions


def test_new_fragment_form_matches_pylance_bytes():
    # [obs14]: a 5-row fragment committed at version 2 -> span range{0,5}, version 2;
    # pylance 14.0.2 wrote exactly these bytes for a 40-row fragment at version 1.
    assert new_fragment_versions(40, 1) == bytes([10, 8, 10, 4, 10, 2, 16, 40, 16, 1])
    np.testing.assert_array_equal(decode_versions(new_fragment_versions(5, 2)), [2] * 5)
    assert new_fragment_versions(0, 3) == b""


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=300))
def test_round_trip(versions):
    v = np.array(versions, dtype=np.uint64)
    data = encode_versions(v)
    np.testing.assert_array_equal(decode_versions(data), v)
    assert reference_decode_versions(data) == versions
    seq = RowDatasetVersionSequence.from_bytes(data)
    np.testing.assert_array_equal(seq.to_numpy(), v)
    assert RowDatasetVersionSequence(seq.runs).to_bytes() == data
    assert len(seq) == v.size
    for i in range(0, v.size, 37):
        assert seq.version_at(i) == versions[i]
    assert seq.version_at(v.size) is None


def test_runs_of_equal_versions():
    seq = RowDatasetVersionSequence.from_versions([1, 1, 3, 3, 3, 1])
    assert [(s.start, s.end, v) for s, v in seq.runs] == [(0, 2, 1), (2, 5, 3), (5, 6, 1)]


def test_spans_of_any_shape_count_by_length():
    # After compaction Lance keeps surviving source positions in the spans (e.g. a bitmap).
    span = U64Segment.from_values(np.arange(1, 100, 2, dtype=np.uint64))
    assert span.kind == SegmentKind.RANGE_WITH_BITMAP
    seq = RowDatasetVersionSequence([(span, 4), (U64Segment.range(0, 3), 7)])
    data = seq.to_bytes()
    np.testing.assert_array_equal(decode_versions(data), [4] * 50 + [7] * 3)
    assert reference_decode_versions(data) == [4] * 50 + [7] * 3
    assert decode_versions(data, expected_len=53).size == 53


def test_mask_and_rechunk():
    a = RowDatasetVersionSequence.uniform(100, 1)
    masked = a.mask(np.arange(0, 100, 2))
    assert len(masked) == 50
    # The span keeps the surviving positions (1, 3, 5, ...), as Lance's mask does.
    np.testing.assert_array_equal(masked.runs[0][0].to_numpy(), np.arange(1, 100, 2))
    b = RowDatasetVersionSequence([(U64Segment.range(0, 10), 2), (U64Segment.range(0, 5), 3)])
    chunks = rechunk_version_sequences([masked, b], [30, 35])
    assert [len(c) for c in chunks] == [30, 35]
    np.testing.assert_array_equal(np.concatenate([c.to_numpy() for c in chunks]),
                                  [1] * 50 + [2] * 10 + [3] * 5)
    # runs are never merged, only cut
    assert [v for _, v in chunks[1].runs] == [1, 2, 3]
    with pytest.raises(InvalidArgumentError):
        rechunk_version_sequences([b], [20])
    with pytest.raises(InvalidArgumentError):
        rechunk_version_sequences([b], [5])
    assert RowDatasetVersionSequence.uniform(3, 1).mask([0, 1, 2]).runs == ()
