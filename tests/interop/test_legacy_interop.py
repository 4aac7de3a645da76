"""Legacy (v0.1) data files written by pylance 14 (``data_storage_version="legacy"``) read by
lancefmt exactly as pylance reads them: every type, projections, filters, takes, deletions,
row ids, several files and batches per fragment."""
import numpy as np
import pyarrow as pa
import pytest

import lance
import lancefmt
from lancefmt.file.reader import LanceFileReader

from file_tables import diff, wide_table

N = 500


@pytest.fixture(scope="module")
def legacy_ds(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("legacy") / "ds")
    t = wide_table(N, seed=3)
    lance.write_dataset(t, uri, data_storage_version="legacy", max_rows_per_group=64,
                        max_rows_per_file=300)
    return uri


def _assert_same(a: pa.Table, b: pa.Table):
    assert a.schema.equals(b.schema), (a.schema, b.schema)
    assert a.num_rows == b.num_rows
    assert diff(a, b) == []


def test_legacy_files_are_what_pylance_wrote(legacy_ds):
    frags = lance.dataset(legacy_ds).get_fragments()
    assert len(frags) == 2
    df = frags[0].metadata.files[0]
    assert (df.file_major_version, df.file_minor_version) == (0, 2)
    r = LanceFileReader(f"{legacy_ds}/data/{df.path}")
    n = frags[0].count_rows()
    assert r.version == (0, 2) and r.num_rows == n > 64
    assert len(r.batch_offsets) - 1 == -(-n // 64)  # row groups of 64 rows


def test_scan_every_type(legacy_ds):
    _assert_same(lance.dataset(legacy_ds).to_table(), lancefmt.dataset(legacy_ds).to_table())


@pytest.mark.parametrize("columns", [["string", "i32"], ["struct"], ["list_struct", "dict"],
                                     ["vector", "bool", "large_list_str"], ["list_list"]])
def test_projection(legacy_ds, columns):
    _assert_same(lance.dataset(legacy_ds).to_table(columns=columns),
                 lancefmt.dataset(legacy_ds).to_table(columns=columns))


@pytest.mark.parametrize("flt", ["i32 > 0", "string = 'abc' OR u8 < 20", "bool",
                                 "f64 IS NOT NULL AND i64 < 0"])
def test_filter(legacy_ds, flt):
    cols = ["i32", "string", "u8", "bool", "f64", "i64", "list_i32"]
    _assert_same(lance.dataset(legacy_ds).to_table(columns=cols, filter=flt),
                 lancefmt.dataset(legacy_ds).to_table(columns=cols, filter=flt))


@pytest.mark.parametrize("seed", [0, 1])
def test_take_any_order(legacy_ds, seed):
    idx = np.random.default_rng(seed).integers(0, N, 90)   # repeats, any order, both files
    _assert_same(lance.dataset(legacy_ds).take(idx), lancefmt.dataset(legacy_ds).take(idx))


def test_deletions_and_row_ids(tmp_path):
    uri = str(tmp_path / "ds")
    t = wide_table(260, seed=5).select(["i32", "string", "list_i32", "struct", "dict"])
    lance.write_dataset(t, uri, data_storage_version="legacy", max_rows_per_group=50,
                        max_rows_per_file=100)
    ds = lance.dataset(uri)
    ds.delete("i32 < 0")
    ds = lance.dataset(uri)
    ours = lancefmt.dataset(uri)
    assert ours.version == ds.version == 2
    _assert_same(ds.to_table(with_row_id=True), ours.to_table(with_row_id=True))
    _assert_same(ds.to_table(columns=["string"], with_row_address=True),
                 ours.to_table(columns=["string"], with_row_address=True))
    assert ours.count_rows() == ds.count_rows() < 260
    idx = [0, 5, ds.count_rows() - 1, 3]
    _assert_same(ds.take(idx), ours.take(idx))


def test_file_reader_ranges_and_batches(legacy_ds):
    frag = lance.dataset(legacy_ds).get_fragments()[0]
    r = LanceFileReader(f"{legacy_ds}/data/{frag.metadata.files[0].path}")
    whole = r.read_all()
    expected = frag.to_table()
    assert diff(expected, whole) == []
    part = r.read_range(37, 201, ["string", "list_list", "struct"])
    assert diff(whole.select(["string", "list_list", "struct"]).slice(37, 164), part) == []
    batches = list(r.read_batches(70, ["large_list_str"], start=10, stop=290))
    assert [b.num_rows for b in batches] == [70, 70, 70, 70]
    assert pa.Table.from_batches(batches).equals(whole.select(["large_list_str"]).slice(10, 280))


def test_legacy_quirks_are_kept(tmp_path):
    """What pylance returns for legacy files, not what was written: no nulls in numbers,
    lists, structs and vectors; empty strings of nullable fields read as null."""
    uri = str(tmp_path / "q")
    t = pa.table({"i": pa.array([1, None], pa.int32()), "s": ["", None],
                  "l": pa.array([None, [1]], pa.list_(pa.int64())),
                  "st": pa.array([None, {"x": 2}], pa.struct([("x", pa.int64())]))})
    lance.write_dataset(t, uri, data_storage_version="legacy")
    got = lancefmt.dataset(uri).to_table()
    assert got.to_pylist() == lance.dataset(uri).to_table().to_pylist() == [
        {"i": 1, "s": None, "l": [], "st": {"x": 0}}, {"i": 0, "s": None, "l": [1], "st": {"x": 2}}]
