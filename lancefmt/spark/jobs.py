"""What every distributed Lance operation run by Spark shares.

A job pins a version on the driver, runs its tasks on the executors and commits once:

* :class:`Pinned` names the version (URI, version, options) and opens it on an executor once
  per Python worker (a manifest read, then reused by every task of that worker);
* :class:`StagedJob` is the job's staging area (:mod:`lancefmt.dataset.write.staging`): every
  file a task creates is recorded there first, so the files of tasks that died, were retried or
  were dropped by Spark are found and removed; only the files the committed results name stay;
* a task's result travels back as one pickled ``payload`` row (:func:`payload_batch`,
  :func:`collect_payloads`); Spark keeps one result per partition whatever the attempts, so a
  retried task never counts twice, and only the driver commits;
* :func:`commit_job` runs the job, commits its operation against the pinned version, and on a
  retryable conflict (a concurrent writer touched the same fragments) removes the job's files
  and runs it again on the latest version.

``LANCEFMT_SPARK_FAULTS`` (a directory) is a test hook: a task that finds a file named after
its job kind there removes it and kills its Python worker after writing its files, so tests
can check that a task killed mid-job leaves one commit and no duplicate rows.
"""
from __future__ import annotations

import contextlib
import os
import pickle
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ..dataset.core.commit import CONFLICT_RETRIES, conflict_backoff
from ..dataset.core.files import delete_files
from ..dataset.core.snapshot import Snapshot
from ..dataset.write.staging import (
    abort_staged_job, clear_staging, open_staged_job, staged_files, staged_task, staging_uri,
)
from ..errors import RetryableCommitConflictError
from ..io import io_scope, wait_durable

RESULT_SCHEMA = "payload binary"
FAULTS_ENV = "LANCEFMT_SPARK_FAULTS"


@dataclass(frozen=True)
class Pinned:
    """One version of a dataset, as a job's tasks see it (pickles small)."""

    uri: str
    version: int
    storage_options: dict | None = field(default=None, hash=False)
    manifest_store: str | None = None

    @classmethod
    def latest(cls, uri, storage_options=None, manifest_store=None) -> "Pinned":
        snap = Snapshot.open(uri, storage_options=storage_options, manifest_store=manifest_store)
        return cls(snap.uri, snap.version, storage_options, manifest_store)

    def at(self, version: int) -> "Pinned":
        return Pinned(self.uri, int(version), self.storage_options, self.manifest_store)

    def snapshot(self) -> Snapshot:
        """The pinned version, opened once per process (cached)."""
        key = (self.uri, self.version, _freeze(self.storage_options), self.manifest_store)
        with _CACHE_LOCK:
            snap = _SNAPSHOTS.get(key)
            if snap is not None:
                _SNAPSHOTS.move_to_end(key)
                return snap
        snap = Snapshot.open(self.uri, self.version, storage_options=self.storage_options,
                             manifest_store=self.manifest_store)
        with _CACHE_LOCK:
            _SNAPSHOTS[key] = snap
            while len(_SNAPSHOTS) > 8:
                _SNAPSHOTS.popitem(last=False)
        return snap

    def read(self, spark, columns=None, *, with_row_address: bool = True,
             with_row_id: bool = False, whole_fragments: bool = True, fragment_ids=None,
             prefilter: str | None = None):
        """A DataFrame of this version through the ``lance`` source: ``columns`` (None: all)
        and the metadata columns asked for; with ``whole_fragments`` each partition holds whole
        fragments in physical order. ``prefilter`` (Lance filter text) drops rows in the scan."""
        import json

        reader = spark.read.format("lance").option("version", self.version)
        if columns is not None:
            names = list(columns) + (["_rowaddr"] if with_row_address else []) + \
                (["_rowid"] if with_row_id else [])
            reader = reader.option("columns", json.dumps(names))
        reader = (reader.option("with_row_address", str(with_row_address).lower())
                  .option("with_row_id", str(with_row_id).lower())
                  .option("whole_fragments", str(whole_fragments).lower()))
        if prefilter:
            reader = reader.option("filter", prefilter)
        if fragment_ids is not None:
            reader = reader.option("fragment_ids", json.dumps(sorted(int(i) for i in fragment_ids)))
        if self.storage_options:
            reader = reader.option("storage_options", json.dumps(self.storage_options))
        if self.manifest_store:
            reader = reader.option("manifest_store", self.manifest_store)
        return reader.load(self.uri)


_SNAPSHOTS: OrderedDict = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _freeze(options):
    return tuple(sorted((k, repr(v)) for k, v in (options or {}).items()))


class StagedJob:
    """A distributed job's staging area: opened on the driver before any task runs; each task
    records its files there (and holds a liveness record while it writes)."""

    def __init__(self, pinned: Pinned):
        self.uri = pinned.uri
        self.storage_options = pinned.storage_options
        self.staging = staging_uri(pinned.uri, uuid.uuid4().hex)

    def open(self) -> "StagedJob":
        open_staged_job(self.staging, self.storage_options)
        return self

    @contextlib.contextmanager
    def task(self):
        """A task's writing: live while it runs, refused once the job is closed; its files
        are durable when it returns (the driver commits them). Its CPU-bound work keeps to
        the task's cores (:mod:`.task_cores`)."""
        from ..file.encode_pool import encode_threads
        from .task_cores import task_cores
        from .writer import task_encode_threads

        with io_scope(), task_cores():  # the task's barrier answers for its own files (io/uploads.py)
            with staged_task(self.staging, self.storage_options, require_open=True), \
                    encode_threads(task_encode_threads()):
                yield self.staging
            wait_durable()

    def finish(self, committed) -> None:
        """After the commit (or when nothing is to be committed): remove every staged file
        the commit does not name (attempts Spark retried or dropped), and the records."""
        keep = set(committed)
        stray = [u for u in staged_files(self.staging, self.storage_options) if u not in keep]
        delete_files(stray, self.storage_options)
        clear_staging(self.staging, self.storage_options)

    def abort(self) -> None:
        """The job failed: wait for its tasks still running to stop, remove all their files."""
        abort_staged_job(self.staging, self.storage_options)


def payload_batch(result) -> pa.RecordBatch:
    """One task result as the single row a job's DataFrame returns."""
    return pa.record_batch({"payload": pa.array([pickle.dumps(result)], pa.binary())})


def collect_payloads(df) -> list:
    """The task results of a job DataFrame (one pickled ``payload`` per row)."""
    return [pickle.loads(row.payload) for row in df.collect()]


def run_tasks(spark, job: StagedJob, tasks: list, run_one, kind: str) -> list:
    """``run_one(task, staging)`` for each picklable task, one Spark task each (an RDD of the
    tasks, so each travels only to its own executor task); the results, in task order.
    ``kind`` names the job for :func:`fault_point`."""
    if not tasks:
        return []

    def run_partition(items):
        from pyspark import cloudpickle

        for index, blob in items:
            task = cloudpickle.loads(blob)
            with job.task() as staging:
                result = run_one(task, staging)
            fault_point(kind)
            yield pickle.dumps((index, result))

    from pyspark import cloudpickle

    # cloudpickled here: tasks may hold functions defined in __main__ (a backfill's UDF)
    items = [(i, cloudpickle.dumps(t)) for i, t in enumerate(tasks)]
    rdd = spark.sparkContext.parallelize(items, len(items))
    results = [pickle.loads(b) for b in rdd.mapPartitions(run_partition).collect()]
    results.sort(key=lambda pair: pair[0])
    return [r for _, r in results]


def fragment_runs(batches, address: str = "_rowaddr"):
    """``(fragment id, [batches])`` for each run of consecutive rows of one fragment in
    ``batches`` (a partition of whole fragments keeps each fragment in one run)."""
    current, parts = None, []
    for batch in batches:
        if not batch.num_rows:
            continue
        frags = batch.column(address).to_numpy() >> 32
        bounds = np.flatnonzero(np.diff(frags)) + 1
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, frags.size]):
            fid = int(frags[lo])
            if fid != current:
                if current is not None:
                    yield current, parts
                current, parts = fid, []
            parts.append(batch.slice(int(lo), int(hi - lo)))
    if current is not None:
        yield current, parts


def physical_offsets(table, address: str = "_rowaddr") -> np.ndarray:
    """The physical row offsets (within their fragment) of ``table``'s row addresses."""
    return (table.column(address).to_numpy() & 0xFFFFFFFF).astype(np.uint32)


def fault_point(kind: str) -> None:
    """The test hook of the module docstring (a no-op unless ``LANCEFMT_SPARK_FAULTS`` is set)."""
    root = os.environ.get(FAULTS_ENV)
    if not root:
        return
    marker = os.path.join(root, kind)
    try:
        os.unlink(marker)  # exactly one task claims each armed fault
    except OSError:
        return
    os._exit(17)


def commit_job(pinned: Pinned, run, retries: int = CONFLICT_RETRIES, carry=None):
    """Run a job and commit it once: ``run(pinned, job)`` returns ``(operation or None, files
    its tasks wrote for it, result)``. Returns ``(committed snapshot, or the pinned one when
    there was nothing to do, result)``. A retryable conflict re-runs the job on the latest
    version; ``carry()`` then names the files the next run may reuse (kept; the rest of the
    job's files go). Any other failure removes every file the job wrote."""
    attempt = 0
    carried: set = set()  # files kept from earlier runs: ours to remove unless committed
    while True:
        snapshot = pinned.snapshot()
        job = StagedJob(pinned).open()
        try:
            operation, files, result = run(pinned, job)
        except BaseException:
            job.abort()
            delete_files(sorted(carried), pinned.storage_options)
            raise
        if operation is None:
            job.finish([])
            delete_files(sorted(carried), pinned.storage_options)
            return snapshot, result
        try:
            committed = snapshot.commit(operation)
        except RetryableCommitConflictError:
            attempt += 1
            keep = set(carry()) if carry is not None and attempt <= retries else set()
            job.finish(keep)  # every task has returned: nothing of the job is running
            delete_files(sorted(carried - keep), pinned.storage_options)
            carried = keep
            if attempt > retries:
                raise
            conflict_backoff(attempt)
            pinned = pinned.at(snapshot.latest_version)
            continue
        except BaseException:
            job.finish([])
            delete_files(sorted(carried), pinned.storage_options)
            raise
        job.finish(files)
        delete_files(sorted(carried - set(files)), pinned.storage_options)
        return committed.run_after_commit(), result
