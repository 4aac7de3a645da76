"""BLOOMFILTER: xxHash64 and the split-block filter bits (``_sbbf``), filter sizing as Lance's,
answers that never miss a row, update, remap, and corrupt files refused."""
import numpy as np
import pyarrow as pa
import pytest

from lancefmt.errors import CorruptFileError, InvalidArgumentError
from lancefmt.index.core.registry import RowIdMapping, TrainingData
from lancefmt.index.core.store import IndexStore
from lancefmt.index.scalar import _sbbf
from lancefmt.index.scalar.bloomfilter import (BLOOM_FILE, BLOOMFILTER, Filters, filter_bytes, query_hashes,
                                               rust_float, value_hashes)
from lancefmt.sql.sargable import Equals, IsIn, IsNull, Range

# xxHash64 reference values (seed 0), from the algorithm's published test vectors
XXH64 = {b"": 0xEF46DB3751D8E999, b"a": 0xD24EC4F1A98C6E5B, b"abc": 0x44BC2CF5AD770999,
         b"Nobody inspects the spammish repetition": 0xFBCEA83C8A378BF1}


def u8(b: bytes) -> np.ndarray:
    return np.frombuffer(b, np.uint8) if b else np.empty(0, np.uint8)


def test_xxhash64_vectors():
    for data, want in XXH64.items():
        assert _sbbf.xxhash64(u8(data)) == want


def test_hash_fixed_and_var_agree_with_single_hashes():
    data = bytes(range(256)) * 3
    for width in (1, 2, 4, 8, 16, 32, 40):
        got = _sbbf.hash_fixed(u8(data[: width * 5]), width)
        assert got.tolist() == [_sbbf.xxhash64(u8(data[i * width:(i + 1) * width])) for i in range(5)]
    offsets = np.array([0, 0, 3, 40, 41, 100], np.int64)
    got = _sbbf.hash_var(offsets, u8(data))
    assert got.tolist() == [_sbbf.xxhash64(u8(data[a:b])) for a, b in zip(offsets[:-1], offsets[1:])]


def test_kernels_refuse_bad_input():
    with pytest.raises(ValueError):
        _sbbf.hash_fixed(u8(b"abc"), 2)
    with pytest.raises(ValueError):
        _sbbf.hash_var(np.array([0, 5, 3], np.int64), u8(b"abcdef"))
    with pytest.raises(ValueError):
        _sbbf.hash_var(np.array([0, 7], np.int64), u8(b"abcdef"))
    with pytest.raises(ValueError):
        _sbbf.insert(np.zeros((2, 8), np.uint32), np.array([2], np.int64), np.array([1], np.uint64))
    with pytest.raises(ValueError):
        _sbbf.insert(np.zeros((2, 7), np.uint32), np.array([0], np.int64), np.array([1], np.uint64))
    with pytest.raises(ValueError):
        _sbbf.probe(np.zeros(8, np.uint32), np.array([0], np.int64), np.array([2], np.int64),
                    np.array([1], np.uint64))


def test_inserted_values_are_always_found_and_few_others_are():
    rng = np.random.default_rng(1)
    hashes = rng.integers(0, 2**63, 3000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    nbytes = filter_bytes(1000, 0.01)
    filters = np.zeros((3, nbytes // 4), np.uint32)
    zone = np.repeat(np.arange(3, dtype=np.int64), 1000)
    _sbbf.insert(filters, zone, hashes)
    f = Filters.from_rows(filters)
    for z in range(3):
        for h in hashes[z * 1000:(z + 1) * 1000:50]:
            assert f.probe(np.array([h], np.uint64))[z]
    others = rng.integers(0, 2**63, 2000, dtype=np.uint64) * np.uint64(2)
    false_hits = sum(f.probe(np.array([h], np.uint64)).sum() for h in others[:500])
    assert false_hits < 0.05 * 1500
    # every bit set by one hash: 8 bits in one block
    one = np.zeros((1, 16), np.uint32)
    _sbbf.insert(one, np.zeros(1, np.int64), np.array([0x0123456789ABCDEF], np.uint64))
    assert sum(bin(int(w)).count("1") for w in one[0]) == 8


def test_filter_sizes_match_lance():
    # sizes pylance 14 wrote: 8192 items at 0.00057 -> 32 KiB; 64 at 0.01 -> 128 B; 3 -> one block
    assert filter_bytes(8192, 0.00057) == 32768
    assert filter_bytes(64, 0.01) == 128 and filter_bytes(3, 0.01) == 32
    assert filter_bytes(10**9, 1e-9) == 1 << 27


def test_probability_written_as_rust_displays_it():
    assert rust_float(0.00057) == "0.00057" and rust_float(1e-5) == "0.00001" and rust_float(0.5) == "0.5"


def test_value_hashes_per_type():
    assert value_hashes(pa.array([7], pa.int64())).tolist() == [_sbbf.xxhash64(u8((7).to_bytes(8, "little")))]
    assert value_hashes(pa.array([7], pa.int8())).tolist() == [_sbbf.xxhash64(u8(b"\x07"))]
    assert value_hashes(pa.array(["héllo"])).tolist() == [_sbbf.xxhash64(u8("héllo".encode()))]
    sliced = pa.array(["a", "bc", "def"], pa.large_string()).slice(1)
    assert value_hashes(sliced).tolist() == [_sbbf.xxhash64(u8(b"bc")), _sbbf.xxhash64(u8(b"def"))]
    f = pa.array([1.5], pa.float32())
    assert value_hashes(f).tolist() == [_sbbf.xxhash64(u8(np.float32(1.5).tobytes()))]
    # = 0.0 probes both zeros
    assert len(query_hashes([0.0], pa.float64())) == 2 and len(query_hashes([1.0], pa.float64())) == 1


# -- train, load, search ------------------------------------------------------------------------
def training(values, per_fragment, deleted=()):
    n = len(values)
    idx = np.arange(n)
    addr = ((idx // per_fragment).astype(np.uint64) << np.uint64(32)) | (idx % per_fragment).astype(np.uint64)
    keep = ~np.isin(idx, np.asarray(deleted, dtype=np.int64))
    t = pa.table({"value": values.filter(pa.array(keep)), "_rowid": pa.array(addr[keep]),
                  "_rowaddr": pa.array(addr[keep])})
    return TrainingData.from_table(pa.field("x", values.type), t), t


def build(tmp_path, values, per_fragment=100, deleted=(), **params):
    data, table = training(values, per_fragment, deleted)
    details = BLOOMFILTER.train(data, IndexStore(str(tmp_path / "idx")), params)
    return BLOOMFILTER.load(IndexStore(str(tmp_path / "idx")), details), table


def rows_equal(table, value) -> np.ndarray:
    v = table.column("value").to_pylist()
    addr = table.column("_rowaddr").to_numpy()
    return np.array([a for a, x in zip(addr, v) if x is not None and x == value], np.uint64)


@pytest.mark.parametrize("values,probe,absent", [
    (pa.array(np.arange(1000) * 7919 % 1000, pa.int64()), 123, 5000),
    (pa.array([f"key-{i}" if i % 13 else None for i in range(1000)]), "key-77", "nope"),
    (pa.array([bytes([i % 256, i // 256]) for i in range(1000)], pa.binary()), bytes([5, 1]), b"zz"),
    (pa.array(np.arange(1000), pa.uint16()), 999, 1001),
    (pa.array(np.arange(1000), pa.int32()).cast(pa.date32()), pa.scalar(17, pa.int32()).cast(pa.date32()).as_py(), None),
])
def test_equals_and_in_never_miss(tmp_path, values, probe, absent):
    index, table = build(tmp_path, values, per_fragment=300, deleted=[1, 2, 500], number_of_items=64,
                         probability=0.01)
    t = values.type
    got = index.search(Equals(probe, t))
    assert got.addresses and not got.exact
    assert np.isin(rows_equal(table, probe), got.rows).all() and got.rows.size < table.num_rows
    if absent is not None:
        assert index.search(Equals(absent, t)).rows.size <= 2 * 64  # a false positive at most
        both = index.search(IsIn((probe, absent), t))
        assert np.isin(got.rows, both.rows).all()
    nulls = index.search(IsNull())
    assert nulls.exact and nulls.rows.size == table.column("value").null_count


def test_float_zero_and_nan(tmp_path):
    v = pa.array([1.0, -0.0, 2.0, 3.0, 0.0, 4.0, float("nan"), 5.0], pa.float64())
    index, table = build(tmp_path, v, per_fragment=8, number_of_items=2, probability=0.01)
    assert {1, 4} <= set(index.search(Equals(0.0, pa.float64())).rows.tolist())
    assert {1, 4} <= set(index.search(Equals(-0.0, pa.float64())).rows.tolist())
    assert index.search(IsIn((float("nan"),), pa.float64())).rows.size == 8
    with pytest.raises(InvalidArgumentError):
        index.search(Range(1.0, True, None, False, pa.float64()))


def test_statistics_and_params(tmp_path):
    index, _ = build(tmp_path, pa.array(range(250), pa.int64()), number_of_items=100, probability=0.02)
    assert index.statistics() == {"type": "BloomFilter", "num_blocks": 3, "number_of_items": 100,
                                  "probability": 0.02}
    meta = IndexStore(str(tmp_path / "idx")).schema_metadata(BLOOM_FILE)
    assert meta[b"bloomfilter_probability" if b"bloomfilter_probability" in meta else "bloomfilter_probability"] \
        in (b"0.02", "0.02")
    for bad in ({"probability": 0}, {"probability": 1.5}, {"number_of_items": 0}):
        with pytest.raises(InvalidArgumentError):
            BLOOMFILTER.train(training(pa.array([1]), 5)[0], IndexStore("memory://x"), bad)
    for t in (pa.bool_(), pa.float16(), pa.decimal128(5, 2), pa.list_(pa.int8()), pa.binary(4)):
        with pytest.raises(InvalidArgumentError):
            BLOOMFILTER.check_field(pa.field("c", t))


def test_update_and_remap(tmp_path):
    index, table = build(tmp_path, pa.array(np.arange(600), pa.int64()), per_fragment=200, number_of_items=50,
                         probability=0.01)
    addr = (np.uint64(8) << np.uint64(32)) | np.arange(3, dtype=np.uint64)
    new = TrainingData.from_table(pa.field("x", pa.int64()), pa.table(
        {"value": pa.array([9000, None, 9002], pa.int64()), "_rowid": pa.array(addr), "_rowaddr": pa.array(addr)}))
    details = index.update(new, IndexStore(str(tmp_path / "u")), lambda a: (a >> np.uint64(32)) != 2)
    up = BLOOMFILTER.load(IndexStore(str(tmp_path / "u")), details)
    assert 2 not in up.zones.bounds.fragment_id.tolist()
    assert up.search(Equals(9002, pa.int64())).rows.tolist() == addr.tolist()  # its one zone
    assert up.search(Equals(450, pa.int64())).rows.size == 0  # its fragment was dropped
    assert up.search(IsNull()).rows.tolist() == [int(addr[1])]
    # compact fragments 0 and 1 (offset 5 of fragment 0 deleted before) into fragment 11
    old = table.column("_rowaddr").to_numpy()[:400]
    old = old[old != 5]
    new_addr = (np.uint64(11) << np.uint64(32)) | np.arange(old.size, dtype=np.uint64)
    details = up.remap(RowIdMapping(old, new_addr, np.empty(0, np.uint64)), IndexStore(str(tmp_path / "r")))
    rm = BLOOMFILTER.load(IndexStore(str(tmp_path / "r")), details)
    assert set(rm.zones.bounds.fragment_id.tolist()) == {8, 11}
    vals = (old & np.uint64(0xFFFFFFFF)) + (old >> np.uint64(32)) * np.uint64(200)
    for i in range(0, old.size, 37):
        assert int(new_addr[i]) in set(rm.search(Equals(int(vals[i]), pa.int64())).rows.tolist())
    assert rm.search(IsNull()).rows.tolist() == [int(addr[1])]


def test_corrupt_files(tmp_path):
    _, _ = build(tmp_path, pa.array(range(300), pa.int64()), number_of_items=100, probability=0.01)
    src = (tmp_path / "idx" / BLOOM_FILE).read_bytes()
    for i, cut in enumerate([len(src) // 2, len(src) - 3, 10]):
        d = tmp_path / f"t{i}"
        d.mkdir()
        (d / BLOOM_FILE).write_bytes(src[:cut])
        with pytest.raises(CorruptFileError) as e:
            BLOOMFILTER.load(IndexStore(str(d)), None)
        assert BLOOM_FILE in (e.value.path or "")
    t = IndexStore(str(tmp_path / "idx")).read_table(BLOOM_FILE)
    bad = t.set_column(4, "bloom_filter_data", pa.array([b"x" * 31, b"", b"y" * 32], pa.binary()))
    store = IndexStore(str(tmp_path / "bad"))
    store.write_table(BLOOM_FILE, bad, {"bloomfilter_item": "100", "bloomfilter_probability": "0.01"})
    with pytest.raises(CorruptFileError):
        BLOOMFILTER.load(IndexStore(str(tmp_path / "bad")), None)
    store.write_table(BLOOM_FILE, t, {"bloomfilter_item": "-4", "bloomfilter_probability": "0.01"})
    with pytest.raises(CorruptFileError):
        BLOOMFILTER.load(IndexStore(str(tmp_path / "bad")), None)
    rng = np.random.default_rng(2)
    for i in range(30):
        buf = bytearray(src)
        buf[int(rng.integers(0, len(buf)))] ^= 0x10
        d = tmp_path / f"f{i}"
        d.mkdir()
        (d / BLOOM_FILE).write_bytes(bytes(buf))
        try:
            BLOOMFILTER.load(IndexStore(str(d)), None).search(Equals(5, pa.int64()))
        except CorruptFileError as e:
            assert BLOOM_FILE in (e.path or "")


def test_merge_refuses_other_parameters(tmp_path):
    a, _ = build(tmp_path / "a", pa.array(range(100), pa.int64()), number_of_items=50, probability=0.01)
    b, _ = build(tmp_path / "b", pa.array(range(100), pa.int64()), number_of_items=60, probability=0.01)
    with pytest.raises(NotImplementedError):
        BLOOMFILTER.merge([a, b], IndexStore(str(tmp_path / "m")))
    details = BLOOMFILTER.merge([a, a], IndexStore(str(tmp_path / "m2")))
    assert BLOOMFILTER.load(IndexStore(str(tmp_path / "m2")), details).statistics()["num_blocks"] == 4
