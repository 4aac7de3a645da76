"""The manifest's index entries (``IndexMetadata``): building them and reading what they say.

One entry is one *segment* of an index: a uuid (its directory ``_indices/{uuid}/``), the
field ids it indexes, its name (several segments may share one: *delta* indices), the dataset
version it was built at, the fragments it covers (a portable 32-bit roaring bitmap), its
type's details (a protobuf ``Any``), ``index_version``, ``created_at`` (ms), the base it lives
in and its files with their sizes.
"""
from __future__ import annotations

import time
import uuid as uuidlib

import numpy as np
from pyroaring import BitMap

from ..._proto import table_pb2
from ...errors import CorruptFileError

# System indices Lance keeps in the same section (fragment reuse, MemWAL): never user indices.
SYSTEM_PREFIX = "__lance"


def new_uuid() -> str:
    return str(uuidlib.uuid4())


def uuid_bytes(value) -> bytes:
    """16 bytes of a uuid given as text, bytes or ``uuid.UUID``."""
    if isinstance(value, uuidlib.UUID):
        return value.bytes
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return bytes(value)
    return uuidlib.UUID(str(value)).bytes


def uuid_text(pb: table_pb2.IndexMetadata) -> str:
    """The segment's uuid as Lance prints it (hyphenated), which is also its directory name."""
    raw = pb.uuid.uuid
    if len(raw) != 16:
        raise CorruptFileError(f"index {pb.name!r} has a {len(raw)}-byte uuid")
    return str(uuidlib.UUID(bytes=bytes(raw)))


def encode_fragments(fragment_ids) -> bytes:
    return BitMap(int(f) for f in fragment_ids).serialize()


def fragment_ids(pb: table_pb2.IndexMetadata) -> BitMap:
    """The fragments the segment covers (empty when the entry has no bitmap)."""
    if not pb.fragment_bitmap:
        return BitMap()
    try:
        return BitMap.deserialize(pb.fragment_bitmap)
    except (ValueError, OverflowError, MemoryError) as e:
        raise CorruptFileError(f"index {pb.name!r} has a bad fragment bitmap ({e})") from None


def new_metadata(*, index_uuid: str, name: str, field_ids, dataset_version: int, fragments,
                 details, index_version: int, files=(), base_id: int | None = None,
                 created_at_ms: int | None = None) -> table_pb2.IndexMetadata:
    """A new entry (see module docstring); ``files`` is (name, size) pairs."""
    pb = table_pb2.IndexMetadata()
    pb.uuid.uuid = uuid_bytes(index_uuid)
    pb.fields.extend(int(f) for f in field_ids)
    pb.name = name
    pb.dataset_version = int(dataset_version)
    pb.fragment_bitmap = encode_fragments(fragments)
    pb.index_details.CopyFrom(details)
    pb.index_version = int(index_version)
    pb.created_at = int(created_at_ms if created_at_ms is not None else time.time() * 1000)
    if base_id is not None:
        pb.base_id = int(base_id)
    for fname, size in files:
        f = pb.files.add()
        f.path = fname
        f.size_bytes = int(size)
    return pb


def is_system(pb: table_pb2.IndexMetadata) -> bool:
    return pb.name.startswith(SYSTEM_PREFIX)


def copy_with_fragments(pb: table_pb2.IndexMetadata, fragments) -> table_pb2.IndexMetadata:
    out = table_pb2.IndexMetadata()
    out.CopyFrom(pb)
    out.fragment_bitmap = encode_fragments(fragments)
    return out


def covered_array(pb: table_pb2.IndexMetadata) -> np.ndarray:
    return np.asarray(fragment_ids(pb).to_array(), dtype=np.int64)
