"""Rust's pretty ``{:#?}`` text, the shape in which pylance prints schemas, manifests,
fragments and transactions (``lancefmt.debug``, ``repr(LanceSchema)``): structs, tuples such as
``Some(...)``, lists and maps, four spaces a level."""
from __future__ import annotations

import json

from .._proto import file_pb2

_INDENT = "    "


class Struct:
    """``Name { field: value, ... }``."""

    def __init__(self, name: str, fields: list):
        self.name, self.fields = name, fields


class Tuple:
    """``Name(value)``."""

    def __init__(self, name: str, value):
        self.name, self.value = name, value


class Raw(str):
    """Printed as it is (an enum variant, a number)."""


def render(value, depth: int = 0) -> str:
    pad, inner = _INDENT * depth, _INDENT * (depth + 1)
    if isinstance(value, Raw):
        return str(value)
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Tuple):
        return f"{value.name}(\n{inner}{render(value.value, depth + 1)},\n{pad})"
    if isinstance(value, Struct):
        if not value.fields:
            return value.name
        body = "".join(f"{inner}{k}: {render(v, depth + 1)},\n" for k, v in value.fields)
        return f"{value.name} {{\n{body}{pad}}}"
    if isinstance(value, dict):
        if not value:
            return "{}"
        body = "".join(f"{inner}{render(k, depth + 1)}: {render(v, depth + 1)},\n"
                       for k, v in value.items())
        return f"{{\n{body}{pad}}}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        return "[\n" + "".join(f"{inner}{render(v, depth + 1)},\n" for v in value) + f"{pad}]"
    return json.dumps(str(value))


def some(value):
    return None if value is None else Tuple("Some", value)


_ENCODINGS = {file_pb2.PLAIN: "Plain", file_pb2.VAR_BINARY: "VarBinary",
              file_pb2.DICTIONARY: "Dictionary", file_pb2.RLE: "RLE"}


def _field(pb, children: list) -> Struct:
    return Struct("Field", [
        ("name", pb.name), ("id", pb.id), ("parent_id", pb.parent_id),
        ("logical_type", Tuple("LogicalType", pb.logical_type)),
        ("metadata", {k: v.decode("utf-8", "replace") for k, v in pb.metadata.items()}),
        ("encoding", some(Raw(_ENCODINGS[pb.encoding])) if pb.encoding in _ENCODINGS else None),
        ("nullable", pb.nullable), ("children", children), ("dictionary", None),
        ("unenforced_primary_key_position", None),
        ("unenforced_clustering_key_position", None),
    ])


def schema_node(field_pbs, metadata=None) -> Struct:
    """The field tree of flat Lance fields (parents before children)."""
    by_parent: dict[int, list] = {}
    for f in field_pbs:
        by_parent.setdefault(f.parent_id, []).append(f)

    def tree(parent_id):
        return [_field(f, tree(f.id)) for f in by_parent.get(parent_id, [])]

    meta = {k: v.decode("utf-8", "replace") if isinstance(v, bytes) else v
            for k, v in (metadata or {}).items()}
    return Struct("Schema", [("fields", tree(-1)), ("metadata", meta)])


def render_schema(field_pbs, metadata=None) -> str:
    """A Lance schema as pylance prints it (``Schema {\n    fields: [...``)."""
    return render(schema_node(field_pbs, metadata))
