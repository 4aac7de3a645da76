"""Issue 5 at the dataset level: deletions, updates and stable row ids, lancefmt vs pylance."""
import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import InvalidArgumentError

lance = pytest.importorskip("lance")


def table(n, start=0):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "val": ids * 10, "s": pa.array([f"s{i}" for i in ids])})


def same(a: pa.Table, b: pa.Table):
    assert a.column_names == b.column_names
    for n in a.column_names:
        assert a.column(n).to_pylist() == b.column(n).to_pylist(), n


SCAN = dict(with_row_id=True, with_row_address=True)


@pytest.mark.parametrize("stable", [False, True])
def test_pylance_deletions_and_updates_read_identically(tmp_path, stable, storage_version):
    uri = str(tmp_path / "ds")
    lance.write_dataset(table(12_000), uri, max_rows_per_file=6_000,
                        data_storage_version=storage_version, enable_stable_row_ids=stable)
    ds = lance.dataset(uri)
    ds.delete("id % 100 = 7")         # sparse -> .arrow
    ds.delete("id >= 6000 AND id < 11900")  # dense in fragment 1 -> .bin
    ds.update({"val": "val + 1"}, where="id < 20")
    lance.write_dataset(table(100, 50_000), uri, mode="append")
    kinds = {f.deletion_file().rsplit(".", 1)[1] for f in lance.dataset(uri).get_fragments() if f.deletion_file()}
    assert kinds == {"arrow", "bin"}
    for v in range(1, lance.dataset(uri).version + 1):
        ours, theirs = lancefmt.dataset(uri, version=v), lance.dataset(uri, version=v)
        same(ours.to_table(**SCAN), theirs.to_table(**SCAN))
        assert ours.count_rows() == theirs.count_rows()
        assert ours.count_rows("val % 2 = 1") == theirs.count_rows("val % 2 = 1")
    ours = lancefmt.dataset(uri)
    for f in ours.get_fragments():
        theirs = lance.dataset(uri).get_fragment(f.id)
        assert f.num_deletions == theirs.num_deletions
        expected_ids = theirs.to_table(columns=[], with_row_id=True)["_rowid"].to_numpy()
        assert np.array_equal(f.row_ids(), expected_ids)
    pick = lance.dataset(uri).to_table(with_row_id=True)["_rowid"].to_numpy()[::97]
    same(ours.take_row_ids(pick), lance.dataset(uri)._take_rows(pick.tolist()))


@pytest.mark.parametrize("stable", [False, True])
def test_pylance_reads_our_deletes_and_updates(tmp_path, stable):
    ours_uri, theirs_uri = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for uri in (ours_uri, theirs_uri):
        lance.write_dataset(table(18000), uri, max_rows_per_file=6000, data_storage_version="2.0",
                            enable_stable_row_ids=stable)
    ours = lancefmt.dataset(ours_uri)
    ours.delete("id % 7 = 0")
    ours.delete("id >= 6000 AND id < 11900")  # dense: a .bin file
    ours.update({"val": "val * 2", "s": "'updated'"}, where="id % 10 = 1")
    ours.delete("id >= 12000")               # drops the last fragment
    theirs = lance.dataset(theirs_uri)
    theirs.delete("id % 7 = 0")
    theirs.delete("id >= 6000 AND id < 11900")
    theirs.update({"val": "val * 2", "s": "'updated'"}, where="id % 10 = 1")
    theirs.delete("id >= 12000")
    check = lance.dataset(ours_uri)
    check.validate()
    theirs = lance.dataset(theirs_uri)
    assert check.version == theirs.version == 5
    same(check.to_table(**SCAN), theirs.to_table(**SCAN))
    same(ours.to_table(**SCAN), check.to_table(**SCAN))
    kinds = sorted(f.deletion_file().rsplit(".", 1)[1] for f in check.get_fragments() if f.deletion_file())
    assert "bin" in kinds and "arrow" in kinds
    # take by row id agrees with pylance's
    live = check.to_table(columns=[], with_row_id=True)["_rowid"].to_numpy()
    pick = live[np.random.default_rng(0).choice(len(live), 200, replace=False)]
    same(ours.take_row_ids(pick), check._take_rows(pick.tolist()))


def test_row_ids_survive_updates_and_next_row_id_advances(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancefmt.write_dataset(table(10), uri, max_rows_per_file=4, enable_stable_row_ids=True)
    ds.update({"val": "-1"}, where="id IN (1, 5)")
    assert ds.manifest.next_row_id == 10
    ds = lancefmt.write_dataset(table(3, 10), uri, mode="append")
    assert ds.manifest.next_row_id == 13
    t = ds.to_table(columns=["id", "val"], with_row_id=True)
    assert dict(zip(t["id"].to_pylist(), t["_rowid"].to_pylist())) == {i: i for i in range(13)}
    assert ds.take_row_ids([5, 12, 1])["val"].to_pylist() == [-1, 120, -1]
    with pytest.raises(InvalidArgumentError):
        ds.take_row_ids([99])
    theirs = lance.dataset(uri)
    theirs.validate()
    same(theirs.to_table(**SCAN), ds.to_table(**SCAN))


def test_update_without_match_is_a_no_op_and_bad_columns_fail(tmp_path):
    ds = lancefmt.write_dataset(table(5), str(tmp_path / "ds"))
    assert ds.update({"val": "0"}, where="id > 100") == {"num_rows_updated": 0}
    assert ds.version == 1
    with pytest.raises(InvalidArgumentError):
        ds.update({"nope": "1"})
    with pytest.raises(InvalidArgumentError):
        ds.update({})
    assert ds.update({"val": 7}) == {"num_rows_updated": 5}
    assert ds.to_table()["val"].to_pylist() == [7] * 5
