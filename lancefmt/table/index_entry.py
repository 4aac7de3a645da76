"""pylance's ``Index`` and ``IndexFile`` (``lance.dataset``): an index segment as Python values.

``LanceOperation.CreateIndex(new_indices=[Index(...)], removed_indices=[...])`` takes them, and
``read_transaction`` / ``create_index_uncommitted`` give them back; :func:`to_pb` and
:func:`from_pb` convert to and from the manifest's ``IndexMetadata``.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import uuid as uuidlib
from dataclasses import dataclass
from typing import List, Optional, Tuple

from .._proto import table_pb2
from ..errors import InvalidArgumentError
from .bitmap import Bitmap


@dataclass
class IndexFile:
    """A file of an index segment and its size."""
    path: str
    size_bytes: int


@dataclass
class Index:
    """One index segment (pylance's ``lance.dataset.Index``)."""
    uuid: str
    name: str
    fields: List[int]
    dataset_version: int
    fragment_ids: Bitmap
    index_version: int
    created_at: Optional[_dt.datetime] = None
    base_id: Optional[int] = None
    files: Optional[List[IndexFile]] = None
    index_details: Optional[Tuple[str, bytes]] = None
    covering_fields: List[int] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        if not isinstance(self.fragment_ids, Bitmap):
            self.fragment_ids = Bitmap(self.fragment_ids or ())


def to_pb(index) -> table_pb2.IndexMetadata:
    """An ``IndexMetadata`` from an :class:`Index` (an ``IndexMetadata`` passes through)."""
    if isinstance(index, table_pb2.IndexMetadata):
        return index
    if not isinstance(index, Index):
        raise InvalidArgumentError(f"expected an Index, got {type(index).__name__}")
    pb = table_pb2.IndexMetadata()
    try:
        pb.uuid.uuid = uuidlib.UUID(str(index.uuid)).bytes
    except ValueError:
        raise InvalidArgumentError(f"index uuid {index.uuid!r} is not a UUID") from None
    pb.fields.extend(int(f) for f in index.fields)
    pb.name = str(index.name)
    pb.dataset_version = int(index.dataset_version)
    pb.fragment_bitmap = Bitmap(index.fragment_ids).serialize()
    if index.index_details is not None:
        url, value = index.index_details
        pb.index_details.type_url = url
        pb.index_details.value = bytes(value)
    pb.index_version = int(index.index_version)
    if index.created_at is not None:
        ts = index.created_at
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=_dt.timezone.utc)
        pb.created_at = int(round(ts.timestamp() * 1000))
    if index.base_id is not None:
        pb.base_id = int(index.base_id)
    for f in index.files or ():
        pb.files.add(path=f.path, size_bytes=int(f.size_bytes))
    pb.covering_fields.extend(int(f) for f in index.covering_fields)
    return pb


def from_pb(pb: table_pb2.IndexMetadata) -> Index:
    created = None
    if pb.HasField("created_at"):
        created = _dt.datetime.fromtimestamp(pb.created_at / 1000, tz=_dt.timezone.utc)
    fragments = Bitmap._from_bytes(pb.fragment_bitmap) if pb.fragment_bitmap else Bitmap()
    return Index(
        uuid=str(uuidlib.UUID(bytes=bytes(pb.uuid.uuid))) if len(pb.uuid.uuid) == 16 else "",
        name=pb.name, fields=list(pb.fields), dataset_version=int(pb.dataset_version),
        fragment_ids=fragments, index_version=int(pb.index_version) if pb.HasField("index_version") else 0,
        created_at=created, base_id=pb.base_id if pb.HasField("base_id") else None,
        files=[IndexFile(f.path, int(f.size_bytes)) for f in pb.files] if len(pb.files) else None,
        index_details=(pb.index_details.type_url, bytes(pb.index_details.value))
        if pb.HasField("index_details") else None,
        covering_fields=list(pb.covering_fields))
