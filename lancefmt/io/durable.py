"""Local data files made durable in the background, before any manifest names them.

A data file closed by :class:`~lancefmt.io.store.LocalStore` is renamed into place at once and
its ``fsync`` runs on a small pool of sync threads, overlapping the encoding of the next file
(a write of ten files used to wait for ten ``fsync`` calls one after another). The barrier,
:func:`wait_durable`, waits for every sync started so far in this process, then syncs the
directories the files were renamed into. It runs before a local manifest is created (so every
file a manifest names is durable before the manifest is) and wherever uncommitted files are
handed to another process to commit (a Spark task's result, ``write_fragments``).

``LANCEFMT_FSYNC=0`` turns the syncing of data files off, as pylance writes (a crash of the
machine may then leave a committed version naming lost data); manifests are still synced.

A failed sync is reported by the barrier as a :class:`~lancefmt.errors.StorageError`, so the
commit that waited for it fails and removes its files. Syncs belong to the writer's scope, as
uploads do (:func:`.uploads.io_scope`): a barrier in a scope waits for and reports its own
syncs and those of no (or an ended) scope, not a concurrent writer's; a barrier outside any
scope answers for all. The same barrier waits for S3 uploads finishing in the background
(:mod:`.uploads`).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from ..errors import storage_error
from .local_commit import fsync_dir
from .uploads import IoScope, counts_for, current_scope, wait_uploads

SYNC_THREADS = 4

_lock = threading.Lock()
_pending: list[tuple[Future, str, IoScope | None]] = []
_synced_dirs: set[str] = set()  # directories of files synced since the last barrier
_pool: ThreadPoolExecutor | None = None
PRUNE_AT = 256  # finished syncs are folded into _synced_dirs once this many are pending


def sync_enabled() -> bool:
    """Whether closed data files are synced (``LANCEFMT_FSYNC``, default on)."""
    return os.environ.get("LANCEFMT_FSYNC", "1").strip().lower() not in ("0", "false", "off", "no")


def _sync_and_close(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def defer_sync(fd: int, path: str) -> None:
    """Own ``fd`` (an open descriptor of the file now at ``path``): fsync it in the background,
    then close it. :func:`wait_durable` (in the current scope) waits for it."""
    global _pool
    scope = current_scope()
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(SYNC_THREADS, thread_name_prefix="lancefmt-sync")
        _pending.append((_pool.submit(_sync_and_close, fd), path, scope))
        if len(_pending) >= PRUNE_AT:  # files written and never committed: keep memory flat
            keep = []
            for entry in _pending:
                future, p, _ = entry
                if future.done() and future.exception() is None:
                    _synced_dirs.add(os.path.dirname(p))
                else:
                    keep.append(entry)
            _pending[:] = keep


def wait_durable() -> None:
    """Return once every file handed to :func:`defer_sync` that this barrier answers for (in
    a scope: its own and unscoped or ended scopes' files; outside any: all in the process) is
    on stable storage, with its directory entry. A failed sync raises StorageError (naming the
    file) in those barriers until that file is removed (after an fsync error the kernel may
    have dropped the data: no manifest may name the file). Object-store uploads still
    finishing in the background are waited for first (:mod:`.uploads`)."""
    wait_uploads()
    scope = current_scope()
    with _lock:
        if not _pending and not _synced_dirs:
            return
        pending = [e for e in _pending if counts_for(e[2], scope)]
        directories = set(_synced_dirs)
    failed = None
    for future, path, _ in pending:
        error = future.exception()
        if error is not None and failed is None and os.path.exists(path):
            failed = (error, path)
        directories.add(os.path.dirname(path))
    for directory in sorted(directories):
        fsync_dir(directory)
    waited = {id(entry) for entry in pending}
    with _lock:  # concurrent barriers may share entries: each waits for all it saw
        _pending[:] = [e for e in _pending if id(e) not in waited or
                       (e[0].exception() is not None and os.path.exists(e[1]))]
        _synced_dirs.difference_update(directories)
    if failed is not None:
        error, path = failed
        if isinstance(error, OSError):
            raise storage_error(error, "fsync", path) from error
        raise error


def pending_count() -> int:
    """Syncs started and not yet waited for (for tests)."""
    with _lock:
        return len(_pending)


def failed_paths() -> list[str]:
    """Files whose sync failed and which were not removed since (for tests)."""
    with _lock:
        entries = list(_pending)
    return [p for f, p, _ in entries if f.done() and f.exception() is not None
            and os.path.exists(p)]


def _forget_after_fork():
    """A forked child (a PySpark worker) owns none of its parent's syncs or threads."""
    global _pool, _lock
    _pool = None
    _lock = threading.Lock()
    del _pending[:]
    _synced_dirs.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
