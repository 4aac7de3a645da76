"""Lance ``Field`` protobuf lists <-> pyarrow schemas.

Lance stores a schema as a flat list of ``lance.file.Field`` messages in depth-first pre-order
(a parent, then its children), linked by ``parent_id`` (-1 at the top). Types are spelled as
*logical type* strings (``int32``, ``timestamp:us:UTC``, ``fixed_size_list:float:128``,
``dict:string:int32:false``, ``list.struct``...); lists carry one child field (usually named
``item``), structs their children, and fixed-size lists none (the item type is folded into the
logical type and comes back as a nullable ``item``). This module is the one place that knows
those spellings, for the file layer (FileDescriptor) and the table layer (manifests) alike.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field as dc_field
from typing import Iterable, Sequence

import pyarrow as pa

from .._proto import file_pb2
from ..errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from ..jsonb.arrow import is_arrow_json, is_lance_json, stored_field

Field = file_pb2.Field

EXT_NAME_KEY = "ARROW:extension:name"
EXT_META_KEY = "ARROW:extension:metadata"
BFLOAT16_EXT_NAME = "lance.bfloat16"
LANCE_JSON_EXT_NAME = "lance.json"
PRIMARY_KEY_META_KEY = "lance-schema:unenforced-primary-key"
PACKED_META_KEYS = ("packed", "lance-encoding:packed")
BLOB_META_KEY = "lance-encoding:blob"
BLOB_V2_EXT_NAME = "lance.blob.v2"
# What a blob v2 column stores (one packed-struct column) and what pylance's reads return for
# it: kind (0 inline in the data file, 1 packed sidecar, 2 dedicated sidecar, 3 external uri),
# byte range, sidecar id and external uri.
BLOB_V2_DESCRIPTOR = pa.struct([
    pa.field("kind", pa.uint8(), False), pa.field("position", pa.uint64(), False),
    pa.field("size", pa.uint64(), False), pa.field("blob_id", pa.uint32(), False),
    pa.field("blob_uri", pa.string(), False)])
BLOB_V2_DESCRIPTOR_META = {BLOB_META_KEY: "true", "lance-encoding:packed": "true"}

_SIMPLE = {
    "null": pa.null(), "bool": pa.bool_(),
    "int8": pa.int8(), "uint8": pa.uint8(), "int16": pa.int16(), "uint16": pa.uint16(),
    "int32": pa.int32(), "uint32": pa.uint32(), "int64": pa.int64(), "uint64": pa.uint64(),
    "halffloat": pa.float16(), "float": pa.float32(), "double": pa.float64(),
    "string": pa.string(), "binary": pa.binary(),
    "large_string": pa.large_string(), "large_binary": pa.large_binary(),
    "json": pa.large_binary(),
    "date32:day": pa.date32(), "date64:ms": pa.date64(),
    "time32:s": pa.time32("s"), "time32:ms": pa.time32("ms"),
    "time64:us": pa.time64("us"), "time64:ns": pa.time64("ns"),
    "duration:s": pa.duration("s"), "duration:ms": pa.duration("ms"),
    "duration:us": pa.duration("us"), "duration:ns": pa.duration("ns"),
}
_SIMPLE_NAMES = {t: name for name, t in _SIMPLE.items() if name != "json"}
_UNITS = ("s", "ms", "us", "ns")


# ---------------------------------------------------------------------------------------------
# logical types


def logical_type(dtype: pa.DataType) -> str:
    """The Lance logical type string of an Arrow (storage) type."""
    if isinstance(dtype, pa.BaseExtensionType):
        dtype = dtype.storage_type
    name = _SIMPLE_NAMES.get(dtype)
    if name is not None:
        return name
    if pa.types.is_timestamp(dtype):
        return f"timestamp:{dtype.unit}:{dtype.tz if dtype.tz is not None else '-'}"
    if pa.types.is_decimal128(dtype):
        return f"decimal:128:{dtype.precision}:{dtype.scale}"
    if pa.types.is_decimal256(dtype):
        return f"decimal:256:{dtype.precision}:{dtype.scale}"
    if pa.types.is_struct(dtype):
        return "struct"
    if pa.types.is_map(dtype):  # Lance 2.2+ only; the writers refuse it below
        return "map"
    if pa.types.is_list(dtype):
        return "list.struct" if pa.types.is_struct(dtype.value_type) else "list"
    if pa.types.is_large_list(dtype):
        return "large_list.struct" if pa.types.is_struct(dtype.value_type) else "large_list"
    if pa.types.is_fixed_size_list(dtype):
        item = dtype.value_field
        if _extension_name(item) == BFLOAT16_EXT_NAME:
            return f"fixed_size_list:{BFLOAT16_EXT_NAME}:{dtype.list_size}"
        return f"fixed_size_list:{logical_type(item.type)}:{dtype.list_size}"
    if pa.types.is_fixed_size_binary(dtype):
        return f"fixed_size_binary:{dtype.byte_width}"
    if pa.types.is_dictionary(dtype):
        return f"dict:{logical_type(dtype.value_type)}:{logical_type(dtype.index_type)}:false"
    raise UnsupportedFeatureError(f"Arrow type {dtype} has no Lance logical type")


def arrow_type(logical: str, children: Sequence[pa.Field] = ()) -> pa.DataType:
    """The Arrow type of a logical type string; lists and structs take their child fields."""
    t = _SIMPLE.get(logical)
    if t is not None:
        return t
    if logical == "struct":
        return pa.struct(list(children))
    if logical == "map":  # one non-null "entries" struct of (key, value), as Lance 2.2 writes
        if len(children) != 1 or not pa.types.is_struct(children[0].type) or \
                children[0].type.num_fields != 2:
            raise CorruptFileError("a map field needs one entries struct of key and value")
        entries = children[0].type
        return pa.map_(entries.field(0), entries.field(1))
    if logical in ("list", "list.struct", "large_list", "large_list.struct"):
        if len(children) != 1:
            raise CorruptFileError(f"a {logical} field needs exactly one child, has {len(children)}")
        return pa.list_(children[0]) if logical.startswith("list") else pa.large_list(children[0])
    parts = logical.split(":")
    try:
        kind = parts[0]
        if kind == "fixed_size_list" and len(parts) >= 3:
            size = int(parts[-1])
            inner = ":".join(parts[1:-1])
            if size < 0:
                raise ValueError(size)
            if inner == BFLOAT16_EXT_NAME:
                item = pa.field("item", pa.binary(2), True,
                                {EXT_NAME_KEY: BFLOAT16_EXT_NAME, EXT_META_KEY: ""})
            else:
                item = pa.field("item", arrow_type(inner), True)
            return pa.list_(item, size)
        if kind == "fixed_size_binary" and len(parts) == 2:
            return pa.binary(int(parts[1]))
        if kind == "dict" and len(parts) == 4:
            return pa.dictionary(arrow_type(parts[2]), arrow_type(parts[1]))
        if kind == "decimal" and len(parts) == 4:
            bits, precision, scale = int(parts[1]), int(parts[2]), int(parts[3])
            if bits == 128:
                return pa.decimal128(precision, scale)
            if bits == 256:
                return pa.decimal256(precision, scale)
        if kind == "timestamp" and len(parts) >= 3 and parts[1] in _UNITS:
            tz = ":".join(parts[2:])
            return pa.timestamp(parts[1], None if tz == "-" else tz)
    except (ValueError, TypeError, OverflowError, pa.ArrowException):
        pass
    raise UnsupportedFeatureError(f"Lance logical type {logical!r}")


# ---------------------------------------------------------------------------------------------
# extension types


class _ArrowSchema(ctypes.Structure):
    """The C data interface's ArrowSchema, to read an extension type's serialized metadata."""


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p), ("release", ctypes.CFUNCTYPE(None, ctypes.c_void_p)),
    ("private_data", ctypes.c_void_p),
]


def _extension_metadata(dtype: pa.DataType) -> dict[bytes, bytes]:
    """``ARROW:extension:name``/``metadata`` of an extension type, as Arrow exports them."""
    c = _ArrowSchema()
    dtype._export_to_c(ctypes.addressof(c))
    try:
        out = {}
        if c.metadata:
            p = c.metadata
            n = ctypes.c_int32.from_address(p).value
            p += 4
            for _ in range(n):
                kl = ctypes.c_int32.from_address(p).value
                key = ctypes.string_at(p + 4, kl)
                p += 4 + kl
                vl = ctypes.c_int32.from_address(p).value
                out[key] = ctypes.string_at(p + 4, vl)
                p += 4 + vl
        return out
    finally:
        c.release(ctypes.addressof(c))


def _is_extension(dtype) -> bool:
    return isinstance(dtype, pa.BaseExtensionType)


def _extension_name(f: pa.Field) -> str | None:
    if _is_extension(f.type):
        return f.type.extension_name
    md = f.metadata or {}
    name = md.get(EXT_NAME_KEY.encode())
    return name.decode() if name is not None else None


def storage_field(f: pa.Field) -> pa.Field:
    """``f`` with every extension type (at any depth) replaced by its storage type, the
    extension recorded in the field metadata as Arrow's IPC format does."""
    dtype = f.type
    metadata = dict(f.metadata or {})
    if _is_extension(dtype):
        metadata.update(_extension_metadata(dtype))
        dtype = dtype.storage_type
    dtype = storage_type(dtype)
    return pa.field(f.name, dtype, f.nullable, metadata or None)


def storage_type(dtype: pa.DataType) -> pa.DataType:
    """``dtype`` without extension types (see :func:`storage_field`)."""
    if _is_extension(dtype):
        return storage_type(dtype.storage_type)
    if pa.types.is_struct(dtype):
        return pa.struct([storage_field(dtype.field(i)) for i in range(dtype.num_fields)])
    if pa.types.is_list(dtype):
        return pa.list_(storage_field(dtype.value_field))
    if pa.types.is_large_list(dtype):
        return pa.large_list(storage_field(dtype.value_field))
    if pa.types.is_fixed_size_list(dtype):
        return pa.list_(storage_field(dtype.value_field), dtype.list_size)
    if pa.types.is_dictionary(dtype):
        return pa.dictionary(dtype.index_type, storage_type(dtype.value_type))
    return dtype


def storage_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with extension types replaced by storage types plus extension metadata."""
    return pa.schema([storage_field(f) for f in schema], metadata=schema.metadata)


def restore_extensions(schema: pa.Schema) -> pa.Schema:
    """Turn extension metadata back into registered extension types (via an IPC round trip,
    which is how pyarrow itself resolves them); unknown extensions stay storage + metadata."""
    if not any(_has_ext_meta(f) for f in schema):
        return schema
    try:
        return pa.ipc.read_schema(pa.py_buffer(schema.serialize()))
    except (pa.ArrowException, ValueError, TypeError):
        return schema  # an extension whose storage does not fit: keep storage + metadata


def _has_ext_meta(f: pa.Field) -> bool:
    if f.metadata and EXT_NAME_KEY.encode() in f.metadata:
        return True
    t = f.type
    if pa.types.is_struct(t):
        return any(_has_ext_meta(t.field(i)) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_ext_meta(t.value_field)
    return False


# ---------------------------------------------------------------------------------------------
# Arrow -> Lance fields


def _encoding(dtype: pa.DataType) -> int:
    """The legacy ``Field.encoding`` Lance still writes for a (storage) type."""
    E = file_pb2
    if pa.types.is_dictionary(dtype):
        return E.DICTIONARY
    if (pa.types.is_string(dtype) or pa.types.is_binary(dtype) or pa.types.is_large_string(dtype)
            or pa.types.is_large_binary(dtype)):
        return E.VAR_BINARY
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return E.PLAIN
    if pa.types.is_null(dtype) or pa.types.is_struct(dtype):
        return E.NONE
    return E.PLAIN  # fixed stride: bool, numbers, temporals, decimals, FSB, FSL


def _metadata_bytes(md) -> dict[str, bytes]:
    """Arrow metadata as Lance stores it; keys and values must be UTF-8, as pylance requires."""
    out = {}
    for k, v in (md or {}).items():
        try:
            key = k.decode("utf-8") if isinstance(k, bytes) else str(k)
            value = v if isinstance(v, bytes) else str(v).encode("utf-8")
            value.decode("utf-8")
        except UnicodeDecodeError:
            from ..errors import InvalidArgumentError

            raise InvalidArgumentError(
                f"Metadata key {k!r} is not valid utf8. Consider base64 encode for generic "
                "binary metadata.") from None
        out[key] = value
    return out


def fields_from_arrow(schema, start_id: int = 0) -> list[Field]:
    """Lance Field messages for an Arrow schema (or a list of Arrow fields).

    Ids are assigned depth-first pre-order from ``start_id``; top-level parents are -1.
    """
    out: list[Field] = []
    next_id = [start_id]

    def visit(f: pa.Field, parent_id: int):
        if is_arrow_json(f):  # stored as JSONB, as pylance does (lancefmt.jsonb)
            f = stored_field(f)
        sf = storage_field(f)
        dtype = sf.type
        logical = "json" if is_lance_json(sf) else logical_type(dtype)
        msg = Field(name=f.name, id=next_id[0], parent_id=parent_id,
                    logical_type=logical, nullable=f.nullable)
        next_id[0] += 1
        enc = _encoding(dtype)
        if enc:
            msg.encoding = enc
        md = _metadata_bytes(sf.metadata)
        for k, v in md.items():
            msg.metadata[k] = v
        if EXT_NAME_KEY in md:
            msg.extension_name = md[EXT_NAME_KEY].decode("utf-8", "replace")
        pk = md.get(PRIMARY_KEY_META_KEY)
        if pk is not None and pk.decode("utf-8", "replace").lower() in ("true", "1", "yes"):
            msg.unenforced_primary_key = True
        out.append(msg)
        if pa.types.is_struct(dtype):
            for i in range(dtype.num_fields):
                visit(f.type.storage_type.field(i) if _is_extension(f.type) else f.type.field(i),
                      msg.id)
        elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            inner = f.type.storage_type if _is_extension(f.type) else f.type
            visit(inner.value_field, msg.id)
        elif pa.types.is_map(dtype):  # one non-null entries struct of (key, value), as Lance
            visit(pa.field("entries", pa.struct([dtype.key_field, dtype.item_field]),
                           nullable=False), msg.id)
        elif pa.types.is_dictionary(dtype):
            vt = dtype.value_type
            if not (pa.types.is_primitive(vt) or pa.types.is_string(vt) or pa.types.is_binary(vt)
                    or pa.types.is_large_string(vt) or pa.types.is_large_binary(vt)
                    or pa.types.is_fixed_size_binary(vt) or pa.types.is_decimal(vt)):
                raise UnsupportedFeatureError(
                    f"field {f.name!r}: dictionary of {vt} (only primitive / binary values)")

    fields = list(schema)
    for f in fields:
        visit(f, -1)
    return out


def schema_metadata_to_proto(metadata) -> dict[str, bytes]:
    """Arrow schema metadata as the ``map<string, bytes>`` of Lance's Schema message."""
    return _metadata_bytes(metadata)


# ---------------------------------------------------------------------------------------------
# the field tree


@dataclass
class FieldNode:
    """One Lance field with its children (the tree the flat list encodes)."""

    field: Field
    children: list["FieldNode"] = dc_field(default_factory=list)

    @property
    def id(self) -> int:
        return self.field.id

    @property
    def name(self) -> str:
        return self.field.name

    @property
    def logical_type(self) -> str:
        return self.field.logical_type

    def walk(self):
        """This node and its descendants in pre-order."""
        yield self
        for c in self.children:
            yield from c.walk()

    def is_blob_v2(self) -> bool:
        """A dataset's blob v2 column (struct<data, uri> named ``lance.blob.v2``): its files
        store one packed descriptor column per row, which is what reads return."""
        if self.field.logical_type != "struct":
            return False
        name = self.field.extension_name or self.field.metadata.get(EXT_NAME_KEY, b"").decode(
            "utf-8", "replace")
        return name == BLOB_V2_EXT_NAME

    def is_packed_struct(self) -> bool:
        if self.field.logical_type != "struct":
            return False
        if self.is_blob_v2():
            return True
        for key in PACKED_META_KEYS:
            v = self.field.metadata.get(key)
            if v is not None and v.decode("utf-8", "replace").lower() == "true":
                return True
        return False

    def arrow_field(self) -> pa.Field:
        """The Arrow (storage) field: exact type, nullability and metadata."""
        f = self.field
        if self.is_blob_v2():
            return pa.field(f.name, BLOB_V2_DESCRIPTOR, f.nullable, BLOB_V2_DESCRIPTOR_META)
        children = [c.arrow_field() for c in self.children]
        if f.logical_type.startswith("fixed_size_list:struct:") and children:
            raise UnsupportedFeatureError(f"field {f.name!r}: fixed-size lists of structs "
                                          f"(Lance 2.2) are not read yet")
        if f.logical_type.startswith("fixed_size_list") or f.logical_type.startswith("dict:"):
            if children:
                raise CorruptFileError(f"field {f.name!r} ({f.logical_type}) has child fields")
        elif f.logical_type not in ("struct", "map") and \
                not f.logical_type.startswith(("list", "large_list")):
            if children:
                raise CorruptFileError(f"field {f.name!r} ({f.logical_type}) has child fields")
        dtype = arrow_type(f.logical_type, children)
        md = {k: v for k, v in f.metadata.items()}
        if f.extension_name and EXT_NAME_KEY not in md:
            md[EXT_NAME_KEY] = f.extension_name.encode("utf-8")
        if f.logical_type == "json" and EXT_NAME_KEY not in md:
            md[EXT_NAME_KEY] = LANCE_JSON_EXT_NAME.encode()
            md.setdefault(EXT_META_KEY, b"")
        return pa.field(f.name, dtype, f.nullable, md or None)


def _is_blob_descriptor(node: FieldNode) -> bool:
    md = node.field.metadata
    return node.field.logical_type == "struct" and md.get(BLOB_META_KEY, b"") == b"true" \
        and node.is_packed_struct()


def field_tree(fields: Iterable[Field]) -> list[FieldNode]:
    """The top-level nodes of a flat pre-order Field list (children in list order).

    Raises CorruptFileError for duplicate ids or a parent that does not precede its child.
    """
    nodes: dict[int, FieldNode] = {}
    roots: list[FieldNode] = []
    for f in fields:
        if f.id == -1 and f.parent_id == -1 and roots and _is_blob_descriptor(roots[-1]):
            # pylance 14 writes a blob v2 column's descriptor fields into the data file's
            # schema without ids; they are the packed struct's children, in order.
            if len(roots[-1].children) >= BLOB_V2_DESCRIPTOR.num_fields:
                raise CorruptFileError(f"field {roots[-1].name!r}: too many blob descriptor fields")
            roots[-1].children.append(FieldNode(f))
            continue
        if f.id in nodes:
            raise CorruptFileError(f"duplicate field id {f.id}")
        node = FieldNode(f)
        if f.parent_id == -1:
            roots.append(node)
        else:
            parent = nodes.get(f.parent_id)
            if parent is None:
                raise CorruptFileError(
                    f"field {f.name!r} (id {f.id}) names parent {f.parent_id}, which does not precede it")
            parent.children.append(node)
        nodes[f.id] = node
    return roots


def flatten_tree(roots: Iterable[FieldNode]) -> list[Field]:
    """Inverse of :func:`field_tree`: the pre-order Field list."""
    return [n.field for r in roots for n in r.walk()]


def arrow_from_fields(fields: Iterable[Field], schema_metadata=None) -> pa.Schema:
    """The pyarrow schema of a Lance Field list (plus the Schema message's metadata map)."""
    roots = field_tree(fields)
    md = {k: v for k, v in (schema_metadata or {}).items()} or None
    schema = pa.schema([r.arrow_field() for r in roots], metadata=md)
    return restore_extensions(schema)


# ---------------------------------------------------------------------------------------------
# helpers for the dataset layer


def project_fields(fields: Iterable[Field], names: Iterable[str]) -> list[Field]:
    """The Field list restricted to the named top-level fields (whole subtrees, ids kept),
    in schema order. Unknown names raise InvalidArgumentError."""
    roots = field_tree(fields)
    wanted = list(names)
    by_name = {r.name: r for r in roots}
    missing = [n for n in wanted if n not in by_name]
    if missing:
        raise InvalidArgumentError(f"no such top-level field(s): {', '.join(map(repr, missing))}")
    keep = set(wanted)
    return flatten_tree(r for r in roots if r.name in keep)


def field_subtree_ids(fields: Iterable[Field], name_or_id) -> list[int]:
    """The ids of a top-level field (by name or id) and of all its descendants, pre-order."""
    for r in field_tree(fields):
        if r.name == name_or_id or (isinstance(name_or_id, int) and r.id == name_or_id):
            return [n.id for n in r.walk()]
    raise InvalidArgumentError(f"no such top-level field: {name_or_id!r}")


def max_field_id(fields: Iterable[Field]) -> int:
    """The largest field id in the list (-1 for an empty list)."""
    return max((f.id for f in fields), default=-1)
