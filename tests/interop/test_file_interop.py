"""Lance 2.0 data files, both directions, against pylance 14.0.2 (the oracle)."""
import glob
import os

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader as PyLanceReader
from lance.file import LanceFileWriter as PyLanceWriter

from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter as _Writer


def LanceFileWriter(*args, version="2.0", **kwargs):
    """This module is about 2.0 files (the writer's default is 2.2; see test_file_write_v21)."""
    return _Writer(*args, version=version, **kwargs)

from file_tables import diff, equal_ignoring_dictionaries, wide_table


def pylance_write(path, table, **kwargs):
    with PyLanceWriter(str(path), table.schema, version="2.0", **kwargs) as w:
        for batch in table.to_batches(max_chunksize=kwargs.pop("_chunk", 1 << 20)):
            w.write_batch(batch)
    return str(path)


def pylance_read(path, columns=None):
    return PyLanceReader(str(path), columns=columns).read_all().to_table()


@pytest.fixture(scope="module")
def wide():
    return wide_table(1500, seed=1)


# -- pylance writes, lancefmt reads ----------------------------------------------------------


@pytest.mark.parametrize("max_page_bytes", [None, 2048])
def test_read_pylance_file(tmp_path, wide, max_page_bytes):
    kwargs = {"max_page_bytes": max_page_bytes} if max_page_bytes else {}
    path = pylance_write(tmp_path / "p.lance", wide, **kwargs)
    reader = LanceFileReader(path)
    assert reader.version == (2, 0) and reader.num_rows == wide.num_rows
    ours = reader.read_all()
    theirs = pylance_read(path)
    assert ours.schema.equals(theirs.schema, check_metadata=True)
    # pylance concatenates the per-page dictionaries of a batch; compare those by value
    assert equal_ignoring_dictionaries(ours, theirs), diff(ours, theirs)
    assert ours.drop_columns(["dict"]).equals(theirs.drop_columns(["dict"]))
    assert equal_ignoring_dictionaries(ours, wide), diff(ours, wide)
    if max_page_bytes:
        assert max(len(c.pages) for c in reader.metadata.columns) > 5  # really multi-page


def test_read_pylance_multi_batch_multi_page(tmp_path, wide):
    path = tmp_path / "p.lance"
    with PyLanceWriter(str(path), wide.schema, version="2.0", max_page_bytes=4096) as w:
        for batch in wide.to_batches(max_chunksize=97):
            # fresh (unsliced) arrays: pylance 14.0.2 panics on sliced struct arrays
            w.write_batch(batch.take(pa.array(np.arange(batch.num_rows))))
    ours = LanceFileReader(str(path)).read_all()
    assert equal_ignoring_dictionaries(ours, pylance_read(path))
    assert equal_ignoring_dictionaries(ours, wide)


def test_read_ranges_takes_and_batches_of_pylance_file(tmp_path, wide):
    path = pylance_write(tmp_path / "p.lance", wide, max_page_bytes=3000)
    reader = LanceFileReader(path)
    full = reader.read_all()
    assert equal_ignoring_dictionaries(full, pylance_read(path))
    for start, stop in [(0, 1), (17, 900), (1499, 1500), (700, 700), (0, 1500)]:
        assert reader.read_range(start, stop).equals(full.slice(start, stop - start))
    idx = [5, 3, 1499, 3, 700, 0, 1024]
    assert equal_ignoring_dictionaries(reader.take(idx), full.take(idx))
    batches = list(reader.read_batches(batch_size=128))
    assert all(b.num_rows == 128 for b in batches[:-1])
    assert pa.Table.from_batches(batches).equals(full)
    cols = ["struct", "f64", "list_struct"]
    assert reader.read_all(cols).equals(full.select(cols))


def test_dictionary_pages_for_low_cardinality_strings(tmp_path):
    n = 1000
    t = pa.table({"s": pa.array([None if i % 9 == 0 else ["x", "yy", ""][i % 3] for i in range(n)])})
    path = pylance_write(tmp_path / "d.lance", t)
    reader = LanceFileReader(path)
    from lancefmt.encoding.v2_0.field_reader import parse_page_encoding

    kinds = {parse_page_encoding(p, path).WhichOneof("array_encoding")
             for p in reader.metadata.columns[0].pages}
    assert kinds == {"dictionary"}
    assert reader.read_all().equals(t)


def test_packed_struct_from_pylance(tmp_path):
    field = pa.field("p", pa.struct([("a", pa.int32()), ("b", pa.float64()),
                                     ("c", pa.list_(pa.uint8(), 3))]),
                     metadata={"lance-encoding:packed": "true"})
    n = 500
    arr = pa.StructArray.from_arrays(
        [pa.array(np.arange(n, dtype=np.int32)), pa.array(np.arange(n) / 3),
         pa.FixedSizeListArray.from_arrays(pa.array(np.arange(3 * n) % 256, pa.uint8()), 3)],
        fields=list(field.type))
    t = pa.table([arr, pa.array(np.arange(n))], schema=pa.schema([field, pa.field("i", pa.int64())]))
    path = pylance_write(tmp_path / "packed.lance", t)
    reader = LanceFileReader(path)
    assert len(reader.metadata.columns) == 2  # children share the struct's column
    assert reader.read_all().equals(t)
    assert reader.read_all().equals(pylance_read(path))


@pytest.mark.parametrize("scheme", ["zstd", "lz4"])
def test_compressed_strings_from_pylance(tmp_path, scheme):
    md = {"lance-encoding:compression": scheme}
    if scheme == "zstd":
        md["lance-encoding:compression-level"] = "5"
    schema = pa.schema([pa.field("s", pa.string(), metadata=md),
                        pa.field("b", pa.large_binary(), metadata=md)])
    n = 3000
    s = pa.array([None if i % 11 == 0 else f"row {i} " * (i % 7) for i in range(n)])
    t = pa.table([s, s.cast(pa.large_binary())], schema=schema)
    path = pylance_write(tmp_path / "c.lance", t)
    from lancefmt.encoding.v2_0.field_reader import parse_page_encoding

    enc = parse_page_encoding(LanceFileReader(path).metadata.columns[0].pages[0], path)
    assert enc.binary.bytes.flat.compression.scheme == scheme
    assert LanceFileReader(path).read_all().equals(t)


def test_zero_row_pylance_files(tmp_path, wide):
    empty = wide.slice(0, 0)
    path = tmp_path / "e.lance"
    with PyLanceWriter(str(path), empty.schema, version="2.0"):
        pass
    reader = LanceFileReader(str(path))
    assert reader.num_rows == 0
    assert reader.read_all().equals(empty)
    assert reader.schema.equals(wide.schema)
    assert list(reader.read_batches()) == []


def test_data_files_of_pylance_datasets(tmp_path, wide):
    t = wide.drop_columns(["null"])  # datasets reject the null type
    ds = lance.write_dataset(t, str(tmp_path / "ds"), data_storage_version="2.0",
                             max_rows_per_file=600)
    files = sorted(glob.glob(str(tmp_path / "ds" / "data" / "*.lance")))
    assert len(files) == 3
    frags = ds.get_fragments()
    parts = []
    for frag in frags:
        meta = frag.metadata
        (data_file,) = meta.files
        path = str(tmp_path / "ds" / "data" / data_file.path)
        reader = LanceFileReader(path, file_size=os.path.getsize(path))
        assert equal_ignoring_dictionaries(reader.read_all(),
                                           PyLanceReader(path).read_all().to_table())
        assert list(data_file.fields) == [f.id for f in reader.fields]
        parts.append(reader.read_all())
    assert equal_ignoring_dictionaries(pa.concat_tables(parts), t)


def test_dataset_projection_by_field_ids(tmp_path):
    t = pa.table({"a": [1, 2, 3], "s": pa.array([{"x": 1, "y": "p"}, {"x": 2, "y": "q"},
                                                  {"x": 3, "y": None}]),
                  "v": pa.array([[1.0, 2.0]] * 3, pa.list_(pa.float32(), 2))})
    ds = lance.write_dataset(t, str(tmp_path / "ds"), data_storage_version="2.0")
    ds.add_columns({"c": "a * 2"})
    ds = lance.dataset(str(tmp_path / "ds"))
    ds.alter_columns({"path": "s", "name": "renamed"})
    ds = lance.dataset(str(tmp_path / "ds"))
    from lancefmt.file.schema import fields_from_arrow, project_fields

    dataset_fields = fields_from_arrow(ds.schema)  # ids 0.. in the same pre-order
    frag = ds.get_fragments()[0]
    for data_file in frag.metadata.files:
        path = str(tmp_path / "ds" / "data" / data_file.path)
        reader = LanceFileReader(path)
        stored = set(data_file.fields)
        names = [f.name for f in dataset_fields if f.parent_id == -1 and f.id in stored]
        wanted = project_fields(dataset_fields, names)
        proj = reader.projection(fields=wanted, field_ids=data_file.fields,
                                 column_indices=data_file.column_indices)
        got = reader.read_all(proj)
        expected = ds.to_table(columns=names)
        assert got.equals(expected)


# -- lancefmt writes, pylance reads ------------------------------------------------------------


@pytest.mark.parametrize("max_page_bytes", [None, 2048])
def test_pylance_reads_our_file(tmp_path, wide, max_page_bytes):
    path = str(tmp_path / "o.lance")
    with LanceFileWriter(path, wide.schema, max_page_bytes=max_page_bytes) as w:
        for batch in wide.to_batches(max_chunksize=400):
            w.write_batch(batch)
    theirs = pylance_read(path)
    assert equal_ignoring_dictionaries(theirs, wide), diff(theirs, wide)
    assert theirs.schema.equals(wide.schema)
    ours = LanceFileReader(path).read_all()
    assert equal_ignoring_dictionaries(ours, theirs)
    assert equal_ignoring_dictionaries(ours, wide)
    meta = PyLanceReader(path).metadata()
    assert (meta.major_version, meta.minor_version) == (0, 3)


def test_pylance_reads_our_small_pages_and_dictionaries(tmp_path):
    n = 5000
    t = pa.table({"low": pa.array(["ab", "c", None, ""] * (n // 4)),
                  "i": pa.array(np.arange(n)),
                  "l": pa.array([[i] * (i % 3) for i in range(n)], pa.list_(pa.int64()))})
    path = str(tmp_path / "o.lance")
    with LanceFileWriter(path, t.schema, max_page_bytes=1024, page_buffer_bytes=4096) as w:
        for batch in t.to_batches(max_chunksize=333):
            w.write_batch(batch)
    reader = LanceFileReader(path)
    assert all(len(c.pages) > 3 for c in reader.metadata.columns)
    assert pylance_read(path).equals(t)
    assert reader.read_all().equals(t)


@pytest.mark.parametrize("scheme", ["zstd", "lz4"])
def test_pylance_reads_our_compressed_strings(tmp_path, scheme):
    md = {"lance-encoding:compression": scheme}
    schema = pa.schema([pa.field("s", pa.string(), metadata=md)])
    t = pa.table([pa.array([None if i % 4 == 0 else "text " * (i % 9) for i in range(2000)])],
                 schema=schema)
    path = str(tmp_path / "c.lance")
    with LanceFileWriter(path, schema) as w:
        w.write_batch(t)
    assert pylance_read(path).equals(t)


def test_pylance_reads_our_packed_struct(tmp_path):
    field = pa.field("p", pa.struct([("a", pa.int16()), ("b", pa.float32())]),
                     metadata={"lance-encoding:packed": "true"})
    arr = pa.StructArray.from_arrays([pa.array(np.arange(300, dtype=np.int16)),
                                      pa.array(np.arange(300, dtype=np.float32))],
                                     fields=list(field.type))
    t = pa.table([arr], schema=pa.schema([field]))
    path = str(tmp_path / "p.lance")
    with LanceFileWriter(path, t.schema) as w:
        w.write_batch(t)
    assert LanceFileReader(path).metadata.columns.__len__() == 1
    assert pylance_read(path).equals(t)


def test_pylance_reads_our_zero_row_file(tmp_path, wide):
    path = str(tmp_path / "e.lance")
    with LanceFileWriter(path, wide.schema):
        pass
    assert PyLanceReader(path).metadata().num_rows == 0
    assert pylance_read(path).num_rows == 0
    assert LanceFileReader(path).read_all().equals(wide.slice(0, 0))


def test_our_files_match_pylance_byte_for_byte(tmp_path):
    """For uncompressed data our writer makes the same choices as pylance's."""
    t = pa.table({
        "i": pa.array([1, None, 3, 4], pa.int32()), "b": pa.array([True, None, False, True]),
        "s": pa.array(["a", "", None, "dddd"]), "l": pa.array([[1, 2], [], None, [3]]),
        "st": pa.array([{"x": 1, "y": "a"}, {"x": None, "y": None}, {"x": 3, "y": "c"},
                        {"x": 4, "y": "d"}]),
        "v": pa.array([[1, 2], [3, 4], None, [5, 6]], pa.list_(pa.float32(), 2)),
        "ts": pa.array([1, 2, None, 4], pa.timestamp("us", tz="UTC")),
        "low": pa.array(["x", "y", None] * 50 + ["x"] * 0)[:4],
        "d": pa.array(["x", "y", None, "x"]).dictionary_encode(),
    })
    ours, theirs = str(tmp_path / "o.lance"), str(tmp_path / "t.lance")
    with LanceFileWriter(ours, t.schema) as w:
        w.write_batch(t)
    pylance_write(theirs, t)
    assert open(ours, "rb").read() == open(theirs, "rb").read()


def test_pylance_dataset_can_use_our_data_file(tmp_path):
    """A data file we write replaces the one pylance wrote for a dataset fragment."""
    t = pa.table({"a": pa.array(np.arange(100)), "s": pa.array([str(i) for i in range(100)])})
    uri = str(tmp_path / "ds")
    ds = lance.write_dataset(t, uri, data_storage_version="2.0")
    (data_file,) = ds.get_fragments()[0].metadata.files
    path = os.path.join(uri, "data", data_file.path)
    os.remove(path)
    from lancefmt.file.schema import fields_from_arrow

    with LanceFileWriter(path, t.schema, fields=fields_from_arrow(t.schema)) as w:
        w.write_batch(t)
    assert (w.field_ids, w.column_indices) == (list(data_file.fields), list(data_file.column_indices))
    assert lance.dataset(uri).to_table().equals(t)


def _blob_table(n=300):
    schema = pa.schema([pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
                        pa.field("i", pa.int32())])
    values = [None if k % 7 == 0 else (b"" if k % 5 == 0 else bytes([k % 256]) * (k % 97))
              for k in range(n)]
    return pa.table([pa.array(values, pa.large_binary()), pa.array(np.arange(n, dtype=np.int32))],
                    schema=schema)


def test_blob_columns_both_ways(tmp_path):
    t = _blob_table()
    theirs, ours = str(tmp_path / "t.lance"), str(tmp_path / "o.lance")
    with PyLanceWriter(theirs, t.schema, version="2.0") as w:
        w.write_batch(t.slice(0, 100))
        w.write_batch(t.slice(100))
    with LanceFileWriter(ours, t.schema) as w:
        w.write_batch(t.slice(0, 100))
        w.write_batch(t.slice(100))
    reader = LanceFileReader(theirs)
    assert reader.read_all().equals(t)
    assert reader.take([299, 0, 14, 7]).equals(t.take([299, 0, 14, 7]))
    assert pa.Table.from_batches(list(reader.read_batches(64))).equals(t)
    assert pylance_read(ours).equals(t)
    assert open(ours, "rb").read() == open(theirs, "rb").read()


def test_768_dim_vectors_both_ways(tmp_path):
    n, dim = 2000, 768
    rng = np.random.default_rng(9)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * dim, dtype=np.float32)), dim,
                                            mask=pa.array(rng.random(n) < 0.05))
    t = pa.table({"id": pa.array(np.arange(n)), "vector": vec})
    theirs, ours = str(tmp_path / "t.lance"), str(tmp_path / "o.lance")
    pylance_write(theirs, t, max_page_bytes=1 << 20)
    with LanceFileWriter(ours, t.schema, max_page_bytes=1 << 20) as w:
        w.write_batch(t)
    for path in (theirs, ours):
        r = LanceFileReader(path)
        assert len(r.metadata.columns[1].pages) > 3
        assert r.read_all().equals(t)
        assert r.take([1999, 5, 1000]).equals(t.take([1999, 5, 1000]))
        assert pylance_read(path).equals(t)
