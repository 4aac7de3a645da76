"""Distributed write jobs (Spark): the staging records that let a job clean up after its tasks.

Every task records each data file under the job's staging prefix *before* creating it, and
holds a liveness record while it writes; the driver commits the files of the tasks that
reported back, or aborts the job, removing every staged file, including those of tasks that
died or whose results Spark discarded. Nothing a job writes is visible before its commit.
"""
from __future__ import annotations

import contextlib
import os
import time
import uuid

from ...errors import CommitConflictError
from ...io import open_store
from ...io.uri import check_relative, child, normalize_uri, split_uri
from ..core.files import delete_files

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
