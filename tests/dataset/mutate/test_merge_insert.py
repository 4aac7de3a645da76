"""merge_insert on lancefmt alone: stats, conditions, stable row ids, errors and the conflict
rules of its Update transaction (pylance equality in tests/interop/test_write_api_interop.py)."""
import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.dataset.mutate.merge_insert import MergeInsertError
from lancefmt.errors import InvalidArgumentError
from lancefmt.table.commit import read_transaction_of


def table(ids, v=None):
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"id": ids, "v": pa.array(v if v is not None else [f"v{i}" for i in ids])})


@pytest.fixture
def ds(tmp_path):
    return lancefmt.write_dataset(table(range(10)), str(tmp_path / "d"), max_rows_per_file=4,
                                  enable_stable_row_ids=True)


def test_upsert_keeps_row_ids_of_updated_rows(ds):
    before = dict(zip(*[ds.to_table(with_row_id=True)[c].to_pylist() for c in ("id", "_rowid")]))
    stats = (ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
             .execute(table([2, 9, 20], ["a", "b", "c"])))
    assert stats == {"num_inserted_rows": 1, "num_updated_rows": 2, "num_deleted_rows": 0}
    t = ds.to_table(with_row_id=True)
    after = dict(zip(t["id"].to_pylist(), t["_rowid"].to_pylist()))
    assert after[2] == before[2] and after[9] == before[9] and after[20] == 10
    assert dict(zip(t["id"].to_pylist(), t["v"].to_pylist()))[9] == "b"
    txn = read_transaction_of(ds.manifest_file, ds.uri, ds.snapshot.store)
    assert txn.kind == "update"


def test_insert_only_delete_matched_and_by_source(ds):
    stats = ds.merge_insert("id").when_not_matched_insert_all().execute(table([1, 50]))
    assert stats == {"num_inserted_rows": 1, "num_updated_rows": 0, "num_deleted_rows": 0}
    stats = ds.merge_insert(["id"]).when_matched_delete().execute(table([1, 2, 99]))
    assert stats["num_deleted_rows"] == 2 and ds.count_rows() == 9
    stats = ds.merge_insert("id").when_not_matched_by_source_delete("id > 5").execute(table([7]))
    assert stats["num_deleted_rows"] == 4  # 6, 8, 9 and 50 (7 is matched)
    assert sorted(ds.to_table()["id"].to_pylist()) == [0, 3, 4, 5, 7]


def test_condition_on_target_and_source(ds):
    src = table([3, 4], ["v3", "zzz"])
    stats = ds.merge_insert("id").when_matched_update_all("target.v != source.v").execute(src)
    assert stats["num_updated_rows"] == 1
    assert ds.to_table(filter="id = 4")["v"].to_pylist() == ["zzz"]


def test_errors(ds):
    with pytest.raises(MergeInsertError):
        ds.merge_insert("id").when_matched_fail().execute(table([1]))
    with pytest.raises(MergeInsertError, match="Ambiguous"):
        ds.merge_insert("id").when_matched_update_all().execute(table([1, 1]))
    with pytest.raises(InvalidArgumentError):
        ds.merge_insert("nope")
    with pytest.raises(InvalidArgumentError, match="join keys"):
        ds.merge_insert("id").when_matched_update_all().execute(pa.table({"v": ["x"]}))
    with pytest.raises(InvalidArgumentError):
        ds.merge_insert("id").when_matched_update_all().execute(pa.table({"id": [1], "zz": [2]}))
    assert ds.version == 1


def test_partial_columns_keep_matched_values_and_null_new_rows(tmp_path):
    """A source without some columns (pylance's partial merge insert): matched rows keep their
    other values, inserted rows get nulls, as pylance answers."""
    lance = pytest.importorskip("lance")
    base = pa.table({"id": range(10), "payload": range(10), "other": range(100, 110)})
    src = pa.table({"id": [8, 9, 10, 11], "payload": [0, 0, 0, 0]})
    out = {}
    for lib in (lance, lancefmt):
        uri = str(tmp_path / lib.__name__)
        lance.write_dataset(base, uri)
        stats = lib.dataset(uri).merge_insert("id").when_matched_update_all() \
            .when_not_matched_insert_all().execute(src)
        assert (stats["num_updated_rows"], stats["num_inserted_rows"]) == (2, 2)
        out[lib.__name__] = lance.dataset(uri).to_table().sort_by("id")
    assert out["lancefmt"].equals(out["lance"])
    assert out["lancefmt"]["other"].to_pylist()[-4:] == [108, 109, None, None]


def test_concurrent_delete_of_same_fragment_is_retried(tmp_path):
    uri = str(tmp_path / "d")
    a = lancefmt.write_dataset(table(range(10)), uri)
    b = lancefmt.dataset(uri)
    b.delete("id = 0")                      # lands first, same fragment
    stats = a.merge_insert("id").when_matched_update_all().execute(table([5], ["new"]))
    assert stats["num_updated_rows"] == 1 and a.version == 3
    t = lancefmt.dataset(uri).to_table()
    assert 0 not in t["id"].to_pylist() and t.filter(pa.compute.equal(t["id"], 5))["v"].to_pylist() == ["new"]


@pytest.mark.parametrize("scale", [1, 10**12], ids=["dense", "sparse"])
def test_dense_and_hash_matching_agree(tmp_path, scale):
    """Sequential keys take the direct-address path, spread-out keys the hash join; string
    keys and null target keys the join too. The results are the same."""
    ids = np.arange(0, 3000, dtype=np.int64) * scale
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(pa.table({"id": ids, "v": pa.array(ids.astype(str))}), uri,
                                max_rows_per_file=1000)
    src_ids = np.r_[np.arange(2990, 3010), np.arange(0, 3000, 100)] * scale
    stats = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .execute(pa.table({"id": src_ids, "v": pa.array(["new"] * len(src_ids))}))
    assert stats == {"num_inserted_rows": 10, "num_updated_rows": 40, "num_deleted_rows": 0}
    t = ds.to_table()
    assert t.num_rows == 3010 and t.filter(pa.compute.equal(t["v"], "new")).num_rows == 50


def test_string_keys_and_null_target_keys(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(pa.table({"k": ["a", None, "c"], "n": [1, 2, 3]}), uri)
    stats = ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all() \
        .execute(pa.table({"k": ["c", None, "d"], "n": [30, 20, 40]}))
    assert stats == {"num_inserted_rows": 2, "num_updated_rows": 1, "num_deleted_rows": 0}
    assert sorted(ds.to_table()["n"].to_pylist()) == [1, 2, 20, 30, 40]


def test_execute_uncommitted_then_commit_or_conflict(ds):
    """Staged merges write files but no version; committing the Transaction checks conflicts
    against its read version (an Update of a fragment deleted from since is refused)."""
    builder = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    txn, stats = builder.execute_uncommitted(table([1, 30], ["a", "b"]))
    assert stats == {"num_inserted_rows": 1, "num_updated_rows": 1, "num_deleted_rows": 0}
    assert isinstance(txn, lancefmt.Transaction) and txn.read_version == 1 == ds.latest_version
    with pytest.raises(InvalidArgumentError):
        lancefmt.LanceDataset.commit(ds.uri, txn, commit_message="no")
    new = lancefmt.LanceDataset.commit(ds.uri, txn)
    assert new.version == 2 and ds.version == 1
    got = dict(zip(*[new.to_table()[c].to_pylist() for c in ("id", "v")]))
    assert got[1] == "a" and got[30] == "b" and len(got) == 11

    stale, _ = builder.execute_uncommitted(table([2], ["c"]))  # planned on version 1
    new.delete("id = 3")  # the same fragment (rows 0..3), by another writer
    with pytest.raises(lancefmt.LanceError):
        lancefmt.commit(ds.uri, stale, max_retries=0)
    assert lancefmt.dataset(ds.uri).version == 3


# -- inserted keys: a concurrent writer inserting the same primary key (Lance's KeyExistenceFilter)
PK = {b"lance-schema:unenforced-primary-key": b"true"}
PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), False, metadata=PK), pa.field("v", pa.string())])


def pk_table(ids, v=None):
    return pa.table({"id": ids, "v": v or [f"v{i}" for i in ids]}, schema=PK_SCHEMA)


def upsert(handle, ids, v):
    return (handle.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
            .execute(pk_table(ids, v)))


def read_version_of_last(uri):
    ds = lancefmt.dataset(uri)
    return ds.read_transaction(ds.version).read_version


@pytest.mark.parametrize("engine", ["lancefmt", "pylance"])
def test_concurrent_merge_inserting_the_same_key_reruns(tmp_path, engine):
    """Two upserts planned on version 1 both insert key 10: the second to commit sees the
    first's inserted keys, retries on the latest version and updates the row instead; pylance
    does the same on its own copy."""
    lib = lancefmt if engine == "lancefmt" else pytest.importorskip("lance")
    uri = str(tmp_path / "d")
    lib.write_dataset(pk_table([1, 2]), uri)
    a, b = lib.dataset(uri), lib.dataset(uri)
    upsert(b, [10], ["first"])
    stats = upsert(a, [2, 10], ["B", "second"])
    t = lancefmt.dataset(uri).to_table().sort_by("id")
    assert t["id"].to_pylist() == [1, 2, 10] and t["v"].to_pylist() == ["v1", "B", "second"]
    assert stats["num_updated_rows"] == 2 and stats["num_inserted_rows"] == 0
    assert read_version_of_last(uri) == 2          # planned again on version 2


def test_concurrent_merge_inserting_other_keys_rebases(tmp_path):
    """Different keys: both commit, without a re-run (the second commits read version 1)."""
    uri = str(tmp_path / "d")
    lancefmt.write_dataset(pk_table([1, 2]), uri)
    a, b = lancefmt.dataset(uri), lancefmt.dataset(uri)
    upsert(b, [10], ["b"])
    assert upsert(a, [11], ["a"])["num_inserted_rows"] == 1
    assert sorted(lancefmt.dataset(uri).to_table()["id"].to_pylist()) == [1, 2, 10, 11]
    assert read_version_of_last(uri) == 1
    txn = lancefmt.dataset(uri).read_transaction(3)
    assert txn.operation.inserted_rows.field_ids == (0,) and len(txn.operation.inserted_rows.hashes) == 1


def test_concurrent_append_makes_a_primary_key_merge_rerun(tmp_path):
    """An append says nothing of its keys: Lance retries the merge (here the keys differ, so
    both rows survive)."""
    uri = str(tmp_path / "d")
    lancefmt.write_dataset(pk_table([1, 2]), uri)
    a = lancefmt.dataset(uri)
    lancefmt.write_dataset(pk_table([10]), uri, mode="append")
    upsert(a, [10, 11], ["x", "y"])
    t = lancefmt.dataset(uri).to_table().sort_by("id")
    assert t["id"].to_pylist() == [1, 2, 10, 11] and t["v"].to_pylist() == ["v1", "v2", "x", "y"]
    assert read_version_of_last(uri) == 2


def test_merge_on_a_non_key_column_carries_no_filter(ds):
    """No primary key: no filter, and a concurrent append does not conflict (Lance's rule)."""
    upsert_plain = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    txn, _ = upsert_plain.execute_uncommitted(table([1, 30]))
    assert txn.operation.inserted_rows is None


@pytest.mark.parametrize("first", ["lancefmt", "pylance"])
def test_inserted_keys_are_checked_across_lancefmt_and_pylance(tmp_path, first):
    """Whichever library commits first, the other one (planned before that commit) finds the
    key it inserts already inserted and re-runs: pylance reads lancefmt's exact key set, and
    lancefmt counts pylance's bloom filter as a possible match."""
    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "d")
    lance.write_dataset(pk_table([1, 2]), uri)
    libs = {"lancefmt": lancefmt, "pylance": lance}
    second = "pylance" if first == "lancefmt" else "lancefmt"
    late = libs[second].dataset(uri)
    upsert(libs[first].dataset(uri), [10], ["first"])
    upsert(late, [10], ["second"])
    for lib in (lancefmt, lance):
        t = lib.dataset(uri).to_table().sort_by("id")
        assert t["id"].to_pylist() == [1, 2, 10] and t["v"].to_pylist()[-1] == "second"
