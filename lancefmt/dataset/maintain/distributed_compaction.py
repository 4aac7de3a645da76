"""Distributed compaction, pylance's ``lance.optimize.Compaction``: plan on a driver, execute
tasks anywhere (they pickle, and so do their results), commit on the driver.

* :meth:`Compaction.plan` bins the fragments of one version exactly as ``compact_files``
  does (:func:`.compaction.plan_rewrite_tasks`) into :class:`CompactionTask` s, each the
  pylance face of one :class:`.compaction.RewriteTask` (the engine ``compact_files`` and the
  Spark job run too);
* :meth:`CompactionTask.execute` runs that RewriteTask at the planned version (ids 0, nothing
  committed) and wraps its :class:`.compaction.GroupRewrite` as a :class:`RewriteResult`;
* :meth:`Compaction.commit` reserves fragment ids (one ReserveFragments commit) and commits
  every result as one group of a Rewrite planned against the tasks' version, as pylance does
  (two versions). A conflicting concurrent change (a delete in a compacted fragment) fails the
  commit with a CommitConflictError and removes the files the tasks wrote.

A task also remembers where its dataset is (URI, storage options), so a worker that has no
Dataset can call ``task.execute()`` (a lancefmt extension; pylance needs the dataset).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields as dc_fields

from ...errors import InvalidArgumentError
from ...table.fragment import FragmentMetadata
from ...table.transaction import Rewrite, RewriteGroup
from ..core.files import data_file_uris, delete_files
from ..core.plan import CommitPlan
from ..core.snapshot import Snapshot
from ..indices.remap import attach_index_remap
from .compaction import (CompactionMetrics, CompactionOptions, GroupRewrite, RewriteTask,
                         plan_rewrite_tasks, reserve_ids, rewrite_metrics)


def _snapshot_of(dataset) -> Snapshot:
    """The snapshot of a lancefmt Dataset (or a Snapshot)."""
    snapshot = getattr(dataset, "snapshot", dataset)
    if not isinstance(snapshot, Snapshot):
        raise InvalidArgumentError(
            f"expected a lancefmt dataset, got {type(dataset).__name__}")
    return snapshot


def _options_dict(options: CompactionOptions) -> dict:
    out = {}
    for f in dc_fields(options):
        value = getattr(options, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def _options_from(data: dict) -> CompactionOptions:
    known = {f.name for f in dc_fields(CompactionOptions)}
    kwargs = {k: v for k, v in data.items() if k in known}
    if "excluded_fragment_ids" in kwargs:
        kwargs["excluded_fragment_ids"] = tuple(kwargs["excluded_fragment_ids"] or ())
    return CompactionOptions(**kwargs)


def _frags_json(frags) -> list:
    return [f.to_json() for f in frags]


def _frags_from(data) -> list:
    return [FragmentMetadata.from_json(f) for f in data]


@dataclass(eq=True)
class RewriteResult:
    """What one executed task wrote: ``new_fragments`` (ids assigned at commit) replacing
    ``original_fragments``, read at ``read_version``."""

    read_version: int
    metrics: CompactionMetrics
    original_fragments: list
    new_fragments: list
    uri: str | None = field(default=None, compare=False)
    storage_options: dict | None = field(default=None, compare=False, repr=False)

    @property
    def old_fragments(self) -> list:
        return self.original_fragments

    @classmethod
    def of(cls, read_version: int, done: GroupRewrite, snapshot) -> "RewriteResult":
        """The result of a RewriteTask run on ``snapshot``."""
        return cls(read_version, rewrite_metrics([done]), list(done.old_fragments),
                   list(done.new_fragments), snapshot.uri, snapshot.storage_options)

    def __repr__(self):
        return (f"RewriteResult(read_version={self.read_version}, "
                f"new_fragments={self.new_fragments!r}, old_fragments={self.original_fragments!r})")

    def json(self) -> str:
        return json.dumps({"read_version": self.read_version, "metrics": vars(self.metrics),
                           "original_fragments": _frags_json(self.original_fragments),
                           "new_fragments": _frags_json(self.new_fragments)})

    @staticmethod
    def from_json(text: str) -> "RewriteResult":
        data = json.loads(text)
        return RewriteResult(int(data["read_version"]), CompactionMetrics(**data["metrics"]),
                             _frags_from(data["original_fragments"]),
                             _frags_from(data["new_fragments"]))


@dataclass(eq=True)
class CompactionTask:
    """Fragments to rewrite into new ones, planned at ``read_version``; pickles small."""

    read_version: int
    fragments: list
    options: CompactionOptions = field(default_factory=CompactionOptions, repr=False)
    uri: str | None = field(default=None, compare=False, repr=False)
    storage_options: dict | None = field(default=None, compare=False, repr=False)
    base_store_params: dict | None = field(default=None, compare=False, repr=False)

    def __repr__(self):
        return f"CompactionTask(read_version={self.read_version}, fragments={self.fragments!r})"

    def _snapshot(self, dataset) -> Snapshot:
        if dataset is None:
            if self.uri is None:
                raise InvalidArgumentError("this task does not know its dataset: pass it")
            return Snapshot.open(self.uri, self.read_version, storage_options=self.storage_options,
                                 base_store_params=self.base_store_params)
        snapshot = _snapshot_of(dataset)
        return snapshot if snapshot.version == self.read_version else snapshot.at(self.read_version)

    def execute(self, dataset=None) -> RewriteResult:
        """Rewrite this task's fragments (read at the planned version) as new fragments;
        nothing is committed. ``dataset``: the dataset (any version of it); None opens the
        dataset the task was planned on."""
        snapshot = self._snapshot(dataset)
        done = self.rewrite_task().execute(snapshot)
        return RewriteResult.of(self.read_version, done, snapshot)

    def rewrite_task(self) -> RewriteTask:
        """The engine's unit this task stands for."""
        return RewriteTask(self.read_version, [f.pb.SerializeToString() for f in self.fragments],
                           self.options)

    def json(self) -> str:
        return json.dumps({"read_version": self.read_version,
                           "fragments": _frags_json(self.fragments),
                           "options": _options_dict(self.options), "uri": self.uri})

    @staticmethod
    def from_json(text: str) -> "CompactionTask":
        data = json.loads(text)
        return CompactionTask(int(data["read_version"]), _frags_from(data["fragments"]),
                              _options_from(data.get("options") or {}), data.get("uri"))


@dataclass(eq=True)
class CompactionPlan:
    """The tasks of one compaction, all planned at ``read_version``."""

    read_version: int
    tasks: list
    options: CompactionOptions = field(default_factory=CompactionOptions, repr=False)

    def num_tasks(self) -> int:
        return len(self.tasks)

    def __repr__(self):
        return f"CompactionPlan(read_version={self.read_version}, tasks=<{len(self.tasks)} compaction tasks>)"

    def json(self) -> str:
        return json.dumps({"read_version": self.read_version,
                           "tasks": [json.loads(t.json()) for t in self.tasks],
                           "options": _options_dict(self.options)})

    @staticmethod
    def from_json(text: str) -> "CompactionPlan":
        data = json.loads(text)
        return CompactionPlan(int(data["read_version"]),
                              [CompactionTask.from_json(json.dumps(t)) for t in data["tasks"]],
                              _options_from(data.get("options") or {}))


def plan(snapshot: Snapshot, options: CompactionOptions) -> CompactionPlan:
    """The compaction tasks for ``snapshot`` (see :func:`.compaction.plan_rewrite_tasks`)."""
    tasks = [CompactionTask(t.read_version, [FragmentMetadata(pb) for pb in t.fragment_pbs()],
                            options, snapshot.uri, snapshot.storage_options,
                            snapshot.base_store_params)
             for t in plan_rewrite_tasks(snapshot, options)]
    return CompactionPlan(snapshot.version, tasks, options)


def commit(snapshot: Snapshot, results: list) -> tuple[Snapshot, CompactionMetrics]:
    """Commit executed tasks as one Rewrite: (the version committed, total metrics). No
    results: nothing is committed."""
    metrics = CompactionMetrics()
    if not results:
        return snapshot, metrics
    for r in results:
        if not isinstance(r, RewriteResult):
            raise InvalidArgumentError(f"expected RewriteResults, got {type(r).__name__}")
        for name in vars(metrics):
            setattr(metrics, name, getattr(metrics, name) + getattr(r.metrics, name))
    read_version = min(r.read_version for r in results)
    groups = [RewriteGroup([f.copy() for f in r.original_fragments],
                           [f.copy() for f in r.new_fragments]) for r in results]
    op = Rewrite(groups)
    new = [f for g in groups for f in g.new_fragments]
    written = [(u, snapshot.storage_options) for u in data_file_uris(snapshot.ctx.resolver, new)]
    plan_ = CommitPlan(op, written)
    try:
        reserved = reserve_ids(snapshot.latest(), op)
        written += [(u, snapshot.storage_options) for u in attach_index_remap(reserved, op)]
    except BaseException:
        delete_files([u for u, _ in written], snapshot.storage_options)
        raise
    reserved.run_after_commit()
    committed = reserved.commit_plan(plan_, read_version=read_version)
    return committed.run_after_commit(), metrics
