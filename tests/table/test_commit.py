"""The commit protocol against real pylance datasets (fragments written by pylance, committed by
lancefmt), including concurrent writers and conflicts."""
import json
import multiprocessing as mp
import os

import pyarrow as pa
import pytest

from lancefmt.errors import CommitConflictError, DatasetExistsError, RetryableCommitConflictError
from lancefmt.table.commit import CommitOptions, commit_transaction
from lancefmt.table.fragment import FragmentMetadata
from lancefmt.table.transaction import Append, Delete, Overwrite, Restore, Transaction, UpdateConfig, UpdateMap
from lancefmt.table.versions import latest_manifest, load_manifest

lance = pytest.importorskip("lance")


def pylance_fragment(uri, values, version="2.2"):
    meta = lance.fragment.LanceFragment.create(uri, pa.table({"a": pa.array(values, pa.int64())}),
                                               data_storage_version=version)
    return FragmentMetadata.from_json(meta.to_json())


def make_dataset(uri, n=10, **kw):
    return lance.write_dataset(pa.table({"a": pa.array(range(n), pa.int64())}), uri, **kw)


def test_append_committed_by_lancefmt_reads_in_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    make_dataset(uri, data_storage_version="2.0")
    with pytest.raises(Exception, match="2.2"):
        commit_transaction(uri, Transaction(1, Append([pylance_fragment(uri, [1])])))
    frag = pylance_fragment(uri, [100, 101, 102], "2.0")
    mf = commit_transaction(uri, Transaction(1, Append([frag])))
    assert mf.version == 2
    ds = lance.dataset(uri)
    assert ds.version == 2
    ds.validate()
    assert sorted(ds.to_table()["a"].to_pylist()) == list(range(10)) + [100, 101, 102]
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1]
    # the transaction file and the inline copy are what pylance itself would write
    txn = ds.read_transaction(2) if hasattr(ds, "read_transaction") else None
    assert txn is None or type(txn.operation).__name__ == "Append"
    assert os.listdir(os.path.join(uri, "_transactions")).__len__() == 2
    assert json.load(open(os.path.join(uri, "_versions", "latest_version_hint.json"))) == {"version": 2}
    # and pylance can keep committing on top of ours
    lance.write_dataset(pa.table({"a": pa.array([7], pa.int64())}), uri, mode="append")
    assert lance.dataset(uri).count_rows() == 14


def test_v1_named_dataset_stays_v1(tmp_path):
    uri = str(tmp_path / "ds")
    make_dataset(uri, enable_v2_manifest_paths=False)
    commit_transaction(uri, Transaction(1, Append([pylance_fragment(uri, [5])])))
    assert sorted(n for n in os.listdir(os.path.join(uri, "_versions")) if n.endswith(".manifest")) == ["1.manifest", "2.manifest"]
    assert lance.dataset(uri).count_rows() == 11


def test_incompatible_conflict_leaves_dataset_unchanged(tmp_path):
    uri = str(tmp_path / "ds")
    make_dataset(uri)
    frag = pylance_fragment(uri, [1])
    lance.write_dataset(pa.table({"a": pa.array([0], pa.int64())}), uri, mode="overwrite")  # v2
    before = sorted(os.listdir(os.path.join(uri, "_versions"))), sorted(os.listdir(os.path.join(uri, "_transactions")))
    with pytest.raises(CommitConflictError):
        commit_transaction(uri, Transaction(1, Append([frag])))  # planned on v1
    after = sorted(os.listdir(os.path.join(uri, "_versions"))), sorted(os.listdir(os.path.join(uri, "_transactions")))
    assert before == after
    assert lance.dataset(uri).version == 2


def test_delete_vs_delete_on_one_fragment_is_retryable(tmp_path):
    uri = str(tmp_path / "ds")
    ds = make_dataset(uri)
    frag = FragmentMetadata.from_json(ds.get_fragments()[0].metadata.to_json())
    ds.delete("a = 1")  # v2: pylance deletes in fragment 0
    with pytest.raises(RetryableCommitConflictError):
        commit_transaction(uri, Transaction(1, Delete([frag], [], "a = 2")))
    assert lance.dataset(uri).version == 2


def test_compatible_concurrent_commit_rebases(tmp_path):
    uri = str(tmp_path / "ds")
    make_dataset(uri)
    frag = pylance_fragment(uri, [50])
    lance.write_dataset(pa.table({"a": pa.array([60], pa.int64())}), uri, mode="append")  # v2
    mf = commit_transaction(uri, Transaction(1, Append([frag])))  # planned on v1, lands as v3
    assert mf.version == 3
    ds = lance.dataset(uri)
    ds.validate()
    assert sorted(ds.to_table()["a"].to_pylist()) == list(range(10)) + [50, 60]
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1, 2]


def test_must_create_refuses_existing(tmp_path):
    uri = str(tmp_path / "ds")
    ds = make_dataset(uri)
    frag = pylance_fragment(uri, [1])
    lance_fields = load_manifest(uri).manifest.fields
    with pytest.raises(DatasetExistsError):
        commit_transaction(uri, Transaction(0, Overwrite(list(lance_fields), [frag])),
                           options=CommitOptions(must_create=True))
    assert lance.dataset(uri).version == 1


def test_overwrite_and_restore_and_config(tmp_path):
    uri = str(tmp_path / "ds")
    make_dataset(uri)
    fields = list(load_manifest(uri).manifest.fields)
    commit_transaction(uri, Transaction(1, Overwrite(fields, [pylance_fragment(uri, [7, 8])])))
    ds = lance.dataset(uri)
    assert ds.to_table()["a"].to_pylist() == [7, 8]
    # fragment ids continue from the highest ever used, as pylance 14 does
    assert [f.fragment_id for f in ds.get_fragments()] == [1]
    old = load_manifest(uri, 1)
    commit_transaction(uri, Transaction(2, Restore(1)), restore_source=(old.manifest, old.indices))
    ds = lance.dataset(uri)
    assert ds.version == 3 and ds.count_rows() == 10
    commit_transaction(uri, Transaction(3, UpdateConfig(UpdateMap({"my.key": "v"}))))
    ds = lance.dataset(uri)
    assert ds.config()["my.key"] == "v" if callable(ds.config) else ds.config["my.key"] == "v"
    ds.validate()


def _appender(uri, worker, n, q):
    import lance as _lance
    import pyarrow as _pa

    from lancefmt.table.commit import commit_transaction as _commit
    from lancefmt.table.fragment import FragmentMetadata as _FM
    from lancefmt.table.transaction import Append as _Append, Transaction as _Txn
    from lancefmt.table.versions import latest_manifest as _latest

    done = 0
    for i in range(n):
        value = worker * 1000 + i
        meta = _lance.fragment.LanceFragment.create(uri, _pa.table({"a": _pa.array([value], _pa.int64())}))
        read_version = _latest(uri).version
        _commit(uri, _Txn(read_version, _Append([_FM.from_json(meta.to_json())])))
        done += 1
    q.put(done)


def test_four_processes_ten_appends_each(tmp_path):
    uri = str(tmp_path / "ds")
    make_dataset(uri, n=1)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_appender, args=(uri, w, 10, q)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
    assert [p.exitcode for p in procs] == [0] * 4
    assert [q.get(timeout=5) for _ in procs] == [10] * 4
    ds = lance.dataset(uri)
    assert ds.version == 41
    ds.validate()
    expected = [0] + [w * 1000 + i for w in range(4) for i in range(10)]
    assert sorted(ds.to_table()["a"].to_pylist()) == sorted(expected)
    assert latest_manifest(uri).version == 41


def test_transaction_file_name_escaping_transactions_dir_is_refused(tmp_path):
    """A crafted manifest's ``transaction_file = "../../x"`` must not open a file outside the
    dataset (before: it was joined unchecked and read)."""
    from types import SimpleNamespace

    import pyarrow as pa

    import lancefmt
    from lancefmt.errors import InvalidPathError
    from lancefmt.table.commit import read_transaction_of

    ds = lancefmt.write_dataset(pa.table({"a": [1]}), str(tmp_path / "ds"))
    inside = os.path.join(ds.uri, "_transactions", os.listdir(os.path.join(ds.uri, "_transactions"))[0])
    outside = tmp_path / "outside.txn"
    outside.write_bytes(open(inside, "rb").read())
    fake = SimpleNamespace(transaction=lambda: None,
                           header=SimpleNamespace(transaction_file="../../outside.txn"))
    with pytest.raises(InvalidPathError):
        read_transaction_of(fake, ds.uri, ds.snapshot.store)
