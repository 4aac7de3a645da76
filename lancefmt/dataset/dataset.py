"""Dataset: an immutable view of one version of a Lance dataset (docs/api.md).

Opening reads one listing of ``_versions/`` and one manifest; fragments are decoded from the
manifest lazily. Mutations (``delete``, ``update``, ``restore``, ``add_columns``, ...) commit a
new version through :mod:`lancefmt.table.commit` and move the object they were called on to that
version, returning what pylance's return; ``checkout_version`` gives a separate, pinned object.
Operation modules work on a snapshot (:meth:`Dataset._snapshot`) and hand back the committed
dataset or manifest; this module is the only place that moves a Dataset.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError, DatasetNotFoundError, InvalidArgumentError
from ..io import open_store
from ..io.uri import normalize_uri
from ..table.base_paths import BasePath
from ..table.feature_flags import FLAG_STABLE_ROW_IDS
from ..table.manifest import ManifestFile
from ..table.versions import latest_manifest, list_versions, load_manifest
from .context import ScanContext
from .fragment import Fragment
from .read_api import DatasetReadAPI
from .scan import ScanSpec, scan_batches


def dataset(uri, version=None, *, storage_options: dict | None = None,
            base_store_params: dict | None = None, manifest_store=None) -> "Dataset":
    """Open ``uri`` at ``version`` (None = latest, an int, or a tag name; a tag of a branch
    version opens that branch). ``base_store_params``: per-base storage options
    (:mod:`lancefmt.dataset.bases`). ``manifest_store``: an external manifest store (or
    ``"sqlite:///path"``) that versions are resolved and committed through
    (:mod:`lancefmt.table.external_manifest`)."""
    from ..io.memory_scope import private_memory_options

    if hasattr(uri, "uri") and hasattr(uri, "storage_options") and storage_options is None:
        storage_options = uri.storage_options  # a Dataset passed as the URI
    if manifest_store is None:
        manifest_store = getattr(uri, "manifest_store", None)
    storage_options = private_memory_options(uri, storage_options)
    return Dataset.open(uri, version, storage_options=storage_options,
                        base_store_params=base_store_params, manifest_store=manifest_store)


class Dataset(DatasetReadAPI):
    def __init__(self, uri: str, manifest_file: ManifestFile, storage_options=None, *,
                 base_store_params=None, manifest_store=None):
        from ..table.external_manifest import as_manifest_store

        self._uri = uri
        self._mf = manifest_file
        self._storage_options = dict(storage_options) if storage_options else None
        self._base_store_params = dict(base_store_params) if base_store_params else None
        self._manifest_store = as_manifest_store(manifest_store)
        if len(manifest_file.fragments.unknown_row_counts()):
            self._resolve_row_counts()

    def _resolve_row_counts(self) -> None:
        """A fragment whose manifest says 0 rows has its data file's count (pylance reads it so
        too): never read as empty, and counts never go negative."""
        from ..file.reader import LanceFileReader

        frags = self._mf.fragments
        counts = {}
        for i in frags.unknown_row_counts().tolist():
            df = frags.fragment(i).files[0]
            uri = self._ctx.resolver.data_file_uri(df.path, df.base_id if df.HasField("base_id") else None)
            n = LanceFileReader(uri, store=self._ctx.store_for(uri)).num_rows
            if n < frags.num_deleted_rows[i]:
                raise CorruptFileError(
                    f"fragment {int(frags.ids[i])} deletes {int(frags.num_deleted_rows[i])} rows "
                    f"of the {n} its data file holds", uri)
            counts[i] = n
        self._mf.set_row_counts(counts)

    @classmethod
    def open(cls, uri, version=None, *, storage_options=None, base_store_params=None,
             manifest_store=None) -> "Dataset":
        from ..table.refs import resolve_version_ref

        uri = normalize_uri(uri)
        store = open_store(uri, storage_options, manifest_store)
        uri, version = resolve_version_ref(uri, version, store=store)  # a branch's tag: tree/
        mf = load_manifest(uri, version, store=store)
        return cls(uri, mf, storage_options, base_store_params=base_store_params,
                   manifest_store=store.manifest_store)

    def __repr__(self):
        return f"Dataset({self._uri!r}, version={self.version})"

    _CACHED = ("_ctx", "fragment_table", "_row_id_index", "_direct_plans")

    def _adopt(self, committed) -> "Dataset":
        """Move this object to the version ``committed`` (a Dataset or ManifestFile)."""
        mf = committed._mf if isinstance(committed, Dataset) else committed
        if mf is self._mf:
            return self
        self._mf = mf
        for name in self._CACHED:
            self.__dict__.pop(name, None)
        return self

    def _snapshot(self) -> "Dataset":
        """A separate object at this version, for operation modules to commit through."""
        return Dataset(self._uri, self._mf, self._storage_options,
                       base_store_params=self._base_store_params,
                       manifest_store=self._manifest_store)

    def __reduce__(self):
        return (_reopen, (self._uri, self.version, self._storage_options, self._base_store_params,
                          self._manifest_store))

    # -- identity and metadata --------------------------------------------------------------
    @property
    def uri(self) -> str:
        return self._uri

    @property
    def storage_options(self) -> dict | None:
        return self._storage_options

    @property
    def manifest_store(self):
        """The external manifest store this view resolves and commits versions through (None:
        the object store's own conditional put)."""
        return self._manifest_store

    @property
    def base_store_params(self) -> dict | None:
        """Per-base storage options this view reads and writes with (see ``dataset.bases``)."""
        return self._base_store_params

    @property
    def version(self) -> int:
        return self._mf.version

    @property
    def manifest(self):
        """The ``lance.table.Manifest`` protobuf of this version."""
        return self._mf.manifest

    @property
    def manifest_file(self) -> ManifestFile:
        return self._mf

    @property
    def latest_version(self) -> int:
        return latest_manifest(self._uri, store=self._store).version

    @cached_property
    def _store(self):
        return open_store(self._uri, self._storage_options, self._manifest_store)

    @cached_property
    def _ctx(self) -> ScanContext:
        return ScanContext.from_manifest(self._uri, self._mf.header, self._storage_options,
                                         self._base_store_params)

    @property
    def schema(self) -> pa.Schema:
        return self._ctx.schema

    @property
    def lance_fields(self) -> list:
        return list(self._ctx.fields)

    @property
    def data_storage_version(self) -> str:
        return self._mf.data_storage_version

    @property
    def has_stable_row_ids(self) -> bool:
        return bool(self._mf.reader_feature_flags & FLAG_STABLE_ROW_IDS)

    @property
    def base_paths(self) -> dict[int, BasePath]:
        return {b.id: BasePath.from_pb(b) for b in self._mf.header.base_paths}

    def config(self) -> dict:
        """``Manifest.config`` (a method, as in pylance)."""
        return dict(self._mf.header.config)

    @property
    def table_metadata(self) -> dict:
        return dict(self._mf.header.table_metadata)

    @property
    def tags(self):
        from .tags import Tags

        return Tags(self)

    @cached_property
    def fragment_table(self):
        """Columnar view of the fragment list (numpy arrays, no object per fragment)."""
        return self._mf.fragments

    # -- fragments --------------------------------------------------------------------------
    def _fragment_pbs(self):
        return list(self._mf.manifest.fragments)

    def get_fragment(self, fragment_id: int) -> Fragment | None:
        try:
            pb = self.fragment_table.fragment_by_id(int(fragment_id))
        except KeyError:
            return None
        return Fragment(self._ctx, pb)

    def _select_fragments(self, fragments):
        if fragments is None:
            return self._fragment_pbs()
        out = []
        for f in fragments:
            if isinstance(f, Fragment):
                out.append(f._pb)
            elif hasattr(f, "pb"):
                out.append(f.pb)
            else:
                frag = self.get_fragment(int(f))
                if frag is None:
                    raise InvalidArgumentError(f"no fragment {f} in version {self.version}")
                out.append(frag._pb)
        return out

    # -- reading ----------------------------------------------------------------------------
    def scanner_spec(self, columns=None, filter=None, with_row_id=False, with_row_address=False,
                     batch_size=None) -> ScanSpec:
        return ScanSpec.build(self.schema, columns, filter, with_row_id, with_row_address, batch_size)

    def to_batches(self, columns=None, filter=None, limit=None, offset=None, *args, **kwargs):
        """Stream the (filtered, projected) rows as RecordBatches (pylance's signature; every
        ``scanner()`` argument is accepted)."""
        return self._scan_batches(columns, filter, limit, offset, *args, **kwargs)

    def to_table(self, columns=None, filter=None, limit=None, offset=None, *args, **kwargs) -> pa.Table:
        """The (filtered, projected) rows as one Table (pylance's signature)."""
        return self._scan_table(columns, filter, limit, offset, *args, **kwargs)

    def count_rows(self, filter=None, *, fragments=None, **kwargs) -> int:
        """Live rows (deletions subtracted); from metadata alone when there is no filter."""
        if filter is None and fragments is None:
            table = self.fragment_table
            unknown = table.has_deletion_file & ~table.deletion_count_known
            if not unknown.any():
                return int(table.total_live_rows)
        if filter is None:
            return sum(f.count_rows() for f in self._wrap(self._select_fragments(fragments)))
        spec = self.scanner_spec([], filter)
        return sum(b.num_rows for b in scan_batches(self._ctx, self._select_fragments(fragments), spec))

    def _wrap(self, pbs):
        return [Fragment(self._ctx, pb) for pb in pbs]

    def _live_counts(self, pbs) -> np.ndarray:
        return np.array([pb.physical_rows - Fragment(self._ctx, pb).num_deletions for pb in pbs],
                        dtype=np.int64)

    def take(self, indices, columns=None, *, with_row_id=False, with_row_address=False) -> pa.Table:
        """Rows by offset among this version's live rows, in the order given; ``columns`` as
        in ``scanner()`` (names, nested paths, or a dict of SQL expressions)."""
        from .take import _as_indices, take_from_fragments

        if not (with_row_id or with_row_address):
            plan = self._direct_take_plan(columns)
            if plan is not None:
                idx = _as_indices(indices)
                if idx.size:
                    return plan.take(idx)
        if self._needs_projection(columns) and not (with_row_id or with_row_address):
            return self._take_projected(indices, columns)
        pbs = self._fragment_pbs()
        return take_from_fragments(self._ctx, pbs, self._live_counts(pbs), indices, columns,
                                   with_row_id, with_row_address)

    # Column sets whose direct-take plan a view remembers (a training loop asks for one or
    # two; each plan holds its files' maps).
    _DIRECT_PLANS_KEPT = 8

    def _direct_take_plan(self, columns):
        """This view's direct-take plan (``direct_take.py``) for ``columns`` (None or names),
        or None when they take the general path; looked up once per column set, so a take
        of a few rows costs no per-call planning."""
        if columns is None:
            key = None
        elif isinstance(columns, (list, tuple)) and all(isinstance(c, str) for c in columns):
            key = tuple(columns)
        else:
            return None
        plans = self.__dict__.setdefault("_direct_plans", {})
        if key in plans:
            return plans[key]
        from .direct_take import direct_plan

        plan = None
        if not self._needs_projection(columns):
            spec = ScanSpec.build(self.schema, columns)
            if spec.columns:
                pbs = self._fragment_pbs()
                found = direct_plan(self._ctx, pbs, spec.columns)
                if found is not None and found.live_rows == int(self._live_counts(pbs).sum()):
                    plan = found
        if len(plans) >= self._DIRECT_PLANS_KEPT:
            plans.clear()
        plans[key] = plan
        return plan

    def head(self, num_rows: int = 10, columns=None, **kwargs) -> pa.Table:
        return self.scanner(columns=columns, limit=num_rows, **kwargs).to_table()

    # -- versions ---------------------------------------------------------------------------
    def versions(self) -> list[dict]:
        return list_versions(self._uri, store=self._store)

    def checkout_version(self, version) -> "Dataset":
        """This dataset (or branch) at an int version; a tag name opens the tagged version
        (from the dataset root's ``_refs/tags``, on whichever branch it names)."""
        uri = self._uri
        if isinstance(version, str):
            from .branches import dataset_root

            uri = dataset_root(self)
        return Dataset.open(uri, version, storage_options=self._storage_options,
                            base_store_params=self._base_store_params,
                            manifest_store=self._manifest_store)

    def checkout_latest(self) -> "Dataset":
        return Dataset.open(self._uri, None, storage_options=self._storage_options,
                            base_store_params=self._base_store_params,
                            manifest_store=self._manifest_store)

    def restore(self) -> None:
        """Commit this (old) version's content as the new latest version (and move there)."""
        from ..table.commit import commit_transaction
        from ..table.transaction import Restore, Transaction

        latest = self.latest_version
        mf = commit_transaction(self._uri, Transaction(latest, Restore(self.version)),
                                store=self._store,
                                restore_source=(self._mf.manifest, self._mf.indices))
        self._adopt(mf)
        from .auto_cleanup import maybe_auto_cleanup

        maybe_auto_cleanup(self)

    def _commit(self, operation, *, read_version=None, **kw) -> "Dataset":
        """Commit ``operation`` planned against this version and move this object there."""
        from .write import commit

        new = commit(self._uri, operation,
                     read_version=self.version if read_version is None else read_version,
                     storage_options=self._storage_options,
                     base_store_params=self._base_store_params,
                     manifest_store=self._manifest_store, **kw)
        return self._adopt(new)

    def _commit_plan(self, plan, **kw) -> "Dataset":
        """Commit a plan (operation + files written for it); a failed commit removes them."""
        from .write import delete_files

        try:
            return self._commit(plan.operation, **kw)
        except BaseException:
            for uri, options in plan.written:
                delete_files([uri], options)
            raise

    # -- config and metadata (pylance's return values) ---------------------------------------
    def update_config(self, values: dict, *, replace: bool = False) -> dict:
        """Set (value) or delete (None) ``Manifest.config`` keys; returns the new config."""
        from .schema_evolution import config_update

        self._commit(config_update(values, replace))
        return dict(self._mf.header.config)

    def delete_config_keys(self, keys) -> None:
        from .schema_evolution import config_update

        self._commit(config_update({k: None for k in keys}, False))

    def update_metadata(self, values: dict, *, replace: bool = False) -> dict:
        """Set (value) or delete (None) ``Manifest.table_metadata`` keys; returns the result."""
        from .schema_evolution import table_metadata_update

        self._commit(table_metadata_update(values, replace))
        return dict(self._mf.header.table_metadata)

    def update_schema_metadata(self, values: dict, *, replace: bool = False) -> dict:
        """Set (value) or delete (None) schema metadata keys; returns the new schema metadata."""
        from .schema_evolution import decoded_metadata, schema_metadata_update

        self._commit(schema_metadata_update(values, replace))
        return decoded_metadata(self._mf.header.schema_metadata)

    def replace_schema_metadata(self, new_metadata: dict) -> None:
        self.update_schema_metadata(new_metadata, replace=True)

    def update_field_metadata(self, field_updates: dict, *, replace: bool = False) -> None:
        """``{field path or id: {key: value | None}}`` on the named fields."""
        from .schema_evolution import field_metadata_update

        self._commit(field_metadata_update(self._ctx.fields, field_updates, replace))

    def replace_field_metadata(self, field_name: str, new_metadata: dict) -> None:
        self.update_field_metadata({field_name: new_metadata}, replace=True)

    # -- mutations living in their own modules -----------------------------------------------
    def delete(self, predicate, *, conflict_retries: int = 10, retry_timeout=None) -> dict:
        """Delete the rows matching ``predicate``; ``{"num_deleted_rows": n}`` as pylance."""
        from ..errors import InvalidInputError
        from .delete import delete_rows

        try:
            new, n = delete_rows(self._snapshot(), predicate, conflict_retries=conflict_retries)
        except InvalidArgumentError as e:  # pylance raises OSError for a bad delete predicate
            if isinstance(e, OSError):
                raise
            raise InvalidInputError(str(e)) from e
        self._adopt(new)
        return {"num_deleted_rows": n}

    def update(self, updates: dict, where=None, conflict_retries: int = 10,
               retry_timeout=None) -> dict:
        """Set columns (``{name: SQL expression | pyarrow Expression | value}``) on the rows
        matching ``where`` (all rows if None); the rows are rewritten as new fragments.
        Returns ``{"num_rows_updated": n}`` as pylance."""
        from .update import update_rows

        new, n = update_rows(self._snapshot(), updates, where, conflict_retries=conflict_retries)
        self._adopt(new)
        return {"num_rows_updated": n}

    def insert(self, data, *, mode: str = "append", **kwargs) -> None:
        """Append (or overwrite with) ``data`` and move to the new version, as pylance."""
        from .write import write_dataset

        kwargs.setdefault("storage_options", self._storage_options)
        kwargs.setdefault("base_store_params", self._base_store_params)
        kwargs.setdefault("manifest_store", self._manifest_store)
        self._adopt(write_dataset(data, self._uri, mode=mode, **kwargs))

    def merge_insert(self, on):
        """An upsert builder (pylance's ``MergeInsertBuilder``) keyed on column(s) ``on``."""
        from .merge_insert import MergeInsertBuilder

        return MergeInsertBuilder(self, on)

    def add_columns(self, transforms, read_columns=None, reader_schema=None,
                    batch_size=None) -> None:
        """New columns from SQL expressions, an all-null schema/field, a ``batch_udf`` or
        row-aligned data; one new data file per fragment, one Merge commit."""
        from .columns import add_columns

        self._commit_plan(add_columns(self, transforms, read_columns, reader_schema, batch_size))

    def drop_columns(self, columns) -> None:
        from .columns import drop_columns

        self._commit_plan(drop_columns(self, columns))

    def alter_columns(self, *alterations) -> None:
        """Rename, change nullability or cast columns (``{"path", "name", "nullable",
        "data_type"}`` as pylance); a cast rewrites the column's data."""
        from .columns import alter_columns

        self._commit_plan(alter_columns(self, alterations))

    def merge(self, data_obj, left_on: str, right_on: str | None = None, schema=None) -> None:
        """Left-join ``data_obj`` on ``left_on == right_on`` as new columns (pylance's merge)."""
        from .columns import merge_columns

        self._commit_plan(merge_columns(self, data_obj, left_on, right_on or left_on, schema))

    @property
    def optimize(self):
        from .compaction import DatasetOptimizer

        return DatasetOptimizer(self)

    @cached_property
    def _row_id_index(self):
        from .row_lookup import build_row_id_index

        return build_row_id_index(self)

    def take_row_ids(self, row_ids, columns=None, *, with_row_id=False,
                     with_row_address=False) -> pa.Table:
        """Rows by stable row id (through the row-id index), in the order given."""
        from .row_lookup import take_row_ids

        return take_row_ids(self, row_ids, columns, with_row_id, with_row_address)

    def take_addresses(self, addresses, columns=None) -> pa.Table:
        """Rows by row address ``(fragment_id << 32) | offset``, in the order given."""
        from .row_lookup import take_addresses

        return take_addresses(self, addresses, columns)

    def take_blobs(self, blob_column: str, ids=None, addresses=None, indices=None) -> list:
        """File-like readers of a blob v2 column's bytes for the selected rows (exactly one of
        ``ids``, ``addresses``, ``indices``); ``None`` where the blob is null."""
        from .blobs import take_blobs

        return take_blobs(self, blob_column, ids=ids, addresses=addresses, indices=indices)

    def validate(self) -> None:
        """Check that every referenced data and deletion file exists and opens."""
        from .validate import validate_dataset

        validate_dataset(self)

    # -- multi-base, clones, branches, cleanup (logic in bases/clone/branches/cleanup.py) ----
    def add_bases(self, bases, transaction_properties: dict | None = None) -> "Dataset":
        """New version with more BasePaths (pylance's ``add_bases``: ids ``max + 1``)."""
        from .bases import add_bases

        self._adopt(add_bases(self._snapshot(), bases, transaction_properties=transaction_properties))
        return self

    def update_bases(self, changes: dict, transaction_properties: dict | None = None) -> "Dataset":
        """New version whose only change is base paths: ``{id_or_name: new_path | BasePath}``
        (relocation, re-tiering, failover). No data file is read, written or moved."""
        from .bases import update_bases

        self._adopt(update_bases(self._snapshot(), changes,
                                 transaction_properties=transaction_properties))
        return self

    def storage_prefixes(self) -> list:
        """The distinct storage prefixes this version touches (``bases.StoragePrefix``)."""
        from .bases import storage_prefixes

        return storage_prefixes(self)

    def shallow_clone(self, target_uri, version=None, *, storage_options: dict | None = None,
                      base_store_params: dict | None = None) -> "Dataset":
        """New dataset at ``target_uri`` referencing this one's files (at ``version``: None =
        this version, an int, or a tag) through a dataset-root BasePath, as Lance does."""
        from .clone import shallow_clone

        return shallow_clone(self, target_uri, version, storage_options=storage_options,
                             base_store_params=base_store_params)

    @property
    def branch(self) -> str | None:
        """The branch this version belongs to (None = main)."""
        h = self._mf.header
        return h.branch if h.HasField("branch") else None

    @property
    def branches(self):
        from .branches import Branches

        return Branches(self)

    def create_branch(self, name: str, version=None) -> "Dataset":
        """New branch ``name`` under ``tree/{name}`` from ``version`` (None = this version, an
        int on this branch, or a tag); returns the branch's Dataset."""
        from .branches import create_branch

        return create_branch(self, name, version)

    def checkout_branch(self, name: str | None, version=None) -> "Dataset":
        """The latest (or ``version``) of branch ``name`` (None or "main" = the main branch)."""
        from .branches import checkout_branch

        return checkout_branch(self, name, version)

    def cleanup_old_versions(self, older_than=None, retain_versions: int | None = None, *,
                             delete_unverified: bool = False,
                             error_if_tagged_old_versions: bool = True, dry_run: bool = False,
                             clones=(), owned_bases=(), progress=None):
        """Remove old versions and the files only they reference (pylance's semantics); see
        :func:`lancefmt.dataset.cleanup.cleanup_old_versions`. Returns ``CleanupStats``."""
        from .cleanup import cleanup_old_versions

        return cleanup_old_versions(self, older_than, retain_versions,
                                    delete_unverified=delete_unverified,
                                    error_if_tagged_old_versions=error_if_tagged_old_versions,
                                    dry_run=dry_run, clones=clones, owned_bases=owned_bases,
                                    progress=progress)


def _reopen(uri, version, storage_options, base_store_params=None, manifest_store=None):
    return Dataset.open(uri, version, storage_options=storage_options,
                        base_store_params=base_store_params, manifest_store=manifest_store)
