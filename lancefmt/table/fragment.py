"""FragmentMetadata: one fragment as a manifest stores it (``DataFragment``), in a form that
pickles small and converts to and from pylance's ``FragmentMetadata.to_json()`` dictionaries.

Distributed writers (Spark executors) return these to the driver, which commits them; nothing in
here touches storage.
"""
from __future__ import annotations

from typing import Iterable

from .._proto import table_pb2
from .data_file import DataFile

_DELETION_KINDS = {"array": table_pb2.DeletionFile.ARROW_ARRAY, "bitmap": table_pb2.DeletionFile.BITMAP}
_DELETION_NAMES = {v: k for k, v in _DELETION_KINDS.items()}


class FragmentMetadata:
    """A fragment's metadata: id, data files, deletion file, physical rows, row-id metadata.

    Wraps a ``lance.table.DataFragment`` protobuf (``.pb``). Fragments returned by
    ``write_fragments`` have ``id == 0``; ids are assigned when the commit succeeds.
    """

    __slots__ = ("pb",)

    def __init__(self, pb: table_pb2.DataFragment | None = None, files=None,
                 physical_rows: int | None = None, deletion_file=None, row_id_meta=None, *,
                 id: int | None = None):
        """From a DataFragment protobuf, or as pylance's dataclass is built:
        ``FragmentMetadata(id=, files=, physical_rows=, deletion_file=, row_id_meta=)``."""
        if isinstance(pb, int) and not isinstance(pb, bool):
            pb, id = None, pb
        self.pb = pb if pb is not None else table_pb2.DataFragment()
        if id is not None:
            self.pb.id = int(id)
        for f in files or ():
            self.pb.files.append(f if isinstance(f, table_pb2.DataFile) else f.to_pb())
        if physical_rows is not None:
            self.pb.physical_rows = int(physical_rows)
        if deletion_file is not None:
            self.pb.deletion_file.CopyFrom(deletion_file if isinstance(
                deletion_file, table_pb2.DeletionFile) else deletion_file.to_pb())
        if row_id_meta is not None:
            meta = FragmentMetadata.from_json({"row_id_meta": row_id_meta}).pb
            self.pb.MergeFrom(meta)

    # -- construction -----------------------------------------------------------------
    @classmethod
    def from_pb(cls, pb: table_pb2.DataFragment) -> "FragmentMetadata":
        return cls(pb)

    @classmethod
    def from_bytes(cls, data: bytes) -> "FragmentMetadata":
        pb = table_pb2.DataFragment()
        pb.ParseFromString(data)
        return cls(pb)

    @classmethod
    def new(cls, files: Iterable[table_pb2.DataFile], physical_rows: int, id: int = 0) -> "FragmentMetadata":
        pb = table_pb2.DataFragment(id=id, physical_rows=physical_rows)
        pb.files.extend(files)
        return cls(pb)

    def to_bytes(self) -> bytes:
        return self.pb.SerializeToString()

    def copy(self) -> "FragmentMetadata":
        pb = table_pb2.DataFragment()
        pb.CopyFrom(self.pb)
        return FragmentMetadata(pb)

    def __reduce__(self):
        return (FragmentMetadata.from_bytes, (self.to_bytes(),))

    def __eq__(self, other):
        return isinstance(other, FragmentMetadata) and self.pb == other.pb

    def __repr__(self):
        """pylance's dataclass repr (``DataFile(path=..., file_major_version=...)``)."""
        files = ", ".join(
            f"DataFile(path={f.path!r}, fields={list(f.fields)}, "
            f"column_indices={list(f.column_indices)}, "
            f"file_major_version={f.file_major_version}, "
            f"file_minor_version={f.file_minor_version}, "
            f"file_size_bytes={f.file_size_bytes or None})" for f in self.pb.files)
        j = self.to_json()
        return (f"FragmentMetadata(id={self.id}, files=[{files}], "
                f"physical_rows={self.physical_rows}, deletion_file={self.deletion_file!r}, "
                f"row_id_meta={j['row_id_meta']!r}, "
                f"created_at_version_meta={j['created_at_version_meta']!r}, "
                f"last_updated_at_version_meta={j['last_updated_at_version_meta']!r})")

    # -- accessors --------------------------------------------------------------------
    @property
    def id(self) -> int:
        return self.pb.id

    @id.setter
    def id(self, value: int) -> None:
        self.pb.id = value

    @property
    def files(self) -> list:
        """The data files, as pylance's ``DataFile`` objects (over this fragment's entries)."""
        return [DataFile.of(f) for f in self.pb.files]

    @property
    def physical_rows(self) -> int:
        return self.pb.physical_rows

    @property
    def deletion_file(self):
        return DeletionFile.from_pb(self.pb.deletion_file) \
            if self.pb.HasField("deletion_file") else None

    @property
    def row_id_meta(self):
        """pylance's ``row_id_meta`` JSON form (``{"Inline": [...]}`` / ``{"External": ...}``),
        None when the fragment has no stable row ids."""
        return self.to_json()["row_id_meta"]

    @property
    def num_deletions(self) -> int:
        return self.pb.deletion_file.num_deleted_rows if self.pb.HasField("deletion_file") else 0

    @property
    def num_rows(self) -> int:
        return self.physical_rows - self.num_deletions

    # -- pylance JSON -----------------------------------------------------------------
    def to_json(self) -> dict:
        """The dictionary pylance's ``FragmentMetadata.to_json()`` produces."""
        pb = self.pb
        files = []
        for f in pb.files:
            files.append({
                "fields": list(f.fields),
                "column_indices": list(f.column_indices),
                "file_major_version": f.file_major_version,
                "file_minor_version": f.file_minor_version,
                "file_size_bytes": f.file_size_bytes or None,
                "base_id": f.base_id if f.HasField("base_id") else None,
                "path": f.path,
            })
        deletion = None
        if pb.HasField("deletion_file"):
            d = pb.deletion_file
            deletion = {
                "read_version": d.read_version,
                "id": d.id,
                "file_type": _DELETION_NAMES.get(d.file_type, "array"),
                "num_deleted_rows": d.num_deleted_rows,
                "base_id": d.base_id if d.HasField("base_id") else None,
            }
        row_id_meta = None
        kind = pb.WhichOneof("row_id_sequence")
        if kind == "inline_row_ids":
            row_id_meta = {"Inline": list(pb.inline_row_ids)}
        elif kind == "external_row_ids":
            e = pb.external_row_ids
            row_id_meta = {"External": {"path": e.path, "offset": e.offset, "size": e.size}}

        def version_meta(oneof, inline_attr):
            which = pb.WhichOneof(oneof)
            if which is None:
                return None
            if which == inline_attr:
                return {"inline": list(getattr(pb, which))}
            e = getattr(pb, which)
            return {"external": {"path": e.path, "offset": e.offset, "size": e.size}}

        return {
            "id": pb.id,
            "files": files,
            "overlays": [],
            "physical_rows": pb.physical_rows,
            "deletion_file": deletion,
            "row_id_meta": row_id_meta,
            "created_at_version_meta": version_meta("created_at_version_sequence",
                                                    "inline_created_at_versions"),
            "last_updated_at_version_meta": version_meta("last_updated_at_version_sequence",
                                                         "inline_last_updated_at_versions"),
        }

    @classmethod
    def from_json(cls, data) -> "FragmentMetadata":
        """Inverse of :meth:`to_json` (also accepts a JSON string)."""
        if isinstance(data, (str, bytes)):
            import json

            data = json.loads(data)
        pb = table_pb2.DataFragment(id=int(data.get("id", 0)), physical_rows=int(data.get("physical_rows") or 0))
        for f in data.get("files", []):
            df = pb.files.add(path=f["path"], file_major_version=int(f.get("file_major_version", 0)),
                              file_minor_version=int(f.get("file_minor_version", 0)),
                              file_size_bytes=int(f.get("file_size_bytes") or 0))
            df.fields.extend(int(x) for x in f.get("fields", []))
            df.column_indices.extend(int(x) for x in f.get("column_indices", []))
            if f.get("base_id") is not None:
                df.base_id = int(f["base_id"])
        d = data.get("deletion_file")
        if d:
            pb.deletion_file.file_type = _DELETION_KINDS[d.get("file_type", "array")]
            pb.deletion_file.read_version = int(d.get("read_version", 0))
            pb.deletion_file.id = int(d.get("id", 0))
            pb.deletion_file.num_deleted_rows = int(d.get("num_deleted_rows") or 0)
            if d.get("base_id") is not None:
                pb.deletion_file.base_id = int(d["base_id"])
        meta = data.get("row_id_meta")
        if meta:
            if "Inline" in meta:
                pb.inline_row_ids = bytes(meta["Inline"])
            elif "External" in meta:
                e = meta["External"]
                pb.external_row_ids.path = e["path"]
                pb.external_row_ids.offset = int(e.get("offset", 0))
                pb.external_row_ids.size = int(e.get("size", 0))
        for key, inline_attr, external_attr in (
            ("created_at_version_meta", "inline_created_at_versions", "external_created_at_versions"),
            ("last_updated_at_version_meta", "inline_last_updated_at_versions",
             "external_last_updated_at_versions"),
        ):
            v = data.get(key)
            if not v:
                continue
            if "inline" in v:
                setattr(pb, inline_attr, bytes(v["inline"]))
            elif "external" in v:
                e = v["external"]
                ext = getattr(pb, external_attr)
                ext.path, ext.offset, ext.size = e["path"], int(e.get("offset", 0)), int(e.get("size", 0))
        return cls(pb)


class DeletionFile:
    """pylance's ``DeletionFile``: which deletion file a fragment has."""

    def __init__(self, read_version: int, id: int, file_type: str = "array",
                 num_deleted_rows: int = 0, base_id: int | None = None):
        if file_type not in _DELETION_KINDS:
            raise ValueError(f"deletion file type must be 'array' or 'bitmap', not {file_type!r}")
        self.read_version, self.id, self.file_type = int(read_version), int(id), file_type
        self.num_deleted_rows = int(num_deleted_rows or 0)
        self.base_id = None if base_id is None else int(base_id)

    @classmethod
    def from_pb(cls, pb) -> "DeletionFile":
        return cls(pb.read_version, pb.id, _DELETION_NAMES.get(pb.file_type, "array"),
                   pb.num_deleted_rows, pb.base_id if pb.HasField("base_id") else None)

    def to_pb(self) -> table_pb2.DeletionFile:
        pb = table_pb2.DeletionFile(read_version=self.read_version, id=self.id,
                                    file_type=_DELETION_KINDS[self.file_type],
                                    num_deleted_rows=self.num_deleted_rows)
        if self.base_id is not None:
            pb.base_id = self.base_id
        return pb

    def asdict(self) -> dict:
        return {"read_version": self.read_version, "id": self.id, "file_type": self.file_type,
                "num_deleted_rows": self.num_deleted_rows, "base_id": self.base_id}

    def __eq__(self, other):
        return isinstance(other, DeletionFile) and self.asdict() == other.asdict()

    def __repr__(self):
        return "DeletionFile(" + ", ".join(f"{k}={v!r}" for k, v in self.asdict().items()) + ")"
