"""pylance's ``lance.debug``: a dataset's schema, manifest, fragments and transactions as
text, in the shape of Rust's pretty ``{:#?}`` output that pylance prints (``Schema {``,
``Field {``, ``Some(...)``), so tools and tests reading that text find what they look for.

The text is for people: only its general shape and the values in it are pylance's.
"""
from __future__ import annotations

import dataclasses

from ._proto import table_pb2
from .errors import InvalidArgumentError
from .table.debug_text import Raw as _Raw, Struct as _Struct, Tuple as _Tuple
from .table.debug_text import render as _render, schema_node as _schema, some as _some

__all__ = ["format_fragment", "format_manifest", "format_schema", "list_transactions"]

def _snapshot(dataset):
    snapshot = getattr(dataset, "snapshot", None)
    if snapshot is None:
        raise InvalidArgumentError(f"expected a dataset, got {type(dataset).__name__}")
    return snapshot


def _deletion(pb) -> _Struct | None:
    if not pb.HasField("deletion_file"):
        return None
    d = pb.deletion_file
    kind = "Bitmap" if d.file_type == table_pb2.DeletionFile.BITMAP else "Array"
    return _some(_Struct("DeletionFile", [
        ("read_version", d.read_version), ("id", d.id), ("file_type", _Raw(kind)),
        ("num_deleted_rows", _some(d.num_deleted_rows)),
        ("base_id", _some(d.base_id) if d.HasField("base_id") else None)]))


def _data_file(f) -> _Struct:
    return _Struct("DataFile", [
        ("path", f.path), ("fields", list(f.fields)), ("column_indices", list(f.column_indices)),
        ("file_major_version", f.file_major_version), ("file_minor_version", f.file_minor_version),
        ("file_size_bytes", _Tuple("CachedFileSize", f.file_size_bytes)),
        ("base_id", _some(f.base_id) if f.HasField("base_id") else None)])


def _fragment(pb) -> _Struct:
    return _Struct("Fragment", [
        ("id", pb.id), ("files", [_data_file(f) for f in pb.files]), ("overlays", []),
        ("deletion_file", _deletion(pb)),
        ("row_id_meta", None if pb.WhichOneof("row_id_sequence") is None
         else _Raw(pb.WhichOneof("row_id_sequence"))),
        ("physical_rows", _some(pb.physical_rows))])


def format_schema(dataset) -> str:
    """The dataset's Lance schema (field ids, logical types, encodings)."""
    snapshot = _snapshot(dataset)
    return _render(_schema(snapshot.lance_fields, dict(snapshot.manifest.schema_metadata)))


def format_manifest(dataset) -> str:
    """The manifest of the dataset's version."""
    snapshot = _snapshot(dataset)
    m = snapshot.manifest
    wv = m.writer_version
    return _render(_Struct("Manifest", [
        ("schema", _schema(snapshot.lance_fields, dict(m.schema_metadata))),
        ("version", m.version), ("branch", _some(m.branch) if m.HasField("branch") else None),
        ("writer_version", _some(_Struct("WriterVersion", [
            ("library", wv.library), ("version", wv.version)])) if m.HasField("writer_version")
         else None),
        ("fragments", [_fragment(pb) for pb in m.fragments]),
        ("version_aux_data", m.version_aux_data),
        ("tag", _some(m.tag) if m.tag else None),
        ("reader_feature_flags", m.reader_feature_flags),
        ("writer_feature_flags", m.writer_feature_flags),
        ("max_fragment_id", _some(m.max_fragment_id) if m.HasField("max_fragment_id") else None),
        ("transaction_file", _some(m.transaction_file) if m.transaction_file else None),
        ("next_row_id", m.next_row_id),
        ("config", dict(m.config)), ("table_metadata", dict(m.table_metadata)),
    ]))


def format_fragment(fragment, dataset) -> str:
    """One fragment (its ``FragmentMetadata``) with the schema of each data file."""
    snapshot = _snapshot(dataset)
    pb = getattr(fragment, "pb", None)
    if pb is None:
        raise InvalidArgumentError(f"expected FragmentMetadata, got {type(fragment).__name__}")
    by_id = {f.id: f for f in snapshot.lance_fields}

    def file_schema(f):
        wanted = set(f.fields)
        return _schema([by_id[i] for i in sorted(by_id) if i in wanted])

    files = [_Struct("PrettyPrintableDataFile", [
        ("path", f.path), ("fields", list(f.fields)), ("column_indices", list(f.column_indices)),
        ("schema", file_schema(f)), ("major_version", f.file_major_version),
        ("minor_version", f.file_minor_version)]) for f in pb.files]
    return _render(_Struct("PrettyPrintableFragment", [
        ("id", pb.id), ("files", files), ("deletion_file", _deletion(pb)),
        ("physical_rows", _some(pb.physical_rows))]))


def _value(v):
    """A transaction's operation field as Debug nodes."""
    if hasattr(v, "pb") and isinstance(v.pb, table_pb2.DataFragment):
        return _fragment(v.pb)
    if isinstance(v, table_pb2.DataFragment):
        return _fragment(v)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _Struct(type(v).__name__, [(f.name, _value(getattr(v, f.name)))
                                          for f in dataclasses.fields(v)])
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _value(x) for k, x in v.items()}
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def list_transactions(dataset, max_transactions: int = 10) -> list:
    """The transactions of the latest ``max_transactions`` versions, newest first."""
    out = []
    for txn in dataset.get_transactions(max_transactions):
        if txn is None:
            continue
        op = txn.operation
        fields = [(f.name, _value(getattr(op, f.name))) for f in dataclasses.fields(op)] \
            if dataclasses.is_dataclass(op) else []
        out.append(_render(_Struct("Transaction", [
            ("read_version", txn.read_version), ("uuid", txn.uuid),
            ("operation", _Struct(type(op).__name__, fields)),
            ("tag", _some(txn.tag) if txn.tag else None),
            ("transaction_properties", _some(dict(txn.transaction_properties))
             if txn.transaction_properties else None)])))
    return out
