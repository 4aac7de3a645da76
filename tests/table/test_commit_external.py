"""The external manifest store protocol on local disks and memory: commits, a writer that dies
after its commit point (readers finish the copy; readers without the store are one version
behind; pylance reads the finished manifests), refusal when no copy survives, lost races, and
the probe that refuses stores whose conditional put is not honoured."""
import os

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import ConditionalPutUnsupportedError, CorruptFileError
from lancefmt.io import open_store
from lancefmt.io.store import FsspecStore
from lancefmt.table import commit_external
from lancefmt.table.conditional_put import check_conditional_put, probe_conditional_put

lance = pytest.importorskip("lance")


def rows(n, start=0):
    return pa.table({"a": pa.array(range(start, start + n), pa.int64())})


@pytest.fixture
def ms(tmp_path):
    return lancefmt.SqliteManifestStore(tmp_path / "manifests.db")


def versions_dir_names(uri):
    return sorted(os.listdir(os.path.join(uri, "_versions")))


def test_commits_go_through_the_external_store(tmp_path, ms):
    uri = str(tmp_path / "ds")
    ds = lancefmt.write_dataset(rows(10), uri, manifest_store=ms)
    ds = lancefmt.write_dataset(rows(5, 10), ds, mode="append")   # the Dataset lends its store
    ds.delete("a < 3")
    ds.update_config({"k": "v"})
    assert ds.version == 4 and ds.manifest_store is ms
    latest = ms.get_latest_version(ds.uri)
    assert latest.version == 4 and latest.path.endswith(".manifest")  # finished: final name
    assert not [n for n in versions_dir_names(uri) if "-" in n]      # no staged copies left
    ds = lancefmt.dataset(uri, manifest_store=f"sqlite://{ms.path}")
    assert ds.version == 4 and ds.count_rows() == 12 and ds.checkout_version(2).count_rows() == 15
    theirs = lance.dataset(uri)
    assert theirs.version == 4 and theirs.to_table().equals(ds.to_table())
    assert lancefmt.commit(uri, lancefmt.Operation.Append([]), manifest_store=ms).version == 5


def test_existing_dataset_continues_with_the_store(tmp_path, ms):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(rows(3), uri)
    lance.write_dataset(rows(3, 3), uri, mode="append")
    ds = lancefmt.write_dataset(rows(3, 6), uri, mode="append", manifest_store=ms)
    assert ds.version == 3 and ms.get_latest_version(ds.uri).version == 3
    assert lancefmt.dataset(uri, manifest_store=ms).count_rows() == 9


def _die_after_commit_point(monkeypatch):
    """Make the writer stop right after put_if_not_exists (its finalize never runs)."""
    def boom(*a, **k):
        raise OSError("writer died")
    monkeypatch.setattr(commit_external, "_finish_commit", boom)


def test_reader_finishes_a_dead_writers_copy(tmp_path, ms, monkeypatch):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(rows(4), uri, manifest_store=ms)
    with monkeypatch.context() as m:
        _die_after_commit_point(m)
        lancefmt.write_dataset(rows(4, 4), uri, mode="append", manifest_store=ms)
    entry = ms.get_latest_version(os.path.abspath(uri))
    assert entry.version == 2 and not entry.path.endswith(".manifest")  # staged, committed
    # readers that do not know the store are one version behind, never broken
    assert lancefmt.dataset(uri).version == 1 and lance.dataset(uri).version == 1
    ds = lancefmt.dataset(uri, manifest_store=ms)  # finishes the copy
    assert ds.version == 2 and ds.count_rows() == 8
    assert ms.get_latest_version(ds.uri).path.endswith(".manifest")
    assert not [n for n in versions_dir_names(uri) if "-" in n]
    assert lance.dataset(uri).version == 2 and lance.dataset(uri).count_rows() == 8


def test_next_writer_finishes_a_dead_writers_copy(tmp_path, ms, monkeypatch):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(rows(2), uri, manifest_store=ms)
    with monkeypatch.context() as m:
        _die_after_commit_point(m)
        lancefmt.write_dataset(rows(2, 2), uri, mode="append", manifest_store=ms)
    ds = lancefmt.commit(uri, lancefmt.Operation.Append([]), manifest_store=ms)
    assert ds.version == 3 and ds.count_rows() == 4
    assert lance.dataset(uri).version == 3 and lance.dataset(uri).count_rows() == 4


def test_refuses_to_load_when_no_copy_survives(tmp_path, ms, monkeypatch):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(rows(2), uri, manifest_store=ms)
    with monkeypatch.context() as m:
        _die_after_commit_point(m)
        lancefmt.write_dataset(rows(2, 2), uri, mode="append", manifest_store=ms)
    staged = ms.get_latest_version(os.path.abspath(uri)).path
    os.unlink(staged)
    with pytest.raises(CorruptFileError, match="refusing to load"):
        lancefmt.dataset(uri, manifest_store=ms)


def test_concurrent_writers_on_one_read_version_lose_nothing(tmp_path, ms):
    uri = str(tmp_path / "ds")
    base = lancefmt.write_dataset(rows(1), uri, manifest_store=ms)
    a = lancefmt.write_dataset(rows(1, 1), base, mode="append")
    b = base._commit(lancefmt.Operation.Append(
        lancefmt.write_fragments(rows(1, 2), uri)), read_version=1)
    assert {a.version, b.version} == {2, 3}
    ds = lancefmt.dataset(uri, manifest_store=ms)
    assert sorted(ds.to_table()["a"].to_pylist()) == [0, 1, 2]


def test_lost_race_removes_the_staged_manifest(tmp_path, ms):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(rows(1), uri, manifest_store=ms)
    store = open_store(uri, None, ms)
    final = os.path.join(uri, "_versions", "x.manifest")
    ms.put_if_not_exists(os.path.abspath(uri), 7, final)
    assert not commit_external.put_manifest_external(os.path.abspath(uri), 7, final, b"data",
                                                     store, ms)
    assert not [n for n in versions_dir_names(uri) if "-" in n]


class _IgnoresConditions(FsspecStore):
    """A store whose conditional put is a plain put (an old S3-compatible gateway)."""

    def __init__(self):
        super().__init__("memory")

    def put_if_absent(self, uri, data):
        self.put(uri, data)
        return True


def test_unhonoured_conditional_put_is_refused(memory_uri, ms):
    store = _IgnoresConditions()
    assert "ignored" in probe_conditional_put(store, memory_uri)
    with pytest.raises(ConditionalPutUnsupportedError, match="manifest_store"):
        check_conditional_put(store, memory_uri)
    from lancefmt.table.commit import commit_transaction
    from lancefmt.table.transaction import Overwrite, Transaction
    from lancefmt.file.schema import fields_from_arrow

    txn = Transaction(0, Overwrite(fields_from_arrow(rows(0).schema), []))
    with pytest.raises(ConditionalPutUnsupportedError):
        commit_transaction(memory_uri, txn, store=store)
    assert not store.list(memory_uri + "/_versions")  # nothing committed
    # the same store commits safely through the external store
    from lancefmt.io import with_manifest_store

    mf = commit_transaction(memory_uri, txn, store=with_manifest_store(store, ms))
    assert mf.version == 1 and ms.get_latest_version(memory_uri).version == 1
    assert isinstance(ConditionalPutUnsupportedError("x"), OSError)


def test_views_pickle_with_their_store(tmp_path, ms):
    import pickle

    uri = str(tmp_path / "ds")
    ds = lancefmt.write_dataset(rows(3), uri, manifest_store=ms)
    again = pickle.loads(pickle.dumps(ds))
    assert again.manifest_store.path == ms.path and again.version == 1
    assert again.snapshot.store.manifest_store is again.manifest_store
    assert open_store(uri).manifest_store is None  # the shared cached store stays unbound
    again.update_config({"x": "1"})
    assert again.version == 2
    assert ms.get_latest_version(ds.uri).version == 2
