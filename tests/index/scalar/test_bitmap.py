"""BITMAP: grouping, searching, update/remap and corrupt files, on an IndexStore directly.

Every answer is compared with the scan's own evaluation of the same filter (the query's
pyarrow compute kernel over the column).
"""
import datetime
import decimal
import json
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lancefmt.errors import (CorruptFileError, InvalidArgumentError, UnsupportedColumnTypeError,
                             UnsupportedFeatureError)
from lancefmt.file.reader import LanceFileReader
from lancefmt.index.core.registry import RowIdMapping, TrainingData
from lancefmt.index.core.store import IndexStore
from lancefmt.index.core.treemap import decode_treemap
from lancefmt.index.scalar.bitmap import BITMAP
from lancefmt.index.scalar.bitmap_file import LOOKUP, group_rows
from lancefmt.sql.sargable import Equals, IsIn, IsNull, Range


def training(values: pa.Array, ids=None, frag_rows=7):
    n = len(values)
    offsets = np.arange(n, dtype=np.uint64)
    addr = (offsets // np.uint64(frag_rows) << np.uint64(32)) | (offsets % np.uint64(frag_rows))
    ids = addr if ids is None else np.asarray(ids, dtype=np.uint64)
    t = pa.table({"value": values, "_rowid": pa.array(ids, pa.uint64()), "_rowaddr": pa.array(addr, pa.uint64())})
    return TrainingData.from_table(pa.field("c", values.type), t), ids


def built(tmp_path, values, ids=None, name="idx"):
    data, ids = training(values, ids)
    store = IndexStore(str(tmp_path / name))
    BITMAP.train(data, store, {})
    return BITMAP.load(IndexStore(str(tmp_path / name)), None), ids


def expected(values, ids, mask) -> np.ndarray:
    m = np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)
    return np.sort(np.asarray(ids, dtype=np.uint64)[m])


def _total(v: float) -> int:
    """A float's place in IEEE total order (a reference written apart from lancefmt's)."""
    bits = struct.unpack("<q", struct.pack("<d", v))[0]
    return bits ^ ((bits >> 63) & (2**63 - 1))


def float_mask(values: pa.Array, op: str, v: float) -> pa.Array:
    """What pylance's filter keeps for ``value <op> v``: total order; a zero literal means both
    zeros (``=``: either zero; ``<``/``>=`` compare with -0.0, ``<=``/``>`` with 0.0)."""
    if v == 0.0:
        v = -0.0 if op in ("lt", "gte") else 0.0
    out = []
    for x in values.to_pylist():
        if x is None:
            out.append(None)
        elif op == "eq":
            out.append(x == v if v == 0.0 else _total(x) == _total(v))
        else:
            a, b = _total(x), _total(v)
            out.append({"lt": a < b, "lte": a <= b, "gt": a > b, "gte": a >= b}[op])
    return pa.array(out, pa.bool_())


COLUMNS = {
    "int": (pa.array([3, 1, None, 3, -2, 7, 1, None, 0] * 5, pa.int32()), [1, 3, -5, 100], [(0, 3)]),
    "uint64": (pa.array([2**63, 1, None, 0, 1] * 4, pa.uint64()), [1, 2**63], [(1, 2**63)]),
    "string": (pa.array(["b", "a", None, "", "b", "zz", "a"] * 4), ["a", "", "q"], [("a", "b")]),
    "large_string": (pa.array(["b", "a", None, "b"] * 3, pa.large_string()), ["a"], [("a", "z")]),
    "float": (pa.array([1.5, -0.0, 0.0, float("nan"), None, 2.5, float("-inf"), 1.5] * 3), [0.0, -0.0, 1.5, 9.0],
              [(0.0, 2.5), (-1.0, 0.0)]),
    "bool": (pa.array([True, None, False, True] * 3), [True, False], [(False, True)]),
    "decimal": (pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("-2.25"), decimal.Decimal("1.50")] * 3,
                         pa.decimal128(10, 2)), [decimal.Decimal("1.50")], [(decimal.Decimal("-3"), decimal.Decimal("1.5"))]),
    "date": (pa.array([datetime.date(2020, 1, 1), None, datetime.date(1969, 7, 20)] * 3), [datetime.date(2020, 1, 1)],
             [(datetime.date(1960, 1, 1), datetime.date(2000, 1, 1))]),
    "timestamp_tz": (pa.array([1, None, 3, 1, -6], pa.timestamp("ms", "UTC")),
                     [datetime.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=datetime.timezone.utc)],
                     [(datetime.datetime(1969, 1, 1, tzinfo=datetime.timezone.utc),
                       datetime.datetime(1970, 1, 1, 0, 0, 0, 2000, tzinfo=datetime.timezone.utc))]),
    "binary": (pa.array([b"a", b"\x00", None, b"", b"a"] * 3), [b"a", b""], [(b"", b"a")]),
    "fixed_binary": (pa.array([b"ab", b"zz", None, b"ab"] * 3, pa.binary(2)), [b"ab"], [(b"aa", b"zz")]),
}


def scan_mask(values: pa.Array, op: str, v):
    """The scan's answer for ``value <op> v`` (floats compare as pylance compares them)."""
    if pa.types.is_floating(values.type):
        return float_mask(values, op, v)
    f = {"eq": pc.equal, "lt": pc.less, "lte": pc.less_equal, "gt": pc.greater, "gte": pc.greater_equal}[op]
    return f(values, pa.scalar(v, values.type))


@pytest.mark.parametrize("kind", sorted(COLUMNS))
def test_answers_match_the_scan(tmp_path, kind):
    values, probes, ranges = COLUMNS[kind]
    idx, ids = built(tmp_path, values)
    t = values.type
    any_of = None
    for v in probes:
        got = idx.search(Equals(v, t))
        assert got.exact and not got.negated
        np.testing.assert_array_equal(got.rows, expected(values, ids, scan_mask(values, "eq", v)))
        any_of = scan_mask(values, "eq", v) if any_of is None else pc.or_(any_of, scan_mask(values, "eq", v))
    got = idx.search(IsIn(tuple(probes), t))
    np.testing.assert_array_equal(got.rows, expected(values, ids, any_of))
    np.testing.assert_array_equal(idx.search(IsNull()).rows, expected(values, ids, values.is_null()))
    for lo, hi in ranges:
        for lo_inc in (True, False):
            for hi_inc in (True, False):
                q = Range(lo, lo_inc, hi, hi_inc, t)
                m = pc.and_(scan_mask(values, "gte" if lo_inc else "gt", lo),
                            scan_mask(values, "lte" if hi_inc else "lt", hi))
                np.testing.assert_array_equal(idx.search(q).rows, expected(values, ids, m))
        np.testing.assert_array_equal(idx.search(Range(lo, True, None, False, t)).rows,
                                      expected(values, ids, scan_mask(values, "gte", lo)))
        np.testing.assert_array_equal(idx.search(Range(None, False, hi, False, t)).rows,
                                      expected(values, ids, scan_mask(values, "lt", hi)))


def test_float16_keys_compare_exactly(tmp_path):
    values = pa.array(np.array([1.5, 2.5, 1.5, 0.0], np.float16))
    idx, ids = built(tmp_path, values)
    np.testing.assert_array_equal(idx.search(Equals(1.5, pa.float16())).rows, ids[[0, 2]])
    np.testing.assert_array_equal(idx.search(Range(1.0, True, None, False, pa.float16())).rows, ids[[0, 1, 2]])


def test_file_is_what_pylance_writes(tmp_path):
    values = pa.array(["c1", None, "c0", "c1", "c2", None, "c0"])
    data, ids = training(values, frag_rows=4)
    store = IndexStore(str(tmp_path / "i"))
    BITMAP.train(data, store, {})
    r = LanceFileReader(str(tmp_path / "i" / LOOKUP))
    assert r.schema.names == ["keys", "bitmaps"]
    assert r.schema.field("keys").type == pa.string() and r.schema.field("bitmaps").type == pa.binary()
    assert json.loads(r.schema_metadata["lance:index_stats"]) == {"num_bitmaps": 4}
    t = r.read_all()
    assert t.column("keys").to_pylist() == [None, "c0", "c1", "c2"]  # null key first, then ascending
    rows = [decode_treemap(b).tolist() for b in t.column("bitmaps").to_pylist()]
    assert rows == [[1, (1 << 32) | 1], [2, (1 << 32) | 2], [0, 3], [1 << 32]]


def test_float_keys_in_total_order():
    g = group_rows(pa.array([float("nan"), 1.0, 0.0, -0.0, float("-inf"), None, 1.0]), np.arange(7))
    assert [repr(v) for v in g.keys.to_pylist()] == ["-inf", "-0.0", "0.0", "1.0", "nan"]
    assert g.null_ids.tolist() == [5]
    assert g.key_ids(3).tolist() == [1, 6]


def test_unsorted_row_ids_are_grouped_sorted():
    rng = np.random.default_rng(1)
    ids = rng.permutation(1000).astype(np.uint64) * np.uint64(3)
    vals = pa.array(rng.integers(0, 5, 1000))
    g = group_rows(vals, ids)
    for i, k in enumerate(g.keys.to_pylist()):
        part = g.key_ids(i)
        assert (np.diff(part.astype(np.int64)) > 0).all()
        np.testing.assert_array_equal(part, np.sort(ids[np.asarray(vals) == k]))


def test_statistics_and_empty_index(tmp_path):
    idx, _ = built(tmp_path, pa.array(["a", None, "b", "a"]))
    assert idx.statistics() == {"num_bitmaps": 3}
    idx, _ = built(tmp_path, pa.array(["a", "b"]), name="nonull")
    assert idx.statistics() == {"num_bitmaps": 2}
    empty, _ = built(tmp_path, pa.array([], pa.string()), name="empty")
    assert empty.statistics() == {"num_bitmaps": 0}
    assert empty.search(Equals("a", pa.string())).rows.size == 0
    assert empty.search(IsNull()).rows.size == 0


def test_prewarm_then_search_reads_nothing_more(tmp_path):
    idx, ids = built(tmp_path, pa.array(["a", "b", None, "a"]))
    idx.prewarm()
    idx.lookup.store._readers.clear()
    idx.lookup.store._store = None  # any further read would reopen the directory
    np.testing.assert_array_equal(idx.search(Equals("a", pa.string())).rows, ids[[0, 3]])


def _lookup_table(tmp_path, name):
    return LanceFileReader(str(tmp_path / name / LOOKUP)).read_all()


def test_update_equals_a_fresh_build(tmp_path):
    rng = np.random.default_rng(2)
    old = pa.array([None if x == 9 else f"k{x}" for x in rng.integers(0, 10, 300)])
    new = pa.array([None if x == 9 else f"k{x}" for x in rng.integers(3, 14, 200)])
    idx, old_ids = built(tmp_path, old)
    new_ids = np.arange(200, dtype=np.uint64) + np.uint64(5 << 32)
    gone = set(old_ids[::3].tolist())
    data, _ = training(new, new_ids)
    idx.update(data, IndexStore(str(tmp_path / "upd")),
               keep=lambda ids: ~np.isin(ids, np.fromiter(gone, np.uint64)))
    keep = ~np.isin(old_ids, np.fromiter(gone, np.uint64))
    both = pa.concat_arrays([old.filter(pa.array(keep)), new])
    built(tmp_path, both, np.concatenate([old_ids[keep], new_ids]), name="fresh")
    assert _lookup_table(tmp_path, "upd").equals(_lookup_table(tmp_path, "fresh"))


def test_remap_moves_and_drops_rows(tmp_path):
    values = pa.array(["a", "b", None, "a", "b", None, "c"])
    idx, ids = built(tmp_path, values)  # 7 rows in fragment 0
    old = ids[[0, 1, 2, 3]]
    new = np.array([(9 << 32) | 3, (9 << 32) | 2, (9 << 32) | 1, (9 << 32) | 0], np.uint64)
    mapping = RowIdMapping(old, new, dropped=ids[[4, 6]])
    idx.remap(mapping, IndexStore(str(tmp_path / "re")))
    moved = BITMAP.load(IndexStore(str(tmp_path / "re")), None)
    assert moved.search(Equals("a", pa.string())).rows.tolist() == [(9 << 32) | 0, (9 << 32) | 3]
    assert moved.search(Equals("b", pa.string())).rows.tolist() == [(9 << 32) | 2]
    assert moved.search(Equals("c", pa.string())).rows.size == 0
    assert moved.search(IsNull()).rows.tolist() == [5, (9 << 32) | 1]
    assert moved.statistics() == {"num_bitmaps": 3}


def test_check_field_refuses_what_pylance_refuses():
    for t in (pa.list_(pa.int32()), pa.struct([("a", pa.int32())]), pa.list_(pa.int32(), 2),
              pa.dictionary(pa.int32(), pa.string())):
        with pytest.raises(TypeError):
            BITMAP.check_field(pa.field("c", t))
        with pytest.raises(UnsupportedColumnTypeError):
            BITMAP.check_field(pa.field("c", t))
    for t in (pa.float16(), pa.bool_(), pa.decimal128(5, 2), pa.binary(3), pa.duration("s"), pa.large_binary()):
        BITMAP.check_field(pa.field("c", t))


def test_mismatched_literal_is_an_argument_error(tmp_path):
    idx, _ = built(tmp_path, pa.array([1, 2], pa.int32()))
    with pytest.raises(InvalidArgumentError):
        idx.search(Equals("not a number", pa.string()))


# -- corrupt files ------------------------------------------------------------------------------
def _corrupt_copy(tmp_path, edit):
    values = pa.array([f"k{i % 5}" if i % 7 else None for i in range(200)])
    data, ids = training(values, frag_rows=50)
    BITMAP.train(data, IndexStore(str(tmp_path / "good")), {})
    raw = bytearray((tmp_path / "good" / LOOKUP).read_bytes())
    (tmp_path / "bad").mkdir(exist_ok=True)
    (tmp_path / "bad" / LOOKUP).write_bytes(bytes(edit(raw)))
    return IndexStore(str(tmp_path / "bad"))


def _use(store):
    idx = BITMAP.load(store, None)
    for q in (Equals("k1", pa.string()), IsNull(), Range("k0", True, "k3", False, pa.string())):
        idx.search(q)
    idx.statistics()


@pytest.mark.parametrize("cut", [1, 10, 100, 1000, -40, -1])
def test_truncated_file_is_corrupt(tmp_path, cut):
    store = _corrupt_copy(tmp_path, lambda raw: raw[:cut])
    with pytest.raises(CorruptFileError) as e:
        _use(store)
    assert LOOKUP in str(e.value)


def test_empty_file_is_corrupt(tmp_path):
    with pytest.raises(CorruptFileError):
        _use(_corrupt_copy(tmp_path, lambda raw: b""))


def test_flipped_bytes_never_crash(tmp_path):
    rng = np.random.default_rng(3)
    _corrupt_copy(tmp_path, lambda raw: raw)
    good = IndexStore(str(tmp_path / "good"))
    size = len((tmp_path / "good" / LOOKUP).read_bytes())
    for trial in range(60):
        pos = rng.integers(0, size, 3)

        def flip(raw, pos=pos):
            for p in pos:
                raw[p] ^= 0xFF
            return raw

        store = _corrupt_copy(tmp_path, flip)
        try:
            _use(store)
        except (CorruptFileError, UnsupportedFeatureError) as e:  # clean errors naming the file
            assert LOOKUP in str(e)
    assert BITMAP.load(good, None).statistics() == {"num_bitmaps": 6}


@pytest.mark.parametrize("blob", [b"", b"\x01\x00", b"\x05\x00\x00\x00\x00\x00\x00\x00",
                                  b"\x01\x00\x00\x00\x00\x00\x00\x00\xff\x00\x00\x00\x3a\x30"])
def test_bad_treemaps_are_corrupt(tmp_path, blob):
    _write_lookup_with(tmp_path, blob)
    idx = BITMAP.load(IndexStore(str(tmp_path / "x")), None)
    with pytest.raises(CorruptFileError):
        idx.search(Equals("a", pa.string()))


def _write_lookup_with(tmp_path, blob):
    from lancefmt.file.writer import LanceFileWriter
    (tmp_path / "x").mkdir()
    schema = pa.schema([pa.field("keys", pa.string()), pa.field("bitmaps", pa.binary())])
    w = LanceFileWriter(str(tmp_path / "x" / LOOKUP), schema, "2.2")
    w.write_batch(pa.record_batch([pa.array(["a"]), pa.array([blob], pa.binary())], schema=schema))
    w.close()


def test_whole_fragment_maps_are_refused(tmp_path):
    # size 0 = "every row of fragment 1": Lance never writes it to an index file
    _write_lookup_with(tmp_path, b"\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00")
    idx = BITMAP.load(IndexStore(str(tmp_path / "x")), None)
    with pytest.raises(UnsupportedFeatureError):
        idx.search(Equals("a", pa.string()))


def test_wrong_schema_is_corrupt(tmp_path):
    store = IndexStore(str(tmp_path / "w"))
    store.write_table(LOOKUP, pa.table({"keys": pa.array(["a"]), "bitmaps": pa.array([1])}))
    with pytest.raises(CorruptFileError):
        BITMAP.load(IndexStore(str(tmp_path / "w")), None)


def test_missing_file_is_corrupt(tmp_path):
    (tmp_path / "none").mkdir()
    with pytest.raises(CorruptFileError):
        BITMAP.load(IndexStore(str(tmp_path / "none")), None)


def test_a_zero_means_both_zeros_and_nans_are_ordered(tmp_path):
    """pylance's semantics: a zero value in a query matches both zeros; NaN sorts above every
    number (a negative NaN below), so ranges keep them."""
    neg_nan = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
    values = pa.array([0.0, -0.0, 1.0, float("nan"), neg_nan, None])
    idx, ids = built(tmp_path, values)
    f = pa.float64()
    for v in (0.0, -0.0, 0.0):
        got = idx.search(IsIn((v,), f)).rows
        assert got.tolist() == [0, 1]
        assert not got.flags.writeable
    assert idx.search(Equals(-0.0, f)).rows.tolist() == [0, 1]
    assert idx.search(Range(0.0, False, None, False, f)).rows.tolist() == [2, 3]       # x > 0
    assert idx.search(Range(None, False, 0.0, False, f)).rows.tolist() == [4]          # x < 0
    assert idx.search(Range(0.0, True, None, False, f)).rows.tolist() == [0, 1, 2, 3]  # x >= 0


# -- the Cython kernels --------------------------------------------------------------------------
def test_serialized_groups_are_roaring_rs_bytes():
    from lancefmt.index.core.treemap import encode_treemap
    from lancefmt.index.scalar._bitmap_kernels import serialize_groups
    rng = np.random.default_rng(9)
    groups = [np.empty(0, np.uint64), np.array([7], np.uint64), np.array([2**64 - 1], np.uint64)]
    for card in (4095, 4096, 4097, 65536):  # one container each: array, array, bitmap, bitmap
        groups.append(np.sort(rng.choice(65536, card, replace=False)).astype(np.uint64) | np.uint64(5 << 32))
    spread = np.sort(rng.choice(1 << 34, 20000, replace=False)).astype(np.uint64)  # many fragments
    groups.append(spread)
    groups.append(np.sort(np.concatenate([spread[:50], spread[:50], groups[5]])))  # repeats
    ids = np.concatenate(groups)
    bounds = np.concatenate(([0], np.cumsum([g.size for g in groups]))).astype(np.int64)
    data, offsets = serialize_groups(ids, bounds)
    for i, g in enumerate(groups):
        assert data[offsets[i]:offsets[i + 1]].tobytes() == encode_treemap(np.unique(g)), i
        np.testing.assert_array_equal(decode_treemap(data[offsets[i]:offsets[i + 1]].tobytes()), np.unique(g))


def test_kernels_refuse_bad_input():
    from lancefmt.index.scalar._bitmap_kernels import group_ids, serialize_groups
    ids = np.arange(4, dtype=np.uint64)
    with pytest.raises(ValueError):
        group_ids(np.array([0, 1, 5, 0], np.int32), np.array([0, 1], np.int64), ids, 2)
    with pytest.raises(ValueError):
        group_ids(np.array([0, 1, 1, 0], np.int32), np.array([0, 7], np.int64), ids, 2)
    with pytest.raises(ValueError):
        group_ids(np.array([0, 1], np.int32), np.array([0, 1], np.int64), ids, 2)
    with pytest.raises(ValueError):
        serialize_groups(ids[::-1].copy(), np.array([0, 4], np.int64))
    with pytest.raises(ValueError):
        serialize_groups(ids, np.array([0, 5], np.int64))
    with pytest.raises(ValueError):
        serialize_groups(ids, np.array([3, 1, 4], np.int64))


def test_merge_equals_a_fresh_build(tmp_path):
    rng = np.random.default_rng(4)
    a = pa.array([None if x == 7 else f"k{x}" for x in rng.integers(0, 8, 100)])
    b = pa.array([None if x == 7 else f"k{x}" for x in rng.integers(4, 12, 80)])
    ids_a = np.arange(100, dtype=np.uint64) + np.uint64(3 << 32)  # a later fragment first
    ids_b = np.arange(80, dtype=np.uint64) + np.uint64(1 << 32)
    seg_a, _ = built(tmp_path, a, ids_a, name="a")
    seg_b, _ = built(tmp_path, b, ids_b, name="b")
    BITMAP.merge([seg_a, seg_b], IndexStore(str(tmp_path / "merged")))
    built(tmp_path, pa.concat_arrays([b, a]), np.concatenate([ids_b, ids_a]), name="fresh")
    assert _lookup_table(tmp_path, "merged").equals(_lookup_table(tmp_path, "fresh"))


def test_decoded_treemaps_match_pyroaring_and_read_run_containers():
    import array
    import struct

    from pyroaring import BitMap

    from lancefmt.index.scalar._bitmap_kernels import decode_treemaps, serialize_groups
    rng = np.random.default_rng(11)
    groups = [np.empty(0, np.uint64), np.array([2**64 - 1], np.uint64),
              np.sort(rng.choice(1 << 36, 30000, replace=False)).astype(np.uint64),
              np.arange(70000, dtype=np.uint64)]
    ids = np.concatenate(groups)
    bounds = np.concatenate(([0], np.cumsum([g.size for g in groups]))).astype(np.int64)
    data, offsets = serialize_groups(ids, bounds)
    got, got_bounds = decode_treemaps(data, offsets)
    np.testing.assert_array_equal(got, ids)
    np.testing.assert_array_equal(got_bounds, bounds)
    # run containers (another writer's run-optimised bitmaps), with and without offsets
    for values in (list(range(100, 5000)) + [70000, 99999], list(range(10)) + [1 << 17, 1 << 18, 1 << 19, 1 << 20]):
        body = BitMap(array.array("I", values), optimize=True).serialize()
        blob = struct.pack("<III", 1, 3, len(body)) + body
        out, _ = decode_treemaps(np.frombuffer(blob, np.uint8), np.array([0, len(blob)], np.int64))
        assert out.tolist() == [(3 << 32) | v for v in values]


def test_decoder_refuses_malformed_maps():
    from lancefmt.index.scalar._bitmap_kernels import decode_treemaps, serialize_groups
    rng = np.random.default_rng(12)
    ids = np.sort(rng.choice(1 << 34, 9000, replace=False)).astype(np.uint64)
    data, offsets = serialize_groups(ids, np.array([0, 9000], np.int64))
    whole = np.frombuffer(b"\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00", np.uint8)
    with pytest.raises(NotImplementedError):
        decode_treemaps(whole, np.array([0, whole.size], np.int64))
    for cut in (1, 5, 13, data.size // 2, data.size - 1):
        with pytest.raises(ValueError):
            decode_treemaps(data[:cut].copy(), np.array([0, cut], np.int64))
    with pytest.raises(ValueError):
        decode_treemaps(data, np.array([0, data.size + 1], np.int64))
    outcomes = set()
    for _ in range(300):  # flipped bytes: an error or ascending distinct ids, never a crash
        bad = data.copy()
        bad[rng.integers(0, bad.size, 2)] ^= np.uint8(rng.integers(1, 256))
        try:
            got, _ = decode_treemaps(bad, offsets)
        except ValueError:
            outcomes.add("error")
            continue
        outcomes.add("decoded")
        assert (np.diff(got.astype(np.int64)) > 0).all() if got.size > 1 else True
    assert "error" in outcomes


@pytest.mark.parametrize("blob,error", [(b"\x05\x00\x00\x00", CorruptFileError),
                                        (b"\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00",
                                         UnsupportedFeatureError)])
def test_update_remap_merge_of_bad_maps_fail_cleanly(tmp_path, blob, error):
    _write_lookup_with(tmp_path, blob)
    idx = BITMAP.load(IndexStore(str(tmp_path / "x")), None)
    data, _ = training(pa.array(["z"]), [9 << 32])
    for act in (lambda: idx.update(data, IndexStore(str(tmp_path / "u"))),
                lambda: idx.remap(RowIdMapping(np.empty(0), np.empty(0), np.empty(0)), IndexStore(str(tmp_path / "r"))),
                lambda: BITMAP.merge([idx], IndexStore(str(tmp_path / "m")))):
        with pytest.raises(error) as e:
            act()
        assert LOOKUP in str(e.value)
