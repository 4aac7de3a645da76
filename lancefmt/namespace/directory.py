"""``DirectoryNamespace``: Lance tables organised in a directory (seeds/lance-directory-namespace.md).

* V1: a root-level table ``t`` is the directory ``t.lance`` (it exists when an object is under
  that prefix and it carries no ``.lance-deregistered`` marker).
* V2: the ``__manifest`` table (:mod:`.manifest`) records namespaces (``$``-joined ids, JSON
  properties) and tables (their directory relative to the root, ``<8 hex>_<object id>``).
* Compatibility mode (both enabled, the default): root tables are looked up in the manifest,
  then as ``<name>.lance``; root listings merge both, the manifest winning; new root tables are
  registered in the manifest but keep the V1 directory name; a renamed root table moves to a V2
  directory; child namespaces are V2 only. :meth:`DirectoryNamespace.migrate` adds every V1
  directory to the manifest, after which ``dir_listing_enabled=false`` is safe.

Each method takes the ``lance_namespace`` request object and returns its response object, as
pylance's ``lance.namespace.DirectoryNamespace`` does. For convenience, a plain id list works
too: ``ns.list_tables(["team"])`` returns the names, ``ns.create_table(["team", "t"], table)``
the new :class:`~lancefmt.Dataset`, ``ns.table_exists(id)`` a bool.
"""
from __future__ import annotations

import json

import hashlib
import os
import secrets

import pyarrow as pa
import pyarrow.compute as pc
from lance_namespace import (
    CountTableRowsRequest, CountTableRowsResponse, CreateNamespaceRequest, CreateNamespaceResponse,
    CreateTableRequest, CreateTableResponse, CreateTableTagRequest, CreateTableTagResponse,
    DeclareTableRequest, DeclareTableResponse, DeleteFromTableRequest, DeleteFromTableResponse,
    DeleteTableTagRequest, DeleteTableTagResponse, DeregisterTableRequest, DeregisterTableResponse,
    DescribeNamespaceRequest, DescribeNamespaceResponse, DescribeTableRequest,
    DescribeTableResponse, DropNamespaceRequest, DropNamespaceResponse, DropTableRequest,
    DropTableResponse, GetTableTagVersionRequest, GetTableTagVersionResponse,
    InsertIntoTableRequest, InsertIntoTableResponse, LanceNamespace, ListNamespacesRequest,
    ListNamespacesResponse, ListTablesRequest, ListTablesResponse, ListTableTagsRequest,
    ListTableTagsResponse, ListTableVersionsRequest, ListTableVersionsResponse,
    MergeInsertIntoTableRequest, MergeInsertIntoTableResponse, NamespaceExistsRequest,
    NamespaceExistsResponse, RegisterTableRequest, RegisterTableResponse, RenameTableRequest,
    RenameTableResponse, RestoreTableRequest, RestoreTableResponse, TableExistsRequest,
    TableExistsResponse, UpdateTableTagRequest, UpdateTableTagResponse,
)
from lance_namespace_urllib3_client.models import TableVersion, TagContents

from ..dataset import Dataset, write_dataset
from ..encoding.ipc_bounds import check_ipc_stream_sizes
from ..errors import (
    CorruptFileError, DatasetExistsError, DatasetNotFoundError, InvalidPathError, LanceError,
)
from ..io import open_store
from ..io.memory_scope import NAMESPACE_KEY, is_memory
from ..table.manifest import read_manifest
from ..table.versions import list_manifests
from ..io.uri import check_relative, child, has_scheme, normalize_uri, split_uri
from .errors import (
    InvalidInputError, NamespaceAlreadyExistsError, NamespaceNotEmptyError,
    NamespaceNotFoundError, TableAlreadyExistsError, TableNotFoundError, TableTagAlreadyExistsError,
    TableTagNotFoundError, TableVersionNotFoundError, UnsupportedOperationError,
)
from .manifest import DELIMITER, MANIFEST_DIR, NAMESPACE, TABLE, Change, ManifestTable, Row
from .merge import merge_insert

V1_SUFFIX = ".lance"
RESERVED_MARKER = ".lance-reserved"
DEREGISTERED_MARKER = ".lance-deregistered"


def parse_flag(value, name: str, default: bool = True) -> bool:
    """A boolean property given as a bool or the strings pylance takes ("true"/"false")."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise InvalidInputError(f"property {name}={value!r} is not a boolean")


def _mode(value, default: str) -> str:
    return (value or default).replace("_", "").replace("-", "").lower()


def ipc_reader(data) -> pa.RecordBatchReader:
    """Arrow IPC stream bytes (as the interface passes table data) as a reader; a compressed
    buffer claiming more than its bytes can hold is refused before pyarrow allocates it."""
    try:
        check_ipc_stream_sizes(data, "request data")
        return pa.ipc.open_stream(pa.py_buffer(data))
    except (pa.ArrowInvalid, CorruptFileError) as e:
        raise InvalidInputError(f"request data is not an Arrow IPC stream: {e}") from None


def _as_reader(data):
    if isinstance(data, (bytes, bytearray, memoryview)):
        return ipc_reader(bytes(data))
    return data


class DirectoryNamespace(LanceNamespace):
    """A Lance directory namespace (V1 listing, V2 ``__manifest``, compatibility mode)."""

    def __init__(self, **properties):
        if "root" not in properties or not str(properties["root"]):
            raise InvalidInputError("DirectoryNamespace needs the 'root' property")
        self.properties = {str(k): v for k, v in properties.items()}
        root = str(properties["root"])
        self.root = normalize_uri(root if has_scheme(root) else os.path.abspath(root))
        self.manifest_enabled = parse_flag(properties.get("manifest_enabled"), "manifest_enabled")
        self.dir_listing_enabled = parse_flag(properties.get("dir_listing_enabled"),
                                              "dir_listing_enabled")
        if not self.manifest_enabled and not self.dir_listing_enabled:
            raise InvalidInputError("manifest_enabled and dir_listing_enabled cannot both be false")
        self.storage_options = {k[len("storage."):]: v for k, v in properties.items()
                                if k.startswith("storage.")} or None
        # Datasets opened by URI on memory:// are private to their objects (as in pylance); the
        # tables of a memory:// root share one store per root, so every namespace object on
        # that root (and the tables it opens) sees the same tables.
        self._io_options = self.storage_options
        if is_memory(self.root):
            self._io_options = dict(self.storage_options or {})
            self._io_options[NAMESPACE_KEY] = "namespace-" + hashlib.sha1(self.root.encode()).hexdigest()
        self._store = open_store(self.root, self._io_options)
        self._manifest = ManifestTable(self.root, self._io_options, parse_flag(
            properties.get("inline_optimization_enabled"), "inline_optimization_enabled", False))

    def namespace_id(self) -> str:
        # Rust Debug quoting, as pylance's (callers parse the root out of it)
        return f"lancefmt.DirectoryNamespace {{ root: {json.dumps(str(self.root))} }}"

    def __repr__(self):
        return f"DirectoryNamespace({self.root!r})"

    # -- ids, locations -----------------------------------------------------------------------
    @staticmethod
    def _check_id(id_, what: str, allow_root: bool = False) -> list:
        parts = list(id_ or [])
        if not parts and not allow_root:
            raise InvalidInputError(f"a {what} id needs at least one part")
        for p in parts:
            if not isinstance(p, str) or not p or DELIMITER in p or "/" in p or "\\" in p \
                    or p in (".", "..") or "\x00" in p:
                raise InvalidInputError(f"invalid {what} id part {p!r} in {parts!r}")
        if len(parts) == 1 and parts[0] == MANIFEST_DIR:
            raise InvalidInputError(f"{MANIFEST_DIR!r} is reserved")
        return parts

    def _uri_of(self, location: str) -> str:
        try:
            return child(self.root, check_relative(location, "table location"))
        except InvalidPathError as e:
            raise InvalidInputError(str(e)) from None

    def _public_uri(self, location: str) -> str:
        uri = self._uri_of(location)
        return "file://" + uri if split_uri(uri).protocol == "file" and not has_scheme(uri) else uri

    def _v1_location(self, name: str) -> str:
        return name + V1_SUFFIX

    @staticmethod
    def _v2_location(object_id: str) -> str:
        return f"{secrets.randbits(32):08x}_{object_id}"

    def _v1_exists(self, name: str) -> bool:
        uri = self._uri_of(self._v1_location(name))
        entries = self._store.list(uri)
        if not entries:
            return False
        return not any(e.name == DEREGISTERED_MARKER for e in entries)

    def _snapshot(self):
        return self._manifest.snapshot() if self.manifest_enabled else None

    def _namespace_exists(self, parts, snap=None) -> bool:
        if not parts:
            return True
        if not self.manifest_enabled:
            return False
        snap = snap or self._manifest.lookup([DELIMITER.join(parts)])
        return snap.type_of(DELIMITER.join(parts)) == NAMESPACE

    def _require_namespace(self, parts, snap=None):
        if not self._namespace_exists(parts, snap):
            raise NamespaceNotFoundError(f"Namespace not found: {DELIMITER.join(parts)}")

    def _find_table(self, parts, snap=None):
        """(object id, location, manifest row or None) of a table, or TableNotFoundError."""
        oid = DELIMITER.join(parts)
        if self.manifest_enabled:
            snap = snap or self._manifest.lookup([oid] + [DELIMITER.join(parts[:i])
                                                          for i in range(1, len(parts))])
            row = snap.get(oid)
            if row is not None and row.object_type == TABLE:
                return oid, row.location, row
        if len(parts) == 1 and self.dir_listing_enabled and self._v1_exists(parts[0]):
            return oid, self._v1_location(parts[0]), None
        if len(parts) > 1:
            self._require_namespace(parts[:-1], snap)
        raise TableNotFoundError(f"Table not found: table id {oid!r}")

    def _open(self, location: str, version=None) -> Dataset:
        try:
            return Dataset.open(self._uri_of(location), version, storage_options=self._io_options)
        except DatasetNotFoundError as e:
            raise TableVersionNotFoundError(str(e)) if version is not None \
                else TableNotFoundError(str(e)) from None

    def _remove_tree(self, uri: str) -> None:
        """Delete every object under ``uri`` (a directory the namespace owns)."""
        self._store.delete_many([f.uri for f in self._store.walk(uri)])
        proto, path = split_uri(uri)
        if proto == "file" and os.path.isdir(path):
            for d, _, _ in sorted(os.walk(path), key=lambda w: -len(w[0])):
                try:
                    os.rmdir(d)
                except OSError:
                    pass

    def _copy_tree(self, src: str, dst: str) -> None:
        for f in self._store.walk(src):
            self._store.copy(f.uri, dst + f.uri[len(src):])

    @staticmethod
    def _plain(request, cls, **fields):
        """(request object, True if the caller passed a plain id list)."""
        if isinstance(request, cls):
            return request, False
        if request is None or isinstance(request, (list, tuple)):
            return cls(id=list(request or []), **fields), True
        if isinstance(request, dict):
            return cls.from_dict(request), False
        raise InvalidInputError(f"expected a {cls.__name__} or an id list, not {type(request)!r}")

    # -- namespaces ---------------------------------------------------------------------------
    def create_namespace(self, request, properties: dict | None = None) -> CreateNamespaceResponse:
        req, _ = self._plain(request, CreateNamespaceRequest, properties=properties)
        parts = self._check_id(req.id, "namespace", allow_root=True)
        if not parts:
            raise NamespaceAlreadyExistsError("Namespace already exists: the root namespace")
        self._require_manifest("create_namespace")
        mode = _mode(req.mode, "create")
        if mode not in ("create", "existok", "overwrite"):
            raise InvalidInputError(f"unknown create_namespace mode {req.mode!r}")
        oid = DELIMITER.join(parts)
        props = dict(req.properties) if req.properties else None

        def plan(snap):
            self._require_namespace(parts[:-1], snap)
            row = snap.get(oid)
            if row is not None:
                if row.object_type != NAMESPACE:
                    raise NamespaceAlreadyExistsError(f"{oid!r} already exists as a {row.object_type}")
                if mode == "existok":
                    return Change(result=row.properties)
                if mode == "create":
                    raise NamespaceAlreadyExistsError(f"Namespace already exists: {oid}")
                return Change(remove=[oid], add=[Row(oid, NAMESPACE, properties=props)], result=props)
            return Change(add=[Row(oid, NAMESPACE, properties=props)], result=props)

        return CreateNamespaceResponse(properties=self._manifest.change(plan))

    def _require_manifest(self, op: str):
        if not self.manifest_enabled:
            raise UnsupportedOperationError(f"{op} needs manifest_enabled=true (V2)")

    def list_namespaces(self, request=None):
        req, plain = self._plain(request, ListNamespacesRequest)
        parts = self._check_id(req.id, "namespace", allow_root=True)
        if not self.manifest_enabled:
            if parts:
                raise NamespaceNotFoundError(f"Namespace not found: {DELIMITER.join(parts)}")
            names = []
        else:
            snap = self._snapshot()
            self._require_namespace(parts, snap)
            names = snap.child_names(DELIMITER.join(parts), NAMESPACE)
        names, token = _page(sorted(names), req.page_token, req.limit)
        return names if plain else ListNamespacesResponse(namespaces=names, page_token=token)

    def describe_namespace(self, request) -> DescribeNamespaceResponse:
        req, _ = self._plain(request, DescribeNamespaceRequest)
        parts = self._check_id(req.id, "namespace", allow_root=True)
        if not parts:
            return DescribeNamespaceResponse(
                properties=self._manifest.properties() if self.manifest_enabled else {})
        snap = self._snapshot()
        self._require_namespace(parts, snap)
        return DescribeNamespaceResponse(properties=snap.get(DELIMITER.join(parts)).properties or {})

    def namespace_exists(self, request):
        req, plain = self._plain(request, NamespaceExistsRequest)
        parts = self._check_id(req.id, "namespace", allow_root=True)
        if plain:
            return self._namespace_exists(parts)
        self._require_namespace(parts)
        return NamespaceExistsResponse()

    def drop_namespace(self, request) -> DropNamespaceResponse:
        req, _ = self._plain(request, DropNamespaceRequest)
        parts = self._check_id(req.id, "namespace", allow_root=True)
        if not parts:
            raise InvalidInputError("the root namespace cannot be dropped")
        self._require_manifest("drop_namespace")
        mode = _mode(req.mode, "fail")
        behavior = _mode(req.behavior, "restrict")
        if mode not in ("fail", "skip") or behavior not in ("restrict", "cascade"):
            raise InvalidInputError(f"unknown drop_namespace mode/behavior {req.mode!r}/{req.behavior!r}")
        oid = DELIMITER.join(parts)
        doomed = []

        def plan(snap):
            row = snap.get(oid)
            if row is None or row.object_type != NAMESPACE:
                if mode == "skip":
                    return Change()
                raise NamespaceNotFoundError(f"Namespace not found: {oid}")
            inside = snap.descendants(oid)
            if inside and behavior == "restrict":
                raise NamespaceNotEmptyError(
                    f"Namespace not empty: {oid!r} (contains {len(inside)} child objects)")
            doomed[:] = [r.location for r in (snap.get(o) for o in inside)
                         if r is not None and r.object_type == TABLE and r.location]
            return Change(remove=[oid] + inside, result=row.properties)

        props = self._manifest.change(plan)
        for loc in doomed:
            self._remove_tree(self._uri_of(loc))
        return DropNamespaceResponse(properties=props)

    # -- listing ------------------------------------------------------------------------------
    def _table_names(self, parts, include_declared=True) -> list:
        names, claimed = {}, set()
        if self.manifest_enabled:
            snap = self._snapshot()
            self._require_namespace(parts, snap)
            if parts and include_declared:  # child namespaces: the manifest alone answers
                return snap.child_names(DELIMITER.join(parts), TABLE)
            rows = snap.children(DELIMITER.join(parts), TABLE)
            k = len(DELIMITER.join(parts)) + 1 if parts else 0
            names = dict(zip([i[k:] for i in rows.column("object_id").to_pylist()],
                             snap.locations(rows)))
            claimed = set(names.values())
        elif parts:
            raise NamespaceNotFoundError(f"Namespace not found: {DELIMITER.join(parts)}")
        if not parts and self.dir_listing_enabled:
            for info in self._store.list(self.root):
                if not info.is_dir or not info.name.endswith(V1_SUFFIX):
                    continue
                name = info.name[:-len(V1_SUFFIX)]
                if not name or name in names or info.name in claimed:
                    continue
                if self._v1_exists(name):
                    names[name] = info.name
        if not include_declared:
            names = {n: loc for n, loc in names.items()
                     if self._store.list(child(self._uri_of(loc), "_versions"))}
        return sorted(names)

    def list_tables(self, request=None):
        req, plain = self._plain(request, ListTablesRequest)
        parts = self._check_id(req.id, "namespace", allow_root=True)
        names = self._table_names(parts, req.include_declared is not False)
        names, token = _page(names, req.page_token, req.limit)
        return names if plain else ListTablesResponse(tables=names, page_token=token)

    def list_all_tables(self, request=None):
        """Every table of every namespace, as ``$``-joined ids (root tables: their names)."""
        req, plain = self._plain(request, ListTablesRequest)
        ids = set(self._table_names([], req.include_declared is not False))
        if self.manifest_enabled:
            t = self._snapshot().table
            rows = t.filter(pc.equal(t.column("object_type"), TABLE))
            ids.update(rows.column("object_id").to_pylist())
        names, token = _page(sorted(ids), req.page_token, req.limit)
        return names if plain else ListTablesResponse(tables=names, page_token=token)

    # -- tables: metadata ---------------------------------------------------------------------
    def describe_table(self, request) -> DescribeTableResponse:
        req, _ = self._plain(request, DescribeTableRequest)
        parts = self._check_id(req.id, "table")
        _, loc, row = self._find_table(parts)
        version = None
        if req.version is not None:
            version = self._open(loc, int(req.version)).version
        uri = self._public_uri(loc)
        return DescribeTableResponse(
            table=parts[-1], namespace=parts[:-1], version=version, location=uri, table_uri=uri,
            storage_options=self._io_options, properties=row.properties if row else None)

    def table_exists(self, request):
        req, plain = self._plain(request, TableExistsRequest)
        parts = self._check_id(req.id, "table")
        try:
            self._find_table(parts)
        except (TableNotFoundError, NamespaceNotFoundError):
            if plain:
                return False
            raise
        return True if plain else TableExistsResponse()

    def open_table(self, id_, version=None) -> Dataset:
        """The table ``id_`` as a lancefmt :class:`~lancefmt.Dataset`."""
        parts = self._check_id(id_, "table")
        _, loc, _ = self._find_table(parts)
        return self._open(loc, version)

    def _new_location(self, parts, oid) -> str:
        if len(parts) == 1 and self.dir_listing_enabled:
            return self._v1_location(parts[0])
        return self._v2_location(oid)

    def _check_free(self, parts, oid, snap):
        if len(parts) > 1:
            self._require_namespace(parts[:-1], snap)
        row = snap.get(oid) if snap is not None else None
        if row is not None:
            raise TableAlreadyExistsError(f"Table already exists: {oid}") \
                if row.object_type == TABLE else \
                NamespaceAlreadyExistsError(f"{oid!r} already exists as a {row.object_type}")

    def _register(self, parts, oid, location, properties):
        """Add the manifest row (conflict-checked): exactly one of concurrent callers wins."""

        def plan(snap):
            self._check_free(parts, oid, snap)
            return Change(add=[Row(oid, TABLE, location, properties)])

        self._manifest.change(plan)

    def create_table(self, request, data=None, *, mode=None, properties=None):
        """Create a table from Arrow IPC stream bytes (interface) or any data lancefmt writes."""
        req, plain = self._plain(request, CreateTableRequest, mode=mode, properties=properties)
        parts = self._check_id(req.id, "table")
        oid = DELIMITER.join(parts)
        mode = _mode(req.mode, "create")
        if mode not in ("create", "existok", "overwrite"):
            raise InvalidInputError(f"unknown create_table mode {req.mode!r}")
        if data is None:
            raise InvalidInputError("create_table needs data (Arrow IPC stream bytes)")
        snap = self._snapshot()
        try:
            _, loc, _ = self._find_table(parts, snap)
            found = True
        except TableNotFoundError:
            found = False
        if found and self._declared_only(loc):
            return self._create_declared(oid, loc, data, plain, req)
        if found:
            if mode == "create":
                raise TableAlreadyExistsError(f"Table already exists: {oid}")
            if mode == "existok":
                ds = self._open(loc)
                return ds if plain else CreateTableResponse(
                    location=self._public_uri(loc), version=ds.version)
            ds = write_dataset(_as_reader(data), self._uri_of(loc), mode="overwrite",
                               storage_options=self._io_options)
            return ds if plain else CreateTableResponse(location=self._public_uri(loc),
                                                        version=ds.version)
        self._check_free(parts, oid, snap)
        loc = self._new_location(parts, oid)
        uri = self._uri_of(loc)
        try:
            ds = write_dataset(_as_reader(data), uri, mode="create",
                               storage_options=self._io_options)
        except DatasetExistsError:
            raise TableAlreadyExistsError(f"Table already exists: {oid}") from None
        if self.manifest_enabled:
            try:
                self._register(parts, oid, loc, dict(req.properties) if req.properties else None)
            except BaseException:
                self._remove_tree(uri)  # we created it: nothing half-made stays behind
                raise
        return ds if plain else CreateTableResponse(location=self._public_uri(loc),
                                                    version=ds.version,
                                                    properties=req.properties)

    def _declared_only(self, loc: str) -> bool:
        """A declared table: the reservation marker and no committed version yet (a directory
        another writer is still filling has no marker: it is not ours to fill)."""
        uri = self._uri_of(loc)
        return self._store.exists(child(uri, RESERVED_MARKER)) \
            and not self._store.list(child(uri, "_versions"))

    def _create_declared(self, oid, loc, data, plain, req):
        """The first data of a declared table goes to its declared location (as pylance)."""
        uri = self._uri_of(loc)
        try:
            ds = write_dataset(_as_reader(data), uri, mode="create",
                               storage_options=self._io_options)
        except DatasetExistsError:
            raise TableAlreadyExistsError(f"Table already exists: {oid}") from None
        self._store.delete(child(uri, RESERVED_MARKER))
        return ds if plain else CreateTableResponse(location=self._public_uri(loc),
                                                    version=ds.version)

    def declare_table(self, request, properties=None) -> DeclareTableResponse:
        """Reserve a table name and location (a ``.lance-reserved`` marker) without data."""
        req, _ = self._plain(request, DeclareTableRequest, properties=properties)
        parts = self._check_id(req.id, "table")
        oid = DELIMITER.join(parts)
        snap = self._snapshot()
        try:
            self._find_table(parts, snap)
            raise TableAlreadyExistsError(f"Table already exists: {oid}")
        except TableNotFoundError:
            pass
        self._check_free(parts, oid, snap)
        loc = req.location or self._new_location(parts, oid)
        marker = child(self._uri_of(loc), RESERVED_MARKER)
        if not self._store.put_if_absent(marker, b""):
            raise TableAlreadyExistsError(f"Table already exists: {oid}")
        if self.manifest_enabled:
            try:
                self._register(parts, oid, loc, dict(req.properties) if req.properties else None)
            except BaseException:
                self._remove_tree(self._uri_of(loc))
                raise
        return DeclareTableResponse(location=self._public_uri(loc), properties=req.properties)

    def register_table(self, request, location: str | None = None) -> RegisterTableResponse:
        """Record an existing table directory (relative to the root) under a new id."""
        req, _ = self._plain(request, RegisterTableRequest, location=location or "")
        parts = self._check_id(req.id, "table")
        self._require_manifest("register_table")
        oid = DELIMITER.join(parts)
        self._uri_of(req.location)  # relative and inside the root, or InvalidInputError
        mode = _mode(req.mode, "create")
        if mode == "overwrite":
            def plan(snap):
                if len(parts) > 1:
                    self._require_namespace(parts[:-1], snap)
                old = snap.get(oid)
                return Change(remove=[oid] if old else [], add=[Row(oid, TABLE, req.location,
                                                                    req.properties)])
            self._manifest.change(plan)
        else:
            self._register(parts, oid, req.location, dict(req.properties) if req.properties else None)
        return RegisterTableResponse(location=req.location, properties=req.properties)

    def deregister_table(self, request) -> DeregisterTableResponse:
        """Forget a table without deleting its data."""
        parts, loc, row = self._forget_table(request, DeregisterTableRequest)
        if len(parts) == 1 and self.dir_listing_enabled and loc == self._v1_location(parts[0]):
            self._store.put(child(self._uri_of(loc), DEREGISTERED_MARKER), b"")
        return DeregisterTableResponse(id=parts, location=self._public_uri(loc),
                                       properties=row.properties if row else None)

    def _forget_table(self, request, request_type):
        """Find the table a deregister/drop request names and remove its manifest row (if it
        has one): (id parts, location, the removed row or None)."""
        req, _ = self._plain(request, request_type)
        parts = self._check_id(req.id, "table")
        oid, loc, row = self._find_table(parts)
        if row is not None:
            self._manifest.change(lambda snap: self._removal(snap, oid))
        return parts, loc, row

    @staticmethod
    def _removal(snap, oid):
        row = snap.get(oid)
        if row is None or row.object_type != TABLE:
            raise TableNotFoundError(f"Table not found: table id {oid!r}")
        return Change(remove=[oid])

    def drop_table(self, request) -> DropTableResponse:
        """Remove the table from the namespace and delete its directory."""
        parts, loc, row = self._forget_table(request, DropTableRequest)
        self._remove_tree(self._uri_of(loc))
        return DropTableResponse(id=parts, location=self._public_uri(loc),
                                 properties=row.properties if row else None)

    def rename_table(self, request, new_table_name: str | None = None,
                     new_namespace_id=None) -> RenameTableResponse:
        """Rename (and optionally move between namespaces). A V1-named root table moves to a V2
        directory: its files are copied, the manifest switches over atomically, the old
        directory is removed."""
        req, _ = self._plain(request, RenameTableRequest, new_table_name=new_table_name or "",
                             new_namespace_id=new_namespace_id)
        parts = self._check_id(req.id, "table")
        self._require_manifest("rename_table")
        new_ns = list(req.new_namespace_id) if req.new_namespace_id is not None else parts[:-1]
        new_parts = self._check_id(new_ns + [req.new_table_name], "table")
        oid, loc, row = self._find_table(parts)
        new_oid = DELIMITER.join(new_parts)
        if new_oid == oid:
            raise TableAlreadyExistsError(f"Table already exists: {new_oid}")
        moving = loc.endswith(V1_SUFFIX) and loc == self._v1_location(parts[-1])
        new_loc = self._v2_location(new_oid) if moving else loc
        if moving:
            self._copy_tree(self._uri_of(loc), self._uri_of(new_loc))

        def plan(snap):
            self._check_free(new_parts, new_oid, snap)
            if len(new_parts) == 1 and self.dir_listing_enabled \
                    and self._v1_exists(new_parts[0]):
                raise TableAlreadyExistsError(f"Table already exists: {new_oid}")
            current = snap.get(oid)
            if row is not None and (current is None or current.location != loc):
                raise TableNotFoundError(f"Table not found: table id {oid!r}")
            props = current.properties if current is not None else None
            return Change(remove=[oid] if current is not None else [],
                          add=[Row(new_oid, TABLE, new_loc, props)])

        try:
            self._manifest.change(plan)
        except BaseException:
            if moving:
                self._remove_tree(self._uri_of(new_loc))
            raise
        if moving:
            self._remove_tree(self._uri_of(loc))
        return RenameTableResponse()

    def migrate(self) -> list:
        """V1 -> V2: add every V1 table directory of the root to the manifest; returns the
        names added. Afterwards ``dir_listing_enabled=false`` sees the same tables."""
        self._require_manifest("migrate")
        found = []
        for info in self._store.list(self.root):
            if info.is_dir and info.name.endswith(V1_SUFFIX) and len(info.name) > len(V1_SUFFIX):
                name = info.name[:-len(V1_SUFFIX)]
                if DELIMITER not in name and self._v1_exists(name):
                    found.append((name, info.name))

        def plan(snap):
            claimed = set(snap.locations(snap.table))
            add = [Row(n, TABLE, loc) for n, loc in found
                   if snap.get(n) is None and loc not in claimed]
            return Change(add=add, result=[r.object_id for r in add])

        return self._manifest.change(plan)

    # -- tables: data -------------------------------------------------------------------------
    def _dataset(self, req_id, version=None) -> Dataset:
        parts = self._check_id(req_id, "table")
        _, loc, _ = self._find_table(parts)
        return self._open(loc, version)

    def count_table_rows(self, request) -> CountTableRowsResponse:
        req, _ = self._plain(request, CountTableRowsRequest)
        ds = self._dataset(req.id, req.version)
        return CountTableRowsResponse(count=ds.count_rows(req.predicate or None))

    def insert_into_table(self, request, data=None, *, mode=None) -> InsertIntoTableResponse:
        req, _ = self._plain(request, InsertIntoTableRequest, mode=mode)
        ds = self._dataset(req.id)
        mode = _mode(req.mode, "append")
        if mode not in ("append", "overwrite"):
            raise InvalidInputError(f"unknown insert mode {req.mode!r}")
        before = ds.count_rows() if mode == "append" else 0
        out = write_dataset(_as_reader(data), ds, mode=mode)
        return InsertIntoTableResponse(num_inserted_rows=out.count_rows() - before,
                                       version=out.version)

    def merge_insert_into_table(self, request, data=None, **kw) -> MergeInsertIntoTableResponse:
        req, _ = self._plain(request, MergeInsertIntoTableRequest, **kw)
        ds = self._dataset(req.id)
        if not req.on:
            raise InvalidInputError("merge_insert_into_table needs 'on' (the key columns)")
        stats, out = merge_insert(ds, _as_reader(data), req)
        return MergeInsertIntoTableResponse(version=out.version, **stats)

    def delete_from_table(self, request, predicate: str | None = None) -> DeleteFromTableResponse:
        req, _ = self._plain(request, DeleteFromTableRequest, predicate=predicate)
        if not req.predicate:
            raise InvalidInputError("delete_from_table needs a predicate")
        ds = self._dataset(req.id)
        ds.delete(req.predicate)
        return DeleteFromTableResponse(version=ds.version)

    def restore_table(self, request, version: int | None = None) -> RestoreTableResponse:
        req, _ = self._plain(request, RestoreTableRequest, version=version)
        if req.version is None:
            raise InvalidInputError("restore_table needs a version")
        self._dataset(req.id, int(req.version)).restore()
        return RestoreTableResponse()

    # -- versions and tags --------------------------------------------------------------------
    def list_table_versions(self, request) -> ListTableVersionsResponse:
        req, _ = self._plain(request, ListTableVersionsRequest)
        ds = self._dataset(req.id)
        out = []
        for loc in list_manifests(ds.uri, store=self._store):
            m = read_manifest(loc.uri, size=loc.size, store=self._store)
            ts = m.timestamp
            millis = int(ts.timestamp() * 1000) if hasattr(ts, "timestamp") else 0
            out.append(TableVersion(version=loc.version, manifest_path=loc.uri,
                                    manifest_size=loc.size, timestamp_millis=millis))
        out.sort(key=lambda v: v.version, reverse=bool(req.descending))
        start = int(req.page_token) if req.page_token else 0
        end = start + req.limit if req.limit else len(out)
        token = str(end) if end < len(out) else None
        return ListTableVersionsResponse(versions=out[start:end], page_token=token)

    def list_table_tags(self, request) -> ListTableTagsResponse:
        req, _ = self._plain(request, ListTableTagsRequest)
        tags = self._dataset(req.id).tags.list()
        names, token = _page(sorted(tags), req.page_token, req.limit)
        return ListTableTagsResponse(tags={
            n: TagContents(version=tags[n]["version"], branch=tags[n]["branch"],
                           manifestSize=tags[n]["manifest_size"] or 0) for n in names},
            page_token=token)

    def get_table_tag_version(self, request) -> GetTableTagVersionResponse:
        req, _ = self._plain(request, GetTableTagVersionRequest)
        tags = self._dataset(req.id).tags.list()
        if req.tag not in tags:
            raise TableTagNotFoundError(f"Tag not found: {req.tag}")
        return GetTableTagVersionResponse(version=tags[req.tag]["version"],
                                          branch=tags[req.tag]["branch"])

    def create_table_tag(self, request) -> CreateTableTagResponse:
        req, _ = self._plain(request, CreateTableTagRequest)
        ds = self._dataset(req.id)
        if req.tag in ds.tags.list():
            raise TableTagAlreadyExistsError(f"Tag already exists: {req.tag}")
        self._tag(ds, req)
        return CreateTableTagResponse()

    def _tag(self, ds, req):
        try:
            ds.tags.create(req.tag, int(req.version), branch=req.branch)
        except DatasetNotFoundError as e:
            raise TableVersionNotFoundError(str(e)) from None
        except LanceError as e:
            if "exist" in str(e).lower():
                raise TableTagAlreadyExistsError(str(e)) from None
            raise

    def delete_table_tag(self, request) -> DeleteTableTagResponse:
        req, _ = self._plain(request, DeleteTableTagRequest)
        ds = self._dataset(req.id)
        if req.tag not in ds.tags.list():
            raise TableTagNotFoundError(f"Tag not found: {req.tag}")
        ds.tags.delete(req.tag)
        return DeleteTableTagResponse()

    def update_table_tag(self, request) -> UpdateTableTagResponse:
        req, _ = self._plain(request, UpdateTableTagRequest)
        ds = self._dataset(req.id)
        if req.tag not in ds.tags.list():
            raise TableTagNotFoundError(f"Tag not found: {req.tag}")
        ds.checkout_version(int(req.version))  # the target version must exist first
        ds.tags.delete(req.tag)
        self._tag(ds, req)
        return UpdateTableTagResponse()


def _page(names: list, page_token, limit):
    """One page of sorted names after ``page_token`` (the last name of the previous page)."""
    if page_token:
        import bisect

        names = names[bisect.bisect_right(names, page_token):]
    if limit is not None and int(limit) > 0 and len(names) > int(limit):
        names = names[:int(limit)]
        return names, names[-1]
    return names, None


__all__ = ["DirectoryNamespace", "parse_flag"]
