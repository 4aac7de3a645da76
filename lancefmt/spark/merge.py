"""Merge (upsert) a DataFrame of changes into a Lance table on executors, in one commit.

``MergeBuilder`` has pylance's ``merge_insert`` clauses and Delta Lake's (conditional inserts,
``when_matched_update(set=)`` of some columns, ``when_not_matched_insert(values=)``);
conditions and values are Spark SQL (or Columns) over ``target.<col>`` and ``source.<col>``. The job, as Lance's ``merge_insert`` with
``REWRITE_ROWS``:

1. Spark joins the target's keys (pinned version, with row addresses; stable row ids when the
   dataset has them; the columns the conditions use) with the source on the key columns (or on
   an arbitrary join ``condition``, Delta's ``merge(source, condition)``), and
   labels each pair: ``U`` update, ``D`` delete, ``I`` insert, ``S`` delete not matched by
   source, ``F`` a match under ``when_matched_fail``;
2. each task of the join writes its updated and inserted rows as new fragments (updated rows
   first, keeping their stable row ids and created-at versions) and passes the row addresses
   to delete on;
3. the addresses are repartitioned by fragment, and each fragment with rows to delete gets one
   new deletion file (no other fragment is touched); a target row matched by two source rows
   makes the merge fail as ambiguous, as in Lance;
4. the driver commits one ``Update`` against the pinned version; a concurrent writer touching
   the same fragments is a retryable conflict, and the job then runs again on the latest one.
   A merge on the table's unenforced primary key carries the hashes of the keys it inserts
   (:mod:`lancefmt.table.key_filter`), so a concurrent append, or a merge that inserted one
   of the same keys, also makes it run again (as Lance), and no key ends up twice.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..dataset.core.commit import CONFLICT_RETRIES
from ..dataset.core.files import data_file_uris
from ..dataset.mutate.merge_insert import MergeInsertError
from ..dataset.write.fragments import write_fragments
from ..errors import InvalidArgumentError
from ..table.fragment import FragmentMetadata
from ..table.key_filter import KeyFilter, key_hashes, primary_key_ids
from ..table.rowids import carry_row_ids, load_created_at_versions
from ..table.transaction import Update
from .dml import delete_rows_of, gather_deletions
from .expressions import as_column, empty_frame, select_pruned
from .jobs import (
    RESULT_SCHEMA, Pinned, collect_payloads, commit_job, fault_point, payload_batch,
)
from .schema import ROW_ADDRESS, ROW_ID, BatchCaster, spark_type

ACTION, ADDR, RID, FRAG, OFFSET, PAYLOAD = "__action", "__addr", "__rowid", "__frag", "__offset", "payload"
UPDATE, DELETE, INSERT, BY_SOURCE, FAIL = "U", "D", "I", "S", "F"
SHUFFLE_SCHEMA = f"{FRAG} long, {OFFSET} long, {PAYLOAD} binary"


class MergeBuilder:
    """Clauses as pylance's ``MergeInsertBuilder``; :meth:`execute` runs the Spark job."""

    def __init__(self, spark, uri, source, on=None, *, condition=None,
                 storage_options: dict | None = None, manifest_store: str | None = None):
        keyed = on is not None and (isinstance(on, str) or bool(list(on)))
        if keyed == (condition is not None):
            raise InvalidArgumentError("merge needs either the key column(s) 'on' or a join "
                                       "'condition' (over target.<col> and source.<col>)")
        self.spark, self.uri, self.source = spark, uri, source
        self.on = ([on] if isinstance(on, str) else list(on)) if keyed else []
        self.condition = condition        # an arbitrary join condition instead of keys
        if condition is not None:
            as_column(condition, "the merge condition")
        self.storage_options, self.manifest_store = storage_options, manifest_store
        self.matched = None               # None | "update" | "delete" | "fail"
        self.matched_condition = None
        self.matched_set = None           # {column: expression} of when_matched_update
        self.insert = False
        self.insert_condition = None
        self.insert_values = None         # {column: expression} of when_not_matched_insert
        self.by_source_delete = False
        self.by_source_condition = None
        self.retries = CONFLICT_RETRIES

    def when_matched_update_all(self, condition=None) -> "MergeBuilder":
        self.matched, self.matched_condition, self.matched_set = "update", condition, None
        return self

    def when_matched_update(self, condition=None, set=None) -> "MergeBuilder":  # noqa: A002
        """Set the columns of ``set`` (``{column: expression}`` over ``target.``/``source.``) on
        the matched target rows; the other columns keep the target's values (Delta's
        ``whenMatchedUpdate``)."""
        self.matched, self.matched_condition = "update", condition
        self.matched_set = self._assignments(set, "set")
        return self

    def when_matched_delete(self, condition=None) -> "MergeBuilder":
        self.matched, self.matched_condition, self.matched_set = "delete", condition, None
        return self

    def when_matched_fail(self) -> "MergeBuilder":
        self.matched, self.matched_condition, self.matched_set = "fail", None, None
        return self

    def when_not_matched_insert_all(self, condition=None) -> "MergeBuilder":
        """Insert the source rows that match no target row (and satisfy ``condition``, over
        ``source.``)."""
        self.insert, self.insert_condition, self.insert_values = True, condition, None
        return self

    def when_not_matched_insert(self, condition=None, values=None) -> "MergeBuilder":
        """Insert a row of ``values`` (``{column: expression}`` over ``source.``; columns not
        named are null) per unmatched source row (Delta's ``whenNotMatchedInsert``)."""
        self.insert, self.insert_condition = True, condition
        self.insert_values = self._assignments(values, "values")
        return self

    def when_not_matched_by_source_delete(self, condition=None) -> "MergeBuilder":
        self.by_source_delete, self.by_source_condition = True, condition
        return self

    def conflict_retries(self, retries: int) -> "MergeBuilder":
        self.retries = int(retries)
        return self

    def _assignments(self, mapping, what: str) -> dict:
        if not isinstance(mapping, dict) or not mapping:
            raise InvalidArgumentError(f"{what} must be a non-empty dict of column: expression")
        for v in mapping.values():
            as_column(v, f"a {what} expression")
        return dict(mapping)

    # Delta Lake's names, for ``LanceTable.merge`` (lancefmt.spark.table)
    whenMatchedUpdateAll = when_matched_update_all    # noqa: N815
    whenMatchedUpdate = when_matched_update           # noqa: N815
    whenMatchedDelete = when_matched_delete           # noqa: N815
    whenNotMatchedInsertAll = when_not_matched_insert_all  # noqa: N815
    whenNotMatchedInsert = when_not_matched_insert    # noqa: N815
    whenNotMatchedBySourceDelete = when_not_matched_by_source_delete  # noqa: N815

    def execute(self) -> dict:
        """Run the merge; pylance's statistics (``num_inserted_rows``, ``num_updated_rows``,
        ``num_deleted_rows``)."""
        pinned = Pinned.latest(self.uri, self.storage_options, self.manifest_store)
        _, stats = commit_job(pinned, self._run, self.retries)
        return stats

    # -- the job ------------------------------------------------------------------------------
    def _labelled(self, pinned: Pinned, snapshot):
        """The join of target and source, one row per action: ``__action``, ``__addr`` (the
        target row), [``__rowid``], and the source's columns."""
        from pyspark.sql import functions as F

        schema, stable = snapshot.schema, snapshot.has_stable_row_ids
        missing = [k for k in self.on if schema.get_field_index(k) < 0]
        if missing:
            raise InvalidArgumentError(f"merge key(s) {missing} are not columns of {pinned.uri}")
        have = self.source.columns
        unknown = [n for m in (self.matched_set, self.insert_values) if m for n in m
                   if schema.get_field_index(n) < 0]
        if unknown:
            raise InvalidArgumentError(f"{unknown} are not columns of {pinned.uri}")
        whole_rows = (self.matched == "update" and self.matched_set is None) or \
            (self.insert and self.insert_values is None)
        absent = [n for n in schema.names if n not in have]
        extra = [n for n in have if schema.get_field_index(n) < 0]
        if whole_rows and (absent or extra):
            raise InvalidArgumentError(
                f"the merge source has columns {have}, the dataset {schema.names}: the *_all "
                "clauses need the same columns (name the others with when_matched_update / "
                "when_not_matched_insert)")
        missing_keys = [k for k in self.on if k not in have]
        if missing_keys:
            raise InvalidArgumentError(f"the merge source lacks the key column(s) {missing_keys}")
        sets = [v for m in (self.matched_set, self.insert_values) if m for v in m.values()]
        conditions = [c for c in (self.condition, self.matched_condition,
                                  self.by_source_condition) if c is not None]
        pruned = conditions + sets

        def read(columns):
            columns = list(dict.fromkeys(list(self.on) + list(columns)))
            return pinned.read(self.spark, columns, with_row_id=stable, whole_fragments=False)

        types = {n: spark_type(schema.field(n).type) for n in schema.names}

        def label(target_df):
            source = self.source.select(
                *[F.col(n).cast(types[n]).alias(n) if n in types else F.col(n) for n in have]
            ).withColumn("__src", F.lit(True))
            target = target_df.alias("target").withColumn("__tgt", F.lit(True))
            if self.by_source_condition is not None:  # over the target's own columns
                target = target.withColumn("__gone", F.coalesce(as_column(
                    self.by_source_condition, "the not-matched-by-source condition"), F.lit(False)))
            t, s = target.alias("target"), source.alias("source")
            how = {(False, False): "inner", (True, False): "right", (False, True): "left",
                   (True, True): "full"}[(self.insert, self.by_source_delete)]
            on = as_column(self.condition, "the merge condition") if self.condition is not None \
                else [F.col(f"target.{k}") == F.col(f"source.{k}") for k in self.on]
            joined = t.join(s, on, how)
            both = F.col("target.__tgt").isNotNull() & F.col("source.__src").isNotNull()
            only_source = F.col("target.__tgt").isNull()
            only_target = F.col("source.__src").isNull()
            action = F.lit(None).cast("string")
            if self.matched is not None:
                hit = both
                if self.matched_condition is not None:
                    hit = hit & F.coalesce(as_column(self.matched_condition, "the matched condition"),
                                           F.lit(False))
                action = F.when(hit, F.lit({"update": UPDATE, "delete": DELETE,
                                            "fail": FAIL}[self.matched]))
            if self.insert:
                new = only_source
                if self.insert_condition is not None:
                    new = new & F.coalesce(as_column(self.insert_condition, "the insert condition"),
                                           F.lit(False))
                action = F.when(new, F.lit(INSERT)).otherwise(action)
            if self.by_source_delete:
                gone = only_target
                if self.by_source_condition is not None:
                    gone = gone & F.col("target.__gone")
                action = F.when(gone, F.lit(BY_SOURCE)).otherwise(action)
            cols = [action.alias(ACTION), F.col(f"target.{ROW_ADDRESS}").alias(ADDR)]
            if stable:
                cols.append(F.col(f"target.{ROW_ID}").alias(RID))
            cols += [self._value(n, types[n], action).alias(n) for n in schema.names]
            return joined.select(*cols).filter(F.col(ACTION).isNotNull())

        if self.matched_set is not None:  # the columns not set keep the target's values
            return label(read(schema.names))
        def frame():  # the dataset as ``target`` beside the source, as in the join
            target = empty_frame(self.spark, schema, "target")
            return target.crossJoin(self.source.limit(0).alias("source")), target

        return select_pruned(read, schema.names, pruned, label, qualifiers={"target"},
                             frame=frame)

    def _value(self, name: str, dtype, action):
        """Column ``name`` of an updated row (the set expression, the target's value, or the
        source's) or an inserted one (the values expression, null, or the source's)."""
        from pyspark.sql import functions as F

        def src():
            return F.col(f"source.{name}") if name in self.source.columns else F.lit(None)

        if self.matched_set is None:
            updated = src()
        elif name in self.matched_set:
            updated = as_column(self.matched_set[name], f"the new value of {name!r}")
        else:
            updated = F.col(f"target.{name}")
        if self.insert_values is None:
            inserted = src()
        elif name in self.insert_values:
            inserted = as_column(self.insert_values[name], f"the inserted value of {name!r}")
        else:
            inserted = F.lit(None)
        return F.when(action == UPDATE, updated.cast(dtype)) \
            .when(action == INSERT, inserted.cast(dtype))

    def _run(self, pinned: Pinned, job):
        from pyspark.sql import functions as F

        snapshot = pinned.snapshot()
        stable = snapshot.has_stable_row_ids
        labelled = self._labelled(pinned, snapshot)
        key_ids = primary_key_ids(snapshot.lance_fields, self.on) if self.insert else None
        track = list(self.on) if key_ids is not None else None

        def write_rows(batches):  # the join's side: new rows, addresses to delete on
            with job.task() as staging:
                out, addresses = _write_changes(pinned.snapshot(), batches, staging, stable,
                                                track)
            fault_point("merge")
            for frag, offsets in addresses:
                yield pa.record_batch({FRAG: pa.array(np.full(offsets.size, frag, np.int64)),
                                       OFFSET: pa.array(offsets.astype(np.int64)),
                                       PAYLOAD: pa.nulls(offsets.size, pa.binary())})
            yield pa.record_batch({FRAG: pa.nulls(1, pa.int64()), OFFSET: pa.nulls(1, pa.int64()),
                                   PAYLOAD: pa.array([_dumps(out)], pa.binary())})

        def write_deletions(batches):  # per fragment: one deletion file
            passed, by_frag = [], {}
            for b in batches:
                payload = b.column(PAYLOAD)
                is_msg = payload.is_valid().to_numpy(zero_copy_only=False)
                if is_msg.any():
                    passed += [v for v in payload.filter(pa.array(is_msg)).to_pylist()]
                if (~is_msg).any():
                    rows = b.filter(pa.array(~is_msg))
                    for frag, offsets in _by_fragment(rows):
                        by_frag.setdefault(frag, []).append(offsets)
            with job.task() as staging:
                snap = pinned.snapshot()
                deleted, ambiguous = [], 0
                for frag in sorted(by_frag):
                    offsets = np.concatenate(by_frag[frag])
                    unique = np.unique(offsets)
                    ambiguous += int(offsets.size - unique.size)
                    if not ambiguous:
                        rows = pa.table({ROW_ADDRESS: pa.array((np.int64(frag) << 32) | unique.astype(np.int64))})
                        deleted.append(delete_rows_of(snap, frag, rows, staging))
            fault_point("merge")
            for blob in passed:
                yield pa.record_batch({PAYLOAD: pa.array([blob], pa.binary())})
            yield payload_batch({"deleted": deleted, "ambiguous": ambiguous})

        changes = labelled.mapInArrow(write_rows, SHUFFLE_SCHEMA)
        parts = max(1, int(self.spark.conf.get("spark.sql.shuffle.partitions", "4")))
        results = collect_payloads(changes.repartition(parts, F.col(FRAG))
                                   .mapInArrow(write_deletions, RESULT_SCHEMA))
        return self._operation(snapshot, results, key_ids)

    def _operation(self, snapshot, results, key_ids=None):
        rows = [r for r in results if "new" in r]
        dels = [r for r in results if "deleted" in r]
        files = [u for r in rows for u in r["files"]]
        failed = sum(r["failed"] for r in rows)
        if failed:
            raise MergeInsertError(f"merge insert failed: {failed} source rows match target "
                                   "rows (when_matched_fail)")
        if sum(r["ambiguous"] for r in dels):
            raise MergeInsertError("Ambiguous merge insert: multiple source rows match the same "
                                   "target row")
        deleted = [d for r in dels for d in r["deleted"]]
        updated, removed, del_files, n_deleted = gather_deletions(deleted) if deleted else ([], [], [], 0)
        new = [FragmentMetadata.from_bytes(b) for r in rows for b in r["new"]]
        n_updated = sum(r["updated"] for r in rows)
        stats = {"num_inserted_rows": sum(r["inserted"] for r in rows),
                 "num_updated_rows": n_updated, "num_deleted_rows": n_deleted - n_updated}
        if not (new or updated or removed):
            return None, [], stats
        op = Update(removed_fragment_ids=removed, updated_fragments=updated, new_fragments=new,
                    fields_modified=[],
                    fields_for_preserving_frag_bitmap=[f.id for f in snapshot.lance_fields],
                    inserted_rows=None if key_ids is None else KeyFilter(key_ids, frozenset(
                        int(h) for r in rows if r.get("keys")
                        for h in np.frombuffer(r["keys"], np.uint64))))
        return op, files + del_files, stats


def _dumps(obj) -> bytes:
    import pickle

    return pickle.dumps(obj)


def _by_fragment(rows: pa.RecordBatch):
    frags = rows.column(FRAG).to_numpy()
    offsets = rows.column(OFFSET).to_numpy()
    order = np.argsort(frags, kind="stable")
    frags, offsets = frags[order], offsets[order]
    bounds = np.flatnonzero(np.diff(frags)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, frags.size]):
        yield int(frags[lo]), offsets[lo:hi]


def _write_changes(snapshot, batches, staging: str, stable: bool, track_keys=None):
    """One task of the join: write its updated rows (first) and inserted rows as new
    fragments (with the hashes of the inserted keys ``track_keys`` when given); (result,
    [(fragment id, offsets to delete)])."""
    caster = BatchCaster(snapshot.schema)
    updates, inserts, addresses = [], [], []
    failed = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        action = batch.column(ACTION).to_numpy(zero_copy_only=False)
        failed += int((action == FAIL).sum())
        hit = np.isin(action, [UPDATE, DELETE, BY_SOURCE])
        if hit.any():  # (filtered first: a column with nulls would come back as floats)
            addresses.append(batch.filter(pa.array(hit)).column(ADDR).to_numpy().astype(np.int64))
        for kind, into in ((UPDATE, updates), (INSERT, inserts)):
            sel = action == kind
            if sel.any():
                into.append(batch.filter(pa.array(sel)))
    out = {"new": [], "files": [], "updated": 0, "inserted": 0, "failed": failed}
    if failed:
        return out, []
    tables = [pa.Table.from_batches(p) for p in (updates, inserts) if p]
    if tables:
        changed = pa.concat_tables(tables)
        data = pa.Table.from_batches([caster(b) for b in changed.to_batches()],
                                     schema=snapshot.schema)
        fragments = write_fragments(data, snapshot.uri, storage_options=snapshot.storage_options,
                                    base_store_params=snapshot.base_store_params,
                                    staging=staging, staging_open=True)
        if stable and updates:
            upd = pa.Table.from_batches(updates)
            carry_row_ids(fragments, upd.column(RID).to_numpy().astype(np.uint64),
                          _created_at(snapshot, upd.column(ADDR).to_numpy().astype(np.int64)))
        if track_keys and inserts:
            out["keys"] = key_hashes(pa.Table.from_batches(inserts), track_keys).tobytes()
        out.update(new=[f.to_bytes() for f in fragments],
                   files=data_file_uris(snapshot.ctx.resolver, fragments),
                   updated=sum(b.num_rows for b in updates),
                   inserted=sum(b.num_rows for b in inserts))
    if addresses:
        addrs = np.concatenate(addresses)
        frags = addrs >> 32
        order = np.argsort(frags, kind="stable")
        frags, addrs = frags[order], addrs[order]
        bounds = np.flatnonzero(np.diff(frags)) + 1
        return out, [(int(frags[lo]), addrs[lo:hi] & 0xFFFFFFFF)
                     for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, frags.size])]
    return out, []


def _created_at(snapshot, addrs: np.ndarray) -> np.ndarray:
    """Created-at versions of the target rows at ``addrs`` (1 where none are recorded)."""
    out = np.ones(addrs.size, dtype=np.uint64)
    frags = addrs >> 32
    for fid in np.unique(frags):
        pb = snapshot.fragment_pb(int(fid))
        versions = load_created_at_versions(pb, snapshot.uri, snapshot.storage_options)
        if versions is not None:
            sel = frags == fid
            out[sel] = versions[(addrs[sel] & 0xFFFFFFFF).astype(np.int64)]
    return out
