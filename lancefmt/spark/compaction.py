"""Distributed compaction: plan on the driver, rewrite fragment groups on executors, commit once.

The driver plans as ``Dataset.optimize.compact_files`` does
(:func:`~lancefmt.dataset.maintain.compaction.plan_rewrite_tasks`: the same bins, the same
``lance.compaction.*`` defaults); each group of adjacent fragments is one Spark task, which
reads its live rows (with their stable row ids and created/updated-at versions when the dataset
has them) and writes them as new fragments
(:meth:`~lancefmt.dataset.maintain.compaction.RewriteTask.execute`). The driver commits one
``Rewrite`` of all groups against the planned version; new fragment ids are assigned by that
commit, as pylance's ReserveFragments would. A concurrent append is rebased over (both
survive); a concurrent delete or update of a rewritten fragment makes the job re-plan and run
again on the latest version.
"""
from __future__ import annotations

from ..dataset.maintain.compaction import (
    CompactionMetrics, CompactionOptions, plan_rewrite_tasks, rewrite_metrics,
)
from ..dataset.core.commit import CONFLICT_RETRIES
from ..dataset.core.files import delete_files
from ..dataset.indices.remap import attach_index_remap, needs_remap
from ..dataset.maintain.compaction import reserve_ids
from ..table.transaction import Rewrite
from .jobs import Pinned, commit_job, run_tasks


def compact(spark, uri, *, target_rows_per_fragment: int | None = None,
            max_rows_per_group: int | None = None, max_bytes_per_file: int | None = None,
            materialize_deletions: bool | None = None,
            materialize_deletions_threshold: float | None = None,
            batch_size: int | None = None, compaction_mode: str | None = None,
            storage_options: dict | None = None, manifest_store: str | None = None,
            conflict_retries: int = CONFLICT_RETRIES) -> CompactionMetrics:
    """Compact the dataset at ``uri`` with ``spark``'s executors; pylance's
    ``compact_files`` arguments and metrics (see the module docstring)."""
    given = dict(target_rows_per_fragment=target_rows_per_fragment,
                 max_rows_per_group=max_rows_per_group, max_bytes_per_file=max_bytes_per_file,
                 materialize_deletions=materialize_deletions,
                 materialize_deletions_threshold=materialize_deletions_threshold,
                 batch_size=batch_size, compaction_mode=compaction_mode)

    remapped: list = []  # index files each run wrote (the driver's, not the tasks')

    def run(pinned: Pinned, job):
        snapshot = pinned.snapshot()
        options = CompactionOptions.resolve(snapshot.config(), **given)
        tasks = plan_rewrite_tasks(snapshot, options)
        if not tasks:
            return None, [], CompactionMetrics()
        rewrites = run_tasks(spark, job, [(pinned, t) for t in tasks], rewrite_on_executor,
                             "compact")
        operation = Rewrite([r.group for r in rewrites])
        if needs_remap(snapshot, operation):  # indices follow their rows to the new fragments
            reserved = reserve_ids(snapshot.latest(), operation)
            remapped.append(attach_index_remap(reserved, operation))
        return operation, [u for r in rewrites for u in r.files], rewrite_metrics(rewrites)

    try:
        _, metrics = commit_job(Pinned.latest(uri, storage_options, manifest_store), run,
                                        conflict_retries)
    except BaseException:
        delete_files([u for files in remapped for u in files], storage_options)
        raise
    if len(remapped) > 1:  # earlier runs lost a conflict: their segments were never committed
        delete_files([u for files in remapped[:-1] for u in files], storage_options)
    return metrics


def rewrite_on_executor(item, staging: str):
    """One group's rewrite, on an executor (the pinned version opened once per worker)."""
    pinned, task = item
    return task.execute(pinned.snapshot(), staging, staging_open=True)
