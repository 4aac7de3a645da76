"""Index remapping for compaction: the segments covering rewritten fragments follow their rows.

A compaction moves each live row of a group's old fragments, in order, to the next row of the
group's new fragments, and drops the deleted ones. A segment that records row addresses gets
that move (old address -> new address); one that records stable row ids keeps its ids and only
loses the deleted rows. Each affected segment is rewritten by its type (``LoadedIndex.remap``)
into a new directory and named in the Rewrite's ``rewritten_indices``, so the commit replaces
it (:func:`lancefmt.table.manifest_builder.build_manifest`). A type that cannot remap is left
out: the rewritten fragments then leave its coverage and are scanned.
"""
from __future__ import annotations

import numpy as np

from ...index.core.catalog import guarded
from ...index.core.metadata import fragment_ids, is_system, new_uuid, uuid_text
from ...index.core.registry import RowIdMapping
from ...table.rowids import load_row_ids
from ...table.transaction import Rewrite, RewrittenIndex
from ..core.files import delete_files
from ..core.indices import entry_type, index_entries, index_store_for, segment_of
from ..read.scan import load_deletions


def _group_rows(snapshot, group, use_ids: bool):
    """(old keys of live rows in order, new keys in order, old keys of deleted rows)."""
    ctx = snapshot.ctx
    old, dropped = [], []
    for f in group.old_fragments:
        pb = f.pb if hasattr(f, "pb") else f
        n = int(pb.physical_rows)
        keys = load_row_ids(pb, ctx.uri, ctx.storage_options) if use_ids else \
            (np.uint64(pb.id) << np.uint64(32)) | np.arange(n, dtype=np.uint64)
        keys = np.asarray(keys, dtype=np.uint64)
        dv = load_deletions(ctx, pb)
        if dv is not None and len(dv):
            kept = dv.kept_indices(n)
            dropped.append(np.delete(keys, kept))
            keys = keys[kept]
        old.append(keys)
    old_keys = np.concatenate(old) if old else np.empty(0, np.uint64)
    if use_ids:
        new_keys = old_keys  # stable row ids travel with their rows
    else:
        new = [(np.uint64(f.pb.id) << np.uint64(32)) | np.arange(int(f.pb.physical_rows), dtype=np.uint64)
               for f in group.new_fragments]
        new_keys = np.concatenate(new) if new else np.empty(0, np.uint64)
    return old_keys, new_keys, (np.concatenate(dropped) if dropped else np.empty(0, np.uint64))


def _mapping(snapshot, groups, use_ids: bool) -> RowIdMapping | None:
    olds, news, drops = [], [], []
    for g in groups:
        o, n, d = _group_rows(snapshot, g, use_ids)
        if o.size != n.size:
            return None  # the new fragments do not hold the old live rows one for one
        olds.append(o)
        news.append(n)
        drops.append(d)
    cat = lambda parts: np.concatenate(parts) if parts else np.empty(0, np.uint64)  # noqa: E731
    return RowIdMapping(cat(olds), cat(news), cat(drops))


def segment_key(snapshot):
    """``fragment id -> the uuids of the segments covering it`` (None without indices): the
    compaction planner keeps fragments of different keys in different groups."""
    entries = [pb for pb in index_entries(snapshot) if not is_system(pb)]
    if not entries:
        return None
    covers = [(uuid_text(pb), fragment_ids(pb)) for pb in entries]
    return lambda fid: tuple(u for u, frags in covers if fid in frags)


def needs_remap(snapshot, op: Rewrite) -> bool:
    """Whether a segment lancefmt can remap covers a fragment ``op`` rewrites."""
    rewritten = {int(f.pb.id) for g in op.groups for f in g.old_fragments}
    return any(not is_system(pb) and entry_type(snapshot, pb) is not None
               and entry_type(snapshot, pb).supports(pb.index_details)
               and set(fragment_ids(pb)) & rewritten for pb in index_entries(snapshot))


def attach_index_remap(snapshot, op: Rewrite) -> list:
    """Remap every segment covering fragments ``op`` rewrites (new fragments must carry their
    final ids) and add them to ``op.rewritten_indices``; returns the URIs written (the
    caller removes them if the commit fails)."""
    rewritten = {int(f.pb.id) for g in op.groups for f in g.old_fragments}
    if not rewritten:
        return []
    stable = snapshot.has_stable_row_ids
    mappings: dict = {}
    written = []
    try:
        for pb in index_entries(snapshot):
            if is_system(pb):
                continue
            itype = entry_type(snapshot, pb)
            covered = fragment_ids(pb)
            if itype is None or not (set(covered) & rewritten) or \
                    not itype.supports(pb.index_details):
                continue
            segment = segment_of(snapshot, pb, itype)
            use_ids = stable and not segment.records_addresses
            if use_ids not in mappings:
                mappings[use_ids] = _mapping(snapshot, op.groups, use_ids)
            mapping = mappings[use_ids]
            if mapping is None:
                continue
            uid = new_uuid()
            dest = index_store_for(snapshot, uid, pb.base_id if pb.HasField("base_id") else None)
            try:
                details = guarded(segment, lambda: segment.load().remap(mapping, dest))
            except NotImplementedError:
                continue
            finally:
                written.extend(dest.uri(n) for n, _ in dest.written)
            packed = itype.pack_details(details)
            op.rewritten_indices.append(RewrittenIndex(
                uuid_text(pb), uid, packed.type_url, packed.value, segment.index_version,
                list(dest.written)))
    except BaseException:
        delete_files(written, snapshot.storage_options)
        raise
    return written
