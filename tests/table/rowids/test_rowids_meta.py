"""Row ids and versions stored inline in a DataFragment or in an external file slice."""
import numpy as np
import pytest

from lancefmt._proto import table_pb2
from lancefmt.errors import CorruptFileError, InvalidPathError
from lancefmt.io import open_store
from lancefmt.table.rowids import (
    encode_row_ids,
    encode_versions,
    load_created_at_versions,
    load_last_updated_at_versions,
    load_row_id_sequence,
    load_row_ids,
    load_version_sequences,
    new_fragment_versions,
    row_id_bytes,
)


def _fragment(n=6, **kw):
    return table_pb2.DataFragment(id=2, physical_rows=n, **kw)


def test_inline():
    ids = np.array([9, 3, 4, 5, 6, 10], dtype=np.uint64)
    frag = _fragment(inline_row_ids=encode_row_ids(ids),
                     inline_created_at_versions=new_fragment_versions(6, 1),
                     inline_last_updated_at_versions=encode_versions([1, 1, 4, 4, 1, 1]))
    np.testing.assert_array_equal(load_row_ids(frag), ids)
    np.testing.assert_array_equal(load_row_id_sequence(frag).to_numpy(), ids)
    np.testing.assert_array_equal(load_created_at_versions(frag), [1] * 6)
    np.testing.assert_array_equal(load_last_updated_at_versions(frag), [1, 1, 4, 4, 1, 1])
    created, updated = load_version_sequences(frag)
    assert len(created) == 6 and len(updated) == 6


def test_absent():
    frag = _fragment()
    assert load_row_ids(frag) is None
    assert row_id_bytes(frag) is None
    assert load_row_id_sequence(frag) is None
    assert load_created_at_versions(frag) is None
    assert load_version_sequences(frag) == (None, None)


@pytest.mark.parametrize("where", ["local", "memory"])
def test_external(where, tmp_path, memory_uri):
    root = str(tmp_path / "ds") if where == "local" else memory_uri
    ids = np.arange(100, 106, dtype=np.uint64)
    payload = encode_row_ids(ids)
    versions = encode_versions([3] * 6)
    blob = b"junk" + payload + versions + b"tail"
    uri = root + "/_rowids/f2.bin"
    open_store(uri).put(uri, blob)
    frag = _fragment(
        external_row_ids=table_pb2.ExternalFile(path="_rowids/f2.bin", offset=4, size=len(payload)),
        external_created_at_versions=table_pb2.ExternalFile(
            path="_rowids/f2.bin", offset=4 + len(payload), size=len(versions)))
    np.testing.assert_array_equal(load_row_ids(frag, root), ids)
    assert row_id_bytes(frag, root) == payload
    np.testing.assert_array_equal(load_created_at_versions(frag, root), [3] * 6)

    short = _fragment(external_row_ids=table_pb2.ExternalFile(
        path="_rowids/f2.bin", offset=len(blob) - 2, size=10))
    with pytest.raises(CorruptFileError, match="f2.bin"):
        load_row_ids(short, root)
    wrong = _fragment(external_row_ids=table_pb2.ExternalFile(
        path="_rowids/f2.bin", offset=0, size=len(payload)))
    with pytest.raises(CorruptFileError, match="f2.bin"):
        load_row_ids(wrong, root)


@pytest.mark.parametrize("path", ["../escape.bin", "/etc/passwd", "s3://other/x", "a/../../b"])
def test_external_paths_stay_inside(path, tmp_path):
    frag = _fragment(external_row_ids=table_pb2.ExternalFile(path=path, offset=0, size=4))
    with pytest.raises(InvalidPathError):
        load_row_ids(frag, str(tmp_path))


def test_length_must_match_physical_rows():
    frag = _fragment(n=7, inline_row_ids=encode_row_ids(np.arange(6, dtype=np.uint64)))
    with pytest.raises(CorruptFileError, match="expected 7"):
        load_row_ids(frag)
    with pytest.raises(CorruptFileError, match="expected 7"):
        load_row_id_sequence(frag)
    frag = _fragment(n=7, inline_created_at_versions=new_fragment_versions(6, 1))
    with pytest.raises(CorruptFileError, match="expected 7"):
        load_created_at_versions(frag)
