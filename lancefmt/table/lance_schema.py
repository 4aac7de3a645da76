"""pylance's ``LanceSchema``: a schema as Lance stores it (Field messages with ids and parent
ids), so field ids are visible and a pyarrow schema can be turned into one
(``LanceSchema.from_pyarrow``) to hand to ``LanceOperation.Project``/``Overwrite``.

Iterating a LanceSchema yields its Field protobufs (pre-order), which is what the operations
take.
"""
from __future__ import annotations

import pyarrow as pa

from .._proto import file_pb2
from ..file.schema import arrow_from_fields, fields_from_arrow


class LanceField:
    """One field of a LanceSchema; pylance's accessors are methods (``name()``, ``id()``)."""

    def __init__(self, pb, children: list):
        self._pb, self._children = pb, children

    def name(self) -> str:
        return self._pb.name

    def id(self) -> int:
        return self._pb.id

    def children(self) -> list:
        return list(self._children)

    @property
    def metadata(self) -> dict:
        return {k: v.decode("utf-8", "replace") for k, v in self._pb.metadata.items()}

    def logical_type(self) -> str:
        return self._pb.logical_type

    def nullable(self) -> bool:
        return self._pb.nullable

    def __repr__(self):
        return f"LanceField(name={self.name()!r}, id={self.id()})"


class LanceSchema:
    """The Lance schema of a version: Field messages in pre-order, convertible to Arrow."""

    def __init__(self, fields, metadata: dict | None = None):
        self._fields = [_copy(f) for f in fields]
        self._metadata = dict(metadata or {})

    @staticmethod
    def from_pyarrow(schema: pa.Schema) -> "LanceSchema":
        """Field ids assigned depth-first from 0, as a new dataset gets them."""
        return LanceSchema(fields_from_arrow(schema), schema.metadata)

    def to_pyarrow(self) -> pa.Schema:
        return arrow_from_fields(self._fields, self._metadata or None)

    def fields(self) -> list:
        """The top-level fields (each with its ``children()``)."""
        by_parent: dict[int, list] = {}
        for f in self._fields:
            by_parent.setdefault(f.parent_id, []).append(f)

        def tree(parent):
            return [LanceField(f, tree(f.id)) for f in by_parent.get(parent, [])]
        return tree(-1)

    def field(self, name: str):
        """The Field protobuf at a dotted path (``"s.a"``), or None."""
        parent, found = -1, None
        for part in name.split("."):
            found = next((f for f in self._fields if f.parent_id == parent and f.name == part),
                         None)
            if found is None:
                return None
            parent = found.id
        return found

    def field_case_insensitive(self, name: str):
        return next((f for f in self._fields
                     if f.parent_id == -1 and f.name.lower() == name.lower()), None)

    def __iter__(self):
        return iter([_copy(f) for f in self._fields])

    def __len__(self) -> int:
        return len(self._fields)

    def __eq__(self, other):
        return isinstance(other, LanceSchema) and \
            [f.SerializeToString() for f in self._fields] == \
            [f.SerializeToString() for f in other._fields]

    def __reduce__(self):
        return (_rebuild, ([f.SerializeToString() for f in self._fields], self._metadata))

    def __repr__(self):
        from .debug_text import render_schema

        return render_schema(self._fields, self._metadata)


def _copy(f):
    out = file_pb2.Field()
    out.CopyFrom(f)
    return out


def _rebuild(blobs, metadata) -> LanceSchema:
    return LanceSchema([file_pb2.Field.FromString(b) for b in blobs], metadata)
