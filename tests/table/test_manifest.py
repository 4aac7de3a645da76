import random
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from lancefmt import CorruptFileError, DatasetNotFoundError, LanceError, UnsupportedFeatureError
from lancefmt._proto import table_pb2
from lancefmt.io import open_store
from lancefmt.table import manifest as mf
from lancefmt.table.manifest import (encode_manifest_file, parse_manifest_file, read_manifest,
                                     write_manifest_file)

from table_factory import (make_index_section, make_manifest, make_transaction,
                           reference_columns)


def _check_view(m, view):
    ref = reference_columns(m)
    for key in ("ids", "physical_rows", "num_deleted_rows", "has_deletion_file",
                "deletion_file_type", "deletion_base_id", "num_data_files", "base_id",
                "has_row_ids", "file_base_id", "file_size_bytes", "file_major_version",
                "file_minor_version"):
        np.testing.assert_array_equal(getattr(view, key), ref[key], err_msg=key)
    has = ref["has_deletion_file"]
    np.testing.assert_array_equal(view.deletion_id[has], ref["deletion_id"][has])
    np.testing.assert_array_equal(view.deletion_read_version[has], ref["deletion_read_version"][has])
    assert view.data_file_paths().to_pylist() == ref["paths"]
    assert view.ids.dtype == np.uint64 and view.physical_rows.dtype == np.uint64
    assert view.base_id.dtype == np.int64
    offs = view.data_file_offsets
    assert offs[0] == 0 and offs[-1] == view.num_files
    np.testing.assert_array_equal(view.file_fragment_index,
                                  np.repeat(np.arange(len(view)), ref["num_data_files"]))
    for i in range(0, len(view), max(1, len(view) // 7)):
        assert view.fragment(i) == m.fragments[i]
        assert view.fragment_by_id(int(view.ids[i])) == m.fragments[i]
    assert view.total_physical_rows == int(ref["physical_rows"].sum())
    assert view.total_deleted_rows == int(ref["num_deleted_rows"].sum())
    assert view.total_live_rows == view.total_physical_rows - view.total_deleted_rows


@pytest.mark.parametrize("seed", range(6))
def test_encode_then_parse_round_trip(seed):
    m = make_manifest(50 + seed * 30, seed, row_ids=seed % 2 == 1)
    txn = make_transaction()
    idx = make_index_section() if seed % 3 else None
    data = encode_manifest_file(m, txn, idx)
    f = parse_manifest_file(data, "mem")
    assert f.manifest == m
    assert f.transaction() == txn
    assert f.index_section() == idx
    assert f.indices == (list(idx.indices) if idx else [])
    assert f.version == m.version and f.timestamp_ns == 1_795_000_000_123_456_789
    assert f.data_storage_version == "2.1"
    header = table_pb2.Manifest()
    header.CopyFrom(m)
    header.ClearField("fragments")
    assert f.header == header
    _check_view(m, f.fragments)
    # re-encoding what was read reproduces the file byte for byte
    assert encode_manifest_file(f.manifest, f.transaction(), f.index_section()) == data


def test_layout_matches_lance():
    m = make_manifest(3, 1)
    txn = make_transaction()
    idx = make_index_section()
    data = encode_manifest_file(m, txn, idx)
    idx_len = struct.unpack_from("<I", data, 0)[0]
    assert m.index_section == 0
    assert m.transaction_section == 4 + idx_len
    assert not m.HasField("transaction_section_deprecated")
    txn_len = struct.unpack_from("<I", data, m.transaction_section)[0]
    pos = m.transaction_section + 4 + txn_len
    assert data[-16:] == struct.pack("<qhh", pos, 0, 2) + b"LANC"
    assert struct.unpack_from("<I", data, pos)[0] == len(data) - pos - 4 - 16
    # no indices: no index section, the transaction comes first
    data2 = encode_manifest_file(m, txn, [])
    assert not m.HasField("index_section") and m.transaction_section == 0
    f2 = parse_manifest_file(data2)
    assert f2.index_section() is None and f2.transaction() == txn
    assert struct.unpack_from("<q", data2, len(data2) - 16)[0] == 4 + txn_len
    # no transaction at all
    data3 = encode_manifest_file(m)
    assert not m.HasField("transaction_section")
    assert parse_manifest_file(data3).transaction() is None


def test_field_21_fallback():
    m = make_manifest(2, 0)
    txn = make_transaction(7)
    data = bytearray(encode_manifest_file(m, txn))
    # rewrite field 23 into the deprecated field 21, as older writers did
    m2 = table_pb2.Manifest()
    m2.CopyFrom(m)
    m2.ClearField("transaction_section")
    m2.transaction_section_deprecated = m.transaction_section
    body = m2.SerializeToString()
    pos = m.transaction_section + 4 + len(txn.SerializeToString())
    new = bytes(data[:pos]) + struct.pack("<I", len(body)) + body + struct.pack("<qhh4s", pos, 0, 2, b"LANC")
    f = parse_manifest_file(new)
    assert f.transaction_offset == m.transaction_section
    assert f.transaction() == txn


def test_empty_manifest():
    m = table_pb2.Manifest(version=1)
    f = parse_manifest_file(encode_manifest_file(m))
    assert len(f.fragments) == 0 and f.fragments.num_files == 0
    assert f.fragments.total_live_rows == 0
    assert f.fragments.data_file_paths().to_pylist() == []
    assert f.fragments.summary()["total_fragments"] == "0"
    assert f.data_storage_version == "0.1"


def test_summary_matches_lance_rules():
    m = table_pb2.Manifest(version=2)
    a = m.fragments.add(id=0, physical_rows=10)
    a.files.add(path="a", file_size_bytes=100)
    a.deletion_file.num_deleted_rows = 3
    b = m.fragments.add(id=1, physical_rows=5)
    b.files.add(path="b", file_size_bytes=0)
    b.files.add(path="c", file_size_bytes=7)
    c = m.fragments.add(id=2, physical_rows=4)
    c.deletion_file.id = 1  # count unknown: the fragment's rows are not counted
    s = parse_manifest_file(encode_manifest_file(m)).fragments.summary()
    assert s == {"total_data_file_rows": "15", "total_data_files": "3",
                 "total_deletion_file_rows": "3", "total_deletion_files": "2",
                 "total_files_size": "107", "total_fragments": "3", "total_rows": "12"}


def test_unknown_fields_survive():
    m = make_manifest(4, 2)
    # field 99 (varint) at manifest level and inside fragment 1: readers must skip and keep them
    m.fragments[1].MergeFromString(b"\x98\x06\x2a")
    m.MergeFromString(b"\x98\x06\x07")
    data = encode_manifest_file(m, make_transaction())
    f = parse_manifest_file(data)
    _check_view(m, f.fragments)
    again = encode_manifest_file(f.manifest, f.transaction())
    assert again == data
    assert b"\x98\x06\x2a" in f.fragments.fragment_bytes(1).tobytes()


def test_read_from_store_small_prefetch(tmp_path, monkeypatch):
    m = make_manifest(200, 3)
    txn = make_transaction()
    idx = make_index_section()
    uri = str(tmp_path / "1.manifest")
    size = write_manifest_file(uri, m, txn, idx)
    assert size == (tmp_path / "1.manifest").stat().st_size
    assert write_manifest_file(uri, m, txn, idx) is None  # exists: nothing written
    for prefetch in (16, 64, 1000, 1 << 16):
        monkeypatch.setattr(mf, "PREFETCH_SIZE", prefetch)
        f = read_manifest(uri)
        assert f.manifest == m and f.transaction() == txn and f.index_section() == idx
        _check_view(m, f.fragments)
        f2 = read_manifest(uri, size=size)
        assert f2.size == size
        f3 = read_manifest(uri, size=size + 5)  # a wrong known size is retried
        assert f3.size == size and f3.manifest == m
        f4 = read_manifest(uri, size=size - 3)
        assert f4.size == size


def test_memory_store_and_overwrite(memory_uri):
    uri = memory_uri + "/_versions/x.manifest"
    m = make_manifest(5, 4)
    assert write_manifest_file(uri, m) is not None
    m.version = 99
    assert write_manifest_file(uri, m, overwrite=True) is not None
    assert read_manifest(uri).version == 99
    assert read_manifest(uri, store=open_store(uri)).version == 99


def test_missing_manifest(tmp_path):
    with pytest.raises(DatasetNotFoundError):
        read_manifest(str(tmp_path / "none.manifest"))
    with pytest.raises(DatasetNotFoundError):
        read_manifest(str(tmp_path))  # a directory is not a manifest


# -- corrupt files -----------------------------------------------------------------------------

def _good():
    return encode_manifest_file(make_manifest(10, 5), make_transaction(), make_index_section())


def _expect_corrupt(data, match=None):
    with pytest.raises(CorruptFileError, match=match) as e:
        f = parse_manifest_file(data, "/ds/_versions/bad.manifest")
        f.manifest, f.transaction(), f.index_section()
    assert e.value.path == "/ds/_versions/bad.manifest"


def test_too_small_and_bad_magic():
    _expect_corrupt(b"", "smaller")
    _expect_corrupt(b"LANC", "smaller")
    data = _good()
    _expect_corrupt(data[:-1] + b"X", "magic")


@pytest.mark.parametrize("pos", [-1, -(1 << 62), 1 << 40, 10**6])
def test_bad_footer_offset(pos):
    data = _good()
    _expect_corrupt(data[:-16] + struct.pack("<qhh4s", pos, 0, 2, b"LANC"), "offset")


def test_length_mismatch():
    data = bytearray(_good())
    pos = struct.unpack_from("<q", data, len(data) - 16)[0]
    struct.pack_into("<I", data, pos, struct.unpack_from("<I", data, pos)[0] + 1)
    _expect_corrupt(bytes(data), "length")


def _with_manifest(m, pre=b""):
    body = m if isinstance(m, bytes) else m.SerializeToString()
    return pre + struct.pack("<I", len(body)) + body + struct.pack("<qhh4s", len(pre), 0, 2, b"LANC")


def test_wrong_wire_type_and_truncated_fragment():
    _expect_corrupt(_with_manifest(b"\x10\x05"), "wire type")          # fragments as a varint
    _expect_corrupt(_with_manifest(b"\x12\x05\x08\x01"), "malformed")  # fragment longer than message
    _expect_corrupt(_with_manifest(b"\x12\x02\x20\x81"), "malformed")  # truncated varint inside
    _expect_corrupt(_with_manifest(b"\x12\x02\x0a\x00"), "wire type")  # fragment id as bytes


def test_bad_utf8_path():
    frag = b"\x12\x03\x0a\x01\xff"       # files = [DataFile{path = b"\xff"}]
    _expect_corrupt(_with_manifest(b"\x12" + bytes([len(frag)]) + frag), "UTF-8")


def test_unknown_deletion_type_is_unsupported():
    m = table_pb2.Manifest(version=1)
    m.fragments.add(id=0, physical_rows=3).deletion_file.file_type = 5
    with pytest.raises(UnsupportedFeatureError, match="unknown type 5"):
        parse_manifest_file(encode_manifest_file(m), "p")


def test_stable_row_ids_need_row_ids_everywhere():
    m = make_manifest(5, 1, row_ids=True)
    m.fragments[3].ClearField("inline_row_ids")
    with pytest.raises(CorruptFileError, match="no row ids"):
        parse_manifest_file(encode_manifest_file(m), "p")


def test_section_offsets_outside_the_file():
    m = make_manifest(3, 1)
    m.index_section = 10**6
    m.transaction_section = 5  # its u32 length overlaps the manifest's prefix: runs past
    f = parse_manifest_file(_with_manifest(m, b"\x00" * 8))
    with pytest.raises(CorruptFileError):
        f.index_section()
    with pytest.raises(CorruptFileError):
        f.transaction()


# -- fuzz ------------------------------------------------------------------------------------

def _exercise(data):
    try:
        f = parse_manifest_file(data, "fuzz")
        f.manifest
        f.transaction()
        f.index_section()
        v = f.fragments
        v.data_file_paths().validate(full=True)
        v.summary()
        if len(v):
            v.fragment(len(v) - 1)
        f.data_storage_version
    except LanceError:
        pass


def _fuzz_corpus():
    out = [_good(), encode_manifest_file(make_manifest(40, 9, row_ids=True), make_transaction())]
    return out


def test_seeded_mutations_only_raise_lance_errors():
    rng = random.Random(1234)
    for base in _fuzz_corpus():
        for _ in range(1500):
            data = bytearray(base)
            kind = rng.random()
            if kind < 0.3:
                data = data[:rng.randrange(len(data))]
            elif kind < 0.6:
                for _ in range(rng.randint(1, 4)):
                    i = rng.randrange(len(data))
                    data[i] ^= 1 << rng.randrange(8)
            elif kind < 0.8:
                # damage the protobuf but keep the footer consistent
                pos = struct.unpack_from("<q", data, len(data) - 16)[0]
                i = rng.randrange(max(pos + 4, 0), len(data) - 16)
                data[i] = rng.randrange(256)
            else:
                i = rng.randrange(len(data))
                data[i:i] = rng.randbytes(rng.randint(1, 8))
            _exercise(bytes(data))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=-5, max_value=400))
def test_arbitrary_bytes_with_valid_footer(body, pos):
    data = body + struct.pack("<qhh4s", pos, 0, 2, b"LANC")
    _exercise(data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_manifest_message(body):
    _exercise(_with_manifest(body))


def test_position_lookup_sorted_and_unsorted():
    m = make_manifest(30, 8)
    view = parse_manifest_file(encode_manifest_file(m)).fragments
    for i, f in enumerate(m.fragments):
        assert view.position(f.id) == i
    with pytest.raises(KeyError):
        view.position(10**9)
    with pytest.raises(KeyError):
        view.position(-1)
    m.fragments[0].id, m.fragments[5].id = m.fragments[5].id, m.fragments[0].id
    view = parse_manifest_file(encode_manifest_file(m)).fragments
    assert view.position(m.fragments[0].id) == 0 and view.position(m.fragments[5].id) == 5
    with pytest.raises(KeyError):
        view.position(10**9)


def test_paths_array_is_arrow():
    f = parse_manifest_file(_good())
    paths = f.fragments.data_file_paths()
    assert paths.type == pa.string()
    assert f.fragments.to_arrow().num_rows == len(f.fragments)


def _manifest_with_path(path: bytes) -> bytes:
    """A manifest with one fragment whose one DataFile.path holds raw ``path`` bytes."""
    body = b"\x0a" + _varint(len(path)) + path
    frag = b"\x12" + _varint(len(body)) + body
    return _with_manifest(b"\x12" + _varint(len(frag)) + frag)


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=40), st.text(max_size=20).map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_path_utf8_check_agrees_with_python(path):
    try:
        text = path.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    data = _manifest_with_path(path)
    if text is None:
        with pytest.raises(CorruptFileError, match="UTF-8"):
            parse_manifest_file(data)
    else:
        assert parse_manifest_file(data).fragments.data_file_paths().to_pylist() == [text]
