"""The ``__manifest`` table of a V2 directory namespace, read and written with lancefmt itself.

Columns, types and field metadata are the ones pylance 14 writes (checked on a root it made):
``object_id`` (utf8, not null, Lance unenforced primary key), ``object_type`` (utf8, not null),
``location`` and ``metadata`` (utf8), ``base_objects`` (list<utf8> with the child named
``object_id``).

Every change is *conflict-checked*: the change is planned against the rows of version ``v``
(e.g. "no row with this object_id") and committed only as version ``v + 1`` itself, created with
put-if-absent. If any writer committed ``v + 1`` first, nothing of ours stays visible: our new
data/deletion files are removed, the rows are re-read and the check runs again. So of two writers
adding the same object id, exactly one succeeds and the other sees the row and fails cleanly.
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..dataset import Dataset, write_dataset, write_fragments
from ..dataset.core.files import deletion_file_uri
from ..dataset.mutate.delete import plan_delete
from ..dataset.indices.remap import attach_index_remap
from ..errors import (
    CommitConflictError, CorruptFileError, DatasetExistsError, DatasetNotFoundError,
    NotSupportedError,
)
from ..io import open_store
from ..io.uri import child
from ..table.manifest import encode_manifest_file
from ..table.manifest_builder import build_manifest
from ..table.naming import manifest_scheme, transaction_file_name
from ..table.transaction import Append, Delete, Rewrite, RewriteGroup, Transaction, Update
from ..table.commit import transaction_file_uri
from ..table.version_hint import wants_version_hint, write_version_hint
from ..table.versions import latest_manifest, manifest_uri
from .errors import ConcurrentModificationError

MANIFEST_DIR = "__manifest"
NAMESPACE = "namespace"
TABLE = "table"
DELIMITER = "$"
PRIMARY_KEY_META = {b"lance-schema:unenforced-primary-key:position": b"0"}

SCHEMA = pa.schema([
    pa.field("object_id", pa.string(), nullable=False, metadata=PRIMARY_KEY_META),
    pa.field("object_type", pa.string(), nullable=False),
    pa.field("location", pa.string()),
    pa.field("metadata", pa.string()),
    pa.field("base_objects", pa.list_(pa.field("object_id", pa.string()))),
])
MAX_ATTEMPTS = 50
COMPACT_FRAGMENTS = 16


@dataclass
class Row:
    """One manifest row as the namespace uses it."""

    object_id: str
    object_type: str
    location: str | None = None
    properties: dict | None = None
    base_objects: list | None = None


@dataclass
class Change:
    """What a planned change does to the manifest: rows to remove (by object id), rows to add."""

    remove: list = field(default_factory=list)
    add: list = field(default_factory=list)
    result: object = None


def rows_table(rows) -> pa.Table:
    return pa.table({
        "object_id": [r.object_id for r in rows],
        "object_type": [r.object_type for r in rows],
        "location": [r.location for r in rows],
        "metadata": [json.dumps(r.properties, separators=(",", ":")) if r.properties is not None
                     else None for r in rows],
        "base_objects": [r.base_objects for r in rows],
    }, schema=SCHEMA)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class Snapshot:
    """The manifest rows of one version (version 0: no manifest yet).

    Holds ``object_id``, ``object_type`` and ``location``; the ``metadata`` column is read only
    when a row's properties are asked for (listings never need it)."""

    CORE = ["object_id", "object_type"]

    def __init__(self, ds: Dataset | None, table: pa.Table):
        self.dataset = ds
        self.version = ds.version if ds is not None else 0
        self.table = table
        self.key = None  # (version, manifest size, manifest uri) when cached
        self._columns = {}

    def _row_index(self, object_id: str) -> int:
        return pc.index(self.table.column("object_id"), object_id).as_py()

    def _lazy(self, name: str):
        """A column read on first use (same version, same row order as ``table``)."""
        col = self._columns.get(name)
        if col is None:
            if self.dataset is None or not self.table.num_rows:
                col = pa.chunked_array([pa.array([], pa.string())])
            else:
                col = self.dataset.to_table(columns=[name]).column(name)
            self._columns[name] = col
        return col

    def locations(self, rows: pa.Table) -> list:
        """The ``location`` of each row of ``rows`` (a filtered ``table`` with ``_pos``)."""
        return pc.take(self._lazy("location"), rows.column("_pos")).to_pylist()

    def type_of(self, object_id: str) -> str | None:
        """The object's type, or None (without reading the metadata column)."""
        i = self._row_index(object_id)
        return None if i < 0 else self.table.column("object_type")[i].as_py()

    def get(self, object_id: str) -> Row | None:
        i = self._row_index(object_id)
        if i < 0:
            return None
        t = self.table
        meta = self._lazy("metadata")[i].as_py()
        return Row(object_id, t.column("object_type")[i].as_py(), self._lazy("location")[i].as_py(),
                   row_properties(object_id, meta, self.dataset) if meta else None)

    def children(self, prefix_id: str, object_type: str | None = None) -> pa.Table:
        """Rows directly inside the namespace ``prefix_id`` ("" = root), with a ``name`` column."""
        t = self.table
        ids = t.column("object_id")
        depth = prefix_id.count(DELIMITER) + 1 if prefix_id else 0
        mask = pc.equal(pc.count_substring(ids, DELIMITER), depth)
        if prefix_id:
            mask = pc.and_(mask, pc.starts_with(ids, prefix_id + DELIMITER))
        if object_type is not None:
            mask = pc.and_(mask, pc.equal(t.column("object_type"), object_type))
        return t.filter(mask)

    def child_names(self, prefix_id: str, object_type: str | None = None) -> list:
        """Sorted names directly inside ``prefix_id`` (a listing)."""
        ids = self.children(prefix_id, object_type).column("object_id")
        if prefix_id:
            ids = strip_prefix(ids, len((prefix_id + DELIMITER).encode("utf-8")))
        return sorted(ids.to_pylist())

    def descendants(self, prefix_id: str) -> list:
        prefix = prefix_id + DELIMITER
        ids = self.table.column("object_id")
        return self.table.filter(pc.starts_with(ids, prefix)).column("object_id").to_pylist()


def row_properties(object_id: str, text: str, dataset=None) -> dict:
    """A row's ``metadata``: a JSON object of strings (what every writer stores), else the
    ``__manifest`` table (``dataset``) is corrupt."""
    try:
        props = json.loads(text)
    except ValueError as e:
        props = e
    if not isinstance(props, dict) or not all(isinstance(v, str) for v in props.values()):
        raise CorruptFileError(f"the {MANIFEST_DIR} row {object_id!r} has metadata that is not "
                               f"a JSON object of strings: {text[:100]!r}",
                               dataset.uri if dataset is not None else None)
    return props


def strip_prefix(ids, nbytes: int) -> pa.StringArray:
    """``ids`` (strings that all start with the same ``nbytes``-byte prefix) without it, by
    rewriting the offsets and data buffers with numpy (no per-string Python work)."""
    arr = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    n = len(arr)
    if n == 0:
        return pa.array([], pa.string())
    if arr.type != pa.string():
        arr = arr.cast(pa.string())
    _, offsets_buf, data_buf = arr.buffers()
    off = np.frombuffer(offsets_buf, dtype=np.int32, count=n + 1, offset=arr.offset * 4)
    base = off - off[0]
    if np.any(np.diff(base) < nbytes):
        raise ValueError("every id must start with the prefix")
    data = np.frombuffer(data_buf, dtype=np.uint8)[off[0]:off[-1]]
    keep = np.ones(len(data), dtype=bool)
    keep[(base[:-1, None] + np.arange(nbytes)).ravel()] = False
    new_off = (base - nbytes * np.arange(n + 1, dtype=np.int32)).astype(np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(new_off), pa.py_buffer(data[keep]))


class PointSnapshot:
    """The manifest rows of a few object ids, read through the ``object_id`` index (a lookup
    in a big namespace reads a page of the index and the matching rows, not the table)."""

    def __init__(self, table: pa.Table):
        self.table = table
        self._rows = {oid: i for i, oid in enumerate(table.column("object_id").to_pylist())}

    def type_of(self, object_id: str) -> str | None:
        i = self._rows.get(object_id)
        return None if i is None else self.table.column("object_type")[i].as_py()

    def get(self, object_id: str) -> Row | None:
        i = self._rows.get(object_id)
        if i is None:
            return None
        t = self.table
        meta = t.column("metadata")[i].as_py()
        return Row(object_id, t.column("object_type")[i].as_py(), t.column("location")[i].as_py(),
                   row_properties(object_id, meta) if meta else None)


# The indices pylance 14 keeps on ``__manifest`` when ``inline_optimization_enabled`` is true.
MANIFEST_INDICES = (("object_id", "BTREE", "object_id_btree"),
                    ("object_type", "BITMAP", "object_type_bitmap"),
                    ("base_objects", "LABEL_LIST", "base_objects_label_list"))


class ManifestTable:
    """The ``__manifest`` dataset under a namespace root. ``inline_optimization``: after each
    change, keep the manifest compact and its indices built and up to date (as pylance does
    with ``inline_optimization_enabled``)."""

    def __init__(self, root_uri: str, storage_options: dict | None = None,
                 inline_optimization: bool = False):
        self.uri = child(root_uri, MANIFEST_DIR)
        self.storage_options = storage_options
        self.inline_optimization = inline_optimization
        self._cache: Snapshot | None = None

    def lookup(self, object_ids) -> "Snapshot | PointSnapshot":
        """The rows of ``object_ids``: from the cached latest rows when there are some, else
        through the ``object_id`` index when the manifest has one, else all rows."""
        store = open_store(self.uri, self.storage_options)
        try:
            latest = latest_manifest(self.uri, store=store)
        except DatasetNotFoundError:
            return self.snapshot()
        cached = self._cache
        if cached is not None and cached.key == (latest.version, latest.size, latest.uri):
            return cached
        ds = Dataset.open(self.uri, latest.version, storage_options=self.storage_options)
        if not any(d.field_names == ["object_id"] for d in ds.describe_indices()):
            return self.snapshot()
        ids = ", ".join(_quote(o) for o in dict.fromkeys(object_ids))
        return PointSnapshot(ds.to_table(columns=["object_id", "object_type", "location", "metadata"],
                                         filter=f"object_id IN ({ids})"))

    def _open(self) -> Dataset | None:
        try:
            return Dataset.open(self.uri, storage_options=self.storage_options)
        except DatasetNotFoundError:
            return None

    def exists(self) -> bool:
        return self._open() is not None

    def snapshot(self) -> Snapshot:
        """The latest rows, cached per version: one listing of ``_versions/`` tells whether the
        cached rows are still the latest (then nothing is read)."""
        store = open_store(self.uri, self.storage_options)
        try:
            latest = latest_manifest(self.uri, store=store)
        except DatasetNotFoundError:
            latest = None
        if latest is None:
            empty = SCHEMA.empty_table().select(Snapshot.CORE)
            return Snapshot(None, empty.append_column("_pos", pa.array([], pa.int64())))
        cached = self._cache
        if cached is not None and cached.key == (latest.version, latest.size, latest.uri):
            return cached
        ds = Dataset.open(self.uri, latest.version, storage_options=self.storage_options)
        table = ds.to_table(columns=Snapshot.CORE)
        table = table.append_column("_pos", pa.array(np.arange(table.num_rows, dtype=np.int64)))
        snap = Snapshot(ds, table)
        snap.key = (latest.version, latest.size, latest.uri)
        self._cache = snap
        return snap

    def properties(self) -> dict:
        """Root namespace properties: the ``__manifest`` dataset's metadata map."""
        ds = self._open()
        return dict(ds.table_metadata) if ds is not None else {}

    def change(self, plan) -> object:
        """Run ``plan(snapshot) -> Change`` and commit it as exactly the next version; re-plan on
        a lost race. ``plan`` raises to refuse (e.g. the object exists). Returns ``Change.result``."""
        for attempt in range(MAX_ATTEMPTS):
            snap = self.snapshot()
            change = plan(snap)
            if not change.remove and not change.add:
                return change.result
            if snap.dataset is None:
                if change.remove:
                    raise ConcurrentModificationError(f"{self.uri}: nothing to remove yet")
                try:
                    write_dataset(rows_table(change.add), self.uri, mode="create",
                                  storage_options=self.storage_options)
                    return change.result
                except DatasetExistsError:
                    continue  # created concurrently: re-plan against its rows
            if self._commit_next(snap.dataset, change):
                return change.result
            time.sleep(min(0.2, 0.002 * 2 ** min(attempt, 7)) * (0.5 + random.random()))
        raise ConcurrentModificationError(
            f"{self.uri}: gave up after {MAX_ATTEMPTS} attempts, other writers kept committing first")

    def _commit_next(self, ds: Dataset, change: Change) -> bool:
        """Commit ``change`` as version ``ds.version + 1`` or not at all (False: lost the race)."""
        new = write_fragments(rows_table(change.add), self.uri, mode="append",
                              storage_options=self.storage_options) if change.add else []
        updated, removed = [], []
        if change.remove:
            pred = "object_id IN (" + ", ".join(_quote(o) for o in change.remove) + ")"
            updated, removed = plan_delete(ds.snapshot, pred)[:2]
        if updated or removed:
            op = Update(removed_fragment_ids=removed, updated_fragments=updated,
                        new_fragments=new) if new else Delete(updated, removed, pred)
        else:
            op = Append(new)
        written = _data_uris(self.uri, new) + [_deletion_uri(ds, f) for f in updated]
        if not self._commit_exactly_next(ds, op, written):
            return False
        self._maybe_compact()
        return True

    def _commit_exactly_next(self, ds: Dataset, op, written: list) -> bool:
        """Build version ``ds.version + 1`` from ``ds`` + ``op`` and create it only if nobody
        else did; on failure remove ``written`` (our new files) and the transaction file."""
        store = open_store(self.uri, self.storage_options)
        txn = Transaction(ds.version, op)
        txn_name = transaction_file_name(ds.version, txn.uuid)
        txn_uri = transaction_file_uri(self.uri, txn_name)
        txn_pb = txn.to_pb()
        committed = False
        try:
            store.put(txn_uri, txn_pb.SerializeToString())
            mf = ds.manifest_file
            manifest, indices = build_manifest(mf.manifest, mf.indices, txn, version=ds.version + 1,
                                               transaction_file=txn_name)
            scheme = manifest_scheme(mf.uri.rsplit("/", 1)[-1])
            uri = manifest_uri(self.uri, ds.version + 1, scheme)
            data = encode_manifest_file(manifest, txn_pb, indices)
            committed = store.put_if_absent(uri, data)
            if committed and wants_version_hint(self.uri):
                try:
                    write_version_hint(self.uri, ds.version + 1, store=store)
                except OSError:
                    pass  # only a hint
            return committed
        finally:
            if not committed:
                for u in written + [txn_uri]:
                    try:
                        store.delete(u)
                    except OSError:
                        pass

    def _maybe_compact(self) -> None:
        """Keep listings fast: once the manifest has ``COMPACT_FRAGMENTS`` fragments (with
        inline optimization: more than one), rewrite its live rows into one fragment (a Rewrite
        transaction, committed exactly as the next version or dropped: compaction is best
        effort), remapping its indices; then, with inline optimization, build the manifest's
        indices or bring them up to date."""
        ds = self._open()
        if ds is None:
            return
        limit = 2 if self.inline_optimization else COMPACT_FRAGMENTS
        if len(ds.get_fragments()) >= limit:
            frags = [f.metadata for f in ds.get_fragments()]
            table = ds.to_table()
            new = write_fragments(table, self.uri, mode="append",
                                  storage_options=self.storage_options) if table.num_rows else []
            top = ds.manifest.max_fragment_id if ds.manifest.HasField("max_fragment_id") else 0
            for i, f in enumerate(new):
                f.pb.id = top + 1 + i
            op = Rewrite([RewriteGroup(frags, new)])
            written = _data_uris(self.uri, new)
            written += attach_index_remap(ds.snapshot, op)
            self._commit_exactly_next(ds, op, written)
        if self.inline_optimization:
            self._optimize_indices()

    def _optimize_indices(self) -> None:
        """Build the manifest's indices pylance builds, or fold new rows into them (best
        effort: a concurrent writer's version wins and the next change tries again)."""
        ds = self._open()
        if ds is None:
            return
        have = {d.name for d in ds.describe_indices()}
        try:
            if have:
                ds.optimize.optimize_indices()
            for column, kind, name in MANIFEST_INDICES:
                if name not in have:
                    ds.create_scalar_index(column, kind, name=name)
        except (CommitConflictError, NotSupportedError):
            return


def _data_uris(dataset_uri: str, fragments) -> list:
    return [child(dataset_uri, "data", f.pb.files[i].path)
            for f in fragments for i in range(len(f.pb.files))]


def _deletion_uri(ds: Dataset, meta) -> str:
    return deletion_file_uri(ds.snapshot.ctx.resolver, meta.pb)
