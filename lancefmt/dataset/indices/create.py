"""Building a scalar index and committing it (``create_scalar_index``, ``create_index``).

One build trains a new segment from the column's live rows into ``_indices/{uuid}/`` and
commits a ``CreateIndex`` transaction that adds it (and, with ``replace``, removes the
segments of the index it replaces). A failed build or commit removes the segment's files:
nothing is visible before the commit.

The distributed shape is pylance's: ``fragment_ids`` builds a segment over those fragments
only and returns it uncommitted (an :class:`~lancefmt.table.index_entry.Index`); segments are
then committed together with ``commit_existing_index_segments`` (or
``LanceOperation.CreateIndex``), after ``merge_existing_index_segments`` if one segment is
wanted. A BTREE built through ``create_scalar_index(..., fragment_ids=, index_uuid=)`` takes
the older shape instead: every worker writes its part into the shared ``_indices/{uuid}/``,
``merge_index_metadata(uuid, "BTREE")`` turns the parts into the index's files, and the
caller commits a ``CreateIndex`` naming that uuid.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ...errors import InvalidArgumentError, LanceError, NotSupportedError
from ..._proto import table_pb2
from ...index.core.metadata import fragment_ids, new_metadata, new_uuid, uuid_text
from ...index.core.registry import IndexType, TrainingData, by_details, by_name
from ...table.index_entry import from_pb, to_pb
from ...table.transaction import CreateIndex
from ..core.commit import commit_retrying
from ..core.files import delete_files
from ..core.indices import field_paths, index_entries, index_store_for, segment_of
from ..read.index_training import column_field, storage_field, training_data

SCALAR_TYPES = ("BTREE", "BITMAP", "NGRAM", "ZONEMAP", "LABEL_LIST", "INVERTED", "BLOOMFILTER",
                "RTREE", "MINHASHLSH", "JSON")


class IndexExistsError(LanceError, RuntimeError):
    """pylance raises a RuntimeError (``LanceError(Index)``) for a name already in use."""


class IndexNotFoundError(LanceError, RuntimeError):
    """pylance raises a RuntimeError for an index name the dataset lacks."""


@dataclass
class BuildRequest:
    column: str
    itype: IndexType
    name: str
    params: dict


def resolve_type(index_type) -> tuple[str, dict]:
    """(type name, parameters) of an ``index_type`` string or ``IndexConfig``."""
    params = {}
    if hasattr(index_type, "index_type") and hasattr(index_type, "parameters"):
        params = dict(index_type.parameters or {})
        index_type = index_type.index_type
    elif hasattr(index_type, "index_type") and hasattr(index_type, "config"):
        params = json.loads(index_type.config) if index_type.config else {}
        index_type = index_type.index_type
    if not isinstance(index_type, str):
        raise InvalidArgumentError(f"index_type must be a string, not {type(index_type).__name__}")
    return index_type, params


def plan_build(snapshot, column: str, index_type, name=None, params=None) -> BuildRequest:
    type_name, config = resolve_type(index_type)
    if type_name.upper() == "FTS":
        type_name = "INVERTED"
    if type_name.upper() not in SCALAR_TYPES:
        raise NotSupportedError(
            'Only "BTREE", "BITMAP", "NGRAM", "ZONEMAP", "LABEL_LIST", "INVERTED", "BLOOMFILTER", '
            f'"RTREE" or "MINHASHLSH" are supported for scalar columns.  Received {type_name}')
    field, path = column_field(snapshot.schema, column)
    try:
        itype = by_name(type_name)
    except InvalidArgumentError:
        raise NotSupportedError(f"lancefmt cannot build {type_name.upper()} indices yet") from None
    itype.check_field(storage_field(field))
    column = ".".join(path)
    merged = {**itype.default_params(), **config, **(params or {})}
    return BuildRequest(column, itype, name or itype.default_name(column, merged), merged)


def build_segment(snapshot, req: BuildRequest, pbs, *, train: bool = True, index_uuid=None,
                  field_id: int | None = None):
    """Train a segment over fragments ``pbs`` into ``_indices/{uuid}/``: the new
    ``IndexMetadata`` (not committed). Removes what it wrote when training fails."""
    uid = str(index_uuid) if index_uuid is not None else new_uuid()
    store = index_store_for(snapshot, uid)
    field, _ = column_field(snapshot.schema, req.column)
    stable = snapshot.has_stable_row_ids
    data = training_data(snapshot, req.column, pbs) if train and pbs else \
        TrainingData.empty(storage_field(field), stable)
    version = req.itype.index_version_for(stable, req.params)
    if stable and req.itype.records_addresses(version, stable):
        data = data.recording_addresses()
    try:
        details = req.itype.train(data, store, req.params)
    except BaseException:
        delete_files([store.uri(n) for n, _ in store.written], store.storage_options)
        raise
    covered = [f for f, _ in data.fragments]
    return new_metadata(index_uuid=uid, name=req.name,
                        field_ids=[field_id if field_id is not None else column_field_id(snapshot, req.column)],
                        dataset_version=snapshot.version, fragments=covered,
                        details=req.itype.pack_details(details),
                        index_version=version, files=store.written), store


def segment_params(snapshot, itype: IndexType, pb) -> dict:
    """The parameters segment ``pb`` was built with, over the type's defaults (what a rebuild
    of it uses: pylance keeps a zone map's ``rows_per_zone`` through an optimize)."""
    params = itype.default_params()
    if len(fragment_ids(pb)):
        loaded = segment_of(snapshot, pb, itype).load()
        params = {**params, **loaded.params()}
    return params


def column_field_id(snapshot, column: str) -> int:
    for fid, path in field_paths(snapshot.ctx.fields).items():
        if path == column:
            return fid
    raise InvalidArgumentError(f"{column} not found in schema")


def segments_named(snapshot, name: str) -> list:
    return [e for e in index_entries(snapshot) if e.name == name]


def create_scalar_index(snapshot, column: str, index_type, name=None, *, replace: bool = True,
                        train: bool = True, fragment_ids=None, index_uuid=None,
                        staged: bool = False, **params):
    """Build and commit (see module docstring). Returns the committed snapshot, or with
    ``fragment_ids`` the uncommitted segment as an ``Index``, or None when the type stages
    parts instead (INVERTED always; BTREE when ``staged``: pylance's ``create_scalar_index``,
    the older distributed shape)."""
    req = plan_build(snapshot, column, index_type, name, params)
    if fragment_ids is not None and _stages(req.itype) and (staged or req.itype.stages_by_default):
        stage_fragments(snapshot, req, fragment_ids, index_uuid, train)
        return None
    return create_from_request(snapshot, req, replace=replace, train=train,
                               fragment_ids=fragment_ids, index_uuid=index_uuid)


def create_from_request(snapshot, req: BuildRequest, *, replace: bool = True, train: bool = True,
                        fragment_ids=None, index_uuid=None):
    """Build ``req`` over every fragment and commit it (see :func:`create_scalar_index`)."""
    if fragment_ids is not None:
        wanted = {int(f) for f in fragment_ids}
        pbs = [pb for pb in snapshot.fragment_pbs() if int(pb.id) in wanted]
        missing = wanted - {int(pb.id) for pb in pbs}
        if missing:
            raise InvalidArgumentError(f"fragments {sorted(missing)} are not in version {snapshot.version}")
        entry, _ = build_segment(snapshot, req, pbs, train=train, index_uuid=index_uuid)
        return from_pb(entry)

    def stage(snap):
        existing = segments_named(snap, req.name)
        if existing and not replace:
            raise IndexExistsError(f"Index name '{req.name}' already exists, please specify a "
                                   f"different name or use replace=True")
        entry, store = build_segment(snap, req, snap.fragment_pbs(), train=train,
                                     index_uuid=index_uuid)
        undo = lambda: delete_files([store.uri(n) for n, _ in store.written], store.storage_options)  # noqa: E731
        return CreateIndex([entry], existing), entry, undo

    committed, _ = commit_retrying(snapshot, stage)
    return committed


def _stages(itype: IndexType) -> bool:
    return type(itype).stage is not IndexType.stage


def stage_fragments(snapshot, req: BuildRequest, fragment_ids, index_uuid, train: bool = True) -> str:
    """Build fragments ``fragment_ids`` as a staged part of index ``index_uuid`` (pylance's
    distributed INVERTED build, and the older BTREE one; ``merge_index_metadata`` joins the
    parts), recording what a segment of ``staged_index_version`` records. Returns the uuid."""
    uid = str(index_uuid) if index_uuid is not None else new_uuid()
    wanted = {int(f) for f in fragment_ids}
    pbs = [pb for pb in snapshot.fragment_pbs() if int(pb.id) in wanted]
    missing = wanted - {int(pb.id) for pb in pbs}
    if missing:
        raise InvalidArgumentError(f"fragments {sorted(missing)} are not in version {snapshot.version}")
    store = index_store_for(snapshot, uid)
    stable = snapshot.has_stable_row_ids
    if train and pbs:
        data = training_data(snapshot, req.column, pbs)
    else:
        data = TrainingData.empty(storage_field(column_field(snapshot.schema, req.column)[0]), stable)
    if stable and req.itype.records_addresses(req.itype.staged_index_version(stable, req.params), stable):
        data = data.recording_addresses()
    try:
        req.itype.stage(data, store, req.params)
    except BaseException:
        delete_files([store.uri(n) for n, _ in store.written], store.storage_options)
        raise
    return uid


DISTRIBUTED_MERGES = ("BTREE", "INVERTED", "FTS", "IVF_FLAT", "IVF_PQ", "IVF_SQ", "VECTOR")


def merge_index_metadata(snapshot, index_uuid: str, index_type: str, field=None):
    """Join the parts staged under ``index_uuid`` (see :func:`stage_fragments`); nothing is
    committed (``field``: the indexed column, when known). Returns the index's store and
    details."""
    kind = str(getattr(index_type, "value", index_type)).upper()
    if kind not in DISTRIBUTED_MERGES:
        names = ", ".join(sorted(k for k in DISTRIBUTED_MERGES if k != "FTS"))
        raise NotImplementedError(f"Only {names} are supported, received {index_type}")
    try:
        itype = by_name("INVERTED" if kind == "FTS" else kind)
    except InvalidArgumentError:
        itype = None
    if itype is None or not _stages(itype):
        raise NotSupportedError(f"lancefmt merges staged parts of BTREE and INVERTED indices only, "
                                f"not {kind}")
    store = index_store_for(snapshot, str(index_uuid))
    return store, itype.merge_staged(store, field)


def commit_staged(snapshot, index_uuid: str, name: str, column: str, index_type, fragments):
    """Merge the parts staged under ``index_uuid`` over ``fragments`` and commit them as the
    index ``name`` on ``column`` (replacing an index of that name): the committed snapshot."""
    kind = str(getattr(index_type, "value", index_type)).upper()
    itype = by_name("INVERTED" if kind == "FTS" else kind)
    store, details = merge_index_metadata(snapshot, index_uuid, kind,
                                          column_field(snapshot.schema, column)[0])
    stable = snapshot.has_stable_row_ids
    entry = new_metadata(index_uuid=str(index_uuid), name=name,
                         field_ids=[column_field_id(snapshot, ".".join(column_field(snapshot.schema, column)[1]))],
                         dataset_version=snapshot.version, fragments=sorted(int(f) for f in fragments),
                         details=itype.pack_details(details),
                         index_version=itype.index_version_for(stable, {}),
                         files=[(n, sz) for n, sz in store.list_files()])
    return snapshot.commit(CreateIndex([entry], segments_named(snapshot, name))).run_after_commit()


def commit_segments(snapshot, name: str, column: str, segments):
    """Commit already built segments (``Index`` values or ``IndexMetadata``) as the index
    ``name`` on ``column``, replacing the segments an index of that name had."""
    field, path = column_field(snapshot.schema, column)
    fid = column_field_id(snapshot, ".".join(path))
    entries = []
    for seg in segments:
        pb = table_pb2.IndexMetadata()
        pb.CopyFrom(to_pb(seg))
        pb.name = name
        del pb.fields[:]
        pb.fields.append(fid)
        if not pb.HasField("index_details"):
            raise InvalidArgumentError(f"segment {uuid_text(pb)} carries no index details: "
                                       f"commit the Index that built it")
        entries.append(pb)
    return snapshot.commit(CreateIndex(entries, segments_named(snapshot, name))).run_after_commit()


def merge_segments(snapshot, segments):
    """One segment covering every fragment of ``segments`` (rebuilt from the column's data,
    which gives the same index a single build would), uncommitted; the inputs' files are left
    for cleanup (they were never committed, or stay referenced by older versions)."""
    pbs = [to_pb(s) for s in segments]
    if not pbs:
        raise InvalidArgumentError("merge_existing_index_segments needs at least one segment")
    first = pbs[0]
    itype = by_details(first.index_details)
    if itype is None:
        raise NotSupportedError(f"lancefmt cannot merge {first.index_details.type_url} segments")
    column = field_paths(snapshot.ctx.fields).get(int(first.fields[0]))
    if column is None:
        raise InvalidArgumentError(f"field {first.fields[0]} of segment {uuid_text(first)} is not a column")
    wanted = set()
    for pb in pbs:
        wanted |= set(fragment_ids(pb))
    entry = _merge_files(snapshot, itype, pbs, wanted)
    if entry is None:  # the type cannot merge files: rebuild from the column's data
        frags = [pb for pb in snapshot.fragment_pbs() if int(pb.id) in wanted]
        req = BuildRequest(column, itype, first.name, segment_params(snapshot, itype, first))
        entry, _ = build_segment(snapshot, req, frags, field_id=int(first.fields[0]))
    return from_pb(entry)


def _merge_files(snapshot, itype, pbs, fragments):
    """The merged segment written from the segments' own files, or None."""
    uid = new_uuid()
    dest = index_store_for(snapshot, uid)
    segments = [segment_of(snapshot, pb, itype) for pb in pbs]
    if len({s.records_addresses for s in segments}) != 1:
        return None  # row ids and addresses cannot share a segment
    try:
        details = itype.merge([s.load() for s in segments], dest)
    except NotImplementedError:
        delete_files([dest.uri(n) for n, _ in dest.written], dest.storage_options)
        return None
    first = pbs[0]
    return new_metadata(index_uuid=uid, name=first.name, field_ids=list(first.fields),
                        dataset_version=min(int(pb.dataset_version) for pb in pbs),
                        fragments=sorted(fragments), details=itype.pack_details(details),
                        index_version=segments[0].index_version, files=dest.written)
