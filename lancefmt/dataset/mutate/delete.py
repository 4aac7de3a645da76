"""Deleting rows: mark the rows matching a predicate deleted, fragment by fragment.

For each fragment only the columns the predicate reads are scanned; the matching physical
offsets are added to the fragment's (cumulative) deletion vector and written as a new deletion
file (``.arrow`` or ``.bin`` by Lance's rule) in the dataset root. A fragment whose rows are all
deleted is dropped. One Delete transaction commits it; when a concurrent writer touched the
same fragments the delete is re-planned on the new version (Lance's ``conflict_retries``).
"""
from __future__ import annotations

import secrets

import numpy as np

from ...errors import InvalidArgumentError
from ...io.uri import child
from ...table.deletion import DELETIONS_DIR, DeletionVector, write_deletion_file
from ...table.fragment import FragmentMetadata
from ...table.naming import deletion_file_name
from ...table.transaction import Delete
from ..core.commit import CONFLICT_RETRIES, commit_retrying
from ..core.files import discard_written
from ..read.scan import FragmentScan, ScanSpec, load_deletions
from ..write.staging import stage_file


def _predicate_text(predicate) -> str:
    return predicate if isinstance(predicate, str) else str(predicate)


def _matching_offsets(scan: FragmentScan) -> np.ndarray:
    """Physical offsets of live rows matching the scan's filter."""
    parts = [t.column("_rowaddr").to_numpy() for t in scan.windows() if t.num_rows]
    if not parts:
        return np.empty(0, dtype=np.uint32)
    addrs = np.concatenate(parts)
    return (addrs & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def matching_offsets(snapshot, pb, predicate) -> np.ndarray:
    """Physical offsets of fragment ``pb``'s live rows matching ``predicate`` (Lance filter)."""
    spec = ScanSpec.build(snapshot.schema, [], predicate, with_row_address=True)
    return _matching_offsets(FragmentScan(snapshot.ctx, pb, spec))


def plan_delete(snapshot, predicate):
    """(updated fragments, deleted fragment ids, rows deleted) for deleting ``predicate``;
    the new deletion files are written (and removed again if planning fails)."""
    if predicate is None or (isinstance(predicate, str) and not predicate.strip()):
        raise InvalidArgumentError("delete needs a predicate (use 'true' to delete every row)")
    spec = ScanSpec.build(snapshot.schema, [], predicate, with_row_address=True)
    updated, removed, count = [], [], 0
    try:
        for pb in snapshot.fragment_pbs():
            scan = FragmentScan(snapshot.ctx, pb, spec)
            hits = _matching_offsets(scan)
            if not hits.size:
                continue
            count += int(hits.size)
            old = scan.deletions or DeletionVector.empty()
            dv = old.extend(hits)
            if dv.deletes_all(pb.physical_rows):
                removed.append(pb.id)
                continue
            deletion = write_deletion_file(snapshot.uri, pb.id, snapshot.version, dv,
                                           storage_options=snapshot.storage_options,
                                           file_id=secrets.randbits(64))
            meta = FragmentMetadata.from_bytes(pb.SerializeToString())
            meta.pb.deletion_file.CopyFrom(deletion)
            updated.append(meta)
    except BaseException:  # a later fragment failed: the deletion files written so far go
        discard_written(snapshot.ctx.resolver, updated, [], snapshot.storage_options)
        raise
    return updated, removed, count


def delete_rows(snapshot, predicate, *, conflict_retries: int = CONFLICT_RETRIES):
    """Commit the delete; returns (committed snapshot, rows deleted). A delete matching no
    row still commits a version (an empty Delete), as pylance's does."""
    text = _predicate_text(predicate)

    def stage(snap):
        updated, removed, count = plan_delete(snap, predicate)
        return (Delete(updated, removed, text), count,
                lambda: discard_written(snap.ctx.resolver, updated, [], snap.storage_options))

    return commit_retrying(snapshot, stage, conflict_retries)


def delete_offsets(snapshot, pb, offsets, staging: str | None = None, staging_open: bool = False):
    """Fragment ``pb`` (of ``snapshot``) with the physical ``offsets`` deleted as well:
    ``(FragmentMetadata with a new deletion file, None, file URI)``, or ``(None, pb.id, None)``
    when no row of it is left (Lance then drops the fragment). Nothing is committed; the
    deletion file is recorded under ``staging`` before it is created (distributed jobs)."""
    dv = (load_deletions(snapshot.ctx, pb) or DeletionVector.empty()).extend(
        np.asarray(offsets, dtype=np.uint32))
    if dv.deletes_all(pb.physical_rows):
        return None, pb.id, None
    file_id = secrets.randbits(64)
    uri = child(snapshot.uri, DELETIONS_DIR,
                deletion_file_name(pb.id, snapshot.version, file_id, dv.kind))
    if staging is not None:
        stage_file(staging, uri, snapshot.storage_options, require_open=staging_open)
    deletion = write_deletion_file(snapshot.uri, pb.id, snapshot.version, dv,
                                   storage_options=snapshot.storage_options, file_id=file_id)
    meta = FragmentMetadata.from_bytes(pb.SerializeToString())
    meta.pb.deletion_file.CopyFrom(deletion)
    return meta, None, uri


def delete_in_fragment(snapshot, pb, predicate):
    """pylance's ``LanceFragment.delete``: fragment ``pb`` with the rows matching
    ``predicate`` deleted too (a new deletion file is written, nothing committed); the same
    fragment when nothing matches, None when no row is left."""
    hits = matching_offsets(snapshot, pb, predicate)
    if not hits.size:
        return FragmentMetadata.from_bytes(pb.SerializeToString())
    meta, _, _ = delete_offsets(snapshot, pb, hits)
    return meta
