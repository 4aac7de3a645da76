"""pylance 14 writes 2.2 datasets' blob columns as blob v2 (descriptors plus inline / packed /
dedicated storage); lancefmt reads the descriptors as pylance returns them and opens the bytes
with ``take_blobs``. lancefmt itself still writes blob v1 at 2.2, which pylance reads."""
import os

import pyarrow as pa
import pytest

import lancefmt

lance = pytest.importorskip("lance")

BLOB = {"lance-encoding:blob": "true"}
# inline (small, empty), packed sidecar (200 kB) and dedicated sidecar (5 MB) blobs, nulls.
VALUES = [b"a" * 10, None, b"", b"x" * 200_000, b"y" * 5_000_000, b"small", None, b"\x00\xff"]


def blob_table(values=VALUES, start=0):
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("blob", pa.large_binary(), metadata=BLOB)])
    return pa.table({"id": list(range(start, start + len(values))), "blob": values},
                    schema=schema)


@pytest.fixture(scope="module")
def pylance_uri(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("blobv2") / "ds")
    lance.write_dataset(blob_table(), uri, data_storage_version="2.2", max_rows_per_file=5)
    lance.write_dataset(blob_table([b"z" * 70_000, None, b"q"], start=100), uri, mode="append")
    return uri


def test_pylance_writes_blob_v2_with_sidecars(pylance_uri):
    """The fixture really is blob v2 with sidecar files (the layout the reader must follow)."""
    assert lance.dataset(pylance_uri).schema.field("blob").type.extension_name == "lance.blob.v2"
    sidecars = [f for _, _, fs in os.walk(os.path.join(pylance_uri, "data")) for f in fs
                if f.endswith(".blob")]
    assert len(sidecars) >= 2


def test_to_table_scanner_and_take_match_pylance(pylance_uri):
    ours, theirs = lancefmt.dataset(pylance_uri), lance.dataset(pylance_uri)
    expected = theirs.to_table()
    assert ours.to_table().equals(expected, check_metadata=True)
    assert ours.schema.field("blob").type == expected.schema.field("blob").type
    got = ours.scanner(columns=["blob", "id"], filter="id >= 3").to_table()
    assert got.equals(theirs.scanner(columns=["blob", "id"], filter="id >= 3").to_table())
    idx = [9, 0, 4, 1, 3]
    assert ours.take(idx).equals(theirs.take(idx))


@pytest.mark.parametrize("how", ["indices", "ids", "addresses"])
def test_take_blobs_bytes_match_pylance(pylance_uri, how):
    ours, theirs = lancefmt.dataset(pylance_uri), lance.dataset(pylance_uri)
    n = theirs.count_rows()
    if how == "indices":
        sel = list(range(n))
    else:
        sel = theirs.to_table(with_row_id=True, with_row_address=True).column(
            "_rowid" if how == "ids" else "_rowaddr").to_pylist()
    got = ours.take_blobs("blob", **{how: sel})
    want = theirs.take_blobs("blob", **{how: sel})
    assert len(got) == len(want) == n
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if g is not None:
            assert g.size() == w.size()
            assert g.readall() == w.readall()


def test_blob_file_seek_and_ranges(pylance_uri):
    f = lancefmt.dataset(pylance_uri).take_blobs("blob", indices=[3])[0]
    assert f.read(4) == b"xxxx" and f.tell() == 4
    f.seek(-2, os.SEEK_END)
    assert f.read() == b"xx" and f.read() == b""
    assert f.read_range(199_998, 100) == b"xx"


def test_truncated_sidecar_is_corrupt(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(blob_table(), uri, data_storage_version="2.2")
    for root, _, files in os.walk(os.path.join(uri, "data")):
        for f in files:
            if f.endswith(".blob"):
                with open(os.path.join(root, f), "r+b") as fh:
                    fh.truncate(100)
    with pytest.raises(lancefmt.CorruptFileError):
        lancefmt.dataset(uri).take_blobs("blob", indices=[3, 4])


def test_take_blobs_rejects_other_columns(pylance_uri):
    ds = lancefmt.dataset(pylance_uri)
    with pytest.raises(lancefmt.LanceError, match="not a blob"):
        ds.take_blobs("id", indices=[0])
    with pytest.raises(lancefmt.LanceError):
        ds.take_blobs("blob", indices=[0], ids=[0])


def blob_bytes(files):
    return [None if f is None else f.readall() for f in files]


def test_lancefmt_writes_blob_v2_that_pylance_reads(tmp_path):
    """At 2.2 lancefmt writes blob v2 (descriptors + packed sidecars); pylance validates it,
    returns the same descriptors as lancefmt and opens every blob; appends both ways."""
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(blob_table(), uri, data_storage_version="2.2", max_rows_per_file=3)
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.schema.field("blob").type.extension_name == "lance.blob.v2"
    assert lancefmt.dataset(uri).to_table().equals(theirs.to_table(), check_metadata=True)
    assert blob_bytes(theirs.take_blobs("blob", indices=list(range(len(VALUES))))) == VALUES

    more = [b"m" * 3, None, b""]
    lance.write_dataset(blob_table(more, start=50), uri, mode="append")
    lancefmt.write_dataset(blob_table(more, start=60), uri, mode="append")
    theirs = lance.dataset(uri)
    theirs.validate()
    expected = VALUES + more + more
    n = len(expected)
    assert blob_bytes(theirs.take_blobs("blob", indices=list(range(n)))) == expected
    ours = lancefmt.dataset(uri)
    assert ours.to_table().equals(theirs.to_table(), check_metadata=True)
    assert blob_bytes(ours.take_blobs("blob", indices=list(range(n)))) == expected


def test_lancefmt_appends_to_pylance_blob_v2(pylance_uri, tmp_path):
    import shutil

    uri = str(tmp_path / "copy")
    shutil.copytree(pylance_uri, uri)
    before = lance.dataset(uri).count_rows()
    lancefmt.write_dataset(blob_table([b"new" * 1000, None], start=500), uri, mode="append")
    theirs = lance.dataset(uri)
    theirs.validate()
    files = theirs.take_blobs("blob", indices=[before, before + 1])
    assert blob_bytes(files) == [b"new" * 1000, None]
    assert lancefmt.dataset(uri).to_table().equals(theirs.to_table())


def test_failed_blob_write_leaves_nothing(tmp_path):
    uri = str(tmp_path / "ds")
    good = blob_table().to_batches()[0]

    def batches():
        yield good
        raise RuntimeError("source failed")

    reader = pa.RecordBatchReader.from_batches(good.schema, batches())
    with pytest.raises(RuntimeError):
        lancefmt.write_dataset(reader, uri, data_storage_version="2.2", max_rows_per_file=3)
    data = os.path.join(uri, "data")
    left = [f for _, _, fs in os.walk(data) for f in fs] if os.path.exists(data) else []
    assert left == []


def test_lancefmt_keeps_blob_v1_below_2_2(tmp_path):
    """At 2.1 (as pylance) blob columns stay blob v1; pylance validates and opens them."""
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(blob_table(), uri, data_storage_version="2.1")
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.schema.field("blob").type == pa.large_binary()
    assert blob_bytes(ds.take_blobs("blob", indices=list(range(len(VALUES))))) == VALUES
