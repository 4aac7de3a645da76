"""A failed delete or update leaves nothing behind: no deletion file, no data file."""
import os

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import InvalidArgumentError, StorageError


def _files(root):
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names}


@pytest.fixture
def ds(tmp_path):
    data = pa.table({"id": pa.array(range(12), pa.int64()), "s": pa.array([str(i) for i in range(12)])})
    return lancefmt.write_dataset(data, str(tmp_path / "ds"), max_rows_per_file=4)


def test_delete_failing_on_a_later_fragment_leaves_no_deletion_file(ds, monkeypatch):
    from lancefmt.dataset.mutate import delete as delete_mod

    before = _files(ds.uri)
    real = delete_mod.write_deletion_file
    calls = []

    def second_fails(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(delete_mod, "write_deletion_file", second_fails)
    with pytest.raises(OSError):
        ds.delete("id % 4 = 1")
    assert len(calls) == 2
    assert _files(ds.uri) == before
    assert lancefmt.dataset(ds.uri).count_rows() == 12


def test_update_failing_after_planning_leaves_no_deletion_file(ds):
    before = _files(ds.uri)
    with pytest.raises(InvalidArgumentError):
        ds.update({"id": "'not a number'"}, where="id % 4 = 1")
    assert _files(ds.uri) == before
    assert lancefmt.dataset(ds.uri).to_table().column("id").to_pylist() == list(range(12))


def test_update_failing_on_a_later_fragment_leaves_no_deletion_file(ds, monkeypatch):
    from lancefmt.dataset.mutate import update as update_mod

    before = _files(ds.uri)
    real = update_mod.write_deletion_file
    calls = []

    def second_fails(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise PermissionError(13, "Permission denied")
        return real(*args, **kwargs)

    monkeypatch.setattr(update_mod, "write_deletion_file", second_fails)
    with pytest.raises(PermissionError):
        ds.update({"s": "'x'"}, where="id % 4 = 1")
    assert _files(ds.uri) == before


def test_disk_full_while_writing_a_deletion_file_is_a_storage_error(ds, monkeypatch):
    """The real store, not a patched planner: the OS error surfaces as a StorageError naming the
    deletion file, and the files already written are gone."""
    import builtins

    before = _files(ds.uri)
    real_open = builtins.open
    calls = []

    def open_full(path, mode="r", *args, **kwargs):
        if "_deletions" in str(path) and "w" in mode:
            calls.append(path)
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", open_full)
    with pytest.raises(StorageError) as info:
        ds.delete("id % 4 = 1")
    monkeypatch.undo()
    err = info.value
    assert isinstance(err, lancefmt.LanceError) and isinstance(err, OSError)
    assert err.operation in ("put", "put_durable") and "_deletions" in err.path and err.errno == 28
    assert isinstance(err.__cause__, OSError)
    assert _files(ds.uri) == before
