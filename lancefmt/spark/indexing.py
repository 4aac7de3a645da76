"""Building indices with Spark: one segment per task on the executors, one commit.

The driver pins a version and cuts its fragments into groups of whole fragments (about
``rows_per_task`` rows each). Every executor task trains a segment over its group
(``create_index_uncommitted``: it reads only its own fragments and writes ``_indices/{uuid}/``).
The driver then merges the segments into one when the index type merges its own files (BTREE:
the sorted runs, no data read again), and commits the index in one ``CreateIndex``; with
``merge=False``, or for types that cannot merge files, the segments are committed as one index
of several segments (delta segments), which pylance reads as well. pylance builds an index in
one process; here the build scales with the executors.

An INVERTED index is built as pylance's distributed builds are: each task stages its fragments
as one partition of a shared index directory, and the driver unites them into one partition
(``merge_index_metadata``) and commits it.

Vector indices (:func:`create_vector_index`) are trained once, on the driver, on a sample; the
tasks encode their fragments with that model and the driver gathers their rows into one
segment.

Nothing is visible before the commit; a failed job removes every segment it wrote. A task
stages its segment's directory before writing into it (:mod:`.jobs`), so the segments of
attempts that died or that Spark retried are removed by the job too, not left for a cleanup.
"""
from __future__ import annotations

from ..dataset.core.files import delete_index_dir
from ..dataset.indices.create import commit_segments, commit_staged, merge_segments
from ..dataset.write.staging import stage_file
from ..index.core.metadata import new_uuid, uuid_text
from ..table.index_entry import to_pb
from .jobs import Pinned, StagedJob, run_tasks

DEFAULT_ROWS_PER_TASK = 1 << 21
#: types whose tasks stage parts of one index (merged by the driver) instead of whole segments
STAGED_TYPES = ("INVERTED", "FTS")


def create_scalar_index(spark, uri, column: str, index_type: str, name: str | None = None, *,
                        rows_per_task: int = DEFAULT_ROWS_PER_TASK, merge: bool = True,
                        storage_options: dict | None = None, manifest_store: str | None = None,
                        **params):
    """Build the index on ``spark``'s executors and commit it; returns the committed
    :class:`~lancefmt.Dataset`."""
    pinned = Pinned.latest(uri, storage_options, manifest_store)
    snapshot = pinned.snapshot()
    groups = _groups(snapshot, rows_per_task)
    name = name or f"{column}_idx"
    if str(index_type).upper() in STAGED_TYPES:
        return _create_staged(spark, pinned, snapshot, uri, column, index_type, name, groups, params)
    job = StagedJob(pinned).open()
    written = []
    try:
        segments = run_tasks(spark, job, [(pinned, column, index_type, name, g, params)
                                          for g in groups], build_on_executor, "index")
        written = [_dir_of(snapshot, s) for s in segments]
        job.finish([d + "/" for d in written])  # the directories of dead attempts go
        if merge and len(segments) > 1:
            merged = merge_segments(snapshot, segments)
            written.append(_dir_of(snapshot, merged))
            segments = [merged]
        committed = commit_segments(snapshot, name, column, segments)
    except BaseException:
        job.abort()
        _remove(snapshot, written)
        raise
    if merge and len(written) > 1:  # the task segments the merged one replaced
        _remove(snapshot, written[:-1])
    from ..dataset import Dataset

    return Dataset(committed)


def _create_staged(spark, pinned, snapshot, uri, column, index_type, name, groups, params):
    """INVERTED: every task stages its fragments as a partition of one index directory (pylance's
    distributed layout), and the driver unites them into one partition and commits."""
    uid = new_uuid()
    job = StagedJob(pinned).open()
    index_dir = snapshot.ctx.resolver.index_dir_uri(uid, None)
    try:
        run_tasks(spark, job, [(pinned, column, index_type, name, g, {**params, "index_uuid": uid})
                               for g in groups], build_on_executor, "index")
        job.finish([])
        committed = commit_staged(snapshot, uid, name, column, index_type,
                                  [f for g in groups for f in g])
    except BaseException:
        job.abort()
        _remove(snapshot, [index_dir])
        raise
    from ..dataset import Dataset

    return Dataset(committed)


def build_on_executor(item, staging: str):
    """One group's segment, on an executor (an ``Index``, uncommitted)."""
    pinned, column, index_type, name, fragment_ids, params = item
    from ..dataset.indices.create import create_scalar_index as build

    snapshot = pinned.snapshot()
    params = dict(params)
    uid = params.pop("index_uuid", None)
    if uid is None:  # a segment of its own: staged, so a dead attempt's directory is removed
        uid = new_uuid()
        stage_file(staging, snapshot.ctx.resolver.index_dir_uri(uid) + "/", pinned.storage_options,
                   require_open=True)
    # else a partition of the job's shared index directory, removed whole if the job fails
    return build(snapshot, column, index_type, name, fragment_ids=fragment_ids, index_uuid=uid,
                 **params)


def _dir_of(snapshot, segment) -> str:
    pb = to_pb(segment)
    return snapshot.ctx.resolver.index_dir_uri(uuid_text(pb), pb.base_id if pb.HasField("base_id") else None)


def _remove(snapshot, dirs) -> None:
    """Delete segment directories the commit does not name."""
    for d in dirs:
        delete_index_dir(d, snapshot.ctx.options_for(d))


def create_vector_index(spark, uri, column: str, index_type: str, name: str | None = None, *,
                        metric: str = "L2", rows_per_task: int = DEFAULT_ROWS_PER_TASK,
                        storage_options: dict | None = None, manifest_store: str | None = None,
                        **params):
    """Build a vector index (IVF_FLAT, IVF_SQ, IVF_PQ, IVF_HNSW_*) with Spark and commit it in
    one ``CreateIndex``; returns the committed :class:`~lancefmt.Dataset`.

    The driver trains the model (IVF centroids, and the PQ codebook or SQ bounds) on a random
    sample of the column; every executor task assigns its fragments' vectors to partitions and
    encodes them with that model (a segment of its own, ``_indices/{uuid}/``); the driver then
    gathers the tasks' rows partition by partition into one segment (no vector is read again)
    and commits it. pylance builds in one process: here the encoding, the costly part,
    scales with the executors."""
    from ..dataset.indices.vector_create import plan_vector_build, train_shared_model

    pinned = Pinned.latest(uri, storage_options, manifest_store)
    snapshot = pinned.snapshot()
    req = plan_vector_build(snapshot, column, index_type, name, metric, params)
    model = train_shared_model(snapshot, req)
    groups = _groups(snapshot, rows_per_task)
    job = StagedJob(pinned).open()
    written = []
    try:
        task_params = {**req.params, **model}
        task_params.pop("index_type", None)
        task_params.pop("metric", None)
        segments = run_tasks(spark, job, [(pinned, req.column, req.params["index_type"], req.name,
                                           req.params["metric"], g, task_params) for g in groups],
                             encode_on_executor, "index")
        written = [_dir_of(snapshot, s) for s in segments]
        job.finish([d + "/" for d in written])  # the directories of dead attempts go
        if len(segments) > 1:
            merged = merge_segments(snapshot, segments)
            written.append(_dir_of(snapshot, merged))
            segments = [merged]
        committed = commit_segments(snapshot, req.name, req.column, segments)
    except BaseException:
        job.abort()
        _remove(snapshot, written)
        raise
    if len(written) > 1:
        _remove(snapshot, written[:-1])
    from ..dataset import Dataset

    return Dataset(committed)


def encode_on_executor(item, staging: str):
    """One group's segment encoded with the driver's model, on an executor (uncommitted)."""
    pinned, column, index_type, name, metric, fragment_ids, params = item
    from ..dataset.indices.vector_create import create_vector_index as build

    snapshot = pinned.snapshot()
    uid = new_uuid()  # staged first, so a dead attempt's directory is removed with the job
    stage_file(staging, snapshot.ctx.resolver.index_dir_uri(uid) + "/", pinned.storage_options,
               require_open=True)
    return build(snapshot, column, index_type, name, metric,
                 fragment_ids=fragment_ids, index_uuid=uid, **params)


def _groups(snapshot, rows_per_task: int) -> list:
    """Fragment ids cut into groups of about ``rows_per_task`` rows (whole fragments)."""
    groups, current, rows = [], [], 0
    for pb in snapshot.fragment_pbs():
        if current and rows + pb.physical_rows > rows_per_task:
            groups.append(current)
            current, rows = [], 0
        current.append(int(pb.id))
        rows += int(pb.physical_rows)
    if current:
        groups.append(current)
    return groups
