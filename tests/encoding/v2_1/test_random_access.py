"""``take`` on 2.1 / 2.2 files is random access: scattered rows read only the mini-block chunks
(via the chunk table and repetition index) or full-zip rows (via its repetition index) that
hold them, never whole pages; results equal pylance's. Bad page descriptions are refused."""
import numpy as np
import pyarrow as pa
import pytest

from lancefmt._proto import encodings_v2_1_pb2 as pb
from lancefmt.errors import CorruptFileError, UnsupportedFeatureError
from lancefmt.file.reader import LanceFileReader

lance_file = pytest.importorskip("lance.file")

N = 60_000


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def big_file(request, tmp_path_factory):
    rng = np.random.default_rng(3)
    t = pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "f": pa.array(rng.normal(size=N)),
        "wide": pa.array(rng.integers(0, 1 << 41, N)),
        "s": pa.array([f"row-{i}-{'q' * (i % 7)}" for i in range(N)]),
        "l": pa.array([None if i % 10 == 0 else list(range(i % 6)) for i in range(N)],
                      pa.list_(pa.int32())),
        "long": pa.array(["x" * 300 + str(i) if i % 3 else None for i in range(N)]),
        "vec": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(N * 70).astype(np.float32)), 70),
    })
    path = str(tmp_path_factory.mktemp("ra") / f"big_{request.param}.lance")
    with lance_file.LanceFileWriter(path, t.schema, version=request.param) as w:
        w.write_batch(t)
    return path


def _counting(reader, names=("fetch", "fetch_scattered")):
    """Wrap the reader's byte source to count the bytes fetched (take reads through
    ``fetch_scattered``: zero-copy slices of the mapped file, counted as read)."""
    seen = {"bytes": 0}
    for name in names:
        fetch = getattr(reader._source, name)

        def counted(ranges, fetch=fetch):
            seen["bytes"] += sum(int(s) for _, s in ranges)
            return fetch(ranges)

        setattr(reader._source, name, counted)
    return seen


@pytest.mark.parametrize("mapped", [True, False], ids=["mapped", "fetched"])
@pytest.mark.parametrize("column", ["id", "f", "s", "l", "long", "vec"])
def test_take_reads_only_the_chunks_or_rows_it_needs(big_file, column, mapped, monkeypatch):
    r = LanceFileReader(big_file)
    names = ("fetch", "fetch_scattered")
    if not mapped:  # as from an object store: the chunks' byte ranges are fetched
        monkeypatch.setattr(r._source, "mapped", lambda: None)
        names = ("fetch",)  # where fetch_scattered's reads then land (counted once)
    col = r.metadata.columns[[n.name for n in r.projection().roots].index(column)]
    page_bytes = sum(int(s) for p in col.pages for s in p.buffer_sizes)
    rows = np.sort(np.random.default_rng(9).choice(N, 8, replace=False))
    seen = _counting(r, names)
    got = r.take(rows, [column]).column(0)
    expected = lance_file.LanceFileReader(big_file).take_rows(rows.tolist()).to_table()
    assert got.to_pylist() == expected.column(column).to_pylist()
    assert seen["bytes"] < page_bytes * 0.2, (seen["bytes"], page_bytes)


def test_take_in_any_order_with_repeats(big_file):
    r = LanceFileReader(big_file)
    rows = np.array([N - 1, 5, 5, 23_457, 0, 57_777, 5])
    got = r.take(rows)
    expected = lance_file.LanceFileReader(big_file).read_all().to_table().take(pa.array(rows))
    assert got.to_pylist() == expected.to_pylist()


def _reader_with_page(path, mutate):
    r = LanceFileReader(path)
    page = r.metadata.columns[0].pages[0]
    layout = pb.PageLayout()
    layout.ParseFromString(page.encoding)
    page.encoding = mutate(layout)
    page.parsed = None
    return r


def test_unknown_layout_is_refused_by_name(big_file):
    r = _reader_with_page(big_file, lambda layout: b"\x2a\x00")  # field 5: SparseLayout (2.3)
    with pytest.raises(UnsupportedFeatureError, match="unknown page layout") as e:
        r.read_all(["id"])
    assert big_file in str(e.value)


def test_unknown_compression_is_refused_by_name(big_file):
    def mutate(layout):
        layout.mini_block_layout.value_compression.range.start = 1  # 2.3-only Range
        return layout.SerializeToString()

    r = _reader_with_page(big_file, mutate)
    with pytest.raises(UnsupportedFeatureError, match="range") as e:
        r.read_all(["id"])
    assert big_file in str(e.value)


def test_page_claiming_more_items_than_its_bytes_is_corrupt(big_file):
    def mutate(layout):
        layout.mini_block_layout.num_items = 1 << 40
        return layout.SerializeToString()

    r = _reader_with_page(big_file, mutate)
    with pytest.raises(CorruptFileError) as e:
        r.read_all(["id"])
    assert big_file in str(e.value)


def test_mismatched_chunk_grammar_is_corrupt(big_file):
    def mutate(layout):
        layout.mini_block_layout.has_large_chunk = not layout.mini_block_layout.has_large_chunk
        return layout.SerializeToString()

    r = _reader_with_page(big_file, mutate)
    with pytest.raises(CorruptFileError, match="grammar"):
        r.read_all(["id"])


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_blob_take_fetches_only_the_wanted_blobs(tmp_path, version):
    schema = pa.schema([pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    vals = [None if i % 9 == 4 else bytes([i % 251]) * 20_000 for i in range(300)]
    path = str(tmp_path / f"blob_{version}.lance")
    with lance_file.LanceFileWriter(path, schema, version=version) as w:
        w.write_batch(pa.table([pa.array(vals, pa.large_binary())], schema=schema))
    assert "BlobLayout" in str(lance_file.LanceFileReader(path).metadata().columns[0].pages[0].encoding)
    r = LanceFileReader(path)
    seen = _counting(r)
    rows = np.array([7, 13, 250])
    assert r.take(rows).column(0).to_pylist() == [vals[i] for i in rows]
    assert seen["bytes"] < 5 * 20_000 + 64 * 1024, seen
    assert r.take(np.array([4, 5])).column(0).to_pylist() == [None, vals[5]]


@pytest.mark.parametrize("column", ["id", "f"])
def test_plain_miniblock_rows_are_read_in_place(big_file, column, monkeypatch):
    """Rows of plain mini-block pages (bit-packed ints, flat floats) of a mapped file are read
    one by one where they lie: equal to decoding their chunks (the path for unmapped stores)
    and to pylance, for rows in one chunk, across chunks and at the page ends."""
    from lancefmt.encoding.v2_1 import random_access

    calls = []
    direct = random_access._take_direct
    monkeypatch.setattr(random_access, "_take_direct",
                        lambda *a: calls.append(1) or direct(*a))
    rng = np.random.default_rng(5)
    rows = np.unique(np.concatenate([[0, 1, 1023, 1024, 1025, 4095, 4096, N - 1],
                                     rng.choice(N, 300, replace=False)]))
    mapped = LanceFileReader(big_file).take(rows, [column]).column(0)
    assert calls
    unmapped_reader = LanceFileReader(big_file)
    monkeypatch.setattr(unmapped_reader._source, "mapped", lambda: None)
    calls.clear()
    assert mapped.equals(unmapped_reader.take(rows, [column]).column(0))
    assert not calls
    expected = lance_file.LanceFileReader(big_file).take_rows(rows.tolist()).to_table()
    assert mapped.to_pylist() == expected.column(column).to_pylist()


@pytest.mark.parametrize("column", ["id", "f"])
@pytest.mark.parametrize("count", [5, 400, 3000], ids=["few", "some", "most-chunks"])
def test_fetched_plain_chunks_are_gathered_not_decoded(big_file, column, count, monkeypatch):
    """Unmapped (an object store's) takes of plain mini-block pages read each row out of its
    fetched chunk: equal to decoding those chunks and to pylance, also when the rows touch
    most chunks (then the page is not decoded whole either)."""
    from lancefmt.encoding.v2_1 import random_access

    rows = np.unique(np.concatenate([[0, 1023, 1024, N - 1], np.random.default_rng(count)
                                     .choice(N, count, replace=False)]))
    reader = LanceFileReader(big_file)
    monkeypatch.setattr(reader._source, "mapped", lambda: None)
    calls = []
    gather = random_access._gather_fetched
    monkeypatch.setattr(random_access, "_gather_fetched",
                        lambda *a: calls.append(1) or gather(*a))
    got = reader.take(rows, [column]).column(0)
    assert calls
    monkeypatch.setattr(random_access, "_gatherable", lambda meta, local: False)
    decoded = LanceFileReader(big_file)
    monkeypatch.setattr(decoded._source, "mapped", lambda: None)
    assert got.equals(decoded.take(rows, [column]).column(0))
    expected = lance_file.LanceFileReader(big_file).take_rows(rows.tolist()).to_table()
    assert got.to_pylist() == expected.column(column).to_pylist()


@pytest.mark.parametrize("column", ["id", "wide", "f"])
def test_runs_of_rows_read_in_place_match_the_decoded_chunks(big_file, column):
    """Runs of consecutive rows (an index page, a range) are unpacked a whole bit-packed group
    at a time: runs aligned to groups or not, ending at a chunk's short last group, the whole
    page, and a group's worth of rows with a repeat in it (read row by row) all equal the
    decoded chunks and pylance."""
    from lancefmt.encoding.v2_1 import random_access
    from lancefmt.encoding.v2_1._fastlanes import take_miniblock_rows

    full = pa.chunked_array(lance_file.LanceFileReader(big_file).read_all().to_table()
                            .column(column)).to_numpy()
    runs = [np.arange(0, 4096), np.arange(5120, 6144), np.arange(7171, 9226),
            np.arange(N - 1500, N), np.arange(N)]
    for rows in runs + [np.concatenate(runs[:4])]:
        got = LanceFileReader(big_file).take(rows, [column]).column(0).to_numpy()
        assert np.array_equal(got, full[rows])
    reader = LanceFileReader(big_file)
    reader.take(np.array([0]), [column])  # loads the page's chunk table
    page = reader.metadata.columns[[n.name for n in reader.projection().roots].index(column)].pages[0]
    meta = page.v21_meta
    bitpacked, bits = random_access.direct_values(meta)
    data = random_access.mapped_buffer(reader._source.mapped(), page, 1, big_file)
    rows = np.array([0, 0] + list(range(2, 1024)), np.int64)  # 1024 rows from 0 to 1023
    raw = take_miniblock_rows(data, meta.chunks.offsets[:-1], meta.chunks.sizes,
                              meta.chunks.value_starts, rows, 4 if meta.chunks.wide else 2,
                              bitpacked, bits)
    assert np.array_equal(raw.view(full.dtype), full[rows])


def test_in_place_rows_of_a_bad_chunk_are_corrupt():
    from lancefmt.encoding.v2_1._fastlanes import take_miniblock_rows

    chunk = np.zeros(16, np.uint8)
    chunk[2:6] = np.frombuffer(np.uint32(8 + 128 * 3).tobytes(), np.uint8)  # values past it
    one = np.array([0], np.int64)
    args = (one, np.array([16], np.int64), np.array([0, 1024], np.int64), one, 4, True, 64)
    with pytest.raises(ValueError, match="run past"):
        take_miniblock_rows(chunk, *args)
    with pytest.raises(ValueError, match="outside"):
        take_miniblock_rows(chunk[:8], *args)
    chunk[2:6] = np.frombuffer(np.uint32(8).tobytes(), np.uint8)
    chunk[8] = 65  # a 65-bit width in a 64-bit word
    with pytest.raises(ValueError, match="exceeds"):
        take_miniblock_rows(chunk, *args)
    with pytest.raises(ValueError, match="row outside"):
        take_miniblock_rows(chunk, one, np.array([16], np.int64), np.array([0, 1024], np.int64),
                            np.array([1024], np.int64), 4, True, 64)
