"""LanceFileWriter: layout, DataFile facts, streaming, atomicity, errors."""
import os

import numpy as np
import pyarrow as pa
import pytest

from lancefmt.errors import InvalidArgumentError, UnsupportedFeatureError
from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter as _Writer


def LanceFileWriter(*args, version="2.0", **kwargs):
    """These tests are about the 2.0 layout (the writer's default is 2.2)."""
    return _Writer(*args, version=version, **kwargs)
from lancefmt.file.format import ALIGNMENT, Footer
from lancefmt.file.schema import fields_from_arrow
from lancefmt.io import open_store


def test_datafile_facts(tmp_path):
    schema = pa.schema([("a", pa.int32()), ("s", pa.struct([("x", pa.list_(pa.int8())), ("y", pa.string())])),
                        ("p", pa.struct([("u", pa.int32()), ("w", pa.float64())]),
                         True, {"lance-encoding:packed": "true"}),
                        ("v", pa.list_(pa.float32(), 4))])
    path = str(tmp_path / "f.lance")
    w = LanceFileWriter(path, schema)
    assert w.version == (2, 0)
    assert w.close() == 0
    # every field allocates a column in pre-order; the packed struct's children do not
    assert w.field_ids == [0, 1, 2, 3, 4, 5, 8]
    assert w.column_indices == [0, 1, 2, 3, 4, 5, 6]
    assert w.file_size == os.path.getsize(path) and w.num_rows == 0
    assert LanceFileReader(path).num_columns == 7


def test_fields_argument_carries_dataset_ids(tmp_path):
    schema = pa.schema([("a", pa.int64()), ("l", pa.list_(pa.string()))])
    fields = fields_from_arrow(schema, start_id=40)
    path = str(tmp_path / "f.lance")
    t = pa.table({"a": [1, 2], "l": [["x"], None]}, schema=schema)
    with LanceFileWriter(path, fields=fields) as w:
        w.write_batch(t)
    assert w.field_ids == [40, 41, 42] and w.column_indices == [0, 1, 2]
    r = LanceFileReader(path)
    assert [f.id for f in r.fields] == [40, 41, 42]
    assert r.read_all().equals(t)
    with pytest.raises(InvalidArgumentError):
        LanceFileWriter(str(tmp_path / "g.lance"), pa.schema([("a", pa.int32())]), fields=fields)


def test_schema_from_first_batch_and_tables(tmp_path):
    t = pa.table({"a": pa.array(np.arange(10)), "b": pa.array([str(i) for i in range(10)])})
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path) as w:
        w.write_batch(t.slice(0, 4))
        w.write_batch(t.slice(4).to_batches()[0])
    assert w.num_rows == 10
    assert LanceFileReader(path).read_all().equals(t)


def test_pages_are_aligned_and_capped(tmp_path):
    n = 100_000
    t = pa.table({"a": pa.array(np.arange(n)), "s": pa.array(np.char.mod("%07d", np.arange(n)).astype(object))})
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema, max_page_bytes=64 * 1024, page_buffer_bytes=256 * 1024) as w:
        for b in t.to_batches(max_chunksize=7000):
            w.write_batch(b)
    r = LanceFileReader(path)
    data = open(path, "rb").read()
    for col in r.metadata.columns:
        assert len(col.pages) > 5
        for p in col.pages:
            for o, s in zip(p.buffer_offsets, p.buffer_sizes):
                assert o % ALIGNMENT == 0
                assert s <= 64 * 1024 + 1024
                pad = (-s) % ALIGNMENT
                assert data[o + s:o + s + pad] == b"H" * pad
    footer = Footer.parse(data[-40:], len(data))
    assert (footer.major, footer.minor) == (0, 3)
    assert r.read_all().equals(t)


def test_memory_is_bounded_by_page_buffer(tmp_path, monkeypatch):
    """Pages leave the writer as soon as a column's buffer fills, not at close."""
    t = pa.table({"a": pa.array(np.arange(200_000))})
    path = str(tmp_path / "f.lance")
    w = LanceFileWriter(path, t.schema, page_buffer_bytes=100_000)
    for b in t.to_batches(max_chunksize=20_000):
        w.write_batch(b)
        assert w._writers[0].pending_bytes < 100_000 + 20_000 * 8
    assert len(w._pages[0]) >= 10
    w.close()


def test_version_argument(tmp_path):
    for v, expected in (("2.0", (2, 0)), ("2.1", (2, 1)), ("2.2", (2, 2)), ("stable", (2, 2))):
        assert LanceFileWriter(str(tmp_path / "f.lance"), pa.schema([("a", pa.int8())]),
                               version=v).version == expected
    assert _Writer(str(tmp_path / "f.lance"), pa.schema([("a", pa.int8())])).version == (2, 2)
    for v in ("legacy", "0.1", "0.2", (0, 1)):  # the legacy format's own writer
        w = LanceFileWriter(str(tmp_path / "f.lance"), pa.schema([("a", pa.int8())]), version=v)
        assert type(w).__name__ == "LegacyFileWriter" and w.version == (0, 2)
        w.abort()
    with pytest.raises(UnsupportedFeatureError):
        LanceFileWriter(str(tmp_path / "f.lance"), pa.schema([("a", pa.int8())]), version="9.9")


def test_struct_nulls_are_refused_and_nothing_is_left(tmp_path):
    path = str(tmp_path / "f.lance")
    t = pa.table({"s": pa.array([{"x": 1}, None])})
    with pytest.raises(InvalidArgumentError, match="2.0 cannot store"):
        with LanceFileWriter(path, t.schema) as w:
            w.write_batch(t)
    assert os.listdir(tmp_path) == []


def test_failed_write_leaves_no_file(tmp_path):
    path = str(tmp_path / "f.lance")
    t = pa.table({"a": pa.array(np.arange(300_000))})
    with pytest.raises(RuntimeError):
        with LanceFileWriter(path, t.schema, page_buffer_bytes=10_000) as w:
            w.write_batch(t)
            raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []
    w = LanceFileWriter(path, t.schema)
    w.write_batch(t)
    w.abort()
    assert os.listdir(tmp_path) == []


def test_failed_batch_then_close_refuses(tmp_path):
    path = str(tmp_path / "f.lance")
    w = LanceFileWriter(path, pa.schema([("s", pa.struct([("x", pa.int8())]))]))
    with pytest.raises(InvalidArgumentError):
        w.write_batch(pa.table({"s": pa.array([None], pa.struct([("x", pa.int8())]))}))
    with pytest.raises(InvalidArgumentError, match="earlier write failed"):
        w.close()
    assert not os.path.exists(path)


def test_schema_mismatch(tmp_path):
    w = LanceFileWriter(str(tmp_path / "f.lance"), pa.schema([("a", pa.int32())]))
    with pytest.raises(InvalidArgumentError, match="does not match"):
        w.write_batch(pa.table({"a": pa.array([1], pa.int64())}))
    with pytest.raises(InvalidArgumentError):
        w.write_batch([1, 2])
    w.abort()


def test_no_schema(tmp_path):
    w = LanceFileWriter(str(tmp_path / "f.lance"))
    with pytest.raises(InvalidArgumentError, match="Schema is unknown"):
        w.close()


def test_unsupported_types(tmp_path):
    with pytest.raises(InvalidArgumentError, match="fixed-size list"):
        LanceFileWriter(str(tmp_path / "f.lance"), pa.schema([("v", pa.list_(pa.string(), 2))]))
    with pytest.raises(UnsupportedFeatureError):
        LanceFileWriter(str(tmp_path / "f.lance"), pa.schema([("m", pa.map_(pa.int8(), pa.int8()))]))


def test_memory_store_and_failed_memory_write(memory_uri):
    uri = memory_uri + "/f.lance"
    t = pa.table({"a": pa.array([1, 2, 3])})
    with LanceFileWriter(uri, t.schema) as w:
        w.write_batch(t)
    assert LanceFileReader(uri).read_all().equals(t)
    other = memory_uri + "/g.lance"
    with pytest.raises(RuntimeError):
        with LanceFileWriter(other, t.schema) as w:
            w.write_batch(t)
            raise RuntimeError("boom")
    assert not open_store(other).exists(other)


def test_extension_types_round_trip(tmp_path):
    t = pa.table({"u": pa.array([b"0" * 16, None], pa.binary(16)).cast(pa.uuid())})
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema) as w:
        w.write_batch(t)
    r = LanceFileReader(path)
    assert r.fields[0].extension_name == "arrow.uuid"
    assert r.read_all().equals(t)
    assert r.take([1, 0]).equals(t.take([1, 0]))


def test_s3(s3_uri):
    uri, options = s3_uri
    t = pa.table({"a": pa.array(np.arange(1000)), "s": pa.array([str(i) for i in range(1000)])})
    with LanceFileWriter(uri + "/f.lance", t.schema, storage_options=options) as w:
        w.write_batch(t)
    r = LanceFileReader(uri + "/f.lance", storage_options=options)
    assert r.read_all().equals(t)
    assert r.read_range(10, 20).equals(t.slice(10, 10))
