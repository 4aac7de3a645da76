"""Snapshot: one version of a dataset, as every dataset operation sees it.

A snapshot holds the version's manifest, the store it was read from, base-path resolution
and storage options, and per-version caches (opened data files, deletion vectors, plans).
Operations take a snapshot and hand back a new one when they commit; they never move a
user's ``Dataset`` (the facade in :mod:`lancefmt.dataset.dataset` does that), so a read, a
write or a mutation can be understood from its own module and this one.
"""
from __future__ import annotations

import threading
from functools import cached_property

import pyarrow as pa

from ...errors import CorruptFileError, InvalidArgumentError
from ...file.reader import LanceFileReader
from ...io import open_store
from ...io.uri import normalize_uri
from ...table.base_paths import BasePath
from ...table.manifest_stores import as_manifest_store
from ...table.feature_flags import FLAG_STABLE_ROW_IDS
from ...table.manifest import ManifestFile
from ...table.naming import TREE_DIR
from ...table.refs import resolve_version_ref
from ...table.transaction import Restore
from ...table.versions import latest_manifest, list_versions, load_manifest
from .commit import commit_manifest
from .context import ScanContext
from .files import data_file_uri, delete_files
from .session import Session


class Snapshot:
    """One committed version: manifest + store + resolution + caches (see module docstring).

    ``after_commit(snapshot)`` is what to run once a version committed from this snapshot
    (or one derived from it) is safely in place: :meth:`run_after_commit`, which callers call
    outside the region that removes their files when a commit fails (the facade uses it for
    the ``lance.auto_cleanup.*`` hook).
    """

    def __init__(self, uri: str, manifest_file: ManifestFile, storage_options=None, *,
                 base_store_params=None, manifest_store=None, after_commit=None, session=None):
        self.uri = uri
        self.session = session if session is not None else Session()
        self.manifest_file = manifest_file
        self.storage_options = dict(storage_options) if storage_options else None
        self.base_store_params = dict(base_store_params) if base_store_params else None
        self.manifest_store = as_manifest_store(manifest_store)
        self.after_commit = after_commit
        self._memo: dict = {}
        self._memo_lock = threading.Lock()
        if len(manifest_file.fragments.unknown_row_counts()):
            self._resolve_row_counts()

    @classmethod
    def open(cls, uri, version=None, *, storage_options=None, base_store_params=None,
             manifest_store=None, after_commit=None, session=None) -> "Snapshot":
        """``uri`` at ``version`` (None = latest, an int, or a tag name; a tag of a branch
        version opens that branch)."""
        uri = normalize_uri(uri)
        store = open_store(uri, storage_options, as_manifest_store(manifest_store))
        uri, version = resolve_version_ref(uri, version, store=store)  # a branch's tag: tree/
        mf = load_manifest(uri, version, store=store)
        return cls(uri, mf, storage_options, base_store_params=base_store_params,
                   manifest_store=store.manifest_store, after_commit=after_commit, session=session)

    def _derived(self, uri: str, mf: ManifestFile, manifest_store=None) -> "Snapshot":
        return Snapshot(uri, mf, self.storage_options, base_store_params=self.base_store_params,
                        manifest_store=manifest_store or self.manifest_store,
                        after_commit=self.after_commit, session=self.session)

    def _resolve_row_counts(self) -> None:
        """A fragment whose manifest says 0 rows has its data file's count (pylance reads it so
        too): never read as empty, and counts never go negative."""
        frags = self.manifest_file.fragments
        counts = {}
        for i in frags.unknown_row_counts().tolist():
            uri = data_file_uri(self.ctx.resolver, frags.fragment(i).files[0])
            n = LanceFileReader(uri, store=self.ctx.store_for(uri)).num_rows
            if n < frags.num_deleted_rows[i]:
                raise CorruptFileError(
                    f"fragment {int(frags.ids[i])} deletes {int(frags.num_deleted_rows[i])} rows "
                    f"of the {n} its data file holds", uri)
            counts[i] = n
        self.manifest_file.set_row_counts(counts)

    def __repr__(self):
        return f"Snapshot({self.uri!r}, version={self.version})"

    # -- what the version is ---------------------------------------------------------------
    @property
    def version(self) -> int:
        return self.manifest_file.version

    @property
    def manifest(self):
        """The ``lance.table.Manifest`` protobuf."""
        return self.manifest_file.manifest

    @property
    def header(self):
        """The manifest without its fragment list (cheap to read)."""
        return self.manifest_file.header

    @cached_property
    def store(self):
        return open_store(self.uri, self.storage_options, self.manifest_store)

    @cached_property
    def ctx(self) -> ScanContext:
        ctx = ScanContext.from_manifest(self.uri, self.header, self.storage_options,
                                        self.base_store_params)
        self.session.adopt(ctx)   # its caches count in (and are bounded by) the session
        return ctx

    @property
    def schema(self) -> pa.Schema:
        return self.ctx.schema

    @property
    def lance_fields(self) -> list:
        return list(self.ctx.fields)

    @property
    def data_storage_version(self) -> str:
        return self.manifest_file.data_storage_version

    @property
    def has_stable_row_ids(self) -> bool:
        return bool(self.manifest_file.reader_feature_flags & FLAG_STABLE_ROW_IDS)

    @property
    def base_paths(self) -> dict[int, BasePath]:
        return {b.id: BasePath.from_pb(b) for b in self.header.base_paths}

    def config(self) -> dict:
        return dict(self.header.config)

    @property
    def branch(self) -> str | None:
        """The branch this version belongs to (None = main)."""
        h = self.header
        return h.branch if h.HasField("branch") else None

    @property
    def root(self) -> str:
        """The root of the dataset this version belongs to (``uri`` minus ``/tree/{branch}``)."""
        branch = self.branch
        if branch is None:
            return self.uri
        suffix = "/" + TREE_DIR + "/" + branch
        if not self.uri.endswith(suffix):
            raise InvalidArgumentError(f"{self.uri} holds branch {branch!r} but is not at "
                                       f"<root>/{TREE_DIR}/{branch}")
        return self.uri[: -len(suffix)]

    @property
    def latest_version(self) -> int:
        return latest_manifest(self.uri, store=self.store).version

    def versions(self) -> list[dict]:
        return list_versions(self.uri, store=self.store)

    # -- fragments --------------------------------------------------------------------------
    @property
    def fragment_table(self):
        """Columnar view of the fragment list (numpy arrays, no object per fragment)."""
        return self.manifest_file.fragments

    def fragment_pbs(self) -> list:
        """Every fragment's ``DataFragment`` protobuf, in manifest order."""
        return list(self.manifest.fragments)

    def fragment_pb(self, fragment_id: int):
        """Fragment ``fragment_id``'s protobuf, or None when this version has no such fragment."""
        try:
            return self.fragment_table.fragment_by_id(int(fragment_id))
        except KeyError:
            return None

    def select_fragments(self, fragments) -> list:
        """Protobufs of ``fragments`` (ids, fragment objects carrying ``pb``), or all."""
        if fragments is None:
            return self.fragment_pbs()
        out = []
        for f in fragments:
            pb = getattr(f, "pb", None)
            if pb is None:
                pb = self.fragment_pb(int(f))
                if pb is None:
                    raise InvalidArgumentError(f"no fragment {f} in version {self.version}")
            out.append(pb)
        return out

    def index_snapshot(self) -> "Snapshot":
        """The version whose indices a scan of this source may use (itself)."""
        return self

    # -- per-version caches ------------------------------------------------------------------
    def memo(self, key, make):
        """``make()`` once per ``key`` for this version (plans, indexes: anything derived from
        immutable committed files)."""
        with self._memo_lock:
            if key in self._memo:
                return self._memo[key]
        value = make()
        with self._memo_lock:
            return self._memo.setdefault(key, value)

    # -- other versions ----------------------------------------------------------------------
    def at(self, version) -> "Snapshot":
        """This dataset (or branch) at an int version; a tag name opens the tagged version
        (from the dataset root's ``_refs/tags``, on whichever branch it names)."""
        uri = self.root if isinstance(version, str) else self.uri
        return Snapshot.open(uri, version, storage_options=self.storage_options,
                             base_store_params=self.base_store_params,
                             manifest_store=self.manifest_store, after_commit=self.after_commit,
                             session=self.session)

    def latest(self) -> "Snapshot":
        return self.at(None)

    def open_args(self) -> tuple:
        """What :meth:`open` needs to open this version again (for pickling)."""
        return (self.uri, self.version, self.storage_options, self.base_store_params,
                self.manifest_store)

    # -- committing ----------------------------------------------------------------------------
    @classmethod
    def commit_to(cls, uri, operation, read_version: int | None = None, *,
                  base_store_params=None, after_commit=None, session=None,
                  **options) -> "Snapshot":
        """Commit ``operation`` to the dataset at ``uri`` (see
        :func:`.commit.commit_manifest` for ``read_version`` and ``options``); the new
        version's snapshot, whose :meth:`run_after_commit` the caller runs."""
        uri, storage_options, store, mf = commit_manifest(uri, operation, read_version, **options)
        return cls(uri, mf, storage_options, base_store_params=base_store_params,
                   manifest_store=store.manifest_store, after_commit=after_commit, session=session)

    def commit(self, operation, *, read_version: int | None = None, **options) -> "Snapshot":
        """Commit ``operation`` planned against this version (or ``read_version``)."""
        return Snapshot.commit_to(
            self.uri, operation, self.version if read_version is None else read_version,
            storage_options=self.storage_options, manifest_store=self.manifest_store,
            base_store_params=self.base_store_params, after_commit=self.after_commit,
            session=self.session, **options)

    def run_after_commit(self) -> "Snapshot":
        """Run the ``after_commit`` hook for this (just committed) version; the commit has
        succeeded, so a failing hook never fails it."""
        if self.after_commit is not None:
            try:
                self.after_commit(self)
            except Exception:  # noqa: BLE001 -- e.g. a cleanup that could not list a store
                pass
        return self

    def commit_plan(self, plan, **options) -> "Snapshot":
        """Commit a :class:`.plan.CommitPlan`; a failed commit removes the files it wrote."""
        try:
            return self.commit(plan.operation, **options)
        except BaseException:
            for uri, storage_options in plan.written:
                delete_files([uri], storage_options)
            raise

    def restore(self) -> "Snapshot":
        """Commit this (old) version's content as the new latest version."""
        return self.commit(Restore(self.version), read_version=self.latest_version)
