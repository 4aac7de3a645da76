"""Storage failures surface as StorageErrors: LanceErrors that are OSErrors too (of the same
builtin subclass), naming the path and the operation, with the OS error as ``__cause__``."""
import errno
import os
import pickle

import pyarrow as pa
import pytest

import lancefmt
from lancefmt import LanceError, StorageError
from lancefmt.io import open_store


def test_missing_object_is_a_storage_not_found_error(tmp_path):
    uri = str(tmp_path / "nothing")
    with pytest.raises(StorageError) as info:
        open_store(uri).read(uri)
    err = info.value
    assert isinstance(err, LanceError) and isinstance(err, FileNotFoundError)
    assert err.path == uri and err.operation == "read" and err.errno == errno.ENOENT
    assert uri in str(err) and isinstance(err.__cause__, FileNotFoundError)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is type(err) and str(again) == str(err)


@pytest.mark.parametrize("exc,builtin", [
    (PermissionError(errno.EACCES, "Permission denied"), PermissionError),
    (OSError(errno.ENOSPC, "No space left on device"), OSError),
    (FileExistsError(errno.EEXIST, "File exists"), FileExistsError),
])
def test_write_failures_keep_their_builtin_type(tmp_path, monkeypatch, exc, builtin):
    def fail(*args, **kwargs):
        raise exc

    monkeypatch.setattr(os, "replace", fail)
    uri = str(tmp_path / "x")
    with pytest.raises(StorageError) as info:
        open_store(uri).put(uri, b"data")
    assert isinstance(info.value, builtin) and info.value.__cause__ is exc
    assert info.value.operation == "put" and info.value.path == uri


def test_disk_full_while_writing_data_is_a_storage_error_and_leaves_nothing(tmp_path, monkeypatch):
    from lancefmt.io import store as store_mod

    real = store_mod._LocalAtomicWriter.write

    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_mod._LocalAtomicWriter, "write", full)
    uri = str(tmp_path / "ds")
    with pytest.raises(StorageError) as info:
        lancefmt.write_dataset(pa.table({"a": [1, 2, 3]}), uri)
    assert info.value.errno == errno.ENOSPC and info.value.path.endswith(".lance")
    monkeypatch.setattr(store_mod._LocalAtomicWriter, "write", real)
    assert not [n for _, _, names in os.walk(tmp_path) for n in names]


@pytest.fixture
def deleted(tmp_path):
    ds = lancefmt.write_dataset(pa.table({"id": pa.array(range(10), pa.int64())}),
                                str(tmp_path / "ds"))
    ds.delete("id = 3")
    path = ds.get_fragments()[0].deletion_file()
    os.unlink(path)
    return ds, path


@pytest.mark.parametrize("action", ["scan", "delete", "update", "count"])
def test_missing_deletion_file_is_a_storage_error(deleted, action):
    ds, path = deleted
    ds = lancefmt.dataset(ds.uri)
    with pytest.raises(LanceError) as info:
        if action == "scan":
            ds.to_table()
        elif action == "delete":
            ds.delete("id = 4")
        elif action == "update":
            ds.update({"id": "id + 1"}, where="id = 5")
        else:
            ds.count_rows(filter="id > 1")
    assert isinstance(info.value, FileNotFoundError)
    assert path in str(info.value)


def test_missing_external_row_id_file_is_a_storage_error(tmp_path):
    from lancefmt._proto import table_pb2
    from lancefmt.table.rowids.meta import load_row_ids

    frag = table_pb2.DataFragment(id=0, physical_rows=3)
    frag.external_row_ids.path = "rowids/missing.bin"
    frag.external_row_ids.offset = 0
    frag.external_row_ids.size = 10
    with pytest.raises(StorageError) as info:
        load_row_ids(frag, str(tmp_path))
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.path.endswith("rowids/missing.bin")
