import io
import os

import pytest

from lancefmt.errors import CorruptFileError
from lancefmt.file import source as source_mod
from lancefmt.file.source import ByteSource


@pytest.fixture
def data_file(tmp_path):
    data = bytes(range(256)) * 4096  # 1 MiB
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    return str(path), data


@pytest.mark.parametrize("kind", ["local", "fileobj", "memory"])
def test_fetch_returns_exact_ranges(data_file, kind, memory_uri):
    path, data = data_file
    if kind == "fileobj":
        src = ByteSource(io.BytesIO(data))
    elif kind == "memory":
        from lancefmt.io import open_store

        uri = memory_uri + "/b.bin"
        open_store(uri).put(uri, data)
        src = ByteSource(uri)
    else:
        src = ByteSource(path)
    ranges = [(1000, 10), (0, 0), (64, 128), (900_000, 50_000), (70, 5), (1_048_000, 576)]
    for fetch in (src.fetch, src.fetch_scattered):
        out = fetch(ranges)
        assert [b.to_pybytes() for b in out] == [data[o:o + n] for o, n in ranges]
    assert src.size == len(data)
    tail, size = ByteSource(path).read_tail(100)
    assert tail == data[-100:] and size == len(data)


def test_neighbouring_ranges_are_coalesced(data_file, monkeypatch):
    path, data = data_file
    src = ByteSource(path)
    reads = []
    orig = src._read_many
    monkeypatch.setattr(src, "_read_many", lambda r: reads.append(list(r)) or orig(r))
    src.fetch([(0, 10), (64, 10), (200, 10), (900_000, 10)])
    assert reads == [[(0, 210), (900_000, 10)]]


def test_big_local_reads_are_split_over_threads(data_file, monkeypatch):
    path, data = data_file
    monkeypatch.setattr(source_mod, "PARALLEL_READ_MIN", 100_000)
    monkeypatch.setattr(source_mod, "PARALLEL_READ_PIECE", 70_000)
    (buf,) = ByteSource(path).fetch([(5, len(data) - 10)])
    assert buf.to_pybytes() == data[5:-5]


def test_truncated_file_is_a_short_read(data_file):
    path, data = data_file
    src = ByteSource(path, file_size=len(data))
    os.truncate(path, 1000)
    with pytest.raises(CorruptFileError, match="short read"):
        src.fetch([(0, 5000)])
    with pytest.raises(CorruptFileError, match="short read"):
        ByteSource(io.BytesIO(data[:1000])).fetch([(0, 5000)])
    with pytest.raises(CorruptFileError, match="short read"):  # the memory-mapped path
        ByteSource(path).fetch_scattered([(10, 5), (900, 200)])


def test_bad_argument():
    with pytest.raises(TypeError):
        ByteSource(12)


@pytest.mark.parametrize("known_size", [False, True])
def test_small_file_read_whole_by_the_tail_serves_ranges_without_requests(tmp_path, known_size,
                                                                           monkeypatch):
    data = bytes(range(256)) * 8
    path = tmp_path / "small.bin"
    path.write_bytes(data)
    src = ByteSource(str(path), file_size=len(data) if known_size else None)
    tail, size = src.read_tail(64 * 1024)
    assert tail == data and size == len(data)
    calls = []
    monkeypatch.setattr(src, "_read_many", lambda ranges: calls.append(ranges))
    ranges = [(0, 10), (100, 0), (2000, 48)]
    for fetch in (src.fetch, src.fetch_scattered):
        assert [b.to_pybytes() for b in fetch(ranges)] == [data[o:o + n] for o, n in ranges]
        with pytest.raises(CorruptFileError):
            fetch([(2000, 49)])  # past the end: the file's bytes bound every range
    assert calls == []


@pytest.mark.parametrize("declared", [2**64 - 1, 2**63, -1])
def test_an_impossible_declared_size_is_corrupt(data_file, declared):
    path, _ = data_file
    with pytest.raises(CorruptFileError, match="impossible") as info:
        ByteSource(path, file_size=declared)
    assert info.value.path == path


def test_a_manifest_declaring_an_impossible_file_size_is_corrupt(tmp_path):
    """``DataFile.file_size_bytes`` comes from the manifest: 2**64 - 1 made the tail read an
    OverflowError (found by fuzz.int_probe); now a CorruptFileError naming the data file."""
    import pyarrow as pa

    import lancefmt
    from lancefmt.table.manifest import encode_manifest_file
    from lancefmt.table.versions import latest_manifest, load_manifest

    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"x": pa.array(range(10), pa.int64())}), uri)
    loc = latest_manifest(uri)
    mf = load_manifest(uri, loc.version)
    pb = mf.manifest
    pb.fragments[0].files[0].file_size_bytes = 2**64 - 1
    with open(loc.uri, "wb") as out:
        out.write(encode_manifest_file(pb, mf.transaction(), mf.indices))
    with pytest.raises(CorruptFileError, match="impossible") as info:
        lancefmt.dataset(uri).to_table()
    assert info.value.path.endswith(".lance")
