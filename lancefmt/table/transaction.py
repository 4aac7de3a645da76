"""Transactions: what one commit changes, as Python objects and as the ``Transaction`` protobuf
pylance writes to ``_transactions/*.txn`` (so pylance's conflict checks can read ours and ours
can read pylance's).

``Operation.<Kind>`` mirrors ``lance.LanceOperation.<Kind>``. A schema inside an operation is a
list of Lance ``Field`` protobufs (plus schema metadata); the dataset layer converts pyarrow
schemas before building operations.
"""
from __future__ import annotations

import uuid as _uuid
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .._proto import file_pb2, table_pb2, transaction_pb2
from ..errors import CorruptFileError, UnsupportedFeatureError
from .fragment import FragmentMetadata
from .index_entry import to_pb
from .key_filter import KeyFilter

TxnPb = transaction_pb2.Transaction


def _frag_pbs(fragments) -> list:
    return [f.pb if isinstance(f, FragmentMetadata) else f for f in fragments]


def _frags(pbs) -> list:
    out = []
    for pb in pbs:
        copy = table_pb2.DataFragment()
        copy.CopyFrom(pb)
        out.append(FragmentMetadata(copy))
    return out


def _fields_copy(fields) -> list:
    out = []
    for f in fields:
        c = file_pb2.Field()
        c.CopyFrom(f)
        out.append(c)
    return out


@dataclass
class UpdateMap:
    """Key updates for a string map: a value of None deletes the key; ``replace`` clears first."""

    updates: Dict[str, Optional[str]] = field(default_factory=dict)
    replace: bool = False

    def to_pb(self, pb) -> None:
        for k, v in self.updates.items():
            entry = pb.update_entries.add(key=k)
            if v is not None:
                entry.value = v
        pb.replace = self.replace

    @classmethod
    def from_pb(cls, pb) -> "UpdateMap":
        return cls({e.key: (e.value if e.HasField("value") else None) for e in pb.update_entries},
                   pb.replace)

    def apply(self, mapping: dict) -> dict:
        out = {} if self.replace else dict(mapping)
        for k, v in self.updates.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = v
        return out


class BaseOperation:
    """A transaction's operation; ``name`` is the protobuf oneof name."""

    name: str = ""

    def fill(self, txn: TxnPb) -> None:  # pragma: no cover - every subclass overrides
        raise TypeError(f"{type(self).__name__} cannot be serialized")


@dataclass
class Append(BaseOperation):
    fragments: List[FragmentMetadata]
    name = "append"

    def fill(self, txn):
        txn.append.fragments.extend(_frag_pbs(self.fragments))


@dataclass
class Delete(BaseOperation):
    updated_fragments: List[FragmentMetadata] = field(default_factory=list)
    deleted_fragment_ids: List[int] = field(default_factory=list)
    predicate: str = ""
    name = "delete"

    def fill(self, txn):
        txn.delete.SetInParent()
        txn.delete.updated_fragments.extend(_frag_pbs(self.updated_fragments))
        txn.delete.deleted_fragment_ids.extend(self.deleted_fragment_ids)
        txn.delete.predicate = self.predicate


def lance_schema(schema) -> tuple[list, dict]:
    """(Lance Field list, schema metadata) from a pyarrow schema or a Field list."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        pa = None
    if pa is not None and isinstance(schema, pa.Schema):
        from ..file.schema import fields_from_arrow, schema_metadata_to_proto

        return fields_from_arrow(schema), schema_metadata_to_proto(schema.metadata)
    return list(schema), {}


@dataclass
class Overwrite(BaseOperation):
    """Replace the dataset's fragments and schema (or create the dataset).

    ``new_schema`` is a pyarrow schema (field ids assigned depth-first from 0, as the data
    files written for it have them) or a list of Lance Field protobufs.
    """

    new_schema: object
    fragments: List[FragmentMetadata]
    initial_bases: Optional[list] = None  # list of table_pb2.BasePath / BasePath
    config_upsert_values: Optional[Dict[str, str]] = None
    schema_metadata: Optional[Dict[str, bytes]] = None
    name = "overwrite"

    @property
    def fields(self) -> list:
        return lance_schema(self.new_schema)[0]

    @property
    def metadata(self) -> dict:
        if self.schema_metadata is not None:
            return dict(self.schema_metadata)
        return lance_schema(self.new_schema)[1]

    def base_pbs(self) -> list:
        return [b.to_pb() if hasattr(b, "to_pb") else b for b in (self.initial_bases or [])]

    def fill(self, txn):
        o = txn.overwrite
        o.SetInParent()
        o.fragments.extend(_frag_pbs(self.fragments))
        o.schema.extend(self.fields)
        for k, v in self.metadata.items():
            o.schema_metadata[k] = v if isinstance(v, bytes) else str(v).encode()
        for k, v in (self.config_upsert_values or {}).items():
            o.config_upsert_values[k] = v
        o.initial_bases.extend(self.base_pbs())


@dataclass
class Restore(BaseOperation):
    version: int
    name = "restore"

    def fill(self, txn):
        txn.restore.version = self.version


@dataclass
class UpdateConfig(BaseOperation):
    config_updates: Optional[UpdateMap] = None
    table_metadata_updates: Optional[UpdateMap] = None
    schema_metadata_updates: Optional[UpdateMap] = None
    field_metadata_updates: Dict[int, UpdateMap] = field(default_factory=dict)
    name = "update_config"

    def __post_init__(self):
        if self.field_metadata_updates is None:  # pylance's callers pass None for "none"
            self.field_metadata_updates = {}

    def fill(self, txn):
        u = txn.update_config
        u.SetInParent()
        if self.config_updates is not None:
            self.config_updates.to_pb(u.config_updates)
        if self.table_metadata_updates is not None:
            self.table_metadata_updates.to_pb(u.table_metadata_updates)
        if self.schema_metadata_updates is not None:
            self.schema_metadata_updates.to_pb(u.schema_metadata_updates)
        for fid, m in self.field_metadata_updates.items():
            m.to_pb(u.field_metadata_updates[fid])

    def config_keys(self) -> set:
        return set(self.config_updates.updates) if self.config_updates else set()


@dataclass
class Update(BaseOperation):
    removed_fragment_ids: List[int] = field(default_factory=list)
    updated_fragments: List[FragmentMetadata] = field(default_factory=list)
    new_fragments: List[FragmentMetadata] = field(default_factory=list)
    fields_modified: List[int] = field(default_factory=list)
    fields_for_preserving_frag_bitmap: List[int] = field(default_factory=list)
    update_mode: int = transaction_pb2.Transaction.REWRITE_ROWS
    inserted_rows: Optional[KeyFilter] = None   # a merge insert's keys (lancefmt.table.key_filter)
    name = "update"

    def fill(self, txn):
        u = txn.update
        u.SetInParent()
        u.removed_fragment_ids.extend(self.removed_fragment_ids)
        u.updated_fragments.extend(_frag_pbs(self.updated_fragments))
        u.new_fragments.extend(_frag_pbs(self.new_fragments))
        u.fields_modified.extend(self.fields_modified)
        u.fields_for_preserving_frag_bitmap.extend(self.fields_for_preserving_frag_bitmap)
        u.update_mode = self.update_mode
        if self.inserted_rows is not None:
            self.inserted_rows.to_pb(u.inserted_rows)


@dataclass
class Clone(BaseOperation):
    is_shallow: bool
    ref_name: Optional[str]
    ref_version: int
    ref_path: str
    branch_name: Optional[str] = None
    name = "clone"

    def fill(self, txn):
        c = txn.clone
        c.is_shallow = self.is_shallow
        if self.ref_name is not None:
            c.ref_name = self.ref_name
        c.ref_version = self.ref_version
        c.ref_path = self.ref_path
        if self.branch_name is not None:
            c.branch_name = self.branch_name


# Transaction property marking an UpdateBases that relocates existing bases (see UpdateBases).
RELOCATE_BASES_KEY = "lancefmt.relocate_bases"


@dataclass
class UpdateBases(BaseOperation):
    """Add base paths (pylance's ``add_bases``), or relocate existing ones (``update_bases``).

    Both travel as Lance's ``UpdateBases`` message (op 114). An added base has id 0 unless the
    caller chose one; the manifest builder gives it ``max(id) + 1``. A relocation carries each
    changed ``BasePath`` with its *existing* id and is marked by the transaction property
    ``lancefmt.relocate_bases = "true"`` (``relocate=True``), because id 0 on the wire would
    otherwise mean "assign a new id" and a clone's source base has id 0. pylance 14 itself
    replaces the entry when an UpdateBases names an existing id (its manifest build inserts by
    id), so its readers and conflict checks treat our relocation like any UpdateBases.
    """

    new_bases: list  # list of table_pb2.BasePath
    relocate: bool = False
    name = "update_bases"

    def fill(self, txn):
        txn.update_bases.SetInParent()
        txn.update_bases.new_bases.extend(self.new_bases)
        if self.relocate:
            txn.transaction_properties[RELOCATE_BASES_KEY] = "true"


@dataclass
class RewriteGroup:
    old_fragments: List[FragmentMetadata]
    new_fragments: List[FragmentMetadata]


@dataclass
class RewrittenIndex:
    """An index segment a compaction remapped (pylance's ``LanceOperation.RewrittenIndex``):
    segment ``old_id`` is replaced by ``new_id`` with these details, version and files."""
    old_id: str
    new_id: str
    new_details_type_url: str
    new_details_value: bytes
    new_index_version: int
    new_index_files: Optional[list] = None   # [(path, size_bytes)]

    def to_pb(self, out) -> None:
        out.old_id.uuid = _uuid.UUID(str(self.old_id)).bytes
        out.new_id.uuid = _uuid.UUID(str(self.new_id)).bytes
        out.new_index_details.type_url = self.new_details_type_url
        out.new_index_details.value = bytes(self.new_details_value)
        out.new_index_version = int(self.new_index_version)
        for path, size in self.new_index_files or ():
            out.new_index_files.add(path=path, size_bytes=int(size))

    @classmethod
    def from_pb(cls, pb) -> "RewrittenIndex":
        return cls(str(_uuid.UUID(bytes=bytes(pb.old_id.uuid))), str(_uuid.UUID(bytes=bytes(pb.new_id.uuid))),
                   pb.new_index_details.type_url, bytes(pb.new_index_details.value),
                   int(pb.new_index_version), [(f.path, int(f.size_bytes)) for f in pb.new_index_files])


@dataclass
class Rewrite(BaseOperation):
    groups: List[RewriteGroup]
    rewritten_indices: list = field(default_factory=list)   # RewrittenIndex
    frag_reuse_index: object = None
    name = "rewrite"

    def __post_init__(self):
        if self.frag_reuse_index is not None:
            raise UnsupportedFeatureError("Rewrite with a fragment reuse index (deferred index "
                                          "remap) is not supported by lancefmt")

    def fill(self, txn):
        r = txn.rewrite
        r.SetInParent()
        for g in self.groups:
            pg = r.groups.add()
            pg.old_fragments.extend(_frag_pbs(g.old_fragments))
            pg.new_fragments.extend(_frag_pbs(g.new_fragments))
        for ri in self.rewritten_indices:
            ri.to_pb(r.rewritten_indices.add())


@dataclass
class Merge(BaseOperation):
    """New fragment list (same ids, more data files) and a new schema (``add_columns``)."""

    fragments: List[FragmentMetadata]
    schema: object  # pyarrow schema or Lance Field list
    schema_metadata: Optional[Dict[str, bytes]] = None
    name = "merge"

    def __post_init__(self):
        if type(self.schema).__module__.startswith("pyarrow"):
            # as pylance: ids are then guessed depth-first, which new columns may not have
            warnings.warn("Merge with a pyarrow schema is deprecated: pass the LanceSchema "
                          "merge_columns / Fragment.merge returned", DeprecationWarning,
                          stacklevel=3)

    @property
    def fields(self) -> list:
        return lance_schema(self.schema)[0]

    @property
    def metadata(self) -> dict:
        return dict(self.schema_metadata) if self.schema_metadata is not None else lance_schema(self.schema)[1]

    def fill(self, txn):
        m = txn.merge
        m.SetInParent()
        m.fragments.extend(_frag_pbs(self.fragments))
        m.schema.extend(self.fields)
        for k, v in self.metadata.items():
            m.schema_metadata[k] = v if isinstance(v, bytes) else str(v).encode()


@dataclass
class Project(BaseOperation):
    """A new schema over the same data files (drop / rename columns)."""

    fields: List[file_pb2.Field]  # or a LanceSchema (iterating it gives its Fields)
    name = "project"

    def __post_init__(self):
        self.fields = list(self.fields)

    def fill(self, txn):
        txn.project.SetInParent()
        txn.project.schema.extend(self.fields)


@dataclass
class ReserveFragments(BaseOperation):
    num_fragments: int
    name = "reserve_fragments"

    def fill(self, txn):
        txn.reserve_fragments.num_fragments = self.num_fragments


@dataclass
class DataReplacementGroup:
    fragment_id: int
    new_file: table_pb2.DataFile

    def __post_init__(self):
        if hasattr(self.new_file, "to_pb"):   # a DataFile object (FragmentMetadata.files)
            self.new_file = self.new_file.to_pb()


@dataclass
class DataReplacement(BaseOperation):
    replacements: List[DataReplacementGroup]
    name = "data_replacement"

    def fill(self, txn):
        d = txn.data_replacement
        d.SetInParent()
        for g in self.replacements:
            d.replacements.add(fragment_id=g.fragment_id).new_file.CopyFrom(g.new_file)


@dataclass
class CreateIndex(BaseOperation):
    new_indices: list  # table_pb2.IndexMetadata
    removed_indices: list = field(default_factory=list)
    name = "create_index"

    def __post_init__(self):
        # pylance's Index values or IndexMetadata protobufs: kept as protobufs
        self.new_indices = [to_pb(i) for i in self.new_indices]
        self.removed_indices = [to_pb(i) for i in (self.removed_indices or [])]

    def fill(self, txn):
        c = txn.create_index
        c.SetInParent()
        c.new_indices.extend(self.new_indices)
        c.removed_indices.extend(self.removed_indices)


@dataclass
class Opaque(BaseOperation):
    """An operation lancefmt reads but does not model (e.g. a MemWAL update): kept as protobuf."""

    name: str = ""
    pb: object = None


class Operation:
    """Namespace mirroring ``lance.LanceOperation``."""

    BaseOperation = BaseOperation
    Append = Append
    Delete = Delete
    Overwrite = Overwrite
    Restore = Restore
    UpdateConfig = UpdateConfig
    UpdateMap = UpdateMap
    Update = Update
    Clone = Clone
    UpdateBases = UpdateBases
    Rewrite = Rewrite
    RewriteGroup = RewriteGroup
    Merge = Merge
    Project = Project
    ReserveFragments = ReserveFragments
    DataReplacement = DataReplacement
    DataReplacementGroup = DataReplacementGroup
    CreateIndex = CreateIndex
    RewrittenIndex = RewrittenIndex


def _op_from_pb(txn: TxnPb) -> BaseOperation:
    kind = txn.WhichOneof("operation")
    if kind == "append":
        return Append(_frags(txn.append.fragments))
    if kind == "delete":
        d = txn.delete
        return Delete(_frags(d.updated_fragments), list(d.deleted_fragment_ids), d.predicate)
    if kind == "overwrite":
        o = txn.overwrite
        bases = []
        for b in o.initial_bases:
            c = table_pb2.BasePath()
            c.CopyFrom(b)
            bases.append(c)
        return Overwrite(_fields_copy(o.schema), _frags(o.fragments), bases or None,
                         dict(o.config_upsert_values) or None, dict(o.schema_metadata))
    if kind == "restore":
        return Restore(txn.restore.version)
    if kind == "update_config":
        u = txn.update_config
        op = UpdateConfig(
            UpdateMap.from_pb(u.config_updates) if u.HasField("config_updates") else None,
            UpdateMap.from_pb(u.table_metadata_updates) if u.HasField("table_metadata_updates") else None,
            UpdateMap.from_pb(u.schema_metadata_updates) if u.HasField("schema_metadata_updates") else None,
            {k: UpdateMap.from_pb(v) for k, v in u.field_metadata_updates.items()},
        )
        # Deprecated spellings (older writers): upsert_values / delete_keys / schema_metadata.
        if op.config_updates is None and (u.upsert_values or u.delete_keys):
            updates = dict(u.upsert_values)
            updates.update({k: None for k in u.delete_keys})
            op.config_updates = UpdateMap(updates)
        if op.schema_metadata_updates is None and u.schema_metadata:
            op.schema_metadata_updates = UpdateMap(dict(u.schema_metadata), replace=True)
        return op
    if kind == "update":
        u = txn.update
        return Update(list(u.removed_fragment_ids), _frags(u.updated_fragments), _frags(u.new_fragments),
                      list(u.fields_modified), list(u.fields_for_preserving_frag_bitmap), u.update_mode,
                      KeyFilter.from_pb(u.inserted_rows) if u.HasField("inserted_rows") else None)
    if kind == "clone":
        c = txn.clone
        return Clone(c.is_shallow, c.ref_name if c.HasField("ref_name") else None, c.ref_version,
                     c.ref_path, c.branch_name if c.HasField("branch_name") else None)
    if kind == "update_bases":
        bases = []
        for b in txn.update_bases.new_bases:
            c = table_pb2.BasePath()
            c.CopyFrom(b)
            bases.append(c)
        return UpdateBases(bases)
    if kind == "rewrite":
        r = txn.rewrite
        groups = [RewriteGroup(_frags(g.old_fragments), _frags(g.new_fragments)) for g in r.groups]
        if not groups and (r.old_fragments or r.new_fragments):
            groups = [RewriteGroup(_frags(r.old_fragments), _frags(r.new_fragments))]
        return Rewrite(groups, [RewrittenIndex.from_pb(ri) for ri in r.rewritten_indices])
    if kind == "merge":
        m = txn.merge
        return Merge(_frags(m.fragments), _fields_copy(m.schema), dict(m.schema_metadata))
    if kind == "project":
        return Project(_fields_copy(txn.project.schema))
    if kind == "reserve_fragments":
        return ReserveFragments(txn.reserve_fragments.num_fragments)
    if kind == "data_replacement":
        groups = []
        for g in txn.data_replacement.replacements:
            f = table_pb2.DataFile()
            f.CopyFrom(g.new_file)
            groups.append(DataReplacementGroup(g.fragment_id, f))
        return DataReplacement(groups)
    if kind == "create_index":
        c = txn.create_index
        return CreateIndex(list(c.new_indices), list(c.removed_indices))
    return Opaque(name=kind or "unknown", pb=txn)


@dataclass
class Transaction:
    """One commit's intent: the version it was planned against and what it changes."""

    read_version: int
    operation: BaseOperation
    uuid: str = field(default_factory=lambda: str(_uuid.uuid4()))
    tag: str = ""
    transaction_properties: Dict[str, str] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.operation.name

    def to_pb(self) -> TxnPb:
        if isinstance(self.operation, Opaque):
            raise UnsupportedFeatureError(f"cannot write a {self.operation.name} transaction")
        pb = TxnPb(read_version=self.read_version, uuid=self.uuid, tag=self.tag)
        for k, v in self.transaction_properties.items():
            pb.transaction_properties[k] = v
        self.operation.fill(pb)
        return pb

    def to_bytes(self) -> bytes:
        return self.to_pb().SerializeToString()

    @classmethod
    def from_pb(cls, pb: TxnPb) -> "Transaction":
        op = _op_from_pb(pb)
        props = dict(pb.transaction_properties)
        if isinstance(op, UpdateBases) and props.get(RELOCATE_BASES_KEY) == "true":
            op.relocate = True
        return cls(pb.read_version, op, pb.uuid, pb.tag, props)

    @classmethod
    def from_bytes(cls, data: bytes, path: str | None = None) -> "Transaction":
        """A serialized ``Transaction`` (a ``.txn`` file); bytes that do not decode are a
        CorruptFileError naming ``path``."""
        from google.protobuf.message import DecodeError

        pb = TxnPb()
        try:
            pb.ParseFromString(bytes(data))
        except (DecodeError, ValueError, TypeError, RecursionError) as e:
            raise CorruptFileError(f"cannot decode transaction: {e}", path) from None
        return cls.from_pb(pb)
