"""LanceFileReader: reads, projections, sources and errors (files written by our writer)."""
import io
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pytest

from lancefmt.errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from lancefmt.file import Projection
from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter as _Writer


def LanceFileWriter(*args, version="2.0", **kwargs):
    """These tests are about the 2.0 layout (the writer's default is 2.2)."""
    return _Writer(*args, version=version, **kwargs)
from lancefmt.file.schema import fields_from_arrow, project_fields
from lancefmt.io import open_store


def sample(n=2000):
    return pa.table({
        "i": pa.array(np.arange(n, dtype=np.int64)),
        "s": pa.array([None if k % 5 == 0 else f"s{k}" for k in range(n)]),
        "l": pa.array([None if k % 7 == 0 else list(range(k % 4)) for k in range(n)],
                      pa.list_(pa.int32())),
        "st": pa.array([{"x": k, "y": [str(k)] * (k % 3)} for k in range(n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(4 * n, dtype=np.float32)), 4),
    }).replace_schema_metadata({"origin": "test"})


@pytest.fixture
def small_pages(tmp_path):
    t = sample()
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema, max_page_bytes=700, page_buffer_bytes=1500) as w:
        for b in t.to_batches(max_chunksize=300):
            w.write_batch(b)
    return path, t


def test_identity(small_pages):
    path, t = small_pages
    r = LanceFileReader(path)
    assert r.num_rows == len(t) and r.version == (2, 0)
    assert r.schema.equals(t.schema, check_metadata=True)
    assert [f.name for f in r.fields] == ["i", "s", "l", "item", "st", "x", "y", "item", "v"]
    assert r.num_columns == 9
    assert r.schema_metadata == {"origin": b"test"}
    assert r.file_size == len(open(path, "rb").read())
    assert "rows=2000" in repr(r)


def test_reads(small_pages):
    path, t = small_pages
    r = LanceFileReader(path)
    assert r.read_all().equals(t)
    assert r.read_range(123, 1789).equals(t.slice(123, 1789 - 123))
    assert r.read_range(5, 5).num_rows == 0
    assert r.read_all(["v", "i"]).equals(t.select(["v", "i"]))
    idx = [1999, 0, 17, 17, 1000, 3]
    assert r.take(idx).equals(t.take(idx))
    assert r.take(np.array([], dtype=np.int64)).num_rows == 0
    batches = list(r.read_batches(batch_size=333))
    assert [b.num_rows for b in batches] == [333] * 6 + [2]
    assert pa.Table.from_batches(batches).equals(t)
    assert pa.Table.from_batches(list(r.read_batches(100, ["st"], start=50, stop=777))).equals(
        t.select(["st"]).slice(50, 727))


def test_range_reads_only_overlapping_pages(small_pages, monkeypatch):
    path, t = small_pages
    r = LanceFileReader(path)
    fetched = []
    orig = r._source.fetch_scattered  # reads go through the memory map
    monkeypatch.setattr(r._source, "fetch_scattered", lambda ranges: fetched.extend(ranges) or orig(ranges))
    r.read_range(10, 20, ["i"])
    col = r.metadata.columns[0]
    pages = [col.pages[i] for i in col.page_range(10, 20)]
    assert len(col.pages) > 3 and len(pages) == 1
    assert fetched == [(int(o), int(s)) for p in pages for o, s in zip(p.buffer_offsets, p.buffer_sizes)]


def test_streaming_decodes_each_page_once(small_pages, monkeypatch):
    path, t = small_pages
    r = LanceFileReader(path)
    calls = []
    orig = r._source.fetch_scattered
    monkeypatch.setattr(r._source, "fetch_scattered", lambda ranges: calls.append(len(ranges)) or orig(ranges))
    total = sum(b.num_rows for b in r.read_batches(50, ["i"]))
    assert total == len(t)
    assert sum(calls) == sum(len(p.buffer_offsets) for p in r.metadata.columns[0].pages)


def test_sources(small_pages, memory_uri):
    path, t = small_pages
    data = open(path, "rb").read()
    assert LanceFileReader(io.BytesIO(data)).read_all().equals(t)
    assert LanceFileReader(path, file_size=len(data)).read_range(0, 10).equals(t.slice(0, 10))
    uri = memory_uri + "/f.lance"
    store = open_store(uri)
    store.put(uri, data)
    assert LanceFileReader(uri).read_all().equals(t)
    assert LanceFileReader(uri, store=store).take([3]).equals(t.take([3]))


def test_concurrent_reads_from_threads(small_pages):
    path, t = small_pages
    r = LanceFileReader(path)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda k: r.read_range(k * 100, k * 100 + 500), range(10)))
    for k, got in enumerate(results):
        assert got.equals(t.slice(k * 100, 500))


def test_projection_by_field_ids(small_pages):
    path, t = small_pages
    r = LanceFileReader(path)
    # the dataset renamed "st" and stores the file under different (dataset) field ids
    ds_fields = fields_from_arrow(pa.schema([("id", pa.int64()), ("extra", pa.int8()),
                                             ("renamed", t.schema.field("st").type)]), start_id=100)
    wanted = project_fields(ds_fields, ["renamed", "id"])
    file_ids = [100, 101, 102, 103, 104, 105]   # DataFile.fields: dataset ids ...
    column_indices = [0, -1, 4, 5, 6, 7]        # ... and their columns (-1: not stored)
    proj = r.projection(fields=wanted, field_ids=file_ids, column_indices=column_indices)
    assert isinstance(proj, Projection) and proj.names == ["id", "renamed"]
    got = r.read_range(10, 30, proj)
    assert got.column_names == ["id", "renamed"]
    assert got["id"].equals(t["i"].slice(10, 20))
    assert got["renamed"].equals(t["st"].slice(10, 20))
    assert r.take([5, 1], proj)["renamed"].equals(t["st"].take([5, 1]))
    with pytest.raises(InvalidArgumentError, match="not stored"):
        r.projection(fields=project_fields(ds_fields, ["extra"]), field_ids=file_ids,
                     column_indices=column_indices)


def test_argument_errors(small_pages):
    path, _ = small_pages
    r = LanceFileReader(path)
    with pytest.raises(InvalidArgumentError):
        r.read_range(10, 5)
    with pytest.raises(InvalidArgumentError):
        r.read_range(0, 2001)
    with pytest.raises(InvalidArgumentError):
        r.take([2000])
    with pytest.raises(InvalidArgumentError):
        r.take([-1])
    with pytest.raises(InvalidArgumentError, match="no column"):
        r.read_all(["nope"])
    with pytest.raises(InvalidArgumentError):
        list(r.read_batches(0))
    with pytest.raises(InvalidArgumentError):
        r.projection(fields=r.fields)


def test_missing_file(tmp_path):
    with pytest.raises(CorruptFileError, match="not found"):
        LanceFileReader(str(tmp_path / "nope.lance"))


def test_global_buffer_zero_is_the_descriptor(small_pages):
    path, t = small_pages
    from lancefmt._proto import file_pb2

    fd = file_pb2.FileDescriptor.FromString(LanceFileReader(path).read_global_buffer(0))
    assert fd.length == len(t)


def test_page_layout_of_other_versions_is_refused(tmp_path):
    # A 2.0 file whose page claims the 2.1 layout type URL.
    from google.protobuf import any_pb2

    from lancefmt._proto import file2_pb2
    from lancefmt.file.format import Footer

    t = pa.table({"a": pa.array([1, 2, 3])})
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema) as w:
        w.write_batch(t)
    data = bytearray(open(path, "rb").read())
    footer = Footer.parse(bytes(data[-40:]), len(data))
    import struct

    pos, size = struct.unpack_from("<QQ", data, footer.cmo_offset)
    cm = file2_pb2.ColumnMetadata.FromString(bytes(data[pos:pos + size]))
    a = any_pb2.Any.FromString(cm.pages[0].encoding.direct.encoding)
    a.type_url = "/lance.encodings21.PageLayout"
    cm.pages[0].encoding.direct.encoding = a.SerializeToString()
    new = cm.SerializeToString()
    # rebuild the tail with the longer column metadata
    head = bytes(data[:pos])
    cmo_offset = pos + len(new)
    gbo = bytes(data[footer.gbo_offset:footer.gbo_offset + 16])
    tail = struct.pack("<QQ", pos, len(new)) + gbo + Footer(
        footer.column_meta_start, cmo_offset, cmo_offset + 16, 1, 1, 0, 3).to_bytes()
    open(path, "wb").write(head + new + tail)
    r = LanceFileReader(path)
    with pytest.raises(UnsupportedFeatureError, match="encodings21.PageLayout"):
        r.read_all()


def test_other_file_versions_are_refused(tmp_path):
    t = pa.table({"a": pa.array([1, 2, 3])})
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema) as w:
        w.write_batch(t)
    data = bytearray(open(path, "rb").read())
    data[-8:-4] = np.array([2, 3], np.uint16).tobytes()
    open(path, "wb").write(data)
    with pytest.raises(UnsupportedFeatureError, match="2.3"):
        LanceFileReader(path)
    # a legacy footer version sends the file to the legacy reader, which finds no legacy file
    for minor in (1, 2):
        data[-8:-4] = np.array([0, minor], np.uint16).tobytes()
        open(path, "wb").write(data)
        with pytest.raises(CorruptFileError) as e:
            LanceFileReader(path)
        assert path in str(e.value)
    # a 2.0 page under a 2.1 footer: the page layout is refused by name, with the file
    data[-8:-4] = np.array([2, 1], np.uint16).tobytes()
    open(path, "wb").write(data)
    with pytest.raises(UnsupportedFeatureError, match="lance.encodings.ArrayEncoding") as e:
        LanceFileReader(path).read_all()
    assert path in str(e.value)


@pytest.mark.parametrize("mapped", [False, True])
def test_take_reads_only_the_rows_bytes_of_fixed_width_pages(tmp_path, monkeypatch, mapped):
    """Without a memory map (remote stores) the rows' byte spans are fetched; with one (local
    files) the rows are gathered from the map and nothing is fetched for plain pages."""
    n = 50_000
    rng = np.random.default_rng(3)
    t = pa.table({
        "i": pa.array(rng.integers(0, 1000, n), mask=rng.random(n) < 0.3),
        "b": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.3),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 16, dtype=np.float32),
                                                        mask=rng.random(n * 16) < 0.1), 16,
                                               mask=pa.array(rng.random(n) < 0.2)),
        "vv": pa.FixedSizeListArray.from_arrays(
            pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * 4, dtype=np.int16)), 2), 2),
        "st": pa.StructArray.from_arrays([pa.array(np.arange(n)), pa.array(rng.random(n) < 0.5)],
                                         names=["x", "y"]),
        "nulls": pa.nulls(n, pa.int64()),
        "s": pa.array([str(k) for k in range(n)]),
    })
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema) as w:
        w.write_batch(t)
    r = LanceFileReader(path)
    if not mapped:
        monkeypatch.setattr(r._source, "mapped", lambda: None)
    fetched = []
    orig = r._source.fetch_scattered  # take's reads: slices of the memory-mapped file
    monkeypatch.setattr(r._source, "fetch_scattered",
                        lambda ranges: fetched.extend(ranges) or orig(ranges))
    idx = [49_999, 7, 8, 9, 1001, 3, 3, 25_013]
    got = r.take(idx, ["i", "b", "v", "vv", "st", "nulls"])
    assert got.equals(t.select(["i", "b", "v", "vv", "st", "nulls"]).take(idx))
    if mapped:
        assert fetched == []
    else:
        assert 0 < sum(size for _, size in fetched) < 10_000  # the file is megabytes
    fetched.clear()
    assert r.take(idx, ["s"]).equals(t.select(["s"]).take(idx))  # strings: whole pages
    assert sum(size for _, size in fetched) > 100_000


@pytest.mark.parametrize("seed", range(5))
def test_take_random_rows_every_kind(tmp_path, seed):
    rng = np.random.default_rng(seed)
    t = sample(3000)
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema, max_page_bytes=4000, page_buffer_bytes=20_000) as w:
        w.write_batch(t)
    r = LanceFileReader(path)
    for k in (1, 5, 50, 2000):
        idx = rng.integers(0, 3000, k)
        assert r.take(idx).equals(t.take(idx))


@pytest.mark.filterwarnings("ignore:lance is not fork-safe")
def test_reads_in_a_forked_child(small_pages):
    """The read thread pool is recreated in a forked child (PySpark forks its workers)."""
    import multiprocessing as mp
    import os

    path, t = small_pages
    big = str(os.path.dirname(path)) + "/big.lance"
    tb = pa.table({"v": pa.array(np.arange(3_000_000, dtype=np.int64))})
    with LanceFileWriter(big, tb.schema) as w:
        w.write_batch(tb)
    assert LanceFileReader(big).read_all().equals(tb)  # parent uses the pool first
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        rows = pool.apply_async(_child_read, (big,)).get(timeout=60)
    assert rows == 3_000_000


def _child_read(path):
    return LanceFileReader(path).read_all().num_rows


def test_known_file_size_saves_the_size_request(small_pages, monkeypatch):
    path, t = small_pages
    store = open_store(path)
    calls = []
    monkeypatch.setattr(store, "size", lambda uri: calls.append(uri) or 1 / 0)
    monkeypatch.setattr(store, "read_tail", lambda *a, **k: calls.append(a) or 1 / 0)
    size = len(open(path, "rb").read())
    r = LanceFileReader(path, store=store, file_size=size)
    assert r.read_range(0, 3).equals(t.slice(0, 3))
    assert calls == []
