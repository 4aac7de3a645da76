"""pylance's ``lance.optimize``: compaction options, metrics, and distributed compaction
(``Compaction.plan`` on a driver, ``CompactionTask.execute`` on workers, ``Compaction.commit``
on the driver). The work is :mod:`lancefmt.dataset.maintain.distributed_compaction`'s; this
module takes pylance's arguments and moves the Dataset a commit is made from.
"""
from __future__ import annotations

from typing import TypedDict

from .dataset.maintain.compaction import CompactionMetrics, CompactionOptions as _Options
from .dataset.maintain import distributed_compaction as _distributed
from .dataset.maintain.distributed_compaction import CompactionPlan, CompactionTask, RewriteResult
from .errors import InvalidArgumentError

__all__ = ["Compaction", "CompactionMetrics", "CompactionOptions", "CompactionPlan",
           "CompactionTask", "RewriteResult"]


class CompactionOptions(TypedDict, total=False):
    """Options for compaction (pylance's names; see ``Dataset.optimize.compact_files``)."""

    target_rows_per_fragment: int
    max_rows_per_group: int
    max_bytes_per_file: int
    materialize_deletions: bool
    materialize_deletions_threshold: float
    num_threads: int
    batch_size: int
    io_buffer_size: int
    compaction_mode: str
    binary_copy_read_batch_bytes: int
    defer_index_remap: bool
    max_source_fragments: int
    max_source_rows: int
    max_source_bytes: int
    excluded_fragment_ids: list
    data_storage_version: str


def _resolve(dataset, options) -> _Options:
    if options is not None and not isinstance(options, dict):
        raise InvalidArgumentError(f"options must be a dict, not {type(options).__name__}")
    return _Options.resolve(dataset.snapshot.config(), **dict(options or {}))


class Compaction:
    """pylance's ``Compaction``: plan, execute or commit a compaction of a Dataset."""

    @staticmethod
    def plan(dataset, options: CompactionOptions | None = None) -> CompactionPlan:
        """The tasks compacting ``dataset``'s version would run (nothing is written)."""
        return _distributed.plan(dataset.snapshot, _resolve(dataset, options))

    @staticmethod
    def execute(dataset, options: CompactionOptions | None = None) -> CompactionMetrics:
        """Plan, execute and commit in one call (``dataset.optimize.compact_files``)."""
        return dataset.optimize.compact_files(**dict(options or {}))

    @staticmethod
    def commit(dataset, rewrites, options: CompactionOptions | None = None) -> CompactionMetrics:
        """Commit executed tasks' results; ``dataset`` moves to the version committed."""
        _resolve(dataset, options)  # refuse bad options as pylance does; none change a commit
        committed, metrics = _distributed.commit(dataset.snapshot, list(rewrites))
        if committed is not dataset.snapshot:
            dataset.adopt(committed)
        return metrics
