"""``Dataset.cleanup_old_versions``: remove old versions and the files only they referenced.

Semantics follow pylance 14.0.2 / Lance's ``cleanup.rs`` (checked by experiment):

* a version is *old* when it is older than ``older_than`` (default 14 days when neither policy
  is given) and, with ``retain_versions=n``, not among the last ``n``; the version the Dataset
  shows and every newer one, tagged versions, and versions a branch was forked from are always
  kept. An old tagged version raises unless ``error_if_tagged_old_versions=False``;
* an old version's manifest goes, and so does every data, deletion, index and transaction file
  that no retained version references. A file that *no* manifest references (a failed write's
  leftover) is only removed once it is 7 days old, or with ``delete_unverified=True``; files
  modified after the oldest retained version was committed are never touched (they may belong
  to a write in progress; as in pylance 14, versions kept only because of a tag or a branch
  fork do not count for that bar);
* an index directory (``_indices/{uuid}/``) no retained version references goes whole: its
  files under the rules above, then (local disks) its directories, as pylance 14 removes them;
  an empty one (a writer killed right after creating it) once its own time passes the same
  bar as an unverified file;
* write temporaries count as unverified files of their directory: pylance's ``data/.tmp*``
  rule, and lancefmt's ``.tmp_<name>_<hex>`` beside a deletion or transaction file, and the
  staging records of a distributed job (``_lancefmt_staging/``), which a killed writer leaves
  and pylance does not know;
* the statistics mirror pylance's ``CleanupStats``.

What lancefmt adds, so that a killed writer leaves nothing behind: on S3, the multipart uploads
begun below the root's data, deletion, index and transaction directories and never completed
(a writer killed mid-upload leaves them: invisible, but billed) are aborted under the same bar
as unverified files (``aborted_uploads``); pylance's cleanup does not list them.

And so that nothing referenced is ever deleted:

* files referenced by any version of any branch (``tree/*``) and of the shallow clones passed
  in ``clones`` (Lance cannot know its clones: list every clone, direct or indirect) are kept;
* by default only the dataset root is cleaned (``data/``, ``_deletions/``, ``_indices/``,
  ``_transactions/``, temp files in ``_versions/``), as in pylance 14: another base may be a
  bucket prefix shared with other datasets, a clone's source, or whatever a crafted old
  manifest names, so its files are never touched unless the caller names the base in
  ``owned_bases`` (owned by this dataset alone). Even then only the data, deletion and index
  files that removed versions referenced go - found from those manifests, never by listing
  the base - and a base that is another dataset (a clone's source) is refused.
"""
from __future__ import annotations

import time
import uuid as _uuid
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from ...errors import InvalidArgumentError, InvalidPathError
from ...io import open_store
from ...io.uri import child, normalize_uri
from ...table.base_paths import BasePath, BasePathResolver, resolve_base_uri
from ...table.commit import transaction_file_uri
from ...table.naming import (
    DATA_DIR, DELETIONS_DIR, INDICES_DIR, TRANSACTIONS_DIR, VERSIONS_DIR,
)
from ...table.manifest import read_manifest
from ...table.refs import branch_uri, list_branches, list_tags
from ...table.versions import list_manifests
from ..write.staging import STAGING_DIR

UNVERIFIED_THRESHOLD = timedelta(days=7)
DEFAULT_OLDER_THAN = timedelta(days=14)


@dataclass
class CleanupStats:
    """What a cleanup removed (with ``dry_run``: would remove); names as pylance's."""

    bytes_removed: int = 0
    old_versions: int = 0
    data_files_removed: int = 0
    transaction_files_removed: int = 0
    index_files_removed: int = 0
    deletion_files_removed: int = 0
    failed_deletes: int = 0
    removed: list = field(default_factory=list)   # URIs, manifests first
    dry_run: bool = False
    aborted_uploads: list = field(default_factory=list)  # objects of stale multipart uploads

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in (
            "bytes_removed", "old_versions", "data_files_removed", "transaction_files_removed",
            "index_files_removed", "deletion_files_removed", "failed_deletes", "removed",
            "dry_run")}


class _Refs:
    """File URIs referenced by a set of manifests (index directories by prefix)."""

    def __init__(self):
        self.files: set[str] = set()
        self.index_dirs: set[str] = set()

    def add_manifest(self, dataset_uri: str, mf) -> None:
        h = mf.header
        resolver = BasePathResolver(dataset_uri, h.base_paths, mf.uri)
        table = mf.fragments
        if table.num_files:
            paths = table.data_file_paths().to_pylist()
            bases = table.file_base_id
            for b in np.unique(bases).tolist():
                d = resolver.data_dir(None if b < 0 else b)
                for i in np.flatnonzero(bases == b).tolist():
                    self.files.add(d + "/" + paths[i])
        names = table.deletion_file_names()
        for i in np.flatnonzero(table.has_deletion_file).tolist():
            b = int(table.deletion_base_id[i])
            self.files.add(resolver.deletion_file_uri(names[i], None if b < 0 else b))
        if h.transaction_file:
            try:
                self.files.add(transaction_file_uri(dataset_uri, h.transaction_file))
            except InvalidPathError:
                pass  # names nothing inside _transactions/: nothing there to keep or remove
        for idx in mf.indices:
            name = str(_uuid.UUID(bytes=bytes(idx.uuid.uuid)))
            self.index_dirs.add(resolver.index_dir_uri(name, idx.base_id if idx.HasField("base_id") else None))

    def __contains__(self, uri: str) -> bool:
        if uri in self.files:
            return True
        return any(uri.startswith(d + "/") for d in self.index_dirs)


def _progress(iterable, enabled, desc, total=None):
    if not enabled:
        return iterable
    from tqdm import tqdm  # only when asked for: a progress bar is optional

    return tqdm(iterable, desc=desc, total=total, unit="file", leave=False)


def _kind(rel: str, name: str) -> str | None:
    """What a file below the dataset root is, from its place (Lance's rules, and lancefmt's
    write temporaries: ``.tmp_<name>_<hex>`` beside the file a killed writer was writing, and
    a distributed job's staging records); None = leave it. A temporary is never referenced,
    so it goes only once it cannot belong to a write in progress."""
    top = rel.split("/", 1)[0]
    temp = name.startswith(".tmp")
    if top == DATA_DIR and (name.endswith(".lance") or temp):  # pylance 14 removes data/.tmp*
        return "data"
    if top == DELETIONS_DIR and (name.endswith(".arrow") or name.endswith(".bin") or temp):
        return "deletion"
    if top == INDICES_DIR and "/" in rel:
        return "index"
    if top == TRANSACTIONS_DIR and (name.endswith(".txn") or temp):
        return "transaction"
    if top == VERSIONS_DIR and temp:
        return "temp"
    if top == STAGING_DIR:
        return "temp"
    return None


@dataclass
class _Candidate:
    uri: str
    kind: str
    size: int
    mtime: float | None
    shared: bool  # in a plain data base: only verified files may go


def _is_dataset(store, uri: str) -> bool:
    return any(not i.is_dir for i in store.list(child(uri, VERSIONS_DIR)))


def _source_locations(snapshot, uri: str) -> set:
    """Every base location of every version of the dataset at ``uri`` (a clone's source): the
    bases a clone inherited appear there too (a clone copies its source's base list)."""

    store = snapshot.ctx.store_for(uri)
    out = {uri}
    for loc in list_manifests(uri, store=store):
        for b in read_manifest(loc.uri, size=loc.size, store=store).header.base_paths:
            out.add(resolve_base_uri(b.path))
    return out


def _root_candidates(snapshot) -> list[_Candidate]:
    """Every cleanable file below the dataset root, by listing (the root is the dataset's)."""
    out = []
    root = snapshot.uri
    for sub in (DATA_DIR, DELETIONS_DIR, INDICES_DIR, TRANSACTIONS_DIR, VERSIONS_DIR, STAGING_DIR):
        top = child(root, sub)
        infos = snapshot.store.list(top) if sub == VERSIONS_DIR else snapshot.store.walk(top)
        for info in infos:
            if info.is_dir:
                continue
            kind = _kind(info.uri[len(root) + 1:], info.name)
            if kind is not None:
                out.append(_Candidate(info.uri, kind, info.size, info.mtime, False))
    return out


def _owned(snapshot, bases, owned_bases) -> list[tuple[str, list[str]]]:
    """(base URI, the roots where its data/deletion/index files live) of each base the
    caller named in ``owned_bases`` (by name, id or path); another dataset is refused."""

    out = []
    foreign = set()  # other datasets' locations (a clone's source and the bases it inherited)
    if owned_bases:
        for b in bases:
            uri = resolve_base_uri(b.path)
            if b.is_dataset_root and uri != snapshot.uri and _is_dataset(snapshot.ctx.store_for(uri), uri):
                foreign |= _source_locations(snapshot, uri)
    for want in owned_bases or ():
        match = [b for b in bases if (isinstance(want, int) and b.id == want) or (
            isinstance(want, str) and want in (b.name, str(b.id), b.path))]
        if not match:
            raise InvalidArgumentError(
                f"owned base {want!r} is not a base path of the dataset "
                f"(known: {sorted((b.id, b.name) for b in bases)})")
        for b in match:
            uri = resolve_base_uri(b.path)
            if uri == snapshot.uri or uri.startswith(snapshot.uri + "/"):
                continue  # inside the root: cleaned with it
            if uri in foreign or _is_dataset(snapshot.ctx.store_for(uri), uri):
                raise InvalidArgumentError(
                    f"base {want!r} ({uri}) is another dataset (a clone's source or a parent "
                    f"branch): it is never this dataset's to clean")
            roots = ([child(uri, d) for d in (DATA_DIR, DELETIONS_DIR, INDICES_DIR)]
                     if b.is_dataset_root else [uri])
            out.append((uri, roots))
    return out


def _owned_candidates(snapshot, owned, verified: "_Refs") -> list[_Candidate]:
    """Files in owned bases that removed versions referenced (an index directory such a
    version names is walked: its files are that index's)."""
    out, seen = [], set()

    def add(uri, kind, size=None, mtime=None):
        if uri in seen:
            return
        seen.add(uri)
        if size is None:
            try:
                size = snapshot.ctx.store_for(uri).size(uri)
            except FileNotFoundError:
                return  # already gone
        out.append(_Candidate(uri, kind, size, mtime, True))

    for _base, roots in owned:
        inside = tuple(r + "/" for r in roots)
        for uri in sorted(verified.files):
            if uri.startswith(inside):
                add(uri, "deletion" if "/" + DELETIONS_DIR + "/" in uri[len(_base):] else "data")
        for d in sorted(verified.index_dirs):
            if d.startswith(inside):
                for info in snapshot.ctx.store_for(d).walk(d):
                    add(info.uri, "index", info.size, info.mtime)
    return out


def _protected(snapshot, root: str, clones, progress) -> _Refs:
    """Files that branches (every version) and the given clones reference."""
    refs = _Refs()
    others = [branch_uri(root, name) for name in list_branches(root, store=snapshot.store)]
    if snapshot.branch is not None:
        others.append(root)
    for c in clones or ():
        others.append(c.uri if hasattr(c, "uri") else str(c))

    for uri in others:
        uri = normalize_uri(uri)
        if uri == snapshot.uri:
            continue
        store = open_store(uri, snapshot.storage_options)
        for loc in _progress(list_manifests(uri, store=store), progress, f"reading {uri}"):
            refs.add_manifest(uri, read_manifest(loc.uri, size=loc.size, store=store))
    return refs


def cleanup_old_versions(snapshot, older_than=None, retain_versions: int | None = None, *,
                         delete_unverified: bool = False,
                         error_if_tagged_old_versions: bool = True, dry_run: bool = False,
                         clones=(), owned_bases=(), progress=None,
                         now: float | None = None) -> CleanupStats:
    """Remove ``snapshot``'s old versions and unreferenced files (see the module docstring).

    ``older_than``: a ``timedelta``; ``retain_versions``: keep the last n versions;
    ``dry_run``: only report; ``clones``: URIs (or Datasets) of shallow clones whose files
    must survive; ``owned_bases``: names (or ids, or paths) of bases this dataset alone owns,
    whose files removed versions referenced may go too (by default only the dataset root is
    cleaned); ``progress``: show progress bars (tqdm); ``now``: the clock (tests).
    """

    if older_than is None and retain_versions is None:
        older_than = DEFAULT_OLDER_THAN
    if older_than is not None and not isinstance(older_than, timedelta):
        raise InvalidArgumentError(f"older_than must be a timedelta, not {older_than!r}")
    if retain_versions is not None and int(retain_versions) < 1:
        raise InvalidArgumentError("retain_versions must be positive")
    now = time.time() if now is None else float(now)
    store = snapshot.store
    root = snapshot.root
    locs = list_manifests(snapshot.uri, store=store)
    before_ns = None if older_than is None else int((now - older_than.total_seconds()) * 1e9)
    before_version = None
    if retain_versions is not None:
        n = int(retain_versions)
        before_version = locs[0].version if len(locs) <= n else locs[len(locs) - n].version
    tags = list_tags(root, store=store)
    tagged = {t.version: name for name, t in tags.items() if t.branch == snapshot.branch}
    forked = {b.parent_version for b in list_branches(root, store=store).values()
              if b.parent_branch == snapshot.branch}

    retained, verified = _Refs(), _Refs()
    old, tagged_old = [], {}
    earliest_retained = None
    bases = {}
    for loc in _progress(locs, progress, "reading manifests"):
        mf = read_manifest(loc.uri, size=loc.size, store=store)
        for b in mf.header.base_paths:
            bases.setdefault((b.id, b.path), b)
        should = ((before_ns is None or mf.timestamp_ns < before_ns)
                  and (before_version is None or mf.version < before_version))
        current = mf.version >= snapshot.version
        keep = current or not should or mf.version in tagged or mf.version in forked
        if mf.version in tagged and not current and should:
            tagged_old[tagged[mf.version]] = mf.version
        (retained if keep else verified).add_manifest(snapshot.uri, mf)
        if current or not should:  # kept by the policy (tags and forks do not move the bar)
            ts = mf.timestamp_ns / 1e9
            earliest_retained = ts if earliest_retained is None else min(earliest_retained, ts)
        if not keep:
            old.append(loc)
    if tagged_old and error_if_tagged_old_versions:
        raise InvalidArgumentError(
            f"{len(tagged_old)} tagged version(s) have been marked for cleanup. Either set "
            f"error_if_tagged_old_versions=False or delete the following tag(s) to enable "
            f"cleanup: {tagged_old}")
    protected = _protected(snapshot, root, clones, progress)


    stats = CleanupStats(dry_run=bool(dry_run))
    unverified_before = now - UNVERIFIED_THRESHOLD.total_seconds()
    doomed = []
    owned = _owned(snapshot, [BasePath.from_pb(b) for b in bases.values()], owned_bases)
    for c in _root_candidates(snapshot) + _owned_candidates(snapshot, owned, verified):
        if c.uri in retained or c.uri in protected:
            continue
        if c.mtime is not None and earliest_retained is not None and c.mtime >= earliest_retained:
            continue  # newer than every retained version: maybe a write in progress
        was_referenced = c.uri in verified
        maybe_in_progress = not delete_unverified and (c.mtime is None or c.mtime >= unverified_before)
        if c.shared:
            ok = was_referenced
        elif c.kind == "temp":
            ok = not maybe_in_progress
        else:
            ok = was_referenced or not maybe_in_progress
        if ok:
            doomed.append(c)

    counters = {"data": "data_files_removed", "deletion": "deletion_files_removed",
                "index": "index_files_removed", "transaction": "transaction_files_removed"}
    # Manifests first: once an old version is gone, nothing points at the files below.
    work = [(loc.uri, loc.size or 0, "manifest") for loc in old] + \
        [(c.uri, c.size, c.kind) for c in doomed]
    for uri, size, kind in _progress(work, progress and not dry_run, "deleting", len(work)):
        if not dry_run:
            try:
                (store if uri.startswith(snapshot.uri + "/") else snapshot.ctx.store_for(uri)).delete(uri)
            except OSError:
                stats.failed_deletes += 1
                continue
        stats.removed.append(uri)
        stats.bytes_removed += int(size)
        if kind == "manifest":
            stats.old_versions += 1
        elif kind in counters:
            setattr(stats, counters[kind], getattr(stats, counters[kind]) + 1)
    bar = earliest_retained if delete_unverified else (
        unverified_before if earliest_retained is None else min(earliest_retained, unverified_before))
    for d in (DATA_DIR, DELETIONS_DIR, INDICES_DIR, TRANSACTIONS_DIR):
        abort = getattr(store, "abort_stale_uploads", None)  # S3 (other stores: none)
        if abort is not None:
            stats.aborted_uploads += abort(child(snapshot.uri, d), bar, bool(dry_run))
    if not dry_run:
        _prune_dirs(snapshot, set(stats.removed), (retained, protected), verified, bar)
    return stats


def _owning_dir(snapshot, uri: str, verified: "_Refs") -> str | None:
    """The index directory (``_indices/{uuid}``) or job staging directory a removed file was
    in, or None."""
    root = snapshot.uri
    if uri.startswith(root + "/"):
        parts = uri[len(root) + 1:].split("/")
        if parts[0] in (INDICES_DIR, STAGING_DIR) and len(parts) > 2:
            return child(root, parts[0], parts[1])
        return None
    return next((d for d in verified.index_dirs if uri.startswith(d + "/")), None)


def _prune_dirs(snapshot, removed: set, keep: tuple, verified: "_Refs", bar: float) -> None:
    """Local directories do not go with their last file (pylance's cleanup removes a dead
    index directory whole): remove the index and staging directories this cleanup emptied,
    and every unreferenced index directory that holds no file and was last modified before
    ``bar`` (a writer in progress may just have created it)."""
    emptied = {d for d in (_owning_dir(snapshot, u, verified) for u in removed) if d}
    for d in sorted(emptied):
        snapshot.ctx.store_for(d).prune_empty_dirs(d)
    if not snapshot.store.has_dirs:
        return
    for info in snapshot.store.list(child(snapshot.uri, INDICES_DIR)):
        if info.is_dir and info.uri not in emptied and not any(info.uri in r.index_dirs for r in keep):
            snapshot.store.prune_empty_dirs(info.uri, older_than=bar)
