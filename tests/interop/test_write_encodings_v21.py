"""Encodings of lancefmt's 2.1 / 2.2 writer that pylance 14.0.2 (the oracle) must read value
by value: FSST strings, and the encodings the ``lance-encoding:*`` field metadata asks for.
Each test also checks the encoding chosen, from the page's own layout proto."""
import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader as PyLanceReader

from lancefmt._proto import encodings_v2_1_pb2 as pb
from lancefmt.file.metadata import read_metadata
from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter

from file_tables import diff, equal_ignoring_dictionaries

VERSIONS = ["2.1", "2.2"]


def write(path, table, version, chunk=1 << 20):
    with LanceFileWriter(str(path), table.schema, version=version) as w:
        for batch in table.to_batches(max_chunksize=chunk):
            w.write_batch(batch)
    return str(path)


def check_both_readers(path, table):
    theirs = PyLanceReader(path).read_all().to_table()
    assert equal_ignoring_dictionaries(theirs, table), diff(theirs, table)
    ours = LanceFileReader(path).read_all()
    assert equal_ignoring_dictionaries(ours, table), diff(ours, table)


def layouts(path, column) -> list:
    """The PageLayout proto of every page of one column."""
    data = open(path, "rb").read()
    meta = read_metadata(lambda s, n: data[s:s + n], len(data), path)
    out = []
    for p in meta.columns[column].pages:
        layout = pb.PageLayout()
        layout.ParseFromString(p.encoding)
        out.append(layout)
    return out


def value_kinds(layout) -> list:
    """The compressive encodings of a page's values, outermost first."""
    kind = layout.WhichOneof("layout")
    if kind == "mini_block_layout":
        enc = layout.mini_block_layout.value_compression
    elif kind == "full_zip_layout":
        enc = layout.full_zip_layout.value_compression
    else:
        return [kind]
    out = []
    while enc.WhichOneof("compression") is not None:
        k = enc.WhichOneof("compression")
        out.append(k)
        inner = getattr(enc, k)
        if "values" not in inner.DESCRIPTOR.fields_by_name or not inner.HasField("values"):
            break
        enc = inner.values
    return out


def url_strings(n, seed=0, large=False):
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "news", "shop", "item", "user"]
    vals = [f"https://{words[i % 8]}.example.org/{words[(i * 7) % 8]}/{int(v)}?page={i % 50}"
            for i, v in enumerate(rng.integers(0, 10**6, n))]
    return pa.array(vals, pa.large_string() if large else pa.string())


def field(name, typ, **meta):
    md = {f"lance-encoding:{k.replace('_', '-')}": str(v) for k, v in meta.items()}
    return pa.field(name, typ, metadata=md or None)


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_strings_by_default(tmp_path, version):
    """Pages of 32 KiB+ of strings are FSST (mini-block and full-zip), nulls and lists too."""
    n = 4000
    rng = np.random.default_rng(1)
    urls = url_strings(n)
    nulls = pa.array([None if i % 7 == 0 else s for i, s in enumerate(urls.to_pylist())])
    binary = url_strings(n, 2).cast(pa.binary())
    large = url_strings(n, 3, large=True)
    long_text = pa.array([("lorem ipsum dolor sit amet " * (12 + i % 5)) + str(i)
                          for i in range(n)])
    lists = pa.array([[s, s[::-1]] if i % 5 else None
                      for i, s in enumerate(urls.to_pylist())], pa.list_(pa.string()))
    short = pa.array(["x" + str(i % 10) for i in range(n)])  # too small for FSST
    table = pa.table({"urls": urls, "nulls": nulls, "binary": binary, "large": large,
                      "long_text": long_text, "lists": lists, "short": short,
                      "n": pa.array(rng.integers(0, 9, n))})
    path = write(tmp_path / "f.lance", table, version, chunk=1000)
    check_both_readers(path, table)
    for col in range(6):
        for lay in layouts(path, col):
            assert "fsst" in value_kinds(lay), (col, lay)
    assert layouts(path, 4)[0].WhichOneof("layout") == "full_zip_layout"
    assert all("fsst" not in value_kinds(lay) for lay in layouts(path, 6))


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_asked_for_and_combined_with_general(tmp_path, version):
    n = 3000
    table = pa.table([url_strings(200, 5), url_strings(200, 6), url_strings(n, 7)[:200]],
                     schema=pa.schema([field("asked", pa.string(), compression="fsst"),
                                       field("none", pa.string(), compression="none"),
                                       field("zstd", pa.string(), compression="zstd")]))
    path = write(tmp_path / "g.lance", table, version)
    check_both_readers(path, table)
    assert value_kinds(layouts(path, 0)[0]) == ["fsst", "variable"]
    assert value_kinds(layouts(path, 1)[0]) == ["variable"]
    assert value_kinds(layouts(path, 2)[0])[0] == "general"


BLOB = {"lance-encoding:blob": "true"}


def blob_table(n=60):
    big = pa.array([bytes([i % 251]) * (i * 37) if i % 3 else None for i in range(n)],
                   pa.large_binary())
    sf = pa.struct([pa.field("bb", pa.large_binary(), metadata=BLOB), pa.field("k", pa.int32())])
    st = pa.StructArray.from_arrays(
        [pa.array([b"y" * i if i % 4 else None for i in range(n)], pa.large_binary()),
         pa.array(range(n), pa.int32())], fields=list(sf), mask=pa.array(np.arange(n) % 5 == 0))
    return pa.table([big, st, pa.array([None] * n, pa.large_binary()),
                     pa.array([b""] * n, pa.large_binary()),
                     pa.array([b"q%d" % i for i in range(n)], pa.large_binary())],
                    schema=pa.schema([pa.field("big", pa.large_binary(), metadata=BLOB),
                                      pa.field("st", sf),
                                      pa.field("nulls", pa.large_binary(), metadata=BLOB),
                                      pa.field("empties", pa.large_binary(), metadata=BLOB),
                                      pa.field("req", pa.large_binary(), nullable=False,
                                               metadata=BLOB)]))


@pytest.mark.parametrize("version", VERSIONS)
def test_blob_columns(tmp_path, version):
    """Blob v1 pages (what pylance's file writer writes at 2.1 and 2.2): descriptions in a
    mini-block packed struct, the bytes 64-byte aligned in the data region."""
    table = blob_table()
    path = write(tmp_path / "b.lance", table, version, chunk=25)
    check_both_readers(path, table)
    data = open(path, "rb").read()
    for col in (0, 1, 3, 4, 5):   # st.k (column 2) is a plain int column
        for lay in layouts(path, col):
            assert lay.WhichOneof("layout") == "blob_layout"
            inner = lay.blob_layout.inner_layout.mini_block_layout.value_compression
            assert list(inner.packed_struct.bits_per_value) == [64, 64]
    big = table.column("big").to_pylist()
    first = next(i for i, v in enumerate(big) if v)
    pos = data.find(big[first])
    assert pos >= 0 and pos % 64 == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_blob_datasets(tmp_path, version):
    import lance

    import lancefmt

    table = blob_table().select(["big", "req"])
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table, uri, data_storage_version=version)
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.data_storage_version == version
    blobs = ds.take_blobs("big", indices=[1, 2, 4])
    assert [b.read() for b in blobs] == [table.column("big")[i].as_py() for i in (1, 2, 4)]
    ours = lancefmt.dataset(uri)
    if version == "2.2":
        # blob v2: both read the descriptors; the bytes come through take_blobs.
        assert ours.to_table().equals(ds.to_table(), check_metadata=True)
        for name in ("big", "req"):
            got = ours.take_blobs(name, indices=list(range(table.num_rows)))
            assert [None if b is None else b.readall() for b in got] == \
                table.column(name).to_pylist()
    else:
        assert ours.to_table().equals(table)


@pytest.mark.parametrize("typ,nested", [(pa.binary(), False), (pa.large_string(), False),
                                        (pa.string(), False), (pa.large_binary(), True)])
def test_blobs_pylance_refuses_are_refused(tmp_path, typ, nested):
    import lancefmt

    f = pa.field("b", typ, metadata=BLOB)
    if nested:
        f = pa.field("l", pa.list_(f))
    path = tmp_path / "r.lance"
    with pytest.raises(lancefmt.UnsupportedFeatureError):
        LanceFileWriter(str(path), pa.schema([f]), version="2.2")
    assert not path.exists()


def _first_kinds(path, column):
    return value_kinds(layouts(path, column)[0])


@pytest.mark.parametrize("version", VERSIONS)
def test_metadata_keys_choose_the_encoding(tmp_path, version):
    """Every lance-encoding:* key pylance 14 honours at write time, one column each."""
    n = 5000
    rng = np.random.default_rng(4)
    smooth = np.cumsum(rng.normal(0, 0.01, n)) + 100.0
    runs = np.repeat(np.arange(n // 10), 10)[:n]
    cats = pa.array(np.array(["red", "green", "blue", "cyan"])[rng.integers(0, 4, n)])
    ints = pa.array(rng.integers(0, 5, n) * 1_000_003, pa.int64())
    cols = [
        (field("bss_on", pa.float64(), compression="zstd", bss="on"), pa.array(rng.random(n))),
        (field("bss_auto", pa.float64(), compression="lz4"), pa.array(smooth)),
        (field("bss_off", pa.float64(), compression="zstd", bss="off"), pa.array(smooth)),
        (field("rle", pa.int64(), rle_threshold="0.2"), pa.array(runs, pa.int64())),
        (field("no_rle", pa.int64(), rle_threshold="0.01"), pa.array(runs, pa.int64())),
        (field("dict_off", pa.string(), dict_size_ratio="0.01"), cats),
        (field("dict_int", pa.int64(), dict_size_ratio="0.9"), ints),
        (field("fullzip", pa.int32(), structural_encoding="fullzip"),
         pa.array(np.arange(n, dtype=np.int32), mask=np.arange(n) % 9 == 0)),
        (field("fullzip_s", pa.string(), structural_encoding="fullzip"), url_strings(n)),
        (field("miniblock", pa.string(), structural_encoding="miniblock"),
         pa.array(["w" * (300 + i % 50) for i in range(n)])),
        (field("level", pa.int64(), compression="zstd", compression_level="7"),
         pa.array(rng.integers(0, 1 << 40, n))),
    ]
    table = pa.table([c for _, c in cols], schema=pa.schema([f for f, _ in cols]))
    path = write(tmp_path / "m.lance", table, version, chunk=n)
    check_both_readers(path, table)
    col = {f.name: i for i, (f, _) in enumerate(cols)}
    assert _first_kinds(path, col["bss_on"]) == ["general", "byte_stream_split", "flat"]
    assert _first_kinds(path, col["bss_auto"]) == ["general", "byte_stream_split", "flat"]
    assert _first_kinds(path, col["bss_off"]) == ["general", "flat"]
    assert _first_kinds(path, col["rle"])[0] == "rle"
    assert "rle" not in _first_kinds(path, col["no_rle"])
    assert not layouts(path, col["dict_off"])[0].mini_block_layout.HasField("dictionary")
    assert layouts(path, col["dict_int"])[0].mini_block_layout.HasField("dictionary")
    for name in ("fullzip", "fullzip_s"):
        assert layouts(path, col[name])[0].WhichOneof("layout") == "full_zip_layout"
    assert layouts(path, col["miniblock"])[0].WhichOneof("layout") == "mini_block_layout"
    general = layouts(path, col["level"])[0].mini_block_layout.value_compression.general
    assert general.compression.level == 7


@pytest.mark.parametrize("meta", [{"compression": "brotli"}, {"dict_size_ratio": "1.5"},
                                  {"structural_encoding": "zigzag"}])
def test_metadata_values_pylance_rejects_are_refused(tmp_path, meta):
    import lancefmt

    path = tmp_path / "x.lance"
    with pytest.raises(lancefmt.LanceError) as info:
        LanceFileWriter(str(path), pa.schema([field("v", pa.int64(), **meta)]), version="2.2")
    assert isinstance(info.value, ValueError)
    assert not path.exists()


PACKED = {"lance-encoding:packed": "true"}
ROW = pa.struct([("a", pa.int32()), ("b", pa.float64()), ("c", pa.uint8())])


def rows(m, mask=None):
    return pa.StructArray.from_arrays(
        [pa.array(np.arange(m, dtype=np.int32)), pa.array(np.arange(m) * 0.5),
         pa.array(np.arange(m) % 256, pa.uint8())], fields=list(ROW), mask=mask)


@pytest.mark.parametrize("version", VERSIONS)
def test_packed_structs(tmp_path, version):
    """Packed structs as one column of whole rows: top level, nullable, inside a nullable
    struct, inside a list."""
    n = 3000
    outer = pa.struct([pa.field("p", ROW, metadata=PACKED), ("z", pa.int64())])
    lst = pa.list_(pa.field("item", ROW, metadata=PACKED))
    offs = np.concatenate([[0], np.cumsum(np.arange(n) % 4)]).astype(np.int32)
    m = int(offs[-1])
    table = pa.table(
        [rows(n), rows(n, pa.array(np.arange(n) % 7 == 0)),
         pa.StructArray.from_arrays([rows(n, pa.array(np.arange(n) % 3 == 0)),
                                     pa.array(np.arange(n))], fields=list(outer),
                                    mask=pa.array(np.arange(n) % 5 == 0)),
         pa.ListArray.from_arrays(pa.array(offs), rows(m, pa.array(np.arange(m) % 4 == 0)),
                                  type=lst, mask=pa.array(np.arange(n) % 6 == 0))],
        schema=pa.schema([pa.field("p", ROW, metadata=PACKED),
                          pa.field("pn", ROW, metadata=PACKED), pa.field("o", outer),
                          pa.field("l", lst)]))
    path = write(tmp_path / "p.lance", table, version, chunk=700)
    check_both_readers(path, table)
    assert len(PyLanceReader(path).metadata().columns) == 5   # p, pn, o.p, o.z, l
    for col in (0, 1, 2, 4):
        for lay in layouts(path, col):
            ps = lay.mini_block_layout.value_compression.packed_struct
            assert list(ps.bits_per_value) == [32, 64, 8]
            assert ps.values.flat.bits_per_value == 104


@pytest.mark.parametrize("version,typ", [("2.1", pa.string()), ("2.1", pa.large_binary()),
                                         ("2.2", pa.bool_()), ("2.2", pa.list_(pa.int8()))])
def test_packed_structs_pylance_refuses_are_refused(tmp_path, version, typ):
    import lancefmt

    f = pa.field("p", pa.struct([("a", pa.int32()), ("x", typ)]), metadata=PACKED)
    path = tmp_path / "r.lance"
    with pytest.raises(lancefmt.UnsupportedFeatureError):
        LanceFileWriter(str(path), pa.schema([f]), version=version)
    assert not path.exists()


def test_packed_struct_null_fields_are_refused(tmp_path):
    import lancefmt

    f = pa.field("p", ROW, metadata=PACKED)
    arr = pa.StructArray.from_arrays(
        [pa.array([1, None], pa.int32()), pa.array([1.0, 2.0]), pa.array([1, 2], pa.uint8())],
        fields=list(ROW))
    w = LanceFileWriter(str(tmp_path / "n.lance"), pa.schema([f]), version="2.2")
    with pytest.raises(lancefmt.UnsupportedFeatureError):
        w.write_batch(pa.table([arr], schema=pa.schema([f])))
    w.abort()


def map_table(n=400):
    rng = np.random.default_rng(9)
    rows = []
    for i in range(n):
        k = int(rng.integers(0, 4))
        rows.append(None if i % 9 == 0 else [(f"k{j}", None if (i + j) % 5 == 0 else i * j)
                                             for j in range(k)])
    m = pa.array(rows, pa.map_(pa.string(), pa.int32()))
    nested = pa.array([{"mm": None if i % 4 == 0 else [(i, f"v{i}")]} for i in range(n)],
                      pa.struct([("mm", pa.map_(pa.int64(), pa.string()))]))
    return pa.table({"m": m, "nested": nested, "i": pa.array(np.arange(n))})


def test_maps_at_2_2(tmp_path):
    """pylance 14 writes and reads maps at 2.2 only; so does lancefmt."""
    import lance

    import lancefmt

    table = map_table()
    path = write(tmp_path / "m.lance", table, "2.2", chunk=150)
    check_both_readers(path, table)
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table, uri)
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.to_table().equals(table)
    assert ds.schema.field("m").type == table.schema.field("m").type


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_maps_before_2_2_are_refused(tmp_path, version):
    import lancefmt

    table = map_table(20)
    with pytest.raises(lancefmt.UnsupportedFeatureError):
        LanceFileWriter(str(tmp_path / "m.lance"), table.schema, version=version)
    assert not (tmp_path / "m.lance").exists()
    with pytest.raises(lancefmt.UnsupportedFeatureError):
        lancefmt.write_dataset(table, str(tmp_path / "ds"), data_storage_version=version)
    assert not (tmp_path / "ds").exists() or not any((tmp_path / "ds").rglob("*.lance"))


@pytest.mark.parametrize("version", VERSIONS)
def test_levels_bit_packed_like_pylance(tmp_path, version):
    """Rep/def levels are out-of-line bit-packed at the page's level width, as pylance writes
    them; one huge value per chunk still fits the 2.1 chunk limit with padded levels."""
    n = 5000
    table = pa.table({"a": pa.array(np.arange(n) % 100, mask=np.arange(n) % 3 == 0),
                      "l": pa.array([[1, None] if i % 4 else None for i in range(n)],
                                    pa.list_(pa.int32()))})
    wide = pa.table({"w": pa.array([None if i % 2 else "q" * 200 for i in range(400)],
                                   pa.string()),
                     "s": pa.array([None if i % 2 else b"x" * 20000 for i in range(400)],
                                   pa.binary())},
                    schema=pa.schema([field("w", pa.string()),
                                      field("s", pa.binary(), structural_encoding="miniblock")]))
    path = write(tmp_path / "l.lance", table, version, chunk=2000)
    check_both_readers(path, table)
    for col in (0, 1):
        mb = layouts(path, col)[0].mini_block_layout
        ool = mb.def_compression.out_of_line_bitpacking
        assert ool.uncompressed_bits_per_value == 16 and ool.values.flat.bits_per_value >= 1
    assert layouts(path, 1)[0].mini_block_layout.rep_compression.HasField(
        "out_of_line_bitpacking")
    path = write(tmp_path / "w.lance", wide, version)
    check_both_readers(path, wide)


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_hypothesis_round_trips(tmp_path, version):
    """Arbitrary strings / bytes (nulls, empties, escapes) under compression=fsst and in
    32 KiB+ pages: both readers give them back."""
    from hypothesis import given, settings, strategies as st

    @settings(max_examples=15, deadline=None)
    @given(st.lists(st.one_of(st.none(), st.binary(max_size=40)), min_size=1, max_size=300),
           st.integers(1, 200))
    def check(values, repeat):
        arr = pa.array(values, pa.binary())
        big = pa.array([None if v is None else v * 3 for v in values] * repeat, pa.binary())
        texts = pa.array([None if v is None else v.hex() for v in values], pa.large_string())
        table = pa.table([arr, texts, big[:len(values)]],
                         schema=pa.schema([field("b", pa.binary(), compression="fsst"),
                                           field("t", pa.large_string(), compression="fsst"),
                                           field("g", pa.binary())]))
        table2 = pa.table({"big": big})
        path = write(tmp_path / "h.lance", table, version)
        check_both_readers(path, table)
        path = write(tmp_path / "h2.lance", table2, version)
        check_both_readers(path, table2)

    check()


def test_variable_packed_structs_at_2_2(tmp_path):
    """Packed structs with string / binary fields: full-zip variable_packed_struct rows."""
    n = 500
    vx = pa.struct([("a", pa.int32()), ("s", pa.string()), ("b", pa.large_binary()),
                    ("c", pa.uint16())])
    arr = pa.StructArray.from_arrays(
        [pa.array(np.arange(n, dtype=np.int32)), pa.array([f"s{i}" * (i % 5) for i in range(n)]),
         pa.array([b"b" * (i % 3) for i in range(n)], pa.large_binary()),
         pa.array(np.arange(n) % 999, pa.uint16())],
        fields=list(vx), mask=pa.array(np.arange(n) % 7 == 0))
    table = pa.table([arr, pa.array(np.arange(n))],
                     schema=pa.schema([pa.field("p", vx, metadata=PACKED),
                                       pa.field("i", pa.int64())]))
    path = write(tmp_path / "v.lance", table, "2.2", chunk=200)
    check_both_readers(path, table)
    for lay in layouts(path, 0):
        fields = lay.full_zip_layout.value_compression.variable_packed_struct.fields
        assert [f.WhichOneof("layout") for f in fields] == [
            "bits_per_value", "bits_per_length", "bits_per_length", "bits_per_value"]
        assert [f.bits_per_length for f in fields[1:3]] == [32, 64]


@pytest.mark.parametrize("version", VERSIONS)
def test_long_values_compressed_one_by_one(tmp_path, version):
    """Full-zip strings under compression=zstd|lz4, or with a value over 32 KiB, are one zstd
    frame per value (general over variable, level 0), as pylance writes them."""
    n = 400
    text = pa.array([None if i % 5 == 0 else ("hello world %d " % i) * 30 for i in range(n)])
    huge = pa.array([None if i % 3 == 0 else (b"%d," % i) * (20000 if i == 7 else 30)
                     for i in range(60)] + [b""] * (n - 60), pa.large_binary())
    table = pa.table([text, text, huge],
                     schema=pa.schema([field("z", pa.string(), compression="zstd"),
                                       field("l", pa.string(), compression="lz4"),
                                       field("h", pa.large_binary())]))
    path = write(tmp_path / "z.lance", table, version)
    check_both_readers(path, table)
    for col in range(3):
        lay = layouts(path, col)[0]
        assert lay.WhichOneof("layout") == "full_zip_layout"
        assert value_kinds(lay) == ["general", "variable"]
        assert lay.full_zip_layout.value_compression.general.compression.scheme == \
            pb.COMPRESSION_ALGORITHM_ZSTD
