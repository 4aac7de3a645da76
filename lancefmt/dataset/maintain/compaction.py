"""Compaction (``Dataset.optimize.compact_files``): rewrite small and deletion-heavy fragments.

Planning follows Lance's ``plan_compaction``: walking the fragments in order, a fragment is a
candidate when its deleted share exceeds ``materialize_deletions_threshold`` (with
``materialize_deletions``) or it has fewer than ``target_rows_per_fragment`` rows; runs of
adjacent candidates form bins (any other fragment ends a run); a bin of one fragment with
nothing to materialize is left alone. Each bin's live rows are read in order and written as
``rows // target_rows_per_fragment`` new fragments (at least one) of even size, as pylance
writes them (:func:`output_sizes`); all bins commit as the groups of
one Rewrite transaction (Rewrite's conflict rules apply). With stable row ids the new
fragments carry the rows' ids and created/updated-at versions, so row ids survive compaction.

Defaults come from the dataset's ``lance.compaction.*`` config keys, as in pylance.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError, LanceError
from ...io import io_scope
from ...table.fragment import FragmentMetadata
from ...table.rowids import carry_row_ids
from ...table.rowids.meta import load_created_at_versions, load_last_updated_at_versions
from ...table.transaction import ReserveFragments, Rewrite, RewriteGroup
from ..core.files import data_file_uris, delete_files
from ..core.plan import CommitPlan
from ..core.view import View
from ..indices.remap import attach_index_remap, segment_key
from ..read.blobs import with_blob_bytes
from ..read.scan import ScanSpec, load_deletions
from ..write.files import DEFAULT_MAX_BYTES_PER_FILE
from ..write.fragments import write_fragments
from .compact_reader import read_live_rows

DEFAULT_TARGET_ROWS = 1024 * 1024
DEFAULT_THRESHOLD = 0.1
CONFIG_PREFIX = "lance.compaction."


@dataclass
class CompactionMetrics:
    """What a compaction did (pylance's ``CompactionMetrics``)."""

    fragments_removed: int = 0
    fragments_added: int = 0
    files_removed: int = 0
    files_added: int = 0


COMPACTION_MODES = ("reencode", "try_binary_copy", "force_binary_copy")


class BinaryCopyError(LanceError, OSError):
    """``compaction_mode="force_binary_copy"`` on fragments whose files cannot be copied as
    they are (deleted rows to drop), as pylance refuses it (an OSError there)."""


@dataclass
class CompactionOptions:
    target_rows_per_fragment: int = DEFAULT_TARGET_ROWS
    max_rows_per_group: int = 1024
    max_bytes_per_file: int | None = None
    materialize_deletions: bool = True
    materialize_deletions_threshold: float = DEFAULT_THRESHOLD
    num_threads: int | None = None
    batch_size: int | None = None
    compaction_mode: str = "reencode"
    # planning limits (pylance 14): tasks are taken in fragment order while they fit
    max_source_fragments: int | None = None
    max_source_rows: int | None = None
    max_source_bytes: int | None = None
    excluded_fragment_ids: tuple = ()  # left alone; they also split runs of candidates
    # accepted and ignored: indices are always remapped at once, reads are not buffered by
    # bytes, and the rewritten fragments keep the dataset's file version
    data_storage_version: str | None = None
    defer_index_remap: bool = False
    io_buffer_size: int | None = None
    binary_copy_read_batch_bytes: int | None = None

    @classmethod
    def resolve(cls, config: dict, **given) -> "CompactionOptions":
        """Explicit arguments, then ``lance.compaction.*`` config, then defaults."""
        out = cls()
        mode = given.pop("compaction_mode", None) or config.get(CONFIG_PREFIX + "compaction_mode")
        if mode is not None:
            if mode not in COMPACTION_MODES:
                raise InvalidArgumentError(f"Invalid compaction mode {mode!r}. Valid values: "
                                           + ", ".join(map(repr, COMPACTION_MODES)))
            out.compaction_mode = mode
        unknown = set(given) - set(vars(cls()))
        if unknown:
            raise InvalidArgumentError(f"unknown compaction options {sorted(unknown)}")
        for name, default in vars(cls()).items():
            if name == "compaction_mode":
                continue
            value = given.get(name)
            if value is None and CONFIG_PREFIX + name in config and name != "excluded_fragment_ids":
                raw = config[CONFIG_PREFIX + name]
                value = (raw.lower() == "true") if isinstance(default, bool) else \
                    float(raw) if isinstance(default, float) else \
                    raw if name == "data_storage_version" else int(raw)
            if value is not None:
                setattr(out, name, tuple(int(i) for i in value)
                        if name == "excluded_fragment_ids" else value)
        if out.target_rows_per_fragment <= 0:
            raise InvalidArgumentError("target_rows_per_fragment must be positive")
        if not 0.0 <= out.materialize_deletions_threshold <= 1.0:
            raise InvalidArgumentError("materialize_deletions_threshold must be within [0, 1]")
        return out


def _deleted(pb) -> int:
    return pb.deletion_file.num_deleted_rows if pb.HasField("deletion_file") else 0


def plan_compaction(pbs, options: CompactionOptions, index_key=None) -> list[list]:
    """Bins (lists of fragment protobufs) to rewrite, in fragment order, within the
    ``max_source_*`` limits. ``index_key(fragment_id)``: which index segments cover a
    fragment; a bin never mixes fragments of different keys (as Lance plans), so each
    rewritten group stays inside the segments that covered it and its index is remapped."""
    bins, current = [], []
    excluded = set(options.excluded_fragment_ids)
    key = None
    for pb in pbs:
        if pb.id in excluded:
            if current:
                bins.append(current)
                current = []
            continue
        if index_key is not None:
            k = index_key(int(pb.id))
            if current and k != key:
                bins.append(current)
                current = []
            key = k
        rows = pb.physical_rows
        deleted = _deleted(pb)
        materialize = options.materialize_deletions and rows and \
            deleted / rows > options.materialize_deletions_threshold
        if materialize or rows < options.target_rows_per_fragment:
            current.append((pb, bool(materialize)))
        elif current:
            bins.append(current)
            current = []
    if current:
        bins.append(current)
    out = []
    for b in bins:
        for task in _split_for_size(b, options.target_rows_per_fragment):
            if len(task) == 1 and not task[0][1]:
                continue
            out.append([pb for pb, _ in task])
    return _within_limits(out, options)


def _within_limits(tasks: list, options: CompactionOptions) -> list:
    """The leading tasks whose fragments, live rows and bytes stay within the limits."""
    limits = (options.max_source_fragments, options.max_source_rows, options.max_source_bytes)
    if all(v is None for v in limits):
        return tasks
    kept, totals = [], [0, 0, 0]
    for task in tasks:
        sizes = (len(task), sum(pb.physical_rows - _deleted(pb) for pb in task),
                 sum(f.file_size_bytes for pb in task for f in pb.files))
        if any(limit is not None and total + size > limit
               for limit, total, size in zip(limits, totals, sizes)):
            break
        kept.append(task)
        totals = [t + s for t, s in zip(totals, sizes)]
    return kept


def _split_for_size(bin_, target: int) -> list:
    """Tasks of adjacent fragments holding at least ``target`` live rows each (the last one
    what is left), as Lance splits a bin; each task becomes one new fragment."""
    tasks, current, rows = [], [], 0
    for pb, materialize in bin_:
        current.append((pb, materialize))
        rows += pb.physical_rows - _deleted(pb)
        if rows >= target:
            tasks.append(current)
            current, rows = [], 0
    if current:
        if tasks:  # a remainder joins the task before it (as Lance's plan does)
            tasks[-1].extend(current)
        else:
            tasks.append(current)
    return tasks


def _read_group(snapshot, pbs, stable: bool, batch_size, threads=None):
    """Live rows of ``pbs`` in order, and (row ids, created, updated versions) if stable."""
    spec = ScanSpec.build(snapshot.schema, snapshot.schema.names, with_row_id=stable,
                          batch_size=batch_size)
    # small fragments file by file on the lean path, others by the shared scan pool; in order
    table = read_live_rows(snapshot.ctx, pbs, spec, stable, threads)
    created, updated = [], []
    for pb in pbs if stable else ():
        dv = load_deletions(snapshot.ctx, pb)
        kept = dv.kept_indices(pb.physical_rows) if dv is not None and len(dv) else None
        for out, loader in ((created, load_created_at_versions),
                            (updated, load_last_updated_at_versions)):
            v = loader(pb, snapshot.uri, snapshot.storage_options)
            if v is None:
                v = np.ones(pb.physical_rows, dtype=np.uint64)
            out.append(v[kept] if kept is not None else v)
    if not stable:
        return table, None
    ids = table.column("_rowid").to_numpy()
    return table.drop_columns(["_rowid"]), (ids, np.concatenate(created), np.concatenate(updated))


@dataclass
class GroupRewrite:
    """What rewriting one group did: the fragments it replaces, the new fragments (ids 0:
    assigned at commit, or by a ReserveFragments commit), and the URIs of the files written."""

    old_fragments: list
    new_fragments: list
    files: list

    @property
    def group(self) -> RewriteGroup:
        return RewriteGroup(self.old_fragments, self.new_fragments)


@dataclass
class RewriteTask:
    """One group of adjacent fragments to rewrite: the unit a distributed compaction runs on
    an executor. Small and picklable (the fragments travel as protobuf bytes); ``execute``
    needs a snapshot of ``read_version`` (or of any version holding the same fragments)."""

    read_version: int
    fragments: list  # serialized DataFragment protobufs, in order
    options: CompactionOptions

    @classmethod
    def of(cls, snapshot, pbs, options: CompactionOptions) -> "RewriteTask":
        return cls(snapshot.version, [pb.SerializeToString() for pb in pbs], options)

    def fragment_pbs(self) -> list:
        return [FragmentMetadata.from_bytes(b).pb for b in self.fragments]

    def execute(self, snapshot, staging: str | None = None, staging_open: bool = False) -> GroupRewrite:
        """Read the group's live rows (with their stable row ids) and write them as new
        fragments; nothing is committed. ``staging``: record each file before creating it (a
        distributed job's cleanup, see :mod:`..write.staging`)."""
        return rewrite_group(snapshot, self.fragment_pbs(), self.options,
                             snapshot.has_stable_row_ids, staging, staging_open)


def plan_rewrite_tasks(snapshot, options: CompactionOptions) -> list[RewriteTask]:
    """The groups to rewrite (see :func:`plan_compaction`), as tasks; refuses
    ``force_binary_copy`` of fragments with deleted rows, as pylance does."""
    bins = plan_compaction(snapshot.fragment_pbs(), options, segment_key(snapshot))
    if options.compaction_mode == "force_binary_copy":
        _check_binary_copy(bins)
    return [RewriteTask.of(snapshot, b, options) for b in bins]


def rewrite_group(snapshot, pbs, options: CompactionOptions, stable: bool,
                  staging: str | None = None, staging_open: bool = False) -> GroupRewrite:
    """Rewrite the live rows of the adjacent fragments ``pbs`` as new fragments."""
    table, meta = _read_group(snapshot, pbs, stable, options.batch_size, options.num_threads)
    old = [FragmentMetadata(pb) for pb in pbs]
    if not table.num_rows:
        return GroupRewrite(old, [], [])
    table = with_blob_bytes(snapshot, pbs, table)  # blobs are rewritten, not their descriptors
    frags, offset = [], 0
    try:
        for size in output_sizes(table.num_rows, options.target_rows_per_fragment):
            frags += write_fragments(
                table.slice(offset, size), snapshot.uri, storage_options=snapshot.storage_options,
                base_store_params=snapshot.base_store_params, max_rows_per_file=size,
                max_bytes_per_file=options.max_bytes_per_file or DEFAULT_MAX_BYTES_PER_FILE,
                staging=staging, staging_open=staging_open)
            offset += size
    except BaseException:  # a later slice failed: the files of the earlier ones go
        delete_files(data_file_uris(snapshot.ctx.resolver, frags), snapshot.storage_options)
        raise
    if meta is not None:
        carry_row_ids(frags, *meta)
    return GroupRewrite(old, frags, data_file_uris(snapshot.ctx.resolver, frags))


def output_sizes(rows: int, target: int) -> list[int]:
    """Rows of each new fragment of a group of ``rows`` live rows, as pylance 14 writes them:
    ``rows // target`` fragments (at least one) of even size, the first ones a row larger
    (3,429 rows at target 1,000: 1,143 x 3; 8,571 rows: 1,072 x 3 and 1,071 x 5)."""
    count = max(1, rows // max(1, target))
    base, extra = divmod(rows, count)
    return [base + 1] * extra + [base] * (count - extra)


def rewrite_metrics(rewrites) -> CompactionMetrics:
    """pylance's metrics of a compaction made of ``rewrites`` (GroupRewrites)."""
    metrics = CompactionMetrics()
    for g in rewrites:
        metrics.fragments_removed += len(g.old_fragments)
        metrics.fragments_added += len(g.new_fragments)
        metrics.files_removed += sum(len(f.pb.files) + f.pb.HasField("deletion_file")
                                     for f in g.old_fragments)
        metrics.files_added += sum(len(f.pb.files) for f in g.new_fragments)
    return metrics


def _check_binary_copy(bins) -> None:
    """Refuse ``force_binary_copy`` where pylance does: a fragment with deleted rows cannot be
    copied page for page. (Compatible fragments are re-encoded here, which reads back the same
    rows as a binary copy: lancefmt has no page-copying writer yet.)"""
    for b in bins:
        for pb in b:
            if _deleted(pb):
                raise BinaryCopyError(f"Not supported: binary copy of fragment {pb.id}, which "
                                      "has deleted rows (compaction_mode='force_binary_copy')")


def _progress(total: int, enabled):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="compacting", unit="frag")


def compact_files(snapshot, options: CompactionOptions, progress=None):
    """(Rewrite operation or None, files written, metrics) for compacting ``snapshot``."""
    tasks = plan_rewrite_tasks(snapshot, options)
    if not tasks:
        return None, [], CompactionMetrics()
    bar = _progress(sum(len(t.fragments) for t in tasks), progress)
    rewrites = []
    try:
        for task in tasks:  # each group is read by the shared scan pool (num_threads)
            rewrites.append(task.execute(snapshot))
            if bar is not None:
                bar.update(len(task.fragments))
    except BaseException:
        delete_files([u for r in rewrites for u in r.files], snapshot.storage_options)
        raise
    finally:
        if bar is not None:
            bar.close()
    written = [(u, snapshot.storage_options) for r in rewrites for u in r.files]
    return Rewrite([r.group for r in rewrites]), written, rewrite_metrics(rewrites)



@io_scope()  # its files and its commit: one writer (io/uploads.py)
def compact(snapshot, options: CompactionOptions, progress=None):
    """Compact and commit: (committed snapshot, metrics). As pylance: a ReserveFragments
    commit first, then the Rewrite names the reserved ids, and the indices covering rewritten
    fragments are remapped to them (:mod:`..indices.remap`)."""
    op, written, metrics = compact_files(snapshot, options, progress)
    if op is None:
        return snapshot, metrics
    try:
        snapshot = reserve_ids(snapshot, op)
        written += [(u, snapshot.storage_options) for u in attach_index_remap(snapshot, op)]
    except BaseException:
        for uri, opts in written:
            delete_files([uri], opts)
        raise
    snapshot.run_after_commit()
    return snapshot.commit_plan(CommitPlan(op, written)).run_after_commit(), metrics


def reserve_ids(snapshot, op: Rewrite):
    """Commit a ReserveFragments for the Rewrite's new fragments and give them the reserved
    ids; the snapshot committed (``snapshot`` when there is nothing to reserve)."""
    new = [f for g in op.groups for f in g.new_fragments]
    if not new:
        return snapshot
    before = snapshot.manifest.max_fragment_id if snapshot.manifest.HasField("max_fragment_id") else 0
    snapshot = snapshot.commit(ReserveFragments(len(new)))
    top = snapshot.manifest.max_fragment_id
    for i, f in enumerate(new):
        f.pb.id = top - len(new) + 1 + i
    assert f.pb.id == top and top - len(new) >= before
    return snapshot


class DatasetOptimizer:
    """``Dataset.optimize`` (pylance's ``DatasetOptimizer``) over the dataset's view."""

    def __init__(self, view: View):
        self._view = view

    def compact_files(self, *, target_rows_per_fragment: int | None = None,
                      max_rows_per_group: int | None = None,
                      max_bytes_per_file: int | None = None,
                      materialize_deletions: bool | None = None,
                      materialize_deletions_threshold: float | None = None,
                      num_threads: int | None = None, batch_size: int | None = None,
                      compaction_mode: str | None = None,
                      progress=None, **more) -> CompactionMetrics:
        """Compact and commit; the dataset moves to the new version. ``progress``: a tqdm
        bar over the fragments rewritten. ``compaction_mode``: pylance's names; the binary
        modes re-encode (same rows; no page copy yet), ``force_binary_copy`` refuses fragments
        with deleted rows as pylance does. ``more``: pylance 14's other options
        (``max_source_*``, ``excluded_fragment_ids``; tuning ones accepted and ignored)."""
        snapshot = self._view.snapshot
        options = CompactionOptions.resolve(
            snapshot.config(), target_rows_per_fragment=target_rows_per_fragment,
            max_rows_per_group=max_rows_per_group, max_bytes_per_file=max_bytes_per_file,
            materialize_deletions=materialize_deletions,
            materialize_deletions_threshold=materialize_deletions_threshold,
            num_threads=num_threads, batch_size=batch_size, compaction_mode=compaction_mode,
            **more)
        committed, metrics = compact(snapshot, options, progress)
        self._view.move_to(committed)
        return metrics
