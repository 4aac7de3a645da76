"""ZONEMAP: per-zone statistics as pylance 14 records them, answers that never miss a row (a
superset: the rows of every zone that may match), exact IS NULL, update, remap, and corrupt
files refused."""
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lancefmt.errors import CorruptFileError, InvalidArgumentError
from lancefmt.index.core.registry import RowIdMapping, TrainingData
from lancefmt.index.core.store import IndexStore
from lancefmt.index.scalar.zone_stats import group_stats
from lancefmt.index.scalar.zonemap import ZONEMAP, ZONEMAP_FILE, default_use_seeds
from lancefmt.sql.sargable import Equals, IsIn, IsNull, Range

NAN, INF = float("nan"), float("inf")


def stats_of(values, bounds):
    return group_stats(values, np.array(bounds, dtype=np.int64))


def test_float_stats_follow_arrow_total_order_and_nan_rules():
    v = pa.array([NAN, NAN, NAN, None, None, None, 0.0, -0.0, 1.0, -0.0, 0.0, None,
                  -INF, NAN, INF, None, NAN, None, 2.0, None, NAN], pa.float64())
    s = stats_of(v, range(0, 22, 3))
    # what pylance 14 wrote for the same zones (probed): an all-NaN zone has a null min and a
    # NaN max; -0.0 sorts below 0.0
    assert s.min.to_pylist()[1:] == [None, -0.0, -0.0, -INF, None, 2.0] and s.min[0].as_py() is None
    assert np.signbit(s.min.to_numpy(zero_copy_only=False)[2])
    mx = s.max.to_pylist()
    assert math.isnan(mx[0]) and mx[1] is None and mx[2:4] == [1.0, 0.0]
    assert not np.signbit(mx[3]) and all(math.isnan(x) for x in mx[4:])
    assert s.null_count.tolist() == [0, 3, 0, 1, 0, 2, 1]
    assert s.nan_count.tolist() == [3, 0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize("values,lo,hi", [
    (pa.array([3, None, -7, 5], pa.int32()), [-7], [5]),
    (pa.array([2**64 - 1, 0, None, 5], pa.uint64()), [0], [2**64 - 1]),
    (pa.array(["b", "", None, "ab"]), [""], ["b"]),
    (pa.array([b"\xff", b"\x00\x01", None, b"a"], pa.large_binary()), [b"\x00\x01"], [b"\xff"]),
    (pa.array([True, None, False]), [False], [True]),
    (pa.array([1, 5, None], pa.int64()).cast(pa.timestamp("us", "UTC")), [1], [5]),
    (pa.array([10, 3, None], pa.int32()).cast(pa.date32()), [3], [10]),
    (pa.array(np.array([1.5, -2.0, 0.25], np.float16)), [-2.0], [1.5]),
])
def test_stats_of_other_types(values, lo, hi):
    s = stats_of(values, [0, len(values)])
    storage = {pa.date32(): pa.int32()}.get(values.type)
    if storage is not None:
        want_lo, want_hi = pa.array(lo, storage).view(values.type), pa.array(hi, storage).view(values.type)
    elif pa.types.is_integer(values.type):
        want_lo, want_hi = pa.array(lo, values.type), pa.array(hi, values.type)
    else:
        want_lo, want_hi = pa.array(lo).cast(values.type), pa.array(hi).cast(values.type)
    assert s.min.equals(want_lo) and s.max.equals(want_hi)
    assert s.null_count.tolist() == [values.null_count]


def test_all_null_zones_have_null_bounds():
    for t in (pa.int64(), pa.string(), pa.float32(), pa.list_(pa.int32())):
        s = stats_of(pa.nulls(4, t), [0, 2, 4])
        assert s.min.null_count == 2 and s.max.null_count == 2 and s.null_count.tolist() == [2, 2]


def test_use_seeds_default_follows_the_type():
    assert default_use_seeds(pa.string()) and default_use_seeds(pa.decimal128(10, 2))
    assert default_use_seeds(pa.binary(9)) and not default_use_seeds(pa.binary(8))
    assert not default_use_seeds(pa.float64()) and default_use_seeds(pa.list_(pa.int8()))


# -- train, load, search ------------------------------------------------------------------------
def training(values: pa.Array, per_fragment: int, deleted=()):
    """``values`` cut into fragments of ``per_fragment`` physical rows; ``deleted`` offsets (of
    the whole column) left out as deleted rows are."""
    n = len(values)
    idx = np.arange(n)
    addr = ((idx // per_fragment).astype(np.uint64) << np.uint64(32)) | (idx % per_fragment).astype(np.uint64)
    keep = ~np.isin(idx, np.asarray(deleted, dtype=np.int64))
    t = pa.table({"value": values.filter(pa.array(keep)), "_rowid": pa.array(addr[keep]),
                  "_rowaddr": pa.array(addr[keep])})
    return TrainingData.from_table(pa.field("x", values.type), t), t


def build(tmp_path, values, per_fragment=50, deleted=(), **params):
    data, table = training(values, per_fragment, deleted)
    store = IndexStore(str(tmp_path / "idx"))
    details = ZONEMAP.train(data, store, params)
    return ZONEMAP.load(IndexStore(str(tmp_path / "idx")), details), table, details


def matching(table, query) -> np.ndarray:
    v, addr = table.column("value"), table.column("_rowaddr").to_numpy()
    if isinstance(query, IsNull):
        m = pc.is_null(v)
    elif isinstance(query, Equals):
        m = pc.equal(v, pa.scalar(query.value, v.type))
    elif isinstance(query, IsIn):
        m = pc.is_in(v, value_set=pa.array(list(query.values), v.type))
    else:
        m = pa.chunked_array([pa.array(np.ones(len(v), bool))])
        if query.lower is not None:
            m = pc.and_(m, (pc.greater_equal if query.lower_inclusive else pc.greater)(v, pa.scalar(query.lower, v.type)))
        if query.upper is not None:
            m = pc.and_(m, (pc.less_equal if query.upper_inclusive else pc.less)(v, pa.scalar(query.upper, v.type)))
    return np.sort(addr[np.asarray(m.fill_null(False).to_numpy(zero_copy_only=False), bool)])


def assert_superset(index, table, query):
    got = index.search(query)
    want = matching(table, query)
    assert got.addresses and np.isin(want, got.rows).all(), query
    return got


def test_answers_are_supersets_and_prune(tmp_path):
    rng = np.random.default_rng(7)
    x = np.sort(rng.normal(size=2000)) * 100
    vals = pa.array(x, pa.float64(), mask=rng.random(2000) < 0.05)
    index, table, details = build(tmp_path, vals, per_fragment=700, deleted=range(100, 300), rows_per_zone=64)
    assert details.rows_per_zone == 64 and details.has_null_bitmap and not details.use_seeds
    for q in [Equals(float(x[1000]), pa.float64()), Range(-10.0, True, 10.0, False, pa.float64()),
              Range(None, False, -150.0, True, pa.float64()), Range(50.0, False, None, False, pa.float64()),
              IsIn((float(x[5]), float(x[1500]), 12345.0), pa.float64())]:
        got = assert_superset(index, table, q)
        assert got.rows.size < table.num_rows / 2  # sorted data: most zones pruned
        assert not got.exact
    nulls = index.search(IsNull())
    assert nulls.exact and nulls.rows.tolist() == matching(table, IsNull()).tolist()
    assert index.statistics() == {"num_zones": len(index.zones.bounds), "rows_per_zone": 64}


def test_nan_and_signed_zero_answers(tmp_path):
    v = pa.array([NAN, NAN, 1.0, -0.0, 5.0, NAN, None, 0.0, 2.0, NAN], pa.float64())
    index, table, _ = build(tmp_path, v, per_fragment=10, rows_per_zone=2)
    for q in [Equals(0.0, pa.float64()), Equals(-0.0, pa.float64()), Range(None, False, 0.0, False, pa.float64()),
              Range(1.5, True, None, False, pa.float64()), IsIn((0.0, 5.0), pa.float64())]:
        assert_superset(index, table, q)
    # zone 0 holds only NaN: no comparison matches it; a NaN in IN keeps the zones holding NaN
    assert index.search(Range(None, False, None, False, pa.float64())).rows.min() >= 2
    nan_rows = index.search(IsIn((NAN,), pa.float64())).rows
    assert {0, 1, 5, 9} <= set(nan_rows.tolist()) and 3 not in set(nan_rows.tolist())


@pytest.mark.parametrize("values,queries", [
    (pa.array([f"k{i % 37:03d}" if i % 11 else None for i in range(500)]),
     [Equals("k010", pa.string()), Range("k005", False, "k007", True, pa.string()), IsIn(("k000", "zzz"), pa.string())]),
    (pa.array(np.arange(500) - 250, pa.int16()),
     [Equals(-3, pa.int16()), Range(None, False, -200, False, pa.int16()), IsIn((1, 2, 400), pa.int16())]),
    (pa.array(np.arange(500), pa.int64()).cast(pa.timestamp("ms")),
     [Range(pa.scalar(100, pa.timestamp("ms")).as_py(), True, None, False, pa.timestamp("ms"))]),
    (pa.array([i % 3 == 0 for i in range(500)]), [Equals(True, pa.bool_()), Equals(False, pa.bool_())]),
])
def test_other_types_answer_supersets(tmp_path, values, queries):
    index, table, _ = build(tmp_path, values, per_fragment=120, deleted=[3, 4, 200], rows_per_zone=16)
    for q in queries + [IsNull()]:
        assert_superset(index, table, q)


def test_empty_in_list_and_unknown_query(tmp_path):
    index, _, _ = build(tmp_path, pa.array(range(10), pa.int64()))
    assert index.search(IsIn((), pa.int64())).rows.size == 0
    with pytest.raises(InvalidArgumentError):
        index.search(object())


def test_check_field_and_params():
    ZONEMAP.check_field(pa.field("s", pa.struct([("a", pa.int32())])))
    with pytest.raises(InvalidArgumentError):
        ZONEMAP.check_field(pa.field("d", pa.dictionary(pa.int32(), pa.string())))
    with pytest.raises(InvalidArgumentError):
        ZONEMAP.train(training(pa.array([1]), 5)[0], IndexStore("memory://unused"), {"rows_per_zone": 0})


def test_nested_column_keeps_null_counts_only(tmp_path):
    v = pa.array([None, None, [1], [2, 3], None, [4]], pa.list_(pa.int32()))
    index, table, details = build(tmp_path, v, rows_per_zone=2)
    assert details.use_seeds
    assert index.search(IsNull()).rows.tolist() == [0, 1, 4]


def test_empty_index(tmp_path):
    index, _, _ = build(tmp_path, pa.array([], pa.int64()))
    assert index.statistics()["num_zones"] == 0
    assert index.search(Equals(1, pa.int64())).rows.size == 0


# -- update and remap ---------------------------------------------------------------------------
def test_update_appends_new_zones_and_drops_dead_ones(tmp_path):
    index, table, _ = build(tmp_path, pa.array(np.arange(300), pa.int64()), per_fragment=100, rows_per_zone=40)
    new_vals = pa.array([1000, None, 1002], pa.int64())
    addr = (np.uint64(7) << np.uint64(32)) | np.arange(3, dtype=np.uint64)
    new = TrainingData.from_table(pa.field("x", pa.int64()), pa.table(
        {"value": new_vals, "_rowid": pa.array(addr), "_rowaddr": pa.array(addr)}))
    keep = lambda a: (a >> np.uint64(32)) != 1  # noqa: E731 -- fragment 1 was deleted
    details = index.update(new, IndexStore(str(tmp_path / "u")), keep)
    updated = ZONEMAP.load(IndexStore(str(tmp_path / "u")), details)
    frags = updated.zones.bounds.fragment_id.tolist()
    assert 1 not in frags and frags.count(7) == 1 and frags.count(0) == 3
    assert updated.search(Equals(1002, pa.int64())).rows.tolist() == addr.tolist()
    assert updated.search(IsNull()).rows.tolist() == [int(addr[1])]
    assert updated.search(Equals(150, pa.int64())).rows.size == 0
    assert updated.rows_per_zone == 40 and details.rows_per_zone == 40


def compact(table, fragments, new_fragment):
    """The mapping a compaction of ``fragments`` (all their rows, in order) into
    ``new_fragment`` makes, and the moved table."""
    addr = table.column("_rowaddr").to_numpy()
    moved = np.isin(addr >> np.uint64(32), np.array(fragments, np.uint64))
    old = addr[moved]
    new = (np.uint64(new_fragment) << np.uint64(32)) | np.arange(old.size, dtype=np.uint64)
    out_addr = addr.copy()
    out_addr[moved] = new
    moved_table = table.set_column(2, "_rowaddr", pa.array(out_addr))
    return RowIdMapping(old, new, np.empty(0, np.uint64)), moved_table


def test_remap_keeps_every_row_findable(tmp_path):
    rng = np.random.default_rng(3)
    vals = pa.array(rng.integers(0, 1000, 600), pa.int64(), mask=rng.random(600) < 0.1)
    index, table, _ = build(tmp_path, vals, per_fragment=200, deleted=range(10, 60), rows_per_zone=32)
    mapping, moved = compact(table, [0, 1], 9)
    details = index.remap(mapping, IndexStore(str(tmp_path / "r")))
    remapped = ZONEMAP.load(IndexStore(str(tmp_path / "r")), details)
    assert set(remapped.zones.bounds.fragment_id.tolist()) == {2, 9}
    for v in rng.integers(0, 1000, 30).tolist():
        assert_superset(remapped, moved, Equals(int(v), pa.int64()))
    assert_superset(remapped, moved, Range(100, True, 200, True, pa.int64()))
    got = remapped.search(IsNull())
    assert got.exact and got.rows.tolist() == matching(moved, IsNull()).tolist()


# -- corrupt files ------------------------------------------------------------------------------
def corrupt_copies(tmp_path, name):
    """(label, directory) of truncated and byte-flipped copies of ``name``."""
    src = tmp_path / "idx" / name
    data = src.read_bytes()
    out = []
    for i, cut in enumerate([len(data) // 2, len(data) - 5, 12]):
        d = tmp_path / f"trunc{i}"
        d.mkdir()
        (d / name).write_bytes(data[:cut])
        out.append(d)
    rng = np.random.default_rng(0)
    for i in range(40):
        buf = bytearray(data)
        pos = int(rng.integers(0, len(buf)))
        buf[pos] ^= 1 << int(rng.integers(0, 8))
        d = tmp_path / f"flip{i}"
        d.mkdir()
        (d / name).write_bytes(bytes(buf))
        out.append(d)
    return out


def test_truncated_files_are_refused_naming_the_file(tmp_path):
    _, _, details = build(tmp_path, pa.array(range(400), pa.int64()), per_fragment=150, rows_per_zone=32)
    for d in corrupt_copies(tmp_path, ZONEMAP_FILE)[:3]:
        with pytest.raises(CorruptFileError) as e:
            ZONEMAP.load(IndexStore(str(d)), details).search(Equals(5, pa.int64()))
        assert e.value.path and ZONEMAP_FILE in e.value.path


def test_flipped_bytes_are_refused_or_answered(tmp_path):
    """Lance files carry no checksums: a flipped bit inside a value page cannot be detected, but
    a damaged structure must be a CorruptFileError, never another exception."""
    vals = pa.array([i if i % 7 else None for i in range(400)], pa.int64())
    _, _, details = build(tmp_path, vals, per_fragment=150, rows_per_zone=32)
    refused = 0
    for d in corrupt_copies(tmp_path, ZONEMAP_FILE)[3:]:
        try:
            got = ZONEMAP.load(IndexStore(str(d)), details)
            for q in (Equals(77, pa.int64()), Range(10, True, 90, False, pa.int64()), IsNull()):
                assert got.search(q).rows.dtype == np.uint64
        except CorruptFileError as e:
            assert e.path and ZONEMAP_FILE in e.path
            refused += 1
    assert refused  # most flips land in structure the reader checks


def test_null_rows_disagreeing_with_counts_are_refused(tmp_path):
    vals = pa.array([1, None, 3, 4], pa.int64())
    build(tmp_path, vals, rows_per_zone=2)
    reader = IndexStore(str(tmp_path / "idx")).reader(ZONEMAP_FILE)
    t = reader.read_all()
    t = t.set_column(2, "null_count", pa.array([0, 1], pa.uint32()))
    store = IndexStore(str(tmp_path / "bad"))
    from lancefmt.index.core.treemap import encode_treemap
    store.write_table(ZONEMAP_FILE, t, {"rows_per_zone": "2", "null_bitmap": "1"},
                      [encode_treemap(np.array([1], np.uint64))])
    with pytest.raises(CorruptFileError):
        ZONEMAP.load(IndexStore(str(tmp_path / "bad")), None)
    store.write_table(ZONEMAP_FILE, t, {"rows_per_zone": "x"})
    with pytest.raises(CorruptFileError):
        ZONEMAP.load(IndexStore(str(tmp_path / "bad")), None)


def test_remapped_zones_still_prune(tmp_path):
    vals = pa.array(np.arange(1000), pa.int64())
    index, table, _ = build(tmp_path, vals, per_fragment=250, rows_per_zone=50)
    mapping, moved = compact(table, [0, 1, 2], 4)
    remapped = ZONEMAP.load(IndexStore(str(tmp_path / "r")), index.remap(mapping, IndexStore(str(tmp_path / "r"))))
    got = assert_superset(remapped, moved, Equals(420, pa.int64()))
    assert got.rows.size <= 100  # the new zone's bounds merge at most two old zones' bounds
    assert remapped.statistics()["num_zones"] == 20


def test_merge_orders_zones_and_refuses_other_zone_sizes(tmp_path):
    vals = pa.array(np.arange(400), pa.int64())
    data, _ = training(vals, 100)
    segs = []
    for i, fid in enumerate((3, 1)):  # out of fragment order
        t = data.table().filter(pa.array((data.table().column("_rowaddr").to_numpy() >> np.uint64(32)) == fid))
        store = IndexStore(str(tmp_path / f"s{i}"))
        ZONEMAP.train(TrainingData.from_table(pa.field("x", pa.int64()), t), store, {"rows_per_zone": 30})
        segs.append(ZONEMAP.load(IndexStore(str(tmp_path / f"s{i}")), None))
    details = ZONEMAP.merge(segs, IndexStore(str(tmp_path / "m")))
    merged = ZONEMAP.load(IndexStore(str(tmp_path / "m")), details)
    assert merged.zones.bounds.fragment_id.tolist() == [1] * 4 + [3] * 4
    assert merged.search(Equals(350, pa.int64())).rows.min() >> 32 == 3
    store = IndexStore(str(tmp_path / "other"))
    ZONEMAP.train(training(vals, 100)[0], store, {"rows_per_zone": 64})
    with pytest.raises(NotImplementedError):
        ZONEMAP.merge(segs + [ZONEMAP.load(IndexStore(str(tmp_path / "other")), None)], IndexStore(str(tmp_path / "x")))
