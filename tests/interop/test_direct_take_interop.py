"""The direct take (fixed-width columns gathered straight from the mapped files) on datasets
pylance wrote, every storage version: the same rows as pylance's take, with deletions, unsorted
and repeated indices, ``columns=``; columns it cannot read fall back to the general path; a
corrupt chunk is a CorruptFileError naming the file."""
import glob
import struct

import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.dataset.read import direct_take, take_plan
from lancefmt.errors import CorruptFileError
from lancefmt.file.reader import LanceFileReader

lance = pytest.importorskip("lance")

ROWS = 9_000
NUMERIC = ["i8", "u16", "i32", "u32", "i64", "f32", "f64", "ts", "d32"]


def table(n=ROWS):
    rng = np.random.default_rng(3)
    ids = np.arange(n, dtype=np.int64)
    return pa.table({
        "i8": pa.array(rng.integers(-128, 128, n), pa.int8()),
        "u16": pa.array(rng.integers(0, 1 << 16, n), pa.uint16()),
        "i32": pa.array(rng.integers(-(1 << 31), 1 << 31, n), pa.int32()),
        "u32": pa.array(rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)),
        "i64": pa.array(ids * 7919 - 5),
        "f32": pa.array(rng.random(n).astype(np.float32)),
        "f64": pa.array(rng.standard_normal(n)),
        "ts": pa.array(ids * 1_000_003, pa.timestamp("us")),
        "d32": pa.array((ids % 20_000).astype(np.int32), pa.date32()),
        "small": pa.array(ids % 5),
        "nulls": pa.array([None if i % 11 == 0 else int(i) for i in ids], pa.int64()),
        "s": pa.array([f"s{i}" for i in ids]),
        "cat": pa.array([f"category-{i % 37}" for i in (ids * 7) % 101]),
        "catnull": pa.array([None if i % 9 == 0 else f"c{i % 23}" for i in ids]),
    })


@pytest.fixture(scope="module")
def datasets(tmp_path_factory, storage_version):
    uri = str(tmp_path_factory.mktemp("direct") / "ds")
    lance.write_dataset(table(), uri, max_rows_per_file=2_500, data_storage_version=storage_version)
    ds = lance.dataset(uri)
    ds.delete("i64 % 13 = 4 OR (i64 > 30000 AND i64 < 40000)")
    return lancefmt.dataset(uri), lance.dataset(uri), uri


def indices(n):
    rng = np.random.default_rng(5)
    return [np.sort(rng.choice(n, 400, replace=False)), rng.integers(0, n, 700),
            np.array([n - 1, 0, 0, n - 1, 17]), np.arange(n)]


def test_direct_take_matches_pylance(datasets):
    ours, theirs, _ = datasets
    plan = direct_take.direct_plan(ours.snapshot.ctx, ours.snapshot.fragment_pbs(), tuple(NUMERIC))
    assert plan is not None and plan.live_rows == theirs.count_rows()
    n = theirs.count_rows()
    for idx in indices(n):
        got = ours.take(idx, columns=NUMERIC)
        assert got.equals(theirs.take(idx, columns=NUMERIC))
        assert ours.take(pa.array(idx), columns=["f64", "i8"]).equals(
            theirs.take(pa.array(idx), columns=["f64", "i8"]))


def test_shuffled_takes_read_regrouped_match(datasets):
    """Many rows in random (or descending) order are read grouped by where they lie and put
    back in place: the same table as pylance's."""
    ours, theirs, _ = datasets
    n = theirs.count_rows()
    rng = np.random.default_rng(9)
    for idx in (rng.permutation(n), np.arange(n)[::-1].copy(), rng.integers(0, n, 3 * n)):
        assert take_plan.shuffled(idx)
        assert ours.take(idx, columns=NUMERIC).equals(theirs.take(idx, columns=NUMERIC))
    assert not take_plan.shuffled(np.arange(n))


def test_big_takes_split_across_threads_match(datasets, monkeypatch):
    ours, theirs, _ = datasets
    monkeypatch.setattr(take_plan, "PARALLEL_MIN_VALUES", 1)
    idx = np.random.default_rng(8).integers(0, theirs.count_rows(), 5_001)
    assert ours.take(idx, columns=NUMERIC).equals(theirs.take(idx, columns=NUMERIC))


def test_other_columns_take_the_general_path(datasets):
    ours, theirs, _ = datasets
    for cols in (["i64", "s"], ["nulls"], ["catnull"], None):
        key = tuple(cols or ours.schema.names)
        assert direct_take.direct_plan(ours.snapshot.ctx, ours.snapshot.fragment_pbs(), key) is None
        for idx in indices(theirs.count_rows())[:3]:
            assert ours.take(idx, columns=cols).equals(theirs.take(idx, columns=cols))
    # low-cardinality values (dictionary pages in 2.1/2.2: the general path there)
    for idx in indices(theirs.count_rows())[:3]:
        assert ours.take(idx, columns=["small", "i32"]).equals(
            theirs.take(idx, columns=["small", "i32"]))
    got = ours.take([3, 1], columns=["i64"], with_row_id=True)
    full = theirs.to_table(columns=["i64"], with_row_id=True)
    assert got.equals(full.take(pa.array([3, 1])))


def test_corrupt_chunk_is_a_corrupt_file_error(tmp_path, storage_version):
    uri = str(tmp_path / "ds")
    lance.write_dataset(table(3_000).select(["i64", "f64"]), uri,
                        data_storage_version=storage_version)
    path = glob.glob(f"{uri}/data/*.lance")[0]
    page = LanceFileReader(path).metadata.columns[0].pages[0]
    raw = bytearray(open(path, "rb").read())
    if storage_version == "2.0":  # a page whose values would run past the mapped bytes
        cut = int(page.buffer_offsets[0]) + 100
        lying = type(page)(**{**page.__dict__, "parsed": None})
        with pytest.raises(CorruptFileError, match="need"):
            direct_take._v20_page(lying, 8, pa.py_buffer(bytes(raw[:cut])), path)
        return
    data_at = int(page.buffer_offsets[1])  # chunk 0: u16 levels, then the value-buffer size
    width = 4 if storage_version == "2.2" else 2
    raw[data_at + 2:data_at + 2 + width] = struct.pack("<I" if width == 4 else "<H",
                                                       (1 << (8 * width)) - 8)
    open(path, "wb").write(bytes(raw))
    with pytest.raises(CorruptFileError) as e:
        lancefmt.dataset(uri).take([1, 2000], columns=["i64"])
    assert path.split("/")[-1] in str(e.value)


@pytest.mark.parametrize("corrupt", ["late start", "out of order"])
def test_inconsistent_segment_table_is_a_corrupt_file_error(datasets, monkeypatch, corrupt):
    """Segment tables are checked when the plan is made (a take then never reads past a
    segment): the first file's segments starting after row 0, or past the next file's."""
    ours, _, _ = datasets
    real = direct_take._add_file
    calls = []

    def add(reader, proj, cols, first):
        real(reader, proj, cols, first)
        if not calls:
            cols[0].starts[-1] = cols[0].starts[-1] + (5 if corrupt == "late start" else 10 ** 9)
        calls.append(reader)

    monkeypatch.setattr(direct_take, "_add_file", add)
    with pytest.raises(CorruptFileError, match="direct take"):
        direct_take.DirectTakePlan(ours.snapshot.ctx, ours.snapshot.fragment_pbs(), ("i32",))
    monkeypatch.undo()
    plan = direct_take.DirectTakePlan(ours.snapshot.ctx, ours.snapshot.fragment_pbs(), ("i32",))
    assert plan.take(np.array([0, plan.live_rows - 1])).num_rows == 2


def test_dictionary_strings_are_taken_directly(datasets, storage_version):
    """A low-cardinality string column (dictionary pages in 2.1/2.2) joins the direct take:
    the same rows as pylance's, with numbers beside it; 2.0 files take the general path."""
    ours, theirs, _ = datasets
    cols = ("cat", "i64", "f32")
    plan = direct_take.direct_plan(ours.snapshot.ctx, ours.snapshot.fragment_pbs(), cols)
    assert (plan is None) == (storage_version == "2.0")
    n = theirs.count_rows()
    rng = np.random.default_rng(11)
    for idx in indices(n) + [rng.permutation(n)]:
        assert ours.take(idx, columns=list(cols)).equals(theirs.take(idx, columns=list(cols)))
        assert ours.take(idx, columns=["cat"]).equals(theirs.take(idx, columns=["cat"]))


def test_a_dictionary_index_past_its_dictionary_is_a_corrupt_file_error(datasets, storage_version):
    ours, _, _ = datasets
    if storage_version == "2.0":  # no dictionary pages: the direct take refuses the column
        with pytest.raises(take_plan.Ineligible):
            direct_take.DirectTakePlan(ours.snapshot.ctx, ours.snapshot.fragment_pbs(), ("cat",))
        return
    plan = direct_take.DirectTakePlan(ours.snapshot.ctx, ours.snapshot.fragment_pbs(), ("cat",))
    col = plan.columns[0]
    assert col.dictionary and col.item_count.sum() == len(col.items)
    col.item_count = col.item_count - col.item_count  # every index now lies past its page's
    with pytest.raises(CorruptFileError, match="dictionary index") as e:
        plan.take(np.array([0, 5]))
    assert ".lance" in str(e.value)
