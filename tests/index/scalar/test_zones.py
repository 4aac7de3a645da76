"""Zones as pylance 14 cuts them (``zoned.rs``): live rows of one fragment, at most
``rows_per_zone`` of them, bounded by the first offset and the offset span; answers as rows."""
import numpy as np
import pyarrow as pa
import pytest

from lancefmt.errors import CorruptFileError, InvalidArgumentError
from lancefmt.index.core.registry import RowIdMapping
from lancefmt.index.scalar.zones import Bounds, positive_int, remap, runs, span_rows, zone_alive


def batch(frag, offsets, values=None):
    offsets = np.asarray(offsets, dtype=np.uint64)
    addr = (np.uint64(frag) << np.uint64(32)) | offsets
    values = pa.array(values if values is not None else np.arange(offsets.size), pa.int64())
    return pa.record_batch({"value": values, "_rowid": pa.array(addr), "_rowaddr": pa.array(addr)})


def test_zones_count_live_rows_and_span_deleted_ones():
    # fragment 0 lost offsets 3 and 4, fragment 1 lost 1 and 7 (pylance's own example shape)
    got = list(runs([batch(0, [0, 1, 2, 5, 6, 7, 8, 9, 10, 11]), batch(1, [0, 2, 3, 4, 5, 6])], 4))
    assert [r.fragment_id for r in got] == [0, 1]
    assert got[0].starts.tolist() == [0, 6, 10] and got[0].lengths.tolist() == [6, 4, 2]
    assert got[1].starts.tolist() == [0, 5] and got[1].lengths.tolist() == [5, 2]


def test_a_fragment_split_over_batches_is_one_run_and_zones_never_span_fragments():
    got = list(runs([batch(3, [0, 1]), batch(3, [2, 3, 4]), batch(4, [0])], 4))
    assert [(r.fragment_id, r.starts.tolist(), r.lengths.tolist()) for r in got] == \
        [(3, [0, 4], [4, 1]), (4, [0], [1])]


def test_a_batch_holding_two_fragments_is_cut_at_the_boundary():
    two = pa.concat_batches([batch(0, [0, 1, 2]), batch(1, [0, 1])]) \
        if hasattr(pa, "concat_batches") else pa.Table.from_batches(
            [batch(0, [0, 1, 2]), batch(1, [0, 1])]).combine_chunks().to_batches()[0]
    got = list(runs([two], 10))
    assert [(r.fragment_id, r.lengths.tolist()) for r in got] == [(0, [3]), (1, [2])]


def test_null_addresses_of_a_run():
    b = batch(2, [0, 1, 5], [1, None, None])
    (run,) = list(runs([b], 8))
    assert run.null_addresses().tolist() == [(2 << 32) | 1, (2 << 32) | 5]


def bounds(*zones):
    f, s, n = zip(*zones)
    return Bounds(np.array(f, np.uint64), np.array(s, np.uint64), np.array(n, np.uint64))


def test_addresses_of_selected_zones_merge_overlaps():
    b = bounds((0, 0, 3), (0, 2, 3), (1, 0, 2), (0, 10, 1))
    got = b.addresses(np.array([True, True, True, False]))
    assert got.tolist() == [0, 1, 2, 3, 4, 1 << 32, (1 << 32) + 1]
    assert b.addresses(np.zeros(4, bool)).size == 0


def test_zone_of_and_span_rows():
    b = bounds((1, 5, 3), (0, 0, 2))
    addrs = np.array([0, 1, 2, (1 << 32) + 4, (1 << 32) + 5, (1 << 32) + 7, (1 << 32) + 8], np.uint64)
    assert b.zone_of(addrs).tolist() == [1, 1, -1, -1, 0, 0, -1]
    assert span_rows(np.array([10, 0], np.uint64), np.array([2, 1], np.uint64), unique=False).tolist() == [10, 11, 0]


def test_zone_alive_keeps_a_zone_with_any_kept_row():
    b = bounds((0, 0, 3), (0, 3, 3), (1, 0, 2))
    keep = lambda a: a == 4  # noqa: E731 -- only offset 4 of fragment 0 survives
    assert zone_alive(b, keep).tolist() == [False, True, False]


def test_read_checks_bounds():
    def table(frag, start, length):
        return pa.table({"fragment_id": pa.array([frag], pa.uint64()),
                         "zone_start": pa.array([start], pa.uint64()),
                         "zone_length": pa.array([length], pa.uint64())})

    assert len(Bounds.read(table(1, 0, 5), "f")) == 1
    for bad in [table(1, 0, 0), table(1 << 32, 0, 1), table(0, (1 << 32) - 1, 2),
                table(0, 1 << 40, 1), pa.table({"fragment_id": pa.array([0], pa.uint64())})]:
        with pytest.raises(CorruptFileError):
            Bounds.read(bad, "f")
    with pytest.raises(CorruptFileError):
        Bounds.read(pa.table({"fragment_id": pa.array([0], pa.int64()), "zone_start": pa.array([0], pa.uint64()),
                              "zone_length": pa.array([1], pa.uint64())}), "f")


def test_remap_builds_zones_on_new_fragments_from_the_old_zones_rows_came_from():
    b = bounds((0, 0, 2), (0, 2, 2), (1, 0, 3), (5, 0, 4))
    old = np.array([0, 1, 2, 3, 1 << 32, (1 << 32) + 2], np.uint64)  # offset 1 of frag 1 was deleted
    new = np.array([(7 << 32) + i for i in range(6)], np.uint64)
    nulls = np.array([1, (1 << 32) + 1, (5 << 32) + 3], np.uint64)
    r = remap(b, RowIdMapping(old, new, np.empty(0, np.uint64)), 4, nulls)
    assert r.kept.tolist() == [3]  # fragment 5 was not rewritten
    assert r.bounds.fragment_id.tolist() == [7, 7] and r.bounds.start.tolist() == [0, 4]
    assert r.bounds.length.tolist() == [4, 2] and r.rows.tolist() == [4, 2]
    assert r.pairs.tolist() == [[0, 0], [0, 1], [1, 2]]
    assert r.nulls.tolist() == [(5 << 32) + 3, (7 << 32) + 1]  # the deleted null row is gone


def test_remap_leaves_a_fragment_with_unknown_rows_unindexed():
    b = bounds((0, 0, 2))
    old = np.array([0, 1, 9 << 32], np.uint64)  # fragment 9 was never indexed
    new = np.array([4 << 32, (4 << 32) + 1, (4 << 32) + 2], np.uint64)
    r = remap(b, RowIdMapping(old, new, np.empty(0, np.uint64)), 8, None)
    assert len(r.bounds) == 0 and r.kept.size == 0 and r.nulls is None


def test_positive_int():
    assert positive_int({}, "k", 7) == 7 and positive_int({"k": 3}, "k", 7) == 3
    for bad in (0, -1, 1.5, "3", True):
        with pytest.raises(InvalidArgumentError):
            positive_int({"k": bad}, "k", 7)


def test_remap_refuses_rows_of_an_indexed_fragment_outside_its_zones():
    b = bounds((0, 0, 2))
    old = np.array([0, 1, 5], np.uint64)  # offset 5 of fragment 0 lies in no zone
    new = np.array([4 << 32, (4 << 32) + 1, (4 << 32) + 2], np.uint64)
    with pytest.raises(NotImplementedError):
        remap(b, RowIdMapping(old, new, np.empty(0, np.uint64)), 8, None)
