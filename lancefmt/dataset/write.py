"""Writing: ``write_fragments`` (data files only, nothing committed), ``commit`` (one transaction),
and ``write_dataset`` (both, with cleanup when the commit fails).

Data is streamed: batches go into the current data file until it holds ``max_rows_per_file`` rows
(or about ``max_bytes_per_file`` bytes), so memory stays bounded by the file writer's page
buffers, whatever the input size. New data files go round-robin across the target bases.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import uuid
from dataclasses import dataclass

import pyarrow as pa

from ..errors import (
    CommitConflictError,
    DatasetExistsError, DatasetNotFoundError, InvalidArgumentError, InvalidInputError,
    UnsupportedFeatureError,
)
from ..file.writer import LanceFileWriter
from .blob_v2_write import BlobSidecars, blob_v2_columns, blob_v2_schema, input_schema
from ..file.schema import arrow_from_fields, fields_from_arrow, storage_schema
from ..io import open_store
from ..io.store import LocalStore
from ..io.memory_scope import private_memory_options
from ..io.uri import check_relative, child, normalize_uri, split_uri
from ..table.base_paths import BasePath, BasePathResolver, assign_base_ids
from ..table.commit import CommitOptions, commit_transaction
from ..table.fragment import FragmentMetadata
from ..table.manifest_builder import BuildOptions
from ..table.naming import data_file_name
from ..table.transaction import Append, Overwrite, Restore, Transaction
from ..table.versions import latest_manifest, load_manifest
from ..file.format import storage_version_name
from .input import to_reader

DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024 ** 3
WRITABLE_STORAGE_VERSIONS = ("2.0", "2.1", "2.2")
COMMIT_MESSAGE_KEY = "__lance_commit_message"


def _existing(uri: str, store):
    """The latest manifest of the dataset at ``uri``, or None if there is none."""
    try:
        loc = latest_manifest(uri, store=store)
    except DatasetNotFoundError:
        return None
    return load_manifest(uri, loc.version, store=store)


def _check_storage_version(version: str | None) -> str:
    """pylance's names (None / "stable" -> 2.2, "legacy" refused) -> the version written."""
    version = storage_version_name(version)
    if version not in WRITABLE_STORAGE_VERSIONS:
        raise UnsupportedFeatureError(
            f"lancefmt writes data storage version(s) {', '.join(WRITABLE_STORAGE_VERSIONS)}, "
            f"not {version}")
    return version


def _bases_of(bases) -> list[BasePath]:
    out = []
    for b in bases or []:
        if isinstance(b, BasePath):
            out.append(b)
        elif hasattr(b, "path") and hasattr(b, "is_dataset_root"):  # pylance DatasetBasePath, pb
            out.append(BasePath(b.path, getattr(b, "name", None) or None, bool(b.is_dataset_root),
                                getattr(b, "id", None)))
        else:
            raise InvalidArgumentError(f"not a BasePath: {b!r}")
    return out


@dataclass
class _Target:
    data_dir: str
    base_id: int | None
    storage_options: dict | None = None


def _targets(uri: str, bases: list[BasePath], target_bases, storage_options=None,
             base_store_params=None) -> list[_Target]:
    """Where new data files go: the dataset root, or the named/numbered bases round-robin
    (each written with its own storage options, see :mod:`.bases`)."""
    from .bases import BaseOptions

    resolver = BasePathResolver(uri, bases)
    options = BaseOptions(resolver, storage_options, base_store_params)
    if not target_bases:
        return [_Target(resolver.data_dir(None), None, storage_options)]
    if isinstance(target_bases, (str, int)):
        target_bases = [target_bases]
    out = []
    for t in target_bases:
        match = None
        for b in bases:
            if (isinstance(t, int) and b.id == t) or (isinstance(t, str) and (b.name == t or str(b.id) == t)):
                match = b
        if match is None:
            raise InvalidArgumentError(f"target base {t!r} is not a base path of the dataset "
                                       f"(known: {[(b.id, b.name) for b in bases]})")
        data_dir = resolver.data_dir(match.id)
        out.append(_Target(data_dir, match.id, options.for_uri(data_dir)))
    return out


class _FileRoller:
    """Writes a batch stream into data files, rolling over at the row/byte limits."""

    def __init__(self, schema: pa.Schema, fields, version: str, targets, storage_options,
                 max_rows: int, max_bytes: int, staging: str | None = None,
                 staging_open: bool = False):
        self.schema, self.fields, self.version = schema, fields, version
        self.staging = staging
        self.staging_open = staging_open
        self.targets = itertools.cycle(targets)
        self.storage_options = storage_options
        self.max_rows, self.max_bytes = max_rows, max_bytes
        self.fragments: list[FragmentMetadata] = []
        self.written: list[str] = []
        self.written_options: list = []
        self._writer = None
        self._target = None
        self._bytes = 0
        self.blob_columns = blob_v2_columns(fields)
        self.file_schema = arrow_from_fields(fields, schema.metadata) if self.blob_columns \
            else schema
        self._sidecars = None

    def _open(self):
        self._target = next(self.targets)
        name = data_file_name()
        uri = self._target.data_dir.rstrip("/") + "/" + name
        if self.staging is not None:
            stage_file(self.staging, uri, self.storage_options, require_open=self.staging_open)
        store = open_store(uri, self._target.storage_options)
        self._writer = LanceFileWriter(uri, self.file_schema, self.version, store=store,
                                       fields=self.fields)
        if self.blob_columns:
            self._sidecars = BlobSidecars(store, uri, self.blob_columns)
        self._name, self._uri, self._bytes = name, uri, 0

    def _close(self):
        w = self._writer
        self._writer = None
        if self._sidecars is not None:
            sidecars, self._sidecars = self._sidecars, None
            for side in sidecars.close():
                self.written.append(side)
                self.written_options.append(self._target.storage_options)
        rows = w.close()
        self.written.append(self._uri)
        self.written_options.append(self._target.storage_options)
        df = _data_file(self._name, w, self._target.base_id)
        self.fragments.append(FragmentMetadata.new([df], rows))

    def write(self, batch: pa.RecordBatch):
        offset = 0
        while offset < batch.num_rows:
            if self._writer is None:
                self._open()
            room = self.max_rows - self._writer.num_rows
            piece = batch.slice(offset, room) if batch.num_rows - offset > room else \
                (batch.slice(offset) if offset else batch)
            nbytes = piece.nbytes
            if self._sidecars is not None:
                piece = self._sidecars.convert(piece, self.file_schema)
            self._writer.write_batch(piece)
            self._bytes += nbytes
            offset += piece.num_rows
            if self._writer.num_rows >= self.max_rows or self._bytes >= self.max_bytes:
                self._close()

    def finish(self) -> list[FragmentMetadata]:
        if self._writer is not None:
            if self._writer.num_rows:
                self._close()
            else:
                self.abort_open_file()
        return self.fragments

    def abort_open_file(self):
        if self._sidecars is not None:
            self._sidecars.abort()
            for side in self._sidecars.uris:
                delete_files([side], self._target.storage_options)
            self._sidecars = None
        self._writer.abort()
        self._writer = None

    def abort(self):
        if self._sidecars is not None:
            self._sidecars.abort()
            for side in self._sidecars.uris:
                delete_files([side], self._target.storage_options)
            self._sidecars = None
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
        for uri, options in zip(self.written, self.written_options):
            delete_files([uri], options)


def _data_file(name: str, writer: LanceFileWriter, base_id):
    from .._proto import table_pb2

    major, minor = writer.version
    df = table_pb2.DataFile(path=name, fields=writer.field_ids, column_indices=writer.column_indices,
                            file_major_version=major, file_minor_version=minor,
                            file_size_bytes=writer.file_size or 0)
    if base_id is not None:
        df.base_id = base_id
    return df


def delete_files(uris, storage_options=None) -> None:
    """Best-effort removal of files this process (or a job's tasks) wrote, after a failed
    write, commit or job; with the temporary files a local write of them leaves behind when
    its process dies before renaming the temp into place (``.tmp_<name>_<hex>`` beside it)."""
    uris = list(uris)
    for u in uris:
        try:
            open_store(u, storage_options).delete(u)
        except OSError:
            pass
    _delete_local_temps(uris, storage_options)


def _delete_local_temps(uris, storage_options) -> None:
    """Remove ``.tmp_<name>_*`` beside each local ``uris`` entry (data file names are unique to
    their write, so such a temp belongs to it and to nothing else): one listing per directory."""
    by_dir: dict = {}
    for u in uris:
        store = open_store(u, storage_options)
        if isinstance(store, LocalStore):
            parent, _, name = u.rstrip("/").rpartition("/")
            by_dir.setdefault(parent, (store, set()))[1].add(name)
    for parent, (store, names) in by_dir.items():
        try:
            entries = store.list(parent)
        except OSError:
            continue
        for e in entries:
            if e.is_dir or not e.name.startswith(".tmp_"):
                continue
            stem = e.name[len(".tmp_"):].rpartition("_")[0]
            if stem in names:
                try:
                    store.delete(child(parent, e.name))
                except OSError:  # already gone (another abort got there first): nothing left
                    continue


STAGING_DIR = "_lancefmt_staging"


def staging_uri(dataset_uri: str, job_id: str) -> str:
    """Where a distributed write job records the data files its tasks create (see stage_file)."""
    return child(normalize_uri(dataset_uri), STAGING_DIR, check_relative(job_id, "job id"))


ABORTED_MARKER = "ABORTED"
OPEN_MARKER = "OPEN"


def open_staged_job(staging: str, storage_options=None) -> None:
    """Mark a distributed write job open (driver side, before any task runs). Tasks staged with
    ``require_open`` refuse to start or stage a file once the marker is gone, that is after the
    job's commit or abort cleared its records: a task whose worker started late, or a
    speculative attempt still running at the commit, then leaves nothing behind."""
    open_store(staging, storage_options).put(child(staging, OPEN_MARKER), b"")


def _job_closed(store, staging: str, require_open: bool) -> bool:
    if store.exists(child(staging, ABORTED_MARKER)):
        return True
    return require_open and not store.exists(child(staging, OPEN_MARKER))


def _refuse(staging: str):
    return CommitConflictError(f"the write job staged at {staging} was aborted or has finished")


def stage_file(staging: str, uri: str, storage_options=None, *, require_open: bool = False) -> None:
    """Record ``uri`` under the job's staging prefix *before* the file is created, so the job's
    abort can find files of tasks that died or whose results Spark discarded. Refuses (and so
    stops the task) once the job has been aborted (or, with ``require_open``, has finished)."""
    store = open_store(staging, storage_options)
    if _job_closed(store, staging, require_open):
        raise _refuse(staging)
    name = uri.rstrip("/").rsplit("/", 1)[-1] + ".pending"
    store.put(child(staging, name), uri.encode("utf-8"))


def abort_staged_job(staging: str, storage_options=None, *, settle: float = 0.5,
                     timeout: float = 60.0, linger: float = 3.0) -> list[str]:
    """Abort a distributed write (see :func:`_abort_pass`); then watch the staging prefix for
    ``linger`` seconds more: a task whose worker was still starting when the job failed may
    stage files after the first pass cleared everything, so its records are swept again."""
    import time

    deadline = time.monotonic() + timeout
    removed = _abort_pass(staging, storage_options, settle, timeout)
    store = open_store(staging, storage_options)
    while time.monotonic() < deadline:
        until = min(deadline, time.monotonic() + linger)
        late = False
        while time.monotonic() < until:
            if any(True for _ in store.list(staging)):
                late = True
                break
            time.sleep(0.1)
        if not late:
            break
        removed += _abort_pass(staging, storage_options, settle, deadline - time.monotonic())
    return removed


def _abort_pass(staging: str, storage_options, settle: float, timeout: float) -> list[str]:
    """Abort a distributed write: stop its tasks from creating more files, wait for the tasks
    still running (each holds a liveness record while it writes, see :func:`staged_task`) to
    stop, and delete every staged file, until no task is live and nothing new appeared for
    ``settle`` seconds. A task that never clears its record (its process was killed) is waited
    for at most ``timeout`` seconds; it cannot write any more."""
    import time

    store = open_store(staging, storage_options)
    store.put(child(staging, ABORTED_MARKER), b"")
    removed: list[str] = []
    deadline = time.monotonic() + timeout
    quiet_since = None
    while time.monotonic() < deadline:
        live = any(i.name.endswith(LIVE_SUFFIX) for i in store.list(staging) if not i.is_dir)
        files = [u for u in staged_files(staging, storage_options) if u not in removed]
        if files:
            delete_files(files, storage_options)
            removed += files
        if files or live:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= settle:
            break
        time.sleep(0.05)
    # a file staged while its task was live may have been created after its first deletion
    delete_files(removed, storage_options)
    clear_staging(staging, storage_options)
    return removed


LIVE_SUFFIX = ".live"


@contextlib.contextmanager
def staged_task(staging: str | None, storage_options=None, *, require_open: bool = False):
    """Mark one task of a staged job as live while it writes. The record goes up *before* the
    abort marker is checked, so an abort either sees the task (and waits for it) or the task
    sees the abort (and stops before creating anything). A task that is refused removes its
    record and, where the job's records are all gone, the directories it recreated."""
    if staging is None:
        yield
        return
    store = open_store(staging, storage_options)
    record = child(staging, uuid.uuid4().hex + LIVE_SUFFIX)
    store.put(record, b"")
    refused = False
    try:
        if _job_closed(store, staging, require_open):
            refused = True
            raise _refuse(staging)
        yield
    finally:
        try:
            store.delete(record)
        except OSError:
            pass
        if refused:
            _remove_empty_dirs(staging)


def staged_files(staging: str, storage_options=None) -> list[str]:
    """The data file URIs recorded under ``staging``."""
    store = open_store(staging, storage_options)
    out = []
    for info in store.list(staging):
        if info.name.endswith(".pending") and not info.is_dir:
            try:
                out.append(store.read(info.uri).decode("utf-8"))
            except FileNotFoundError:
                continue
    return out


def clear_staging(staging: str, storage_options=None) -> None:
    """Remove a job's staging records (after its commit or abort)."""
    store = open_store(staging, storage_options)
    for info in store.list(staging):
        store.delete(info.uri)
    _remove_empty_dirs(staging)


def _remove_empty_dirs(staging: str) -> None:
    """Local directories do not vanish with their last file: remove the job's staging directory
    and the staging root if they are empty (another job's records keep the root)."""
    proto, path = split_uri(staging)
    if proto == "file":
        for d in (path, os.path.dirname(path)):
            try:
                os.rmdir(d)
            except OSError:
                break


def _appended_fields(fields: list, data_schema: pa.Schema) -> list:
    """The dataset fields an append writes: all of them, or (as pylance allows) only the
    top-level columns the data has when every missing one is nullable; fragments without a
    column's data file read it as nulls."""
    top = [f for f in fields if f.parent_id == -1]
    names = set(data_schema.names)
    missing = [f for f in top if f.name not in names]
    if not missing or not names <= {f.name for f in top}:
        return fields
    required = [f.name for f in missing if not f.nullable]
    if required:
        raise InvalidArgumentError(f"appended data lacks non-nullable column(s) {required}")
    dropped = {f.id for f in missing}
    changed = True
    while changed:
        changed = False
        for f in fields:
            if f.parent_id in dropped and f.id not in dropped:
                dropped.add(f.id)
                changed = True
    return [f for f in fields if f.id not in dropped]


def _conform(reader: pa.RecordBatchReader, schema: pa.Schema) -> pa.RecordBatchReader:
    """Check appended data against the dataset schema and reorder/cast it to that schema."""
    have = reader.schema
    if set(have.names) != set(schema.names) or len(have.names) != len(schema.names):
        raise InvalidInputError(
            f"appended data has columns {have.names}, the dataset has {schema.names}")
    mismatched = [n for n in schema.names
                  if not storage_schema(pa.schema([have.field(n)])).field(0).type.equals(
                      storage_schema(pa.schema([schema.field(n)])).field(0).type)]
    if mismatched:
        detail = ", ".join(f"{n}: {have.field(n).type} vs {schema.field(n).type}" for n in mismatched)
        raise InvalidInputError(f"appended data does not match the dataset schema ({detail})")
    required = [n for n in schema.names if not schema.field(n).nullable]

    def batches():
        for b in reader:
            b = b.select(schema.names) if b.schema.names != schema.names else b
            for n in required:
                if b.column(n).null_count:
                    raise InvalidArgumentError(f"column {n!r} is not nullable but the data has nulls")
            yield pa.RecordBatch.from_arrays(b.columns, schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


@dataclass
class _Plan:
    """What a write produces, decided before any file is written."""

    uri: str
    existing: object           # ManifestFile or None
    schema: pa.Schema
    fields: list
    storage_version: str
    bases: list                # BasePaths known to the write (existing + initial)
    reader: pa.RecordBatchReader


def _plan(data, uri, mode, schema, data_storage_version, initial_bases, storage_options,
          manifest_store=None) -> _Plan:
    if mode not in ("create", "append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'create', 'append' or 'overwrite', not {mode!r}")
    store = open_store(uri, storage_options, manifest_store)
    existing = _existing(uri, store)
    if existing is not None:
        existing.check_writable()
    if mode == "create" and existing is not None:
        raise DatasetExistsError(f"a Lance dataset already exists at {uri} (use mode='append' or 'overwrite')")
    reader = to_reader(data, schema)
    if existing is not None and mode == "append":
        if initial_bases:
            raise InvalidArgumentError("initial_bases can only be given when creating a dataset")
        header = existing.header
        fields = list(header.fields)
        blobs = blob_v2_columns(fields)
        if not blobs:
            fields = _appended_fields(fields, reader.schema)
        ds_schema = arrow_from_fields(fields, dict(header.schema_metadata) or None)
        if blobs:
            ds_schema = input_schema(ds_schema, blobs)
        version = existing.data_storage_version
        _check_storage_version(version)
        bases = [BasePath.from_pb(b) for b in header.base_paths]
        return _Plan(uri, existing, ds_schema, fields, version, bases, _conform(reader, ds_schema))
    new_schema = reader.schema
    if existing is not None:  # overwrite keeps the storage version unless one is asked for
        version = _check_storage_version(data_storage_version or existing.data_storage_version)
        if initial_bases:
            raise InvalidArgumentError("initial_bases can only be given when creating a dataset")
        bases = [BasePath.from_pb(b) for b in existing.header.base_paths]
    else:
        version = _check_storage_version(data_storage_version)
        bases = assign_base_ids([], _bases_of(initial_bases))
    fields = fields_from_arrow(blob_v2_schema(new_schema, version))
    return _Plan(uri, existing, new_schema, fields, version, bases, reader)


def _write_files(plan: _Plan, target_bases, max_rows_per_file, max_bytes_per_file, storage_options,
                 base_store_params=None, target_offset: int = 0, staging: str | None = None,
                 staging_open: bool = False):
    if int(max_rows_per_file) <= 0:
        raise InvalidArgumentError("max_rows_per_file must be positive")
    targets = _targets(plan.uri, plan.bases, target_bases, storage_options, base_store_params)
    shift = int(target_offset) % len(targets)
    targets = targets[shift:] + targets[:shift]
    roller = _FileRoller(plan.schema, plan.fields, plan.storage_version, targets, storage_options,
                         int(max_rows_per_file), int(max_bytes_per_file), staging, staging_open)
    try:
        for batch in plan.reader:
            roller.write(batch)
        return roller.finish(), list(zip(roller.written, roller.written_options))
    except BaseException:
        roller.abort()
        raise


def write_fragments(data, uri, *, schema=None, mode: str = "append",
                    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
                    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
                    data_storage_version: str | None = None, target_bases=None,
                    initial_bases=None, storage_options: dict | None = None,
                    base_store_params: dict | None = None,
                    target_offset: int = 0, staging: str | None = None,
                    staging_open: bool = False,
                    manifest_store=None) -> list[FragmentMetadata]:
    """Write data files for ``data`` and return their fragments (ids 0); commit nothing.

    ``mode="append"`` matches an existing dataset's schema and storage version;
    ``"overwrite"``/``"create"`` write with the data's own schema (for an Overwrite commit).
    ``target_offset`` is where the round-robin over ``target_bases`` starts: distributed
    writers pass their task number so that their first files spread over all bases.
    ``staging`` (a URI from :func:`staging_uri`) records every data file before it is created,
    so a distributed job can clean up after tasks that died; with ``staging_open`` the job
    was opened by :func:`open_staged_job` and the task refuses to write once it is closed.
    """
    storage_options = _dataset_options(uri, storage_options)
    uri = normalize_uri(uri)
    if mode == "create":
        mode = "overwrite"
    plan = _plan(data, uri, mode, schema, data_storage_version, initial_bases, storage_options,
                 manifest_store)
    with staged_task(staging, storage_options, require_open=staging_open):
        fragments, _ = _write_files(plan, target_bases, max_rows_per_file, max_bytes_per_file,
                                    storage_options, base_store_params, target_offset, staging,
                                    staging_open)
    return fragments


def commit(uri, operation, read_version: int | None = None, *, storage_options: dict | None = None,
           max_retries: int = 20, enable_v2_manifest_paths: bool = True,
           data_storage_version: str | None = None, enable_stable_row_ids: bool = False,
           commit_message: str | None = None, transaction_properties: dict | None = None,
           must_create: bool = False, base_store_params: dict | None = None,
           manifest_store=None):
    """Commit one operation (``lancefmt.Operation.*``) or a staged ``Transaction`` and return
    the new version's Dataset.

    ``read_version`` is the version the operation was planned against (conflicts with anything
    committed since are checked); None means the latest version (0 when creating).
    ``manifest_store``: commit through an external manifest store (a Dataset passed as ``uri``
    lends its own).
    """
    from .dataset import Dataset

    if manifest_store is None:
        manifest_store = getattr(uri, "manifest_store", None)
    storage_options = _dataset_options(uri, storage_options)
    uri = normalize_uri(uri)
    store = open_store(uri, storage_options, manifest_store)
    if isinstance(operation, Transaction):
        # a transaction staged earlier (e.g. ``execute_uncommitted``) names its read version
        if commit_message is not None:
            raise InvalidArgumentError("commit_message is not supported when committing a "
                                       "Transaction: set it in the transaction properties")
        txn = Transaction(operation.read_version, operation.operation, operation.uuid,
                          operation.tag, {**operation.transaction_properties,
                                          **(transaction_properties or {})})
        operation = txn.operation
    else:
        if read_version is None:
            try:
                read_version = latest_manifest(uri, store=store).version
            except DatasetNotFoundError:
                read_version = 0
        props = dict(transaction_properties or {})
        if commit_message is not None:
            props[COMMIT_MESSAGE_KEY] = commit_message
        txn = Transaction(int(read_version), operation, transaction_properties=props)
    restore_source = None
    if isinstance(operation, Restore):
        old = load_manifest(uri, operation.version, store=store)
        restore_source = (old.manifest, old.indices)
    options = CommitOptions(
        max_retries=max_retries, manifest_scheme="v2" if enable_v2_manifest_paths else "v1",
        must_create=must_create,
        build=BuildOptions(data_storage_version=(storage_version_name(data_storage_version)
                                                 if data_storage_version else None),
                           enable_stable_row_ids=enable_stable_row_ids))
    mf = commit_transaction(uri, txn, store=store, options=options, restore_source=restore_source)
    ds = Dataset(uri, mf, storage_options, base_store_params=base_store_params,
                 manifest_store=store.manifest_store)
    from .auto_cleanup import maybe_auto_cleanup

    maybe_auto_cleanup(ds)
    return ds


def _dataset_options(uri, storage_options):
    """A Dataset passed as the URI lends its storage options (a private ``memory://`` store's
    namespace included); a plain ``memory://`` URI gets a store of its own, as in pylance."""
    if hasattr(uri, "uri") and hasattr(uri, "storage_options") and storage_options is None:
        return uri.storage_options
    return private_memory_options(uri, storage_options)


def write_dataset(data, uri, schema=None, mode: str = "create", *,
                  max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
                  max_rows_per_group: int = 1024,
                  max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
                  progress=None, storage_options: dict | None = None,
                  data_storage_version: str | None = None,
                  enable_v2_manifest_paths: bool = True, enable_stable_row_ids: bool = False,
                  auto_cleanup_options: dict | None = None, commit_message: str | None = None,
                  transaction_properties: dict | None = None, initial_bases=None,
                  target_bases=None, base_store_params: dict | None = None,
                  manifest_store=None):
    """Write ``data`` as a new dataset, or append to / overwrite an existing one (docs/api.md),
    with pylance's parameters in pylance's order (``schema`` third, ``mode`` fourth).

    ``max_rows_per_group`` is accepted for compatibility (2.0 files have pages, not row
    groups, and pylance ignores it for them too). ``progress`` is pylance's
    ``FragmentWriteProgress`` (``begin``/``complete`` called per fragment written).
    ``auto_cleanup_options`` (``{"interval", "older_than_seconds"}``) is stored in the new
    dataset's config as pylance stores it. ``base_store_params``: per-base storage options
    (see :mod:`lancefmt.dataset.bases`). ``manifest_store``: commit through an external
    manifest store (:mod:`lancefmt.table.external_manifest`)."""
    if int(max_rows_per_group) <= 0:
        raise InvalidArgumentError("max_rows_per_group must be positive")
    if hasattr(uri, "uri") and hasattr(uri, "version"):  # a Dataset: append to it
        if storage_options is None:
            storage_options = uri.storage_options
        if base_store_params is None:
            base_store_params = getattr(uri, "base_store_params", None)
        if manifest_store is None:
            manifest_store = getattr(uri, "manifest_store", None)
        uri = uri.uri
    else:
        storage_options = private_memory_options(uri, storage_options)
    uri = normalize_uri(uri)
    plan = _plan(data, uri, mode, schema, data_storage_version, initial_bases, storage_options,
                 manifest_store)
    fragments, written = _write_files(plan, target_bases, max_rows_per_file, max_bytes_per_file,
                                      storage_options, base_store_params)
    _report_progress(progress, fragments)
    if plan.existing is not None and mode == "append":
        operation = Append(fragments)
        read_version = plan.existing.version
    else:
        bases = [b.to_pb() for b in plan.bases] if plan.existing is None else None
        config = auto_cleanup_config(auto_cleanup_options) if plan.existing is None else None
        operation = Overwrite(plan.fields, fragments, bases, config_upsert_values=config,
                              schema_metadata=_schema_metadata(plan.schema))
        read_version = plan.existing.version if plan.existing is not None else 0
    creating_append = plan.existing is None and mode == "append"
    try:
        try:
            return commit(uri, operation, read_version, storage_options=storage_options,
                          enable_v2_manifest_paths=enable_v2_manifest_paths,
                          data_storage_version=plan.storage_version,
                          enable_stable_row_ids=enable_stable_row_ids if plan.existing is None else False,
                          commit_message=commit_message, transaction_properties=transaction_properties,
                          must_create=(mode == "create" or creating_append),
                          base_store_params=base_store_params, manifest_store=manifest_store)
        except DatasetExistsError:
            if not creating_append:
                raise
        # Lost the race to create the dataset: the files are written, append them instead.
        return _append_after_lost_create(plan, fragments, storage_options, commit_message,
                                         transaction_properties, base_store_params,
                                         manifest_store)
    except BaseException:
        for file_uri, options in written:
            delete_files([file_uri], options)
        raise


def _append_after_lost_create(plan: _Plan, fragments, storage_options, commit_message,
                              transaction_properties, base_store_params, manifest_store=None):
    """Commit ``fragments`` (written for a new dataset) as an Append to the dataset a concurrent
    writer created first, when their files fit it: same fields (names, types, ids), storage
    version and bases. Otherwise the create conflicts (nothing of ours is committed)."""
    store = open_store(plan.uri, storage_options, manifest_store)
    existing = _existing(plan.uri, store)
    if existing is None:  # created and gone again: nothing sensible to rebase on
        raise CommitConflictError(f"the dataset at {plan.uri} was created concurrently and removed")
    existing.check_writable()
    header = existing.header
    ours = [f.SerializeToString(deterministic=True) for f in plan.fields]
    theirs = [f.SerializeToString(deterministic=True) for f in header.fields]
    same_bases = sorted(b.to_pb().SerializeToString(deterministic=True) for b in plan.bases) == \
        sorted(b.SerializeToString(deterministic=True) for b in header.base_paths)
    if ours != theirs or existing.data_storage_version != plan.storage_version or not same_bases:
        raise CommitConflictError(
            f"a dataset was created concurrently at {plan.uri} with a different schema, storage "
            f"version or bases; this append's data was not committed")
    return commit(plan.uri, Append(fragments), existing.version, storage_options=storage_options,
                  data_storage_version=plan.storage_version, commit_message=commit_message,
                  transaction_properties=transaction_properties,
                  base_store_params=base_store_params, manifest_store=manifest_store)


def _schema_metadata(schema: pa.Schema) -> dict:
    from ..file.schema import schema_metadata_to_proto

    return schema_metadata_to_proto(schema.metadata)


def auto_cleanup_config(options) -> dict | None:
    """The config keys pylance writes for ``auto_cleanup_options``."""
    if not options:
        return None
    try:
        return {"lance.auto_cleanup.interval": str(int(options["interval"])),
                "lance.auto_cleanup.older_than": f"{int(options['older_than_seconds'])}s"}
    except (KeyError, TypeError, ValueError):
        raise InvalidArgumentError("auto_cleanup_options needs integer 'interval' and "
                                   "'older_than_seconds'") from None


def _report_progress(progress, fragments) -> None:
    if progress is None:
        return
    for f in fragments:
        if hasattr(progress, "begin"):
            progress.begin(f)
        if hasattr(progress, "complete"):
            progress.complete(f)
