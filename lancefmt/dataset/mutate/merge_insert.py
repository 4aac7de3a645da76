"""Merge insert (upsert) in one Update transaction, and pylance's ``MergeInsertBuilder``.

The plan, as Lance's ``merge_insert`` with ``REWRITE_ROWS``:

1. scan only the key columns of the target (with row addresses, and stable row ids when the
   dataset has them) and hash-join them with the source's keys (pyarrow);
2. matched target rows that are updated or deleted, and target rows not matched by the source
   that ``when_not_matched_by_source_delete`` selects, go into the fragments' deletion vectors;
3. updated rows (the source's values) are written as new fragments that carry the target rows'
   stable row ids and created-at versions; inserted rows are written as new fragments of their
   own and get fresh row ids at commit;
4. one Update transaction commits it all, so Update's conflict rules apply; a retryable
   conflict re-plans on the latest version (pylance's ``conflict_retries``).

Conditions are SQL over ``target.<col>`` and ``source.<col>`` (unqualified names are the
target's), evaluated with :mod:`lancefmt.sql` on a table with ``target`` and ``source``
struct columns.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from ...errors import InvalidArgumentError, LanceError
from ...io import carry_scope, io_scope
from ...sql import parse_filter
from ...table.deletion import DeletionVector, write_deletion_file
from ...table.fragment import FragmentMetadata
from ...table.key_filter import KeyFilter, key_hashes, primary_key_ids
from ...table.rowids import carry_row_ids, load_created_at_versions
from ...table.transaction import Transaction, Update
from ..core.commit import CONFLICT_RETRIES, commit_retrying
from ..core.files import data_file_uris, discard_written
from ..core.view import View
from ..read.row_lookup import take_addresses
from ..read.scan import ScanSpec, load_deletions, scan_table
from ..write.fragments import write_fragments
from ..write.input import to_reader
from ._keymatch import probe
_ADDR, _ROWID, _SRC = "_rowaddr", "_rowid", "__src_index"


class MergeInsertError(LanceError, ValueError):
    """A merge insert that cannot be carried out as asked (e.g. ``when_matched_fail``)."""


class MergeInsertBuilder:
    """Configure with the ``when_*`` methods, then :meth:`execute` (moves the dataset whose
    :class:`~lancefmt.dataset.core.view.View` it was made for)."""

    def __init__(self, view: View, on):
        if on is None:
            raise InvalidArgumentError("merge_insert needs the key column(s) 'on'")
        self._view = view
        self._on = [on] if isinstance(on, str) else list(on)
        if not self._on:
            raise InvalidArgumentError("merge_insert needs at least one key column")
        for k in self._on:
            if k not in view.snapshot.schema.names:
                raise InvalidArgumentError(f"merge key {k!r} is not a column of the dataset")
        self._matched = None            # None | "update" | "delete" | "fail"
        self._matched_condition = None
        self._insert = False
        self._by_source_delete = False
        self._by_source_expr = None
        self._conflict_retries = CONFLICT_RETRIES

    # -- configuration (each returns the builder, as pylance's) ----------------------------
    def when_matched_update_all(self, condition: str | None = None) -> "MergeInsertBuilder":
        self._matched, self._matched_condition = "update", condition
        return self

    def when_matched_delete(self) -> "MergeInsertBuilder":
        self._matched, self._matched_condition = "delete", None
        return self

    def when_matched_fail(self) -> "MergeInsertBuilder":
        self._matched, self._matched_condition = "fail", None
        return self

    def when_not_matched_insert_all(self) -> "MergeInsertBuilder":
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, expr: str | None = None) -> "MergeInsertBuilder":
        self._by_source_delete, self._by_source_expr = True, expr
        return self

    def conflict_retries(self, max_retries: int) -> "MergeInsertBuilder":
        self._conflict_retries = int(max_retries)
        return self

    def retry_timeout(self, timeout) -> "MergeInsertBuilder":
        """pylance's bound on the time spent retrying conflicts; the retry count
        (:meth:`conflict_retries`) is what bounds them here, so the value is only checked."""
        seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
        if seconds < 0:
            raise InvalidArgumentError("retry_timeout must not be negative")
        return self

    def use_index(self, use_index: bool) -> "MergeInsertBuilder":
        """Accepted (lancefmt has no index to use: keys are always matched by a scan)."""
        return self

    # -- plans (pylance's text; no DataFusion here, the steps are lancefmt's) --------------
    def describe(self) -> str:
        """The first line of the plan: the merge's keys and actions, in pylance's words."""
        matched = {None: "DoNothing", "update": "UpdateAll", "delete": "Delete",
                   "fail": "Fail"}[self._matched]
        if self._matched == "update" and self._matched_condition:
            matched = f"UpdateIf({self._matched_condition})"
        by_source = "Keep" if not self._by_source_delete else \
            f"DeleteIf({self._by_source_expr})" if self._by_source_expr else "Delete"
        return (f"MergeInsert: on=[{', '.join(self._on)}], when_matched={matched}, "
                f"when_not_matched={'InsertAll' if self._insert else 'DoNothing'}, "
                f"when_not_matched_by_source={by_source}")

    def explain_plan(self, schema: pa.Schema | None = None, verbose: bool = False) -> str:
        """What :meth:`execute` would do, as text (source ``schema``: the dataset's)."""
        return explain_merge(self._view.snapshot, self, schema, verbose)

    def analyze_plan(self, data_obj, *, schema: pa.Schema | None = None) -> str:
        """Run the merge without committing it (its files are removed again) and describe
        it with its metrics (rows inserted/updated/deleted, bytes and files written)."""
        snapshot = self._view.snapshot
        source = _conform_source(to_reader(data_obj, schema).read_all(), snapshot.schema, self._on)
        op, stats, updated, written = stage_merge(snapshot, self, source)
        try:
            store = snapshot.store
            nbytes = sum(store.size(u) for u in written)
        finally:
            discard_written(snapshot.ctx.resolver, updated, written, snapshot.storage_options)
        metrics = dict(stats, bytes_written=nbytes, num_files_written=len(written))
        return analyze_merge(snapshot, self, source.schema, metrics)

    # -- execution ---------------------------------------------------------------------------
    def check_actions(self) -> None:
        """A merge with no action would change nothing: refused, as pylance refuses it."""
        if self._matched is None and not self._insert and not self._by_source_delete:
            raise MergeInsertError("merge_insert needs an action: when_matched_*, "
                                   "when_not_matched_insert_all or "
                                   "when_not_matched_by_source_delete")

    @io_scope()  # its files and its commit: one writer (io/uploads.py)
    def execute(self, data_obj, *, schema: pa.Schema | None = None) -> dict:
        """Run the merge, move the dataset to the new version and return pylance's stats."""
        self.check_actions()
        snapshot = self._view.snapshot
        source = _conform_source(to_reader(data_obj, schema).read_all(), snapshot.schema, self._on)
        new, stats = merge_insert(snapshot, self, source)
        self._view.move_to(new)
        return stats

    def execute_uncommitted(self, data_obj, *, schema: pa.Schema | None = None):
        """Write the merge's files without committing: ``(Transaction, stats)``, as pylance's.
        Commit later with ``LanceDataset.commit(uri, transaction)`` (the transaction carries
        the version it was planned against, so conflicts are checked then). The dataset does
        not move."""
        self.check_actions()
        snapshot = self._view.snapshot
        source = _conform_source(to_reader(data_obj, schema).read_all(), snapshot.schema, self._on)
        op, stats, _, _ = stage_merge(snapshot, self, source)
        return Transaction(snapshot.version, op), stats


def _steps(snapshot, b: MergeInsertBuilder, schema: pa.Schema, verbose: bool) -> list:
    cols = ", ".join(f"{f.name}: {f.type}" if verbose else f.name for f in schema)
    return [f"LanceRead: uri={snapshot.uri}, projection=[{', '.join(b._on)}], "
            f"num_fragments={len(snapshot.fragment_pbs())}, row_id=true, row_addr=true",
            f"HashJoin: join_type=Right, on=[{', '.join(b._on)}]",
            f"Source: projection=[{cols}]"]


def explain_merge(snapshot, b: MergeInsertBuilder, schema, verbose: bool) -> str:
    schema = schema if schema is not None else snapshot.schema
    return "\n".join([b.describe()] + ["  " + s for s in _steps(snapshot, b, schema, verbose)])


def analyze_merge(snapshot, b: MergeInsertBuilder, schema, metrics: dict) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in sorted(metrics.items()))
    return "\n".join([f"{b.describe()}, metrics=[{shown}]"] +
                     ["  " + s for s in _steps(snapshot, b, schema, False)])


def _conform_source(source: pa.Table, schema: pa.Schema, on) -> pa.Table:
    """The source in the dataset's column order and types. A source may leave columns out (a
    partial merge insert, as pylance allows): matched rows keep their values of those columns,
    inserted rows get nulls (see :func:`_completed`); the join keys must be there."""
    extra = [n for n in source.column_names if n not in schema.names]
    absent_keys = [k for k in on if k not in source.column_names]
    if extra or absent_keys:
        raise InvalidArgumentError(f"merge_insert data has columns {source.column_names}, the "
                                   f"dataset {schema.names}" +
                                   (f" (the join keys {absent_keys} are missing)" if absent_keys else ""))
    present = [n for n in schema.names if n in source.column_names]
    try:
        return source.select(present).cast(pa.schema([schema.field(n) for n in present],
                                                     metadata=schema.metadata))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
        raise InvalidArgumentError(f"merge_insert data does not match the dataset schema: {e}") from None


def _completed(snapshot, rows: pa.Table, addrs) -> pa.Table:
    """``rows`` of a partial source with every dataset column: the left-out ones from the
    target rows at ``addrs`` (matched rows), or nulls (inserted rows, ``addrs`` None)."""
    schema = snapshot.schema
    missing = [n for n in schema.names if n not in rows.column_names]
    if not missing:
        return rows
    if addrs is not None:
        old = take_addresses(snapshot, addrs, missing)
        fill = {n: old.column(n) for n in missing}
    else:
        for n in missing:
            if not schema.field(n).nullable:
                raise InvalidArgumentError(f"merge_insert would insert rows without a value for "
                                           f"the non-nullable column {n!r}")
        fill = {n: pa.nulls(rows.num_rows, schema.field(n).type) for n in missing}
    cols = [rows.column(n) if n in rows.column_names else fill[n] for n in schema.names]
    return pa.Table.from_arrays(cols, schema=schema)


def _target_keys(snapshot, on, stable: bool) -> pa.Table:
    spec = ScanSpec.build(snapshot.schema, list(on), None, stable, True)
    return scan_table(snapshot.ctx, snapshot.fragment_pbs(), spec)


def _condition_mask(snapshot, source: pa.Table, matched: pa.Table, text: str) -> np.ndarray:
    """Which matched pairs satisfy ``text`` (over target.* / source.*)."""
    target_rows = take_addresses(snapshot, matched.column(_ADDR).to_numpy(), snapshot.schema.names)
    source_rows = source.take(matched.column(_SRC))
    cols = {n: target_rows.column(n) for n in snapshot.schema.names}
    cols["target"] = pa.StructArray.from_arrays(
        [c.combine_chunks() for c in target_rows.columns], names=target_rows.column_names)
    cols["source"] = pa.StructArray.from_arrays(
        [c.combine_chunks() for c in source_rows.columns], names=source_rows.column_names)
    both = pa.table(cols)
    expr = parse_filter(text, both.schema)
    mask = pads.dataset(both).to_table(columns={"m": expr}).column("m")
    return pc.fill_null(mask, False).to_numpy(zero_copy_only=False)


def _plan(snapshot, b: MergeInsertBuilder, source: pa.Table):
    on = b._on
    stable = snapshot.has_stable_row_ids
    target = _target_keys(snapshot, on, stable)
    src_keys = source.select(on).append_column(_SRC, pa.array(np.arange(source.num_rows, dtype=np.int64)))
    src_valid = src_keys
    for k in on:
        src_valid = src_valid.filter(pc.is_valid(src_valid.column(k)))
    matched = _match(target, src_valid, on) if target.num_rows else None
    if matched is not None and not matched.num_rows:
        matched = None
    n_matched = matched.num_rows if matched is not None else 0
    if b._matched == "fail" and n_matched:
        raise MergeInsertError(f"merge insert failed: {n_matched} source rows match target rows "
                               "(when_matched_fail)")
    # rows of the source that match no target row
    matched_src = matched.column(_SRC).to_numpy() if matched is not None else np.empty(0, np.int64)
    insert_rows = None
    if b._insert:
        keep = np.ones(source.num_rows, dtype=bool)
        keep[matched_src] = False
        insert_rows = _completed(snapshot, source.filter(pa.array(keep)) if not keep.all()
                                 else source, None)
    # matched rows to update / delete
    update_rows = update_ids = update_addrs = None
    delete_addrs = []
    if matched is not None and b._matched in ("update", "delete"):
        sel = np.ones(n_matched, dtype=bool)
        if b._matched_condition:
            sel = _condition_mask(snapshot, source, matched, b._matched_condition)
        chosen = matched.filter(pa.array(sel)) if not sel.all() else matched
        addrs = chosen.column(_ADDR).to_numpy()
        if b._matched == "update" and chosen.num_rows:
            update_rows = _completed(snapshot, source.take(chosen.column(_SRC)), addrs)
            update_addrs = addrs
            update_ids = chosen.column(_ROWID).to_numpy() if stable else None
        delete_addrs.append(addrs)
    n_by_source = 0
    if b._by_source_delete:
        cand = scan_table(snapshot.ctx, snapshot.fragment_pbs(),
                          ScanSpec.build(snapshot.schema, [], b._by_source_expr, with_row_address=True)) \
            if b._by_source_expr else target.select([_ADDR])
        addrs = cand.column(_ADDR).to_numpy()
        if matched is not None:
            addrs = np.setdiff1d(addrs, matched.column(_ADDR).to_numpy(), assume_unique=True)
        n_by_source = int(addrs.size)
        delete_addrs.append(addrs)
    all_deleted = np.concatenate(delete_addrs) if delete_addrs else np.empty(0, np.uint64)
    stats = {
        "num_inserted_rows": insert_rows.num_rows if insert_rows is not None else 0,
        "num_updated_rows": update_rows.num_rows if update_rows is not None else 0,
        "num_deleted_rows": int(all_deleted.size) - (update_rows.num_rows if update_rows is not None else 0),
    }
    return stats, all_deleted.astype(np.uint64), insert_rows, update_rows, update_ids, update_addrs


def _match(target: pa.Table, src: pa.Table, on) -> pa.Table:
    """Pairs (target row, source row) with equal keys: target's columns plus ``__src_index``.

    A hash join that builds on the source (the small side) and probes with every target key;
    a target row matched by two source rows is refused (only possible when the source's keys
    repeat)."""
    if len(on) == 1:
        dense = _match_dense(target, src, on[0])
        if dense is not None:
            return dense
    repeat = _keys_repeat(src, on)
    matched = target.join(src, on, join_type="inner", use_threads=True)
    if matched.num_rows and repeat:
        counts = pc.value_counts(matched.column(_ADDR))
        if pc.max(counts.field("counts")).as_py() > 1:
            raise MergeInsertError("Ambiguous merge insert: multiple source rows match the same "
                                   "target row")
    return matched


DENSE_FACTOR = 4


def _match_dense(target: pa.Table, src: pa.Table, key: str) -> pa.Table | None:
    """Unique integer keys spanning a range not much wider than the data (sequential ids, the
    common upsert): a direct-address table over the key range replaces hashing, one numpy
    gather per target key. None when the keys do not qualify (nulls, too wide a range, or
    repeated source keys, found as fewer filled slots than keys)."""
    ktype = src.schema.field(key).type
    if not src.num_rows or not (pa.types.is_signed_integer(ktype) or ktype in (
            pa.uint8(), pa.uint16(), pa.uint32())):  # uint64 keys may not fit int64 offsets
        return None
    skeys = src.column(key).to_numpy()
    lo, hi = int(skeys.min()), int(skeys.max())
    tcol = target.column(key)
    if tcol.null_count:
        return None
    span = hi - lo + 1
    if span > DENSE_FACTOR * max(target.num_rows, src.num_rows, 1 << 18):
        return None
    if src.num_rows >= 2 ** 31:
        return None
    lut = np.full(span, -1, dtype=np.int32)
    lut[(skeys - lo).astype(np.int64)] = src.column(_SRC).to_numpy()
    if np.count_nonzero(lut >= 0) != skeys.size:
        return None  # repeated source keys: the hash join reports the ambiguity
    # batch by batch (cache-sized, no table-sized temporaries): probe the keys, then gather
    # the matched rows of every target column (key, row address, row id) with numpy
    picked = {n: [] for n in target.column_names}
    hits = []
    for batch in target.to_batches():
        keys = _plain_values(batch.column(key))
        rows, h = probe(np.ascontiguousarray(keys.astype(np.int64, copy=False)), lo, lut, 0)
        if not rows.size:
            continue
        hits.append(h)
        for n, col in zip(batch.schema.names, batch.columns):
            picked[n].append((keys if n == key else _plain_values(col))[rows])
    if not hits:
        return target.slice(0, 0).append_column(_SRC, pa.array([], pa.int64()))
    cols = [pa.array(np.concatenate(picked[f.name]), type=f.type) for f in target.schema]
    return pa.Table.from_arrays(cols + [pa.array(np.concatenate(hits))],
                                schema=target.schema.append(pa.field(_SRC, pa.int64())))


def _plain_values(arr: pa.Array) -> np.ndarray:
    """A null-free fixed-width integer array's values, viewed without a copy (``to_numpy``
    costs tens of microseconds per call, paid per batch of a 2M-row key scan)."""
    if arr.null_count:
        return arr.to_numpy(zero_copy_only=False)
    dt = np.dtype(arr.type.to_pandas_dtype())
    return np.frombuffer(arr.buffers()[1], dt, count=len(arr), offset=arr.offset * dt.itemsize)


def _keys_repeat(src: pa.Table, on) -> bool:
    if len(on) == 1:
        return pc.count_distinct(src.column(on[0])).as_py() != src.num_rows
    return src.group_by(list(on)).aggregate([]).num_rows != src.num_rows


def delete_addresses(snapshot, addrs: np.ndarray):
    """(updated FragmentMetadata with new deletion files, removed fragment ids) for deleting the
    rows at ``addrs``."""
    updated, removed = [], []
    if not addrs.size:
        return updated, removed
    frag_ids = (addrs >> np.uint64(32)).astype(np.int64)
    offsets = (addrs & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    order = np.argsort(frag_ids, kind="stable")
    frag_ids, offsets = frag_ids[order], offsets[order]
    bounds = np.flatnonzero(np.diff(frag_ids)) + 1
    try:
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, frag_ids.size]):
            fid = int(frag_ids[lo])
            pb = snapshot.fragment_pb(fid)
            dv = (load_deletions(snapshot.ctx, pb) or DeletionVector.empty()).extend(offsets[lo:hi])
            if dv.deletes_all(pb.physical_rows):
                removed.append(fid)
                continue
            deletion = write_deletion_file(snapshot.uri, fid, snapshot.version, dv,
                                           storage_options=snapshot.storage_options)
            meta = FragmentMetadata.from_bytes(pb.SerializeToString())
            meta.pb.deletion_file.CopyFrom(deletion)
            updated.append(meta)
    except BaseException:  # the deletion files written before the failure go
        discard_written(snapshot.ctx.resolver, updated, [], snapshot.storage_options)
        raise
    return updated, removed


def _created_at(snapshot, addrs: np.ndarray) -> np.ndarray:
    out = np.ones(addrs.size, dtype=np.uint64)
    frag_ids = (addrs >> np.uint64(32)).astype(np.int64)
    offsets = (addrs & np.uint64(0xFFFFFFFF)).astype(np.int64)
    for fid in np.unique(frag_ids):
        pb = snapshot.fragment_pb(int(fid))
        versions = load_created_at_versions(pb, snapshot.uri, snapshot.storage_options)
        if versions is not None:
            sel = frag_ids == fid
            out[sel] = versions[offsets[sel]]
    return out


def stage_merge(snapshot, b: MergeInsertBuilder, source: pa.Table):
    """Plan the merge on ``snapshot`` and write its files (deletion files, new fragments), without
    committing: (Update operation, stats, updated fragments, data files written). A failure
    removes what it wrote."""
    stats, deleted, insert_rows, update_rows, update_ids, update_addrs = _plan(snapshot, b, source)
    updated, removed, written, new_frags = [], [], [], []
    # the deletion files (small writes, mostly waiting on fsync) are written on a thread while
    # this one encodes the new rows
    deleting = _side_pool().submit(carry_scope(delete_addresses), snapshot, deleted)
    try:
        parts = [t for t in (update_rows, insert_rows) if t is not None and t.num_rows]
        if parts:
            # updated rows first, then inserted ones, in the same fragments (as Lance)
            frags = write_fragments(pa.concat_tables(parts) if len(parts) > 1 else parts[0],
                                    snapshot.uri, storage_options=snapshot.storage_options,
                                    base_store_params=snapshot.base_store_params)
            written += data_file_uris(snapshot.ctx.resolver, frags)
            if update_ids is not None and update_ids.size:
                carry_row_ids(frags, update_ids, _created_at(snapshot, update_addrs))
            new_frags = frags
    except BaseException:
        try:
            updated, _ = deleting.result()
        finally:
            discard_written(snapshot.ctx.resolver, updated, written, snapshot.storage_options)
        raise
    try:
        updated, removed = deleting.result()
    except BaseException:
        discard_written(snapshot.ctx.resolver, [], written, snapshot.storage_options)
        raise
    op = Update(removed_fragment_ids=removed, updated_fragments=updated,
                new_fragments=new_frags, fields_modified=[],
                fields_for_preserving_frag_bitmap=[f.id for f in snapshot.lance_fields],
                inserted_rows=inserted_keys(snapshot, b, insert_rows))
    return op, stats, updated, written


def inserted_keys(snapshot, b: MergeInsertBuilder, insert_rows) -> KeyFilter | None:
    """The filter of the keys this merge inserts, when it merges on the primary key (Lance's
    condition); a concurrent writer inserting one of them makes the commit retry."""
    ids = primary_key_ids(snapshot.lance_fields, b._on) if b._insert else None
    if ids is None:
        return None
    hashes = key_hashes(insert_rows, b._on) if insert_rows is not None else ()
    return KeyFilter(ids, frozenset(int(h) for h in hashes))


_SIDE_POOL = None


def _side_pool():
    """One worker for I/O that overlaps the main thread's encoding (created on first use)."""
    global _SIDE_POOL
    if _SIDE_POOL is None:
        _SIDE_POOL = ThreadPoolExecutor(1, thread_name_prefix="lancefmt-merge-insert")
    return _SIDE_POOL


def _forget_pool_after_fork() -> None:  # a forked child has none of the parent's threads
    global _SIDE_POOL
    _SIDE_POOL = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def merge_insert(snapshot, b: MergeInsertBuilder, source: pa.Table):
    """Commit the merge; returns (committed snapshot, stats)."""
    def stage(snap):
        op, stats, updated, written = stage_merge(snap, b, source)
        if not (op.removed_fragment_ids or op.updated_fragments or op.new_fragments):
            return None, stats, None
        return (op, stats,
                lambda: discard_written(snap.ctx.resolver, updated, written, snap.storage_options))

    return commit_retrying(snapshot, stage, b._conflict_retries)
