"""DataFile: a fragment's data file as pylance's ``lance.fragment.DataFile`` shows it.

pylance's is a dataclass whose ``path`` is a ``str`` that can still be called (``path()``, its
old method, warns DeprecationWarning). lancefmt's reads the ``lance.table.DataFile`` protobuf
it wraps, so ``FragmentMetadata.files`` shows the manifest's own entries; ``HasField`` answers
as the protobuf does, for code written against it.
"""
from __future__ import annotations

import warnings

from .._proto import table_pb2


class CallablePath(str):
    """A path that still answers the deprecated ``path()`` call."""

    def __call__(self) -> str:
        warnings.warn("DataFile.path() is deprecated, use DataFile.path instead",
                      DeprecationWarning, stacklevel=2)
        return str(self)

    def __reduce__(self):
        return (str, (str(self),))


class DataFile:
    __slots__ = ("pb",)

    def __init__(self, path: str = "", fields=None, column_indices=None,
                 file_major_version: int = 0, file_minor_version: int = 0,
                 file_size_bytes: int | None = None, base_id: int | None = None):
        self.pb = table_pb2.DataFile(path=str(path), fields=list(fields or ()),
                                     column_indices=list(column_indices or ()),
                                     file_major_version=int(file_major_version),
                                     file_minor_version=int(file_minor_version),
                                     file_size_bytes=int(file_size_bytes or 0))
        if base_id is not None:
            self.pb.base_id = int(base_id)

    @classmethod
    def of(cls, pb: table_pb2.DataFile) -> "DataFile":
        out = cls.__new__(cls)
        out.pb = pb
        return out

    def to_pb(self) -> table_pb2.DataFile:
        return self.pb

    @property
    def path(self) -> CallablePath:
        return CallablePath(self.pb.path)

    @property
    def fields(self) -> list:
        return list(self.pb.fields)

    @property
    def column_indices(self) -> list:
        return list(self.pb.column_indices)

    @property
    def file_major_version(self) -> int:
        return self.pb.file_major_version

    @property
    def file_minor_version(self) -> int:
        return self.pb.file_minor_version

    @property
    def file_size_bytes(self) -> int | None:
        return self.pb.file_size_bytes or None

    @property
    def base_id(self) -> int | None:
        return self.pb.base_id if self.pb.HasField("base_id") else None

    def HasField(self, name: str) -> bool:  # noqa: N802 -- the protobuf's spelling
        return self.pb.HasField(name)

    def field_ids(self) -> list:
        warnings.warn("DataFile.field_ids is deprecated, use DataFile.fields instead",
                      DeprecationWarning, stacklevel=2)
        return self.fields

    def __eq__(self, other):
        return isinstance(other, DataFile) and self.pb == other.pb

    def __repr__(self):
        return (f"DataFile(path='{self.pb.path}', fields={self.fields}, "
                f"column_indices={self.column_indices}, "
                f"file_major_version={self.file_major_version}, "
                f"file_minor_version={self.file_minor_version}, "
                f"file_size_bytes={self.file_size_bytes})")
