"""Issue 16: take / take_row_ids / sample / shuffled batches / _rowid scans, lancefmt vs pylance
on datasets pylance wrote (every storage version), with deletions and moved rows."""
import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.dataset.read.direct_take import direct_plan
from lancefmt.errors import RowOutOfRangeError

lance = pytest.importorskip("lance")


def table(n, start=0):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "f": ids * 0.5,
                     "v": pa.array([None if i % 7 == 0 else int(i) for i in ids], pa.int32()),
                     "s": pa.array([f"s{i}" for i in ids])})


@pytest.fixture(scope="module", params=[False, True], ids=["addr_ids", "stable_ids"])
def datasets(request, tmp_path_factory, storage_version):
    """A dataset of 4 fragments, with deletions (sparse and dense) and an update (with stable
    row ids, updated rows move to a new fragment: a non-range row-id sequence)."""
    uri = str(tmp_path_factory.mktemp("ra") / "ds")
    lance.write_dataset(table(8_000), uri, max_rows_per_file=2_000,
                        data_storage_version=storage_version, enable_stable_row_ids=request.param)
    ds = lance.dataset(uri)
    ds.delete("id % 13 = 5")
    ds.delete("id >= 2100 AND id < 3900")
    ds.update({"f": "f + 1"}, where="id % 50 = 3")
    return lancefmt.dataset(uri), lance.dataset(uri)


def same(a: pa.Table, b: pa.Table):
    assert a.column_names == b.column_names
    for n in a.column_names:
        assert a.column(n).to_pylist() == b.column(n).to_pylist(), n


def test_take_unsorted_and_repeated_indices(datasets):
    ours, theirs = datasets
    n = theirs.count_rows()
    rng = np.random.default_rng(4)
    for idx in (rng.choice(n, 300, replace=True), np.sort(rng.choice(n, 50, replace=False)),
                np.array([n - 1, 0, 0, n - 1, 17]), np.arange(n)):
        same(ours.take(idx), theirs.take(idx))
        same(ours.take(pa.array(idx), columns=["s", "id"]), theirs.take(pa.array(idx), columns=["s", "id"]))
    assert ours.take([]).num_rows == 0
    with pytest.raises(RowOutOfRangeError):
        ours.take([n])
    # fixed-width columns take the direct path, which checks the offsets as it reads them
    assert direct_plan(ours.snapshot.ctx, ours.snapshot.fragment_pbs(), ("id", "f")) is not None
    for bad in ([n], [-1], [0, n + 5, 3], [5] * 70_000 + [n]):
        with pytest.raises(RowOutOfRangeError, match=f"out of range for {n} rows"):
            ours.take(bad, columns=["id", "f"])


def test_take_with_row_ids_and_addresses_matches_a_scan(datasets):
    ours, theirs = datasets
    full = theirs.to_table(with_row_id=True, with_row_address=True)
    idx = np.random.default_rng(5).choice(full.num_rows, 200)
    got = ours.take(idx, columns=["id"], with_row_id=True, with_row_address=True)
    same(got, full.select(["id", "_rowid", "_rowaddr"]).take(pa.array(idx)))
    # ... and rows come back by those ids, in any order, through _take_rows / take_row_ids
    ids = got.column("_rowid").to_numpy()[::-1]
    same(ours._take_rows(ids, columns=["id", "s"]), theirs._take_rows(ids, columns=["id", "s"]))


def test_take_names_row_ids_and_duplicates_as_pylance(datasets):
    """_rowid/_rowaddr named in columns come back where (and as often as) they are named, a
    data column named twice once; a scan refuses a column named twice, as pylance does."""
    ours, theirs = datasets
    idx = [5, 0, 1999, 77]
    for cols in (["_rowid"], ["_rowid", "_rowid"], ["_rowaddr", "id"], ["id", "id"],
                 ["id", "_rowid", "f", "_rowaddr"], ["_rowid", "s", "_rowid"]):
        want, got = theirs.take(idx, columns=cols), ours.take(idx, columns=cols)
        assert got.schema.names == want.schema.names, cols
        assert [c.to_pylist() for c in got.columns] == [c.to_pylist() for c in want.columns], cols
    for lib in (ours, theirs):
        with pytest.raises(ValueError, match="Duplicate column name: id"):
            lib.to_table(columns=["id", "id"])


def test_fragment_sessions_take_as_pylance(datasets):
    """Fragment.open_session: takes of fixed columns by offset among a fragment's live rows,
    with _rowaddr last when asked (the fragments have deletions)."""
    ours, theirs = datasets
    for i in (0, 1):
        mine, yours = ours.get_fragments()[i], theirs.get_fragments()[i]
        idx = [0, 3, 5, mine.count_rows() - 1]   # pylance takes them ascending only
        for cols, addr in ((["id", "s"], False), (["s"], True), (None, True)):
            same(mine.open_session(columns=cols, with_row_address=addr).take(idx),
                 yours.open_session(columns=cols, with_row_address=addr).take(idx))


def test_rowid_scan(datasets):
    ours, theirs = datasets
    same(ours.to_table(with_row_id=True), theirs.to_table(with_row_id=True))
    same(ours.to_table(columns=["id"], with_row_id=True, with_row_address=True,
                       filter="id % 3 = 0"),
         theirs.to_table(columns=["id"], with_row_id=True, with_row_address=True,
                         filter="id % 3 = 0"))


def test_sample_reads_distinct_live_rows_through_take(datasets, monkeypatch):
    ours, theirs = datasets
    live = set(theirs.to_table(columns=["id"]).column(0).to_pylist())
    calls = []
    real = type(ours).take
    monkeypatch.setattr(type(ours), "take", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    got = ours.sample(100, columns=["id", "s"])
    assert calls and got.num_rows == 100 and got.column_names == ["id", "s"]
    ids = got.column("id").to_pylist()
    assert len(set(ids)) == 100 and set(ids) <= live
    assert got.column("s").to_pylist() == [f"s{i}" for i in ids]


def test_shuffled_batches_cover_every_row_once_in_a_seeded_order(datasets):
    ours, theirs = datasets
    expected = theirs.to_table(columns=["id", "s"], with_row_id=True)
    batches = list(ours.shuffled_batches(300, seed=7, columns=["id", "s"], with_row_id=True))
    assert all(b.num_rows == 300 for b in batches[:-1]) and 0 < batches[-1].num_rows <= 300
    got = pa.Table.from_batches(batches)
    assert got.num_rows == expected.num_rows
    assert got.column("id").to_pylist() != expected.column("id").to_pylist()  # shuffled
    same(got.sort_by("id"), expected.sort_by("id"))
    again = pa.Table.from_batches(ours.shuffled_batches(300, seed=7, columns=["id", "s"],
                                                        with_row_id=True, readahead=0))
    same(again, got)
    other = pa.Table.from_batches(ours.shuffled_batches(300, seed=8, columns=["id"]))
    assert other.column("id").to_pylist() != got.column("id").to_pylist()
    dropped = list(ours.shuffled_batches(300, seed=7, columns=["id"], drop_last=True))
    assert sum(b.num_rows for b in dropped) == expected.num_rows // 300 * 300
