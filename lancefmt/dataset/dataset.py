"""Dataset: pylance's ``LanceDataset``, a thin facade over the dataset operations.

A Dataset shows one version (a :class:`~.core.snapshot.Snapshot`) through a
:class:`~.core.view.View`. Every method hands the snapshot to an operation module and,
when the operation commits, moves the view to the version committed, as pylance's
mutations move the object they are called on; ``checkout_version`` gives a separate object.
No operation module imports this one.
"""
from __future__ import annotations

import warnings

from datetime import datetime

import pyarrow as pa

from ..errors import (DatasetNotFoundError, InvalidArgumentError, InvalidInputError,
                      NotSupportedError)
from ..table.transaction import Append, Overwrite, Restore, Transaction
from ..io import io_scope
from ..io.memory_scope import private_memory_options
from ..jsonb.arrow import decode_batch, user_schema
from ..table.base_paths import BasePath
from .core.plan import CommitPlan
from .core.session import Session
from .core.snapshot import Snapshot
from .core.session import Session
from .core.view import View
from .fragment import Fragment
from .maintain import validate as _validate
from .maintain.auto_cleanup import INTERVAL_KEY, OLDER_THAN_KEY, maybe_auto_cleanup
from .maintain.drop import drop_dataset
from .maintain.cleanup import cleanup_old_versions
from .maintain.compaction import DatasetOptimizer
from .mutate import alter_columns as _alter
from .mutate import metadata as _metadata
from .mutate import new_columns as _new_columns
from .mutate.delete import delete_rows
from .mutate.merge_insert import MergeInsertBuilder
from .mutate.update import update_rows
from .read import blobs as _blobs
from .read import row_lookup
from .read.count import count_rows
from .read.scan import ScanSpec
from .read.sql_query import SqlQueryBuilder
from .read.take import take_rows
from .index_api import DatasetIndexAPI
from .indices.manage import optimize_indices as _optimize_indices
from .read_api import DatasetReadAPI
from .refs import bases as _bases
from .refs import branches as _branches
from .refs import clone as _clone
from .refs.tags import Tags
from .write.dataset_write import auto_cleanup_config, write_and_commit
from .write.fragments import write_fragments  # noqa: F401 -- part of this module's API


def dataset(uri, version=None, asof=None, *, storage_options: dict | None = None,
            base_store_params: dict | None = None, manifest_store=None,
            default_scan_options: dict | None = None, read_params: dict | None = None,
            **tuning) -> "Dataset":
    """Open ``uri`` at ``version`` (None = latest, an int, or a tag name; a tag of a branch
    version opens that branch), or at the last version committed at or before ``asof`` (a
    datetime). ``base_store_params``: per-base storage options
    (:mod:`lancefmt.dataset.core.base_options`). ``manifest_store``: an external manifest
    store (or ``"sqlite:///path"``) that versions are resolved and committed through
    (:mod:`lancefmt.table.external_manifest`). ``default_scan_options``: scanner arguments
    every scan of this object starts from (``{"with_row_id": True}`` also shows ``_rowid``
    in ``schema``). ``session``: a :class:`Session` to share (its caches) with other datasets;
    else a new one, with ``metadata_cache_size_bytes`` / ``index_cache_size_bytes`` if given
    (``index_cache_size_bytes=0`` keeps no loaded index: every search loads it again).
    pylance's other cache and reader tuning (``read_params``, ``index_cache_size``,
    ``block_size``...) is accepted and ignored."""
    unknown = set(tuning) - set(TUNING_OPTIONS)
    if unknown:
        raise InvalidArgumentError(f"dataset() got unexpected arguments {sorted(unknown)}")
    if tuning.get("index_cache_size") is not None:
        warnings.warn("The 'index_cache_size' parameter is deprecated. Use "
                      "'index_cache_size_bytes' instead.",
                      DeprecationWarning, stacklevel=2)
    if hasattr(uri, "uri") and hasattr(uri, "storage_options") and storage_options is None:
        storage_options = uri.storage_options  # a Dataset passed as the URI
    if manifest_store is None:
        manifest_store = getattr(uri, "manifest_store", None)
    storage_options = private_memory_options(uri, storage_options)
    if asof is not None:
        if version is not None:
            raise InvalidArgumentError("pass version or asof, not both")
        version = version_asof(Dataset.open(uri, storage_options=storage_options,
                                            base_store_params=base_store_params,
                                            manifest_store=manifest_store), asof)
    session = tuning.get("session")
    if session is None and (tuning.get("metadata_cache_size_bytes") is not None
                            or tuning.get("index_cache_size_bytes") is not None):
        session = Session(index_cache_size_bytes=tuning.get("index_cache_size_bytes"),
                          metadata_cache_size_bytes=tuning.get("metadata_cache_size_bytes"))
    if session is not None and not isinstance(session, Session):
        raise InvalidArgumentError(f"session must be a Session, not {type(session).__name__}")
    out = Dataset.open(uri, version, storage_options=storage_options,
                       base_store_params=base_store_params, manifest_store=manifest_store,
                       session=session)
    if default_scan_options:
        out.scan_defaults = dict(default_scan_options)
    return out


AUTO_CLEANUP_KEYS = (INTERVAL_KEY, OLDER_THAN_KEY)

# pylance's dataset() arguments that tune caches and readers: no effect here
TUNING_OPTIONS = ("read_params", "block_size", "index_cache_size", "index_cache_size_bytes",
                  "metadata_cache_size", "metadata_cache_size_bytes", "session", "commit_lock",
                  "namespace_client", "table_id", "ignore_namespace_table_storage_options",
                  "s3_credentials_refresh_offset_seconds")


def version_asof(ds: "Dataset", asof) -> int:
    """The newest version whose timestamp is at or before ``asof`` (naive: local time)."""
    if isinstance(asof, datetime) and asof.tzinfo is not None:
        asof = asof.astimezone().replace(tzinfo=None)
    found = [v["version"] for v in ds.versions() if v["timestamp"] <= asof]
    if not found:
        raise DatasetNotFoundError(f"no version of {ds.uri} was committed at or before {asof}")
    return max(found)


class Dataset(DatasetIndexAPI, DatasetReadAPI):
    """One version of a Lance dataset (pylance's ``LanceDataset``; see module docstring)."""

    def __init__(self, snapshot: Snapshot):
        if snapshot.after_commit is None:
            snapshot.after_commit = maybe_auto_cleanup
        self._view = View(snapshot)
        self.scan_defaults: dict = {}  # dataset(default_scan_options=...)

    @classmethod
    def open(cls, uri, version=None, *, storage_options=None, base_store_params=None,
             manifest_store=None, session=None) -> "Dataset":
        return cls(Snapshot.open(uri, version, storage_options=storage_options,
                                 base_store_params=base_store_params,
                                 manifest_store=manifest_store, after_commit=maybe_auto_cleanup,
                                 session=session))

    def session(self) -> Session:
        """The session holding this dataset's caches (pass it to ``dataset(session=...)`` to
        share them)."""
        return self.snapshot.session

    def __repr__(self):
        return f"Dataset({self.uri!r}, version={self.version})"

    def __reduce__(self):
        return (_reopen, self.snapshot.open_args())

    @property
    def snapshot(self) -> Snapshot:
        """The version this object shows, as the dataset operations take it."""
        return self._view.snapshot

    def adopt(self, committed: Snapshot) -> "Dataset":
        """Move this object to ``committed`` (a version committed from it), as pylance's
        mutations move the object they are called on; for operations that commit outside the
        facade (``lancefmt.optimize.Compaction.commit``)."""
        self._view.move_to(committed)
        return self

    def _commit(self, operation, **options) -> "Dataset":
        """Commit ``operation`` planned against this version and move this object there."""
        return self.adopt(self.snapshot.commit(operation, **options).run_after_commit())

    def _commit_plan(self, plan: CommitPlan) -> "Dataset":
        return self.adopt(self.snapshot.commit_plan(plan).run_after_commit())

    # -- identity and metadata --------------------------------------------------------------
    @property
    def uri(self) -> str:
        return self.snapshot.uri

    @property
    def storage_options(self) -> dict | None:
        return self.snapshot.storage_options

    @property
    def manifest_store(self):
        """The external manifest store this view resolves and commits versions through (None:
        the object store's own conditional put)."""
        return self.snapshot.manifest_store

    @property
    def base_store_params(self) -> dict | None:
        """Per-base storage options this view reads and writes with."""
        return self.snapshot.base_store_params

    @property
    def version(self) -> int:
        return self.snapshot.version

    @property
    def manifest(self):
        """The ``lance.table.Manifest`` protobuf of this version."""
        return self.snapshot.manifest

    @property
    def manifest_file(self):
        return self.snapshot.manifest_file

    @property
    def latest_version(self) -> int:
        return self.snapshot.latest_version

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema as pylance shows it (JSON columns as ``arrow.json``), with the
        row id / address columns ``default_scan_options`` add."""
        schema = user_schema(self.snapshot.schema)
        if self.scan_defaults.get("with_row_id"):
            schema = schema.append(pa.field("_rowid", pa.uint64()))
        if self.scan_defaults.get("with_row_address"):
            schema = schema.append(pa.field("_rowaddr", pa.uint64()))
        return schema

    @property
    def lance_fields(self) -> list:
        return self.snapshot.lance_fields

    @property
    def data_storage_version(self) -> str:
        return self.snapshot.data_storage_version

    @property
    def has_stable_row_ids(self) -> bool:
        return self.snapshot.has_stable_row_ids

    @property
    def base_paths(self) -> dict[int, BasePath]:
        return self.snapshot.base_paths

    @property
    def _ds(self) -> "NativeView":
        """What pylance code reaches for through ``dataset._ds`` (pylance's native handle)."""
        return NativeView(self)

    def config(self) -> dict:
        """``Manifest.config`` (a method, as in pylance)."""
        return self.snapshot.config()

    @property
    def table_metadata(self) -> dict:
        return dict(self.snapshot.header.table_metadata)

    @property
    def metadata(self) -> dict:
        """pylance's name for ``table_metadata`` (``update_metadata`` changes it)."""
        return self.table_metadata

    @property
    def schema_metadata(self) -> dict:
        """The schema's metadata as strings (``update_schema_metadata`` changes it)."""
        return _metadata.decoded_metadata(self.snapshot.header.schema_metadata)

    @property
    def tags(self) -> Tags:
        return Tags(self._view)

    @property
    def fragment_table(self):
        """Columnar view of the fragment list (numpy arrays, no object per fragment)."""
        return self.snapshot.fragment_table

    # -- fragments --------------------------------------------------------------------------
    def get_fragment(self, fragment_id: int) -> Fragment | None:
        pb = self.snapshot.fragment_pb(fragment_id)
        return None if pb is None else Fragment(self.snapshot.ctx, pb, self.snapshot)

    # -- reading ----------------------------------------------------------------------------
    def scanner_spec(self, columns=None, filter=None, with_row_id=False, with_row_address=False,
                     batch_size=None) -> ScanSpec:
        return ScanSpec.build(self.snapshot.schema, columns, filter, with_row_id, with_row_address, batch_size)

    def to_batches(self, columns=None, filter=None, limit=None, offset=None, *args, **kwargs):
        """Stream the (filtered, projected) rows as RecordBatches (pylance's signature; every
        ``scanner()`` argument is accepted)."""
        return self._scan_batches(columns, filter, limit, offset, *args, **kwargs)

    def to_table(self, columns=None, filter=None, limit=None, offset=None, *args, **kwargs) -> pa.Table:
        """The (filtered, projected) rows as one Table (pylance's signature)."""
        return self._scan_table(columns, filter, limit, offset, *args, **kwargs)

    def count_rows(self, filter=None, *, fragments=None, **kwargs) -> int:
        """Live rows (deletions subtracted); from metadata alone when there is no filter, from
        the scalar indices when they answer an SQL filter (as pylance)."""
        if isinstance(filter, str) and fragments is None:
            return self.scanner(filter=filter).count_rows()
        return count_rows(self.snapshot, filter, fragments)

    def take(self, indices, columns=None, *, with_row_id=False, with_row_address=False) -> pa.Table:
        """Rows by offset among this version's live rows, in the order given; ``columns`` as
        in ``scanner()`` (names, nested paths, or a dict of SQL expressions)."""
        return decode_batch(take_rows(self.snapshot, indices, columns, with_row_id,
                                      with_row_address), self.snapshot.schema)

    def head(self, num_rows: int = 10, columns=None, **kwargs) -> pa.Table:
        return self.scanner(columns=columns, limit=num_rows, **kwargs).to_table()

    def take_row_ids(self, row_ids, columns=None, *, with_row_id=False,
                     with_row_address=False) -> pa.Table:
        """Rows by stable row id (through the row-id index), in the order given."""
        return decode_batch(row_lookup.take_row_ids(self.snapshot, row_ids, columns, with_row_id,
                                                    with_row_address), self.snapshot.schema)

    def take_addresses(self, addresses, columns=None) -> pa.Table:
        """Rows by row address ``(fragment_id << 32) | offset``, in the order given."""
        return decode_batch(row_lookup.take_addresses(self.snapshot, addresses, columns),
                            self.snapshot.schema)

    def take_blobs(self, blob_column: str, ids=None, addresses=None, indices=None) -> list:
        """File-like readers of a blob v2 column's bytes for the selected rows (exactly one of
        ``ids``, ``addresses``, ``indices``); ``None`` where the blob is null."""
        return _blobs.take_blobs(self.snapshot, blob_column, ids=ids, addresses=addresses,
                                 indices=indices)

    # -- versions ---------------------------------------------------------------------------
    def versions(self) -> list[dict]:
        return self.snapshot.versions()

    def checkout_version(self, version) -> "Dataset":
        """This dataset (or branch) at an int version; a tag name opens the tagged version
        (from the dataset root's ``_refs/tags``, on whichever branch it names)."""
        return Dataset(self.snapshot.at(version))

    def checkout_latest(self) -> "Dataset":
        return Dataset(self.snapshot.latest())

    def restore(self) -> None:
        """Commit this (old) version's content as the new latest version (and move there)."""
        self.adopt(self.snapshot.restore().run_after_commit())

    # -- config and metadata (pylance's return values) ---------------------------------------
    def update_config(self, values: dict, *, replace: bool = False) -> dict:
        """Set (value) or delete (None) ``Manifest.config`` keys; returns the new config."""
        self._commit(_metadata.config_update(values, replace))
        return self.config()

    def delete_config_keys(self, keys) -> None:
        self._commit(_metadata.config_update({k: None for k in keys}, False))

    def update_metadata(self, values: dict, *, replace: bool = False) -> dict:
        """Set (value) or delete (None) ``Manifest.table_metadata`` keys; returns the result."""
        self._commit(_metadata.table_metadata_update(values, replace))
        return self.table_metadata

    def update_schema_metadata(self, values: dict, *, replace: bool = False) -> dict:
        """Set (value) or delete (None) schema metadata keys; returns the new schema metadata."""
        self._commit(_metadata.schema_metadata_update(values, replace))
        return _metadata.decoded_metadata(self.snapshot.header.schema_metadata)

    def replace_schema_metadata(self, new_metadata: dict) -> None:
        self.update_schema_metadata(new_metadata, replace=True)

    def update_field_metadata(self, field_updates: dict, *, replace: bool = False) -> None:
        """``{field path or id: {key: value | None}}`` on the named fields."""
        self._commit(_metadata.field_metadata_update(self.lance_fields, field_updates, replace))

    def replace_field_metadata(self, field_name: str, new_metadata: dict) -> None:
        self.update_field_metadata({field_name: new_metadata}, replace=True)

    # -- mutations ------------------------------------------------------------------------------
    # each writes and commits in its own io_scope: a concurrent writer's failed upload or sync
    # does not fail it, its own fails no one else (io/uploads.py)
    @io_scope()
    def delete(self, predicate, *, conflict_retries: int = 10, retry_timeout=None) -> dict:
        """Delete the rows matching ``predicate``; ``{"num_deleted_rows": n}`` as pylance."""
        try:
            new, n = delete_rows(self.snapshot, predicate, conflict_retries=conflict_retries)
        except InvalidArgumentError as e:  # pylance raises OSError for a bad delete predicate
            if isinstance(e, OSError):
                raise
            raise InvalidInputError(str(e)) from e
        self.adopt(new)
        return {"num_deleted_rows": n}

    @io_scope()
    def update(self, updates: dict, where=None, conflict_retries: int = 10,
               retry_timeout=None) -> dict:
        """Set columns (``{name: SQL expression | pyarrow Expression | value}``) on the rows
        matching ``where`` (all rows if None); the rows are rewritten as new fragments.
        Returns ``{"num_rows_updated": n}`` as pylance."""
        new, n = update_rows(self.snapshot, updates, where, conflict_retries=conflict_retries)
        self.adopt(new)
        return {"num_rows_updated": n}

    def insert(self, data, *, mode: str = "append", **kwargs) -> None:
        """Append (or overwrite with) ``data`` and move to the new version, as pylance."""
        snap = self.snapshot
        kwargs.setdefault("storage_options", snap.storage_options)
        kwargs.setdefault("base_store_params", snap.base_store_params)
        kwargs.setdefault("manifest_store", snap.manifest_store)
        self.adopt(write_and_commit(data, snap.uri, mode=mode, after_commit=snap.after_commit,
                                     **kwargs))

    def sql(self, sql: str) -> SqlQueryBuilder:
        """A SQL query over this version (run by DuckDB, an optional dependency)."""
        return SqlQueryBuilder(self, sql)

    def merge_insert(self, on) -> MergeInsertBuilder:
        """An upsert builder (pylance's ``MergeInsertBuilder``) keyed on column(s) ``on``."""
        return MergeInsertBuilder(self._view, on)

    @io_scope()
    def add_columns(self, transforms, read_columns=None, reader_schema=None,
                    batch_size=None) -> None:
        """New columns from SQL expressions, an all-null schema/field, a ``batch_udf`` or
        row-aligned data; one new data file per fragment, one Merge commit."""
        self._commit_plan(_new_columns.add_columns(self.snapshot, transforms, read_columns,
                                                   reader_schema, batch_size))

    def drop_columns(self, columns) -> None:
        self._commit_plan(_alter.drop_columns(self.snapshot, columns))

    @io_scope()
    def alter_columns(self, *alterations) -> None:
        """Rename, change nullability or cast columns (``{"path", "name", "nullable",
        "data_type"}`` as pylance); a cast rewrites the column's data."""
        self._commit_plan(_alter.alter_columns(self.snapshot, alterations))

    @io_scope()
    def merge(self, data_obj, left_on: str, right_on: str | None = None, schema=None) -> None:
        """Left-join ``data_obj`` on ``left_on == right_on`` as new columns (pylance's merge)."""
        self._commit_plan(_new_columns.merge_columns(self.snapshot, data_obj, left_on,
                                                     right_on or left_on, schema))

    @property
    def optimize(self) -> "Optimizer":
        return Optimizer(self)

    def validate(self) -> None:
        """Check that every referenced data and deletion file exists and opens."""
        _validate.validate_dataset(self.snapshot)

    @staticmethod
    def drop(base_uri, storage_options: dict | None = None,
             ignore_not_found: bool = False) -> None:
        """Remove the dataset at ``base_uri`` entirely (pylance's ``LanceDataset.drop``)."""
        drop_dataset(base_uri, storage_options, ignore_not_found)

    @staticmethod
    def commit_batch(dest, transactions, commit_lock=None, storage_options=None,
                     enable_v2_manifest_paths=None, detached=False, max_retries=20) -> dict:
        """Commit several Append transactions as one version: ``{"dataset", "merged"}``."""
        if commit_lock is not None or detached:
            raise InvalidArgumentError("commit_lock and detached commits are not supported")
        return commit_batch(dest, transactions, storage_options=storage_options,
                            max_retries=max_retries)

    @staticmethod
    def commit(base_uri, operation, blobs_op=None, read_version=None, commit_lock=None,
               storage_options=None, enable_v2_manifest_paths=None, detached=False,
               max_retries=20, **kwargs):
        """pylance's ``LanceDataset.commit(uri, operation, read_version=...)``."""
        if blobs_op is not None or commit_lock is not None or detached:
            raise InvalidArgumentError("blobs_op, commit_lock and detached commits are not supported")
        extra = {k: kwargs.pop(k) for k in list(kwargs)
                 if k in ("enable_stable_row_ids", "commit_message", "transaction_properties",
                          "base_store_params", "data_storage_version")}
        kwargs.pop("namespace_client", None)
        kwargs.pop("table_id", None)
        if kwargs:
            raise InvalidArgumentError(f"commit() got unexpected arguments {sorted(kwargs)}")
        if read_version is None and not isinstance(operation, (Transaction, Overwrite, Restore)):
            # pylance: only an overwrite or a restore may be committed blind
            raise InvalidArgumentError("read_version is required for this operation")
        return commit(base_uri, operation, read_version, storage_options=storage_options,
                      max_retries=max_retries,
                      enable_v2_manifest_paths=True if enable_v2_manifest_paths is None
                      else enable_v2_manifest_paths, **extra)

    # -- multi-base, clones, branches, cleanup -------------------------------------------------
    def add_bases(self, bases, transaction_properties: dict | None = None) -> "Dataset":
        """New version with more BasePaths (pylance's ``add_bases``: ids ``max + 1``); no
        bases: nothing is committed and this Dataset is returned."""
        bases = list(bases)
        if not bases:
            return self
        new = _bases.add_bases(self.snapshot, bases, transaction_properties=transaction_properties)
        return self.adopt(new.run_after_commit())

    def update_bases(self, changes: dict, transaction_properties: dict | None = None) -> "Dataset":
        """New version whose only change is base paths: ``{id_or_name: new_path | BasePath}``
        (relocation, re-tiering, failover). No data file is read, written or moved."""
        new = _bases.update_bases(self.snapshot, changes,
                                  transaction_properties=transaction_properties)
        return self.adopt(new.run_after_commit())

    def storage_prefixes(self) -> list:
        """The distinct storage prefixes this version touches (``refs.bases.StoragePrefix``)."""
        return _bases.storage_prefixes(self.snapshot)

    def shallow_clone(self, target_uri, version=None, *, storage_options: dict | None = None,
                      base_store_params: dict | None = None) -> "Dataset":
        """New dataset at ``target_uri`` referencing this one's files (at ``version``: None =
        this version, an int, or a tag) through a dataset-root BasePath, as Lance does."""
        return Dataset(_clone.shallow_clone(self.snapshot, target_uri, version,
                                            storage_options=storage_options,
                                            base_store_params=base_store_params))

    @property
    def branch(self) -> str | None:
        """The branch this version belongs to (None = main)."""
        return self.snapshot.branch

    @property
    def branches(self) -> _branches.Branches:
        return _branches.Branches(self._view)

    def create_branch(self, name: str, version=None) -> "Dataset":
        """New branch ``name`` under ``tree/{name}`` from ``version`` (None = this version, an
        int on this branch, or a tag); returns the branch's Dataset."""
        return Dataset(_branches.create_branch(self.snapshot, name, version))

    def checkout_branch(self, name: str | None, version=None) -> "Dataset":
        """The latest (or ``version``) of branch ``name`` (None or "main" = the main branch)."""
        return Dataset(_branches.checkout_branch(self.snapshot, name, version))

    def cleanup_old_versions(self, older_than=None, retain_versions: int | None = None, *,
                             delete_unverified: bool = False,
                             error_if_tagged_old_versions: bool = True, dry_run: bool = False,
                             clones=(), owned_bases=(), progress=None):
        """Remove old versions and the files only they reference (pylance's semantics); see
        :func:`lancefmt.dataset.maintain.cleanup.cleanup_old_versions`. Returns
        ``CleanupStats``."""
        return cleanup_old_versions(self.snapshot, older_than, retain_versions,
                                    delete_unverified=delete_unverified,
                                    error_if_tagged_old_versions=error_if_tagged_old_versions,
                                    dry_run=dry_run, clones=clones, owned_bases=owned_bases,
                                    progress=progress)


def write_dataset(data_obj, uri, schema=None, mode: str = "create", *,
                  commit_lock=None, **options) -> Dataset:
    """Write ``data_obj`` as a new dataset, or append to / overwrite an existing one, with
    pylance's parameters in pylance's order and names (``schema`` third, ``mode`` fourth); the
    options are :func:`lancefmt.dataset.write.dataset_write.write_and_commit`'s.
    ``commit_lock`` (pylance: a context manager factory taking the version to commit) is
    entered around the write. Returns the new version's Dataset."""
    if commit_lock is None:
        return Dataset(write_and_commit(data_obj, uri, schema, mode,
                                        after_commit=maybe_auto_cleanup, **options))
    try:
        version = Dataset.open(uri, storage_options=options.get("storage_options")).latest_version + 1
    except DatasetNotFoundError:
        version = 1
    with commit_lock(version):
        return Dataset(write_and_commit(data_obj, uri, schema, mode,
                                        after_commit=maybe_auto_cleanup, **options))


@io_scope()  # not failed by a concurrent writer's uploads/syncs (io/uploads.py)
def commit(uri, operation, read_version: int | None = None, *,
           base_store_params: dict | None = None, **options) -> Dataset:
    """Commit one operation (``lancefmt.Operation.*``) or a staged ``Transaction`` and return
    the new version's Dataset. ``read_version`` is the version the operation was planned
    against (conflicts with anything committed since are checked; None: the latest, 0 when
    creating); ``options`` are :func:`lancefmt.dataset.core.commit.commit_manifest`'s. A
    Dataset passed as ``uri`` lends its storage options and manifest store."""
    new = Snapshot.commit_to(uri, operation, read_version, base_store_params=base_store_params,
                             after_commit=maybe_auto_cleanup, **options)
    return Dataset(new.run_after_commit())


class Optimizer(DatasetOptimizer):
    """``Dataset.optimize``: compaction, and switching auto cleanup on and off (config keys
    ``lance.auto_cleanup.*``, as pylance writes them)."""

    def __init__(self, ds: Dataset):
        super().__init__(ds._view)
        self._dataset = ds

    def enable_auto_cleanup(self, options: dict, **kwargs) -> None:
        self._dataset.update_config(auto_cleanup_config(options))

    def disable_auto_cleanup(self, **kwargs) -> None:
        self._dataset.delete_config_keys(list(AUTO_CLEANUP_KEYS))

    def optimize_indices(self, **kwargs) -> None:
        """Bring indices up to date with new fragments (``num_indices_to_merge``,
        ``index_names``, ``retrain``: see :mod:`lancefmt.dataset.indices.manage`)."""
        committed = _optimize_indices(self._dataset.snapshot, **kwargs)
        if committed is not self._dataset.snapshot:
            self._dataset.adopt(committed)


class NativeView:
    """The few methods of pylance's native dataset handle (``LanceDataset._ds``) that
    callers use directly; each answers from the Dataset it wraps."""

    def __init__(self, ds: Dataset):
        self._dataset = ds

    def base_paths(self) -> dict[int, BasePath]:
        return self._dataset.base_paths

    def index_cache_hit_rate(self) -> float:
        """Index look-ups this dataset's session answered from its cache, of all of them."""
        return self._dataset.snapshot.session.index_cache.hit_rate()

    def index_cache_entry_count(self) -> int:
        return self._dataset.snapshot.session.index_cache_entry_count()

    def take_scan(self, ranges, columns=None, batch_readahead: int = 16):
        """Batches of the rows in each ``(start, stop)`` range of live-row positions."""
        for start, stop in ranges:
            table = self._dataset.take(list(range(int(start), int(stop))), columns=columns)
            yield from table.combine_chunks().to_batches()


def commit_batch(dest, transactions, **options) -> dict:
    """Merge Append transactions into one and commit it (what pylance merges in a batch):
    ``{"dataset": the new version, "merged": the merged Transaction}``."""
    txns = list(transactions)
    if not txns:
        raise InvalidArgumentError("commit_batch needs at least one transaction")
    if not all(isinstance(t.operation, Append) for t in txns):
        raise NotSupportedError("commit_batch merges Append transactions only")
    fragments = [f for t in txns for f in t.operation.fragments]
    merged = Transaction(min(t.read_version for t in txns), Append(fragments))
    ds = commit(dest, Append([f.copy() for f in fragments]), merged.read_version, **options)
    return {"dataset": ds, "merged": merged}


def _reopen(uri, version, storage_options, base_store_params=None, manifest_store=None):
    return Dataset.open(uri, version, storage_options=storage_options,
                        base_store_params=base_store_params, manifest_store=manifest_store)
