"""The compaction fast path (lancefmt.dataset.maintain.compact_reader): it must be taken for small
2.1/2.2 fragments, return exactly what the general scan returns (and what pylance's compaction
keeps), fall back for anything else, and turn corrupt small files into CorruptFileError naming
the file."""
import glob
import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.dataset.maintain import _compact_pages as kernels
from lancefmt.dataset.maintain.compact_reader import CompactionReader, read_live_rows
from lancefmt.dataset.read.scan import ScanSpec, scan_batches
from lancefmt.errors import CorruptFileError

lance = pytest.importorskip("lance")


def _rows(start, n, nulls=False):
    ids = np.arange(start, start + n, dtype=np.int64)
    s = [f"s{i}" * (i % 4) for i in ids]  # includes empty strings
    x = ids * 0.5
    cols = {"id": ids, "x": x, "s": s, "i32": ids.astype(np.int32),
            "b": pa.array([bytes([i % 256]) * (i % 3) for i in ids], pa.binary())}
    if nulls:
        cols["x"] = pa.array([None if i % 7 == 0 else float(i) for i in ids])
    return pa.table(cols)


def _live(ds, with_row_id=False):
    """(fast path table, general scan table, fragments read fast)."""
    pbs = ds.snapshot.fragment_pbs()
    spec = ScanSpec.build(ds.schema, ds.schema.names, with_row_id=with_row_id)
    reader = CompactionReader(ds.snapshot.ctx, spec.read_columns, spec, with_row_id, 1)
    for pb in pbs:
        reader.add(pb)
    fast = reader.table()
    slow = pa.Table.from_batches(list(scan_batches(ds.snapshot.ctx, pbs, spec)), schema=fast.schema)
    assert read_live_rows(ds.snapshot.ctx, pbs, spec, with_row_id).equals(fast)
    return fast, slow, reader.fast_fragments


def _small_dataset(uri, version, **kw):
    ds = lancefmt.write_dataset(_rows(0, 300), uri, max_rows_per_file=30,
                                data_storage_version=version, **kw)
    ds.delete("id % 5 = 0 or id = 31")
    ds.delete("id >= 60 and id < 90")  # one fragment entirely deleted
    return ds


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_fast_path_equals_general_scan(tmp_path, version):
    ds = _small_dataset(str(tmp_path / "d"), version)
    ds.insert(_rows(1000, 7))  # a fragment without deletions
    fast, slow, n_fast = _live(ds)
    assert n_fast == len(ds.snapshot.fragment_pbs())  # every fragment took the fast path
    assert fast.equals(slow)
    assert fast.num_rows == ds.count_rows()
    assert fast.column("s").type == pa.string() and fast.column("b").type == pa.binary()


def test_stable_row_ids_on_the_fast_path(tmp_path):
    ds = _small_dataset(str(tmp_path / "d"), "2.2", enable_stable_row_ids=True)
    ds.update({"s": "'u'"}, "id = 12")  # an updated row moves to a new fragment
    fast, slow, n_fast = _live(ds, with_row_id=True)
    assert n_fast == len(ds.snapshot.fragment_pbs())
    assert fast.equals(slow)
    before = ds.to_table(with_row_id=True)
    ds.optimize.compact_files()
    assert ds.to_table(with_row_id=True).equals(before)


def test_roaring_deletions_and_larger_fragments(tmp_path, monkeypatch):
    from lancefmt.dataset.maintain import compact_reader

    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(_rows(0, 12000), uri, max_rows_per_file=6000)
    ds.delete("id < 5500 or id = 7000")  # fragment 0: a roaring (.bin) deletion file
    kinds = sorted(os.path.splitext(p)[1] for p in os.listdir(os.path.join(uri, "_deletions")))
    assert kinds == [".arrow", ".bin"]
    fast, slow, n_fast = _live(ds)
    assert fast.equals(slow) and n_fast == 2
    # files above the fast path's size bound go through the (threaded) general scan
    monkeypatch.setattr(compact_reader, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(compact_reader, "COALESCE_ROWS", 1000)
    spec = ScanSpec.build(ds.schema, ds.schema.names)
    general = read_live_rows(ds.snapshot.ctx, ds.snapshot.fragment_pbs(), spec, False)
    assert general.equals(slow)


def test_nulls_and_other_layouts_fall_back(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(_rows(0, 90, nulls=True), uri, max_rows_per_file=30)
    ds.delete("id % 4 = 1")
    fast, slow, n_fast = _live(ds)
    assert fast.equals(slow) and fast.column("x").null_count > 0
    assert n_fast < len(ds.snapshot.fragment_pbs())  # the null pages went the general way
    v20 = lancefmt.write_dataset(_rows(0, 60), str(tmp_path / "v20"), max_rows_per_file=20,
                                 data_storage_version="2.0")
    v20.delete("id = 3")
    fast, slow, n_fast = _live(v20)
    assert fast.equals(slow) and n_fast == 0


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_pylance_written_inputs_compact_as_pylance_does(tmp_path, version):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    lance.write_dataset(_rows(0, 400), a, max_rows_per_file=40, data_storage_version=version)
    pds = lance.dataset(a)
    pds.delete("id % 3 = 0 or id = 41")
    pds.delete("id >= 80 and id < 120")
    shutil.copytree(a, b)
    fast, slow, n_fast = _live(lancefmt.dataset(a))
    assert fast.equals(slow)
    # pylance's small 2.1/2.2 files and its deletion files take the fast path too
    assert n_fast == (0 if version == "2.0" else len(lancefmt.dataset(a).snapshot.fragment_pbs()))
    lancefmt.dataset(a).optimize.compact_files()
    lance.dataset(b).optimize.compact_files()
    ours, theirs = lance.dataset(a), lance.dataset(b)
    ours.validate()
    assert ours.to_table().equals(theirs.to_table())
    assert lancefmt.dataset(a).to_table().equals(lancefmt.dataset(b).to_table())
    assert len(ours.get_fragments()) == len(theirs.get_fragments())


def test_lancefmt_compaction_equals_pylance_compaction(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    _small_dataset(a, "2.2")
    shutil.copytree(a, b)
    lancefmt.dataset(a).optimize.compact_files()
    lance.dataset(b).optimize.compact_files()
    ours, theirs = lance.dataset(a), lance.dataset(b)
    ours.validate()
    assert ours.to_table().equals(theirs.to_table())
    assert [f.count_rows() for f in ours.get_fragments()] == \
        [f.count_rows() for f in theirs.get_fragments()]


# -- corrupt small files ------------------------------------------------------------------------
def _corrupt_dataset(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(_rows(0, 40), uri, max_rows_per_file=10)
    ds.delete("id % 2 = 0")
    return uri


def _compact_error(uri):
    with pytest.raises(CorruptFileError) as info:
        lancefmt.dataset(uri).optimize.compact_files()
    return str(info.value)


def test_corrupt_chunk_table_names_the_data_file(tmp_path):
    uri = _corrupt_dataset(tmp_path)
    df = lancefmt.dataset(uri).snapshot.fragment_pbs()[1].files[0]
    path = os.path.join(uri, "data", df.path)
    from lancefmt.file.reader import LanceFileReader

    page = LanceFileReader(path).metadata.columns[0].pages[0]
    raw = bytearray(open(path, "rb").read())
    # the first chunk's metadata word claims a chunk far beyond the page's data buffer
    raw[page.buffer_offsets[0]:page.buffer_offsets[0] + 4] = b"\xf0\xff\xff\x0f"
    open(path, "wb").write(bytes(raw))
    assert df.path in _compact_error(uri)


def test_corrupt_column_metadata_names_the_data_file(tmp_path):
    uri = _corrupt_dataset(tmp_path)
    df = lancefmt.dataset(uri).snapshot.fragment_pbs()[2].files[0]
    path = os.path.join(uri, "data", df.path)
    from lancefmt.file.reader import LanceFileReader

    cms = LanceFileReader(path).metadata.footer.column_meta_start
    raw = bytearray(open(path, "rb").read())
    raw[cms:cms + 8] = b"\xff" * 8  # undecodable protobuf
    open(path, "wb").write(bytes(raw))
    assert df.path in _compact_error(uri)


def test_corrupt_deletion_file_names_it(tmp_path):
    uri = _corrupt_dataset(tmp_path)
    victim = sorted(glob.glob(os.path.join(uri, "_deletions", "*.arrow")))[0]
    raw = bytearray(open(victim, "rb").read())
    raw[len(raw) // 2:len(raw) // 2 + 16] = b"\x7f" * 16
    open(victim, "wb").write(bytes(raw))
    assert os.path.basename(victim) in _compact_error(uri)


def test_deletion_offset_past_the_fragment_is_corrupt(tmp_path):
    from lancefmt.table.deletion import DeletionVector, deletion_file_bytes

    uri = _corrupt_dataset(tmp_path)
    victim = sorted(glob.glob(os.path.join(uri, "_deletions", "*.arrow")))[0]
    # 5 offsets (as the manifest says) but one beyond the fragment's 10 rows
    bad = deletion_file_bytes(DeletionVector(np.array([0, 2, 4, 6, 12], np.uint32), "arrow"))
    open(victim, "wb").write(bad)
    assert os.path.basename(victim) in _compact_error(uri)


def test_deletion_file_of_another_schema_is_corrupt(tmp_path):
    uri = _corrupt_dataset(tmp_path)
    victim = sorted(glob.glob(os.path.join(uri, "_deletions", "*.arrow")))[0]
    sink = pa.BufferOutputStream()
    batch = pa.record_batch({"row_id": pa.array([0, 2, 4, 6, 8], pa.int64())})
    with pa.ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch)
    open(victim, "wb").write(sink.getvalue().to_pybytes())
    assert os.path.basename(victim) in _compact_error(uri)


# -- kernels ------------------------------------------------------------------------------------------
def test_kernels_check_their_bounds():
    buf = np.zeros(64, dtype=np.uint8)
    out = np.zeros(800, dtype=np.uint8)
    with pytest.raises(ValueError):  # meta buffer outside the file
        kernels.miniblock_fixed(buf, 60, 8, 0, 8, 1, False, 8, np.empty(0, np.uint8), 0, out, 0)
    buf[0:2] = [0xF0, 0x0F]  # one chunk of (0xFF + 1) * 8 bytes in a 16-byte buffer
    with pytest.raises(ValueError):
        kernels.miniblock_fixed(buf, 0, 2, 16, 16, 1, False, 8, np.empty(0, np.uint8), 0, out, 0)
    with pytest.raises(ValueError):  # output too small
        kernels.miniblock_fixed(buf, 0, 2, 16, 16, 200, False, 8, np.empty(0, np.uint8), 0, out, 0)
    offs = np.array([3, 1, 3], dtype="<u4").view(np.uint8)
    with pytest.raises(ValueError):  # listed twice
        kernels.live_mask(offs, 3, 10)
    with pytest.raises(ValueError):  # past the fragment
        kernels.live_mask(np.array([10], dtype="<u4").view(np.uint8), 1, 10)
    assert kernels.live_mask(offs, 2, 10).tolist() == [1, 0, 1, 0] + [1] * 6
    with pytest.raises(ValueError):
        kernels.ipc_batch(np.frombuffer(b"ARROW1" + b"\0" * 20 + b"ARROW1", np.uint8), 10)
