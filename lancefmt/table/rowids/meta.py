"""Where a fragment keeps its row ids and row versions: inline bytes in the manifest, or an
``ExternalFile{path, offset, size}`` slice of a file below the dataset root.

Lance always writes them inline today, but reads both; so do these functions. They take the
``DataFragment`` protobuf (``lancefmt._proto.table_pb2``) and the dataset root URI.
"""
from __future__ import annotations

import numpy as np

from ...errors import CorruptFileError
from ...io import check_relative, child, open_store
from .sequence import RowIdSequence, decode_row_ids, encode_row_ids
from .version import RowDatasetVersionSequence, decode_versions, encode_versions

# (oneof name, inline field, external field) in DataFragment.
_ROW_IDS = ("row_id_sequence", "inline_row_ids", "external_row_ids")
_CREATED = ("created_at_version_sequence", "inline_created_at_versions",
            "external_created_at_versions")
_UPDATED = ("last_updated_at_version_sequence", "inline_last_updated_at_versions",
            "external_last_updated_at_versions")


def read_external_slice(dataset_uri: str, external, storage_options: dict | None = None) -> bytes:
    """The bytes ``external.offset .. + external.size`` of ``{dataset_uri}/{external.path}``.

    The path must stay below the dataset root (InvalidPathError otherwise); a short read is a
    CorruptFileError naming the file.
    """
    uri = child(dataset_uri, check_relative(external.path, "external row-id file"))
    data = open_store(uri, storage_options).read_range(uri, int(external.offset), int(external.size))
    if len(data) != external.size:
        raise CorruptFileError(
            f"external slice {external.offset}+{external.size} reaches past the end of the file "
            f"(got {len(data)} bytes)", uri)
    return data


def _stored_bytes(fragment, names, dataset_uri, storage_options):
    which = fragment.WhichOneof(names[0])
    if which is None:
        return None, None
    if which == names[1]:
        return getattr(fragment, names[1]), f"fragment {fragment.id} {names[1]}"
    external = getattr(fragment, names[2])
    return read_external_slice(dataset_uri, external, storage_options), \
        child(dataset_uri, external.path)


def _expected(fragment):
    """How many values a fragment's sequences must hold: its row count, checked before
    anything is allocated (0 too: a legacy fragment's count is filled in from its data file
    before its row ids are read, so 0 here means an empty fragment)."""
    return int(fragment.physical_rows)


def row_id_bytes(fragment, dataset_uri: str = "", storage_options: dict | None = None):
    """The serialized RowIdSequence of a fragment (inline or external), or None."""
    return _stored_bytes(fragment, _ROW_IDS, dataset_uri, storage_options)[0]


def load_row_ids(fragment, dataset_uri: str = "", storage_options: dict | None = None):
    """A fragment's row ids as uint64 (length = physical_rows), or None without stable ids."""
    data, where = _stored_bytes(fragment, _ROW_IDS, dataset_uri, storage_options)
    if data is None:
        return None
    return decode_row_ids(data, where, _expected(fragment))


def load_row_id_sequence(fragment, dataset_uri: str = "",
                         storage_options: dict | None = None) -> RowIdSequence | None:
    """A fragment's :class:`RowIdSequence`, or None without stable ids."""
    data, where = _stored_bytes(fragment, _ROW_IDS, dataset_uri, storage_options)
    if data is None:
        return None
    seq = RowIdSequence.from_bytes(data, where)
    expected = _expected(fragment)
    if expected is not None and len(seq) != expected:
        raise CorruptFileError(f"row id sequence has {len(seq)} values, expected {expected}", where)
    return seq


def _load_versions(fragment, names, dataset_uri, storage_options, as_sequence):
    data, where = _stored_bytes(fragment, names, dataset_uri, storage_options)
    if data is None:
        return None
    if as_sequence:
        return RowDatasetVersionSequence.from_bytes(data, where)
    return decode_versions(data, where, _expected(fragment))


def load_created_at_versions(fragment, dataset_uri: str = "",
                             storage_options: dict | None = None) -> np.ndarray | None:
    """Per-row created-at versions (uint64), or None when the fragment has none."""
    return _load_versions(fragment, _CREATED, dataset_uri, storage_options, False)


def load_last_updated_at_versions(fragment, dataset_uri: str = "",
                                  storage_options: dict | None = None) -> np.ndarray | None:
    """Per-row last-updated-at versions (uint64), or None when the fragment has none."""
    return _load_versions(fragment, _UPDATED, dataset_uri, storage_options, False)


def load_version_sequences(fragment, dataset_uri: str = "", storage_options: dict | None = None):
    """(created_at, last_updated_at) :class:`RowDatasetVersionSequence` objects (or None each)."""
    return (_load_versions(fragment, _CREATED, dataset_uri, storage_options, True),
            _load_versions(fragment, _UPDATED, dataset_uri, storage_options, True))


def carry_row_ids(fragments, row_ids: np.ndarray, created: np.ndarray, updated=None) -> None:
    """Rows rewritten into new ``fragments`` (``FragmentMetadata``s; update, merge insert,
    compaction) keep who they are: the first ``len(row_ids)`` rows get their stable row ids
    and created-at (and, when given, last-updated-at) versions inline; rows after them get
    new ids at commit."""
    start = 0
    for f in fragments:
        if start >= row_ids.size:
            break
        n = min(f.physical_rows, row_ids.size - start)
        f.pb.inline_row_ids = encode_row_ids(row_ids[start:start + n])
        f.pb.inline_created_at_versions = encode_versions(created[start:start + n])
        if updated is not None:
            f.pb.inline_last_updated_at_versions = encode_versions(updated[start:start + n])
        start += n
