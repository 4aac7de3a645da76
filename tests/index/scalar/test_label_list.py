"""LABEL_LIST: list-null buffer, search semantics against the scan's array_has* functions,
update/remap, version-0 files and corrupt input, on an IndexStore directly."""
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lancefmt.errors import CorruptFileError, InvalidArgumentError, UnsupportedColumnTypeError
from lancefmt.file.reader import LanceFileReader
from lancefmt.index.core.registry import RowIdMapping, TrainingData
from lancefmt.index.core.store import IndexStore
from lancefmt.index.core.treemap import decode_treemap, encode_treemap
from lancefmt.index.scalar.bitmap_file import LOOKUP
from lancefmt.index.scalar.label_list import LABEL_LIST, NULLS_KEY
from lancefmt.sql.list_functions import list_function
from lancefmt.sql.sargable import LabelsAll, LabelsAny


def training(lists: pa.Array, ids=None):
    n = len(lists)
    addr = np.arange(n, dtype=np.uint64)
    ids = addr if ids is None else np.asarray(ids, dtype=np.uint64)
    t = pa.table({"value": lists, "_rowid": pa.array(ids, pa.uint64()), "_rowaddr": pa.array(addr, pa.uint64())})
    return TrainingData.from_table(pa.field("tags", lists.type), t), ids


def built(tmp_path, lists, ids=None, name="idx"):
    data, ids = training(lists, ids)
    LABEL_LIST.train(data, IndexStore(str(tmp_path / name)), {})
    return LABEL_LIST.load(IndexStore(str(tmp_path / name)), None), ids


def scan(lists, kind, needles):
    """What the scan's own array_has_any/all returns, as sorted positions of True rows."""
    item = lists.type.value_type
    arg = pa.scalar(list(needles), pa.list_(item))
    out = pc.call_function(list_function(kind, lists.type, arg.type), [lists, arg])
    return np.flatnonzero(np.asarray(pc.fill_null(out, False).to_numpy(zero_copy_only=False), dtype=bool))


TAGS = pa.array([["a", "b"], None, [], ["a", None], [None], ["c"], ["b", "b"], None, ["a"], [],
                 ["c", "a", "b"]])


def test_file_is_what_pylance_writes(tmp_path):
    built(tmp_path, TAGS)
    r = LanceFileReader(str(tmp_path / "idx" / LOOKUP))
    meta = IndexStore(str(tmp_path / "idx")).schema_metadata(LOOKUP)
    assert meta[NULLS_KEY] == b"1"
    assert json.loads(meta["lance:index_stats"]) == {"num_bitmaps": 4}
    t = r.read_all()
    assert t.column("keys").to_pylist() == [None, "a", "b", "c"]
    rows = [decode_treemap(b).tolist() for b in t.column("bitmaps").to_pylist()]
    assert rows == [[3, 4], [0, 3, 8, 10], [0, 6, 10], [5, 10]]
    assert decode_treemap(r.read_global_buffer(1)).tolist() == [1, 7]


@pytest.mark.parametrize("needles", [["a"], ["b"], ["a", "c"], ["a", "b"], ["zz"], ["a", "zz"], ["b", "b"], []])
def test_answers_match_the_scan(tmp_path, needles):
    idx, ids = built(tmp_path, TAGS)
    got = idx.search(LabelsAny(tuple(needles), pa.string()))
    assert got.exact and not got.negated
    assert got.rows.tolist() == ids[scan(TAGS, "any", needles)].tolist()
    got = idx.search(LabelsAll(tuple(needles), pa.string()))
    if needles:
        assert got.exact and not got.negated
        assert got.rows.tolist() == ids[scan(TAGS, "all", needles)].tolist()
    else:  # every non-null list: all but the null lists, re-checked
        assert got.negated and not got.exact
        assert got.rows.tolist() == [1, 7]


def test_random_lists_match_the_scan(tmp_path):
    rng = np.random.default_rng(5)
    lists = []
    for _ in range(500):
        r = rng.random()
        if r < 0.1:
            lists.append(None)
        else:
            lists.append([None if rng.random() < 0.05 else int(x) for x in rng.integers(0, 12, rng.integers(0, 5))])
    arr = pa.array(lists, pa.large_list(pa.int16()))
    ids = np.sort(rng.choice(1 << 40, 500, replace=False)).astype(np.uint64)
    idx, ids = built(tmp_path, arr, ids)
    for _ in range(30):
        needles = [int(x) for x in rng.integers(0, 14, rng.integers(1, 4))]
        for kind, q in (("any", LabelsAny), ("all", LabelsAll)):
            got = idx.search(q(tuple(needles), pa.int16()))
            assert got.rows.tolist() == ids[scan(arr, kind, needles)].tolist()


def test_float_items_follow_the_scans_equality(tmp_path):
    lists = pa.array([[1.5, -0.0], None, [0.0, float("nan")], [2.0]])
    idx, ids = built(tmp_path, lists)
    for needles in ([0.0], [-0.0], [float("nan")], [1.5, 0.0], [2.0, 1.5]):
        for kind, q in (("any", LabelsAny), ("all", LabelsAll)):
            assert idx.search(q(tuple(needles), pa.float64())).rows.tolist() == \
                ids[scan(lists, kind, needles)].tolist()


def test_statistics(tmp_path):
    idx, _ = built(tmp_path, TAGS)
    assert idx.statistics() == {"num_bitmaps": 4}
    idx, _ = built(tmp_path, pa.array([["x"], None, []]), name="nonull")
    assert idx.statistics() == {"num_bitmaps": 1}
    empty, _ = built(tmp_path, pa.array([], pa.list_(pa.string())), name="empty")
    assert empty.statistics() == {"num_bitmaps": 0}
    assert empty.search(LabelsAny(("a",), pa.string())).rows.size == 0


def test_update_equals_a_fresh_build(tmp_path):
    idx, old_ids = built(tmp_path, TAGS)
    new = pa.array([["d", "a"], None, [None], ["b"]])
    new_ids = np.array([(3 << 32) | i for i in range(4)], np.uint64)
    gone = old_ids[[0, 1, 4]]  # a labelled row, a null list, a null item
    data, _ = training(new, new_ids)
    idx.update(data, IndexStore(str(tmp_path / "upd")), keep=lambda ids: ~np.isin(ids, gone))
    keep = ~np.isin(old_ids, gone)
    both = pa.concat_arrays([TAGS.filter(pa.array(keep)), new])
    built(tmp_path, both, np.concatenate([old_ids[keep], new_ids]), name="fresh")
    a = LanceFileReader(str(tmp_path / "upd" / LOOKUP))
    b = LanceFileReader(str(tmp_path / "fresh" / LOOKUP))
    assert a.read_all().equals(b.read_all())
    assert a.read_global_buffer(1) == b.read_global_buffer(1)
    assert decode_treemap(a.read_global_buffer(1)).tolist() == [7, (3 << 32) | 1]


def test_remap_moves_list_nulls_too(tmp_path):
    idx, ids = built(tmp_path, TAGS)
    mapping = RowIdMapping(np.array([0, 1, 3], np.uint64), np.array([(2 << 32) | 5, (2 << 32) | 6, (2 << 32) | 7], np.uint64),
                           dropped=np.array([7, 8], np.uint64))
    idx.remap(mapping, IndexStore(str(tmp_path / "re")))
    moved = LABEL_LIST.load(IndexStore(str(tmp_path / "re")), None)
    assert moved.search(LabelsAny(("a",), pa.string())).rows.tolist() == [10, (2 << 32) | 5, (2 << 32) | 7]
    assert moved.search(LabelsAll((), pa.string())).rows.tolist() == [(2 << 32) | 6]  # the null lists


def test_version_0_file_without_null_buffer_loads(tmp_path):
    # what pylance wrote before index_version 1: the bitmap file alone
    store = IndexStore(str(tmp_path / "v0"))
    schema = pa.schema([pa.field("keys", pa.string()), pa.field("bitmaps", pa.binary())])
    store.write_table(LOOKUP, pa.table([pa.array(["a"]), pa.array([encode_treemap(np.array([2, 5], np.uint64))])],
                                       schema=schema), {"lance:index_stats": '{"num_bitmaps":1}'})
    idx = LABEL_LIST.load(IndexStore(str(tmp_path / "v0")), None)
    assert idx.search(LabelsAny(("a",), pa.string())).rows.tolist() == [2, 5]
    assert idx.search(LabelsAll((), pa.string())).rows.size == 0


@pytest.mark.parametrize("meta", [{NULLS_KEY: "x"}, {NULLS_KEY: "7"}, {NULLS_KEY: "0"}, {NULLS_KEY: "\xff"}])
def test_bad_null_buffer_reference_is_corrupt(tmp_path, meta):
    store = IndexStore(str(tmp_path / "bad"))
    schema = pa.schema([pa.field("keys", pa.string()), pa.field("bitmaps", pa.binary())])
    store.write_table(LOOKUP, pa.table([pa.array(["a"]), pa.array([encode_treemap(np.array([2], np.uint64))])],
                                       schema=schema), meta)
    with pytest.raises(CorruptFileError):
        LABEL_LIST.load(IndexStore(str(tmp_path / "bad")), None)


def test_bad_null_buffer_is_corrupt(tmp_path):
    store = IndexStore(str(tmp_path / "bad"))
    schema = pa.schema([pa.field("keys", pa.string()), pa.field("bitmaps", pa.binary())])
    store.write_table(LOOKUP, pa.table([pa.array(["a"]), pa.array([encode_treemap(np.array([2], np.uint64))])],
                                       schema=schema), {NULLS_KEY: "1"}, [b"\x09\x00\x00\x00"])
    with pytest.raises(CorruptFileError):
        LABEL_LIST.load(IndexStore(str(tmp_path / "bad")), None)


def test_check_field():
    for t in (pa.string(), pa.list_(pa.int32(), 2), pa.int64()):
        with pytest.raises(UnsupportedColumnTypeError):
            LABEL_LIST.check_field(pa.field("c", t))
    for t in (pa.list_(pa.struct([("a", pa.int32())])), pa.list_(pa.list_(pa.int32()))):
        with pytest.raises(InvalidArgumentError):
            LABEL_LIST.check_field(pa.field("c", t))
    for t in (pa.list_(pa.string()), pa.large_list(pa.int8()), pa.list_(pa.float64()), pa.list_(pa.date32())):
        LABEL_LIST.check_field(pa.field("c", t))


def test_merge_equals_a_fresh_build(tmp_path):
    other = pa.array([["q", "a"], None, [None], []])
    other_ids = np.array([(5 << 32) | i for i in range(4)], np.uint64)
    seg_a, ids = built(tmp_path, TAGS, name="a")
    seg_b, _ = built(tmp_path, other, other_ids, name="b")
    LABEL_LIST.merge([seg_b, seg_a], IndexStore(str(tmp_path / "merged")))
    built(tmp_path, pa.concat_arrays([TAGS, other]), np.concatenate([ids, other_ids]), name="fresh")
    a = LanceFileReader(str(tmp_path / "merged" / LOOKUP))
    b = LanceFileReader(str(tmp_path / "fresh" / LOOKUP))
    assert a.read_all().equals(b.read_all())
    assert a.read_global_buffer(1) == b.read_global_buffer(1)
