"""lancefmt writes Lance 2.1 / 2.2 files and datasets; pylance 14.0.2 (the oracle) reads them
value by value and validates the datasets."""
import os

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader as PyLanceReader

import lancefmt
from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter

from file_tables import diff, equal_ignoring_dictionaries, wide_table

VERSIONS = ["2.1", "2.2"]


def nested_nulls_table(n=600, seed=3) -> pa.Table:
    """Nulls at every level: struct, list, list item, struct in list, long values."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        r = rng.random()
        rows.append(None if r < 0.1 else {"x": None if r < 0.2 else int(i),
                                          "y": None if r < 0.3 else [None if j % 3 == 0 else j
                                                                     for j in range(i % 4)],
                                          "z": {"w": None if r > 0.9 else "w" * (i % 5)}})
    st = pa.array(rows, pa.struct([("x", pa.int64()), ("y", pa.list_(pa.int32())),
                                   ("z", pa.struct([("w", pa.string())]))]))
    ll = pa.array([None if i % 11 == 0 else [] if i % 7 == 0 else
                   [[j, None] if j % 2 else None for j in range(i % 3 + 1)] for i in range(n)],
                  pa.list_(pa.list_(pa.int16())))
    lst = pa.array([None if i % 5 == 0 else [{"p": None if i % 3 == 0 else i % 128}, None]
                    for i in range(n)], pa.list_(pa.struct([("p", pa.int8())])))
    long = pa.array([None if i % 4 == 1 else "" if i % 4 == 2 else "L" * (200 + i % 300)
                     for i in range(n)], pa.large_string())
    longlist = pa.array([None if i % 6 == 0 else ["q" * 400, None] for i in range(n)],
                        pa.list_(pa.string()))
    wide = pa.FixedSizeListArray.from_arrays(
        pa.array(rng.standard_normal(n * 128).astype(np.float32)), 128,
        mask=pa.array(rng.random(n) < 0.2))
    all_null_struct = pa.array([None] * n, pa.struct([("a", pa.int32())]))
    empties = pa.array([[] if i % 2 else None for i in range(n)], pa.list_(pa.string()))
    return pa.table({"st": st, "ll": ll, "lst": lst, "long": long, "longlist": longlist,
                     "wide": wide, "all_null_struct": all_null_struct, "empties": empties})


def _write(path, table, version, page_buffer_bytes=None, chunk=1 << 20):
    with LanceFileWriter(str(path), table.schema, version=version,
                         page_buffer_bytes=page_buffer_bytes) as w:
        for batch in table.to_batches(max_chunksize=chunk):
            w.write_batch(batch)
    return str(path)


def _check_both_readers(path, table):
    theirs = PyLanceReader(path).read_all().to_table()
    assert equal_ignoring_dictionaries(theirs, table), diff(theirs, table)
    ours = LanceFileReader(path).read_all()
    assert equal_ignoring_dictionaries(ours, table), diff(ours, table)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("page_buffer_bytes", [None, 8192])
def test_pylance_reads_every_type(tmp_path, version, page_buffer_bytes):
    table = wide_table(1500, seed=1)
    path = _write(tmp_path / "w.lance", table, version, page_buffer_bytes, chunk=400)
    _check_both_readers(path, table)
    assert PyLanceReader(path).metadata().major_version == 2
    assert PyLanceReader(path).metadata().minor_version == int(version[-1])


@pytest.mark.parametrize("version", VERSIONS)
def test_pylance_reads_nulls_at_every_level(tmp_path, version):
    table = nested_nulls_table()
    path = _write(tmp_path / "n.lance", table, version, 16384, chunk=250)
    _check_both_readers(path, table)
    idx = np.array([0, 5, 77, 598])
    assert LanceFileReader(path).take(idx).equals(table.take(idx))


@pytest.mark.parametrize("version", VERSIONS)
def test_zero_rows(tmp_path, version):
    table = wide_table(0)
    _check_both_readers(_write(tmp_path / "z.lance", table, version), table)


@pytest.mark.parametrize("version", VERSIONS)
def test_pylance_api_writer_versions(tmp_path, version):
    table = nested_nulls_table(100)
    path = str(tmp_path / "a.lance")
    with lancefmt.file.LanceFileWriter(path, table.schema, version=version) as w:
        w.write_batch(table)
    assert PyLanceReader(path).metadata().minor_version == int(version[-1])
    _check_both_readers(path, table)


def test_pylance_api_writer_defaults_to_2_2(tmp_path):
    path = str(tmp_path / "d.lance")
    with lancefmt.file.LanceFileWriter(path, pa.schema([("a", pa.int32())])) as w:
        w.write_batch(pa.table({"a": pa.array([1, 2, 3], pa.int32())}))
    assert PyLanceReader(path).metadata().minor_version == 2


@pytest.mark.parametrize("bad", ["next", "2.3", "3.0", "banana"])
def test_unwritable_versions_are_refused_before_writing(tmp_path, bad):
    path = tmp_path / "x.lance"
    with pytest.raises(lancefmt.UnsupportedFeatureError):
        LanceFileWriter(str(path), pa.schema([("a", pa.int32())]), version=bad)
    assert not path.exists()
    with pytest.raises(lancefmt.UnsupportedFeatureError):
        lancefmt.write_dataset(pa.table({"a": [1]}), str(tmp_path / "ds"), data_storage_version=bad)
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize("version", [None, "stable", "2.1", "2.2"])
def test_datasets_validate_and_appends_keep_the_version(tmp_path, version):
    table = nested_nulls_table(300)
    uri = str(tmp_path / "ds")
    kw = {} if version is None else {"data_storage_version": version}
    lancefmt.write_dataset(table, uri, **kw)
    lancefmt.write_dataset(table, uri, mode="append")
    ds = lance.dataset(uri)
    ds.validate()
    expected = "2.2" if version in (None, "stable") else version
    assert ds.data_storage_version == expected
    assert ds.to_table().equals(pa.concat_tables([table, table]))
    for frag in ds.get_fragments():
        for f in frag.metadata.files:
            assert (f.file_major_version, f.file_minor_version) == (2, int(expected[-1]))
    assert lancefmt.dataset(uri).to_table().equals(pa.concat_tables([table, table]))


def test_appending_to_pylance_2_1_dataset(tmp_path):
    table = pa.table({"a": pa.array(range(100)), "s": pa.array([str(i) for i in range(100)])})
    uri = str(tmp_path / "p")
    lance.write_dataset(table, uri, data_storage_version="2.1")
    lancefmt.write_dataset(table, uri, mode="append")
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.data_storage_version == "2.1"
    assert ds.to_table().equals(pa.concat_tables([table, table]))


def test_write_fragments_follow_the_version_rules(tmp_path):
    table = pa.table({"a": pa.array(range(10))})
    frags = lancefmt.write_fragments(table, str(tmp_path / "f"))
    assert {(f.file_major_version, f.file_minor_version) for fr in frags
            for f in fr.files} == {(2, 2)}
    legacy = lancefmt.write_fragments(table, str(tmp_path / "l"), data_storage_version="legacy")
    assert {(f.file_major_version, f.file_minor_version) for fr in legacy
            for f in fr.files} == {(0, 2)}
    with pytest.raises(lancefmt.UnsupportedFeatureError):
        lancefmt.write_fragments(table, str(tmp_path / "g"), data_storage_version="2.3")
    assert not os.path.exists(tmp_path / "g")


@pytest.mark.parametrize("version", VERSIONS)
def test_compressed_pages_read_back(tmp_path, version):
    """Bit-packed integers, dictionaries, zstd-compressed text, and the compression the
    field metadata asks for, all read by pylance value by value."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from asv_bench.benchmarks.file_write_v21 import size_table

    table = size_table(20_000)
    n = table.num_rows
    asked = {f"z_{s}": pa.field(f"z_{s}", pa.float64(),
                                metadata={"lance-encoding:compression": s})
             for s in ("zstd", "lz4", "none")}
    for name, f in asked.items():
        table = table.append_column(f, pa.array(np.arange(n) % 7 * 1.5))
    table = table.append_column("neg", pa.array(np.arange(n) - n // 2))
    table = table.append_column("nullable_small", pa.array(np.arange(n) % 9, mask=np.arange(n) % 5 == 0))
    path = _write(tmp_path / "c.lance", table, version, chunk=3000)
    _check_both_readers(path, table)


@pytest.mark.parametrize("version", VERSIONS)
def test_constant_columns(tmp_path, version):
    n = 3000
    table = pa.table({"i": pa.array([7] * n, pa.int64()), "f": pa.array([1.5] * n),
                      "b": pa.array([True] * n), "z": pa.array([0] * n, pa.int32()),
                      "s": pa.array(["same"] * n), "d": pa.array([3] * n, pa.decimal128(5, 0))})
    path = _write(tmp_path / "k.lance", table, version, chunk=1000)
    _check_both_readers(path, table)


@pytest.mark.parametrize("version", VERSIONS)
def test_runs(tmp_path, version):
    n = 20000
    runs = np.repeat(np.arange(n // 700 + 1) * 1000003, 700)[:n]
    table = pa.table({"r64": pa.array(runs, pa.int64()),
                      "r8": pa.array((np.arange(n) // 300 % 3).astype(np.int8)),
                      "rf": pa.array(np.repeat([1.25, -3.5], n // 2)),
                      "rn": pa.array(runs.astype(np.int32), mask=np.arange(n) % 1000 == 0)})
    path = _write(tmp_path / "r.lance", table, version, chunk=6000)
    _check_both_readers(path, table)
    meta = str(PyLanceReader(path).metadata())
    assert "rle" in meta.lower() or "Rle" in meta
