"""Update and delete by a Spark predicate, on executors, over the affected fragments only.

Both read the pinned version through the ``lance`` source in whole fragments (each partition
holds whole fragments, in physical order), let Spark evaluate the condition (Spark SQL text
or a ``Column``: Spark functions and UDFs included) and, per partition, give each fragment
with matching rows a new deletion file (:func:`~lancefmt.dataset.mutate.delete.delete_offsets`).
Fragments without a match are not touched. A condition that the scan can evaluate exactly as
Spark would (:mod:`~lancefmt.spark.prefilter`) is also given to the scan, so rows that cannot
match never reach Spark; a delete by such a condition runs one task per group of fragments,
each finding its rows with its own scans, and no row goes through Spark. As Lance 14 does:

* ``delete`` commits one ``Delete``; a fragment whose rows are all deleted is dropped;
* ``update`` rewrites the matching rows with their new values (Spark expressions, cast to the
  column's type) as new fragments, deletes them from their old ones, and commits one
  ``Update``; with stable row ids the rows keep their ids and created-at versions.

Each commits against the version it read; a concurrent writer touching the same fragments is
a retryable conflict (Lance's rules), and the job then runs again on the latest version.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..dataset.core.commit import CONFLICT_RETRIES
from ..dataset.core.files import data_file_uris
from ..dataset.mutate.delete import delete_offsets, matching_offsets
from ..dataset.write.fragments import write_fragments
from ..errors import InvalidArgumentError
from ..table.fragment import FragmentMetadata
from ..table.rowids import carry_row_ids, load_created_at_versions
from ..table.transaction import Delete, Update
from .expressions import as_column, empty_frame, select_pruned, sql_text
from .jobs import (
    RESULT_SCHEMA, Pinned, collect_payloads, commit_job, fault_point, fragment_runs,
    payload_batch, physical_offsets, run_tasks,
)
from .prefilter import lance_prefilter
from .schema import ROW_ADDRESS, ROW_ID, BatchCaster


def delete(spark, uri, where, *, storage_options: dict | None = None,
           manifest_store: str | None = None, conflict_retries: int = CONFLICT_RETRIES) -> int:
    """Delete the rows of the dataset at ``uri`` matching ``where``; the rows deleted."""
    condition = as_column(where, "the delete condition")
    text = sql_text(where)  # the predicate the Delete transaction records

    def run(pinned: Pinned, job):
        snapshot = pinned.snapshot()
        exact = lance_prefilter(where, snapshot.schema)
        if exact is not None:  # the scans alone find the rows: no row goes through Spark
            results = run_tasks(spark, job, _fragment_groups(spark, pinned, exact),
                                _delete_on_executor, "delete")
            results = [r for rs in results for r in rs]
        else:
            def frame():
                df = empty_frame(spark, snapshot.schema)
                return df, df

            hits = select_pruned(lambda cols: pinned.read(spark, cols), snapshot.schema.names,
                                 [where], lambda df: df.filter(condition).select(ROW_ADDRESS),
                                 frame=frame)

            def task(batches):
                with job.task() as staging:
                    snap = pinned.snapshot()
                    out = [delete_rows_of(snap, fid, pa.Table.from_batches(parts), staging)
                           for fid, parts in fragment_runs(batches)]
                fault_point("delete")
                yield payload_batch(out)

            results = [r for rs in collect_payloads(hits.mapInArrow(task, RESULT_SCHEMA))
                       for r in rs]
        if not results:
            return None, [], 0
        updated, removed, files, count = gather_deletions(results)
        return Delete(updated, removed, text), files, count

    _, count = commit_job(Pinned.latest(uri, storage_options, manifest_store), run,
                          conflict_retries)
    return count


def _fragment_groups(spark, pinned: Pinned, predicate: str) -> list:
    """Tasks of an executor-side delete: the fragments, in as many groups as Spark has cores
    (at most one per fragment), balanced by physical rows."""
    frags = sorted(((pb.physical_rows, pb.id) for pb in pinned.snapshot().fragment_pbs()),
                   reverse=True)
    n = max(1, min(len(frags), int(spark.sparkContext.defaultParallelism)))
    groups = [[0, []] for _ in range(n)]
    for rows, fid in frags:  # largest first, each to the lightest group
        lightest = min(groups, key=lambda g: g[0])
        lightest[0] += rows
        lightest[1].append(fid)
    return [(pinned, predicate, sorted(ids)) for _, ids in groups if ids]


def _delete_on_executor(task, staging: str) -> list:
    """One group's deletions: :func:`delete_rows_of`'s results for its fragments with rows
    matching the predicate (found by the fragment scans themselves)."""
    pinned, predicate, fragment_ids = task
    snap = pinned.snapshot()
    out = []
    for fid in fragment_ids:
        pb = snap.fragment_pb(fid)
        hits = matching_offsets(snap, pb, predicate)
        if hits.size:
            meta, removed, uri = delete_offsets(snap, pb, hits, staging, staging_open=True)
            out.append(((meta.to_bytes() if meta is not None else None), removed, uri,
                        int(hits.size)))
    return out


def delete_rows_of(snapshot, fid: int, rows: pa.Table, staging: str):
    """(new fragment metadata bytes or None, removed id or None, file URI or None, rows)."""
    pb = snapshot.fragment_pb(fid)
    meta, removed, uri = delete_offsets(snapshot, pb, physical_offsets(rows), staging,
                                        staging_open=True)
    return (meta.to_bytes() if meta is not None else None), removed, uri, rows.num_rows


def gather_deletions(results):
    """(updated fragments, removed ids, files, rows) of many :func:`delete_rows_of` results."""
    updated = [FragmentMetadata.from_bytes(m) for m, _, _, _ in results if m is not None]
    removed = [r for _, r, _, _ in results if r is not None]
    files = [u for _, _, u, _ in results if u is not None]
    return updated, removed, files, sum(n for _, _, _, n in results)


def update(spark, uri, values: dict, where=None, *, storage_options: dict | None = None,
           manifest_store: str | None = None, conflict_retries: int = CONFLICT_RETRIES) -> int:
    """Set ``values`` (``{column: Spark SQL text or Column}``) on the rows of the dataset at
    ``uri`` matching ``where`` (None: every row); the rows updated."""
    if not values:
        raise InvalidArgumentError("update needs at least one column to set")
    condition = as_column(where, "the update condition") if where is not None else None
    exprs = {name: as_column(v, f"the new value of {name!r}") for name, v in values.items()}

    def run(pinned: Pinned, job):
        from pyspark.sql import functions as F

        snapshot = pinned.snapshot()
        schema, stable = snapshot.schema, snapshot.has_stable_row_ids
        unknown = [n for n in exprs if schema.get_field_index(n) < 0]
        if unknown:
            raise InvalidArgumentError(f"no such column(s) {unknown} in {pinned.uri}")
        df = pinned.read(spark, with_row_id=stable,
                         prefilter=lance_prefilter(where, schema))  # Spark still filters
        if condition is not None:
            df = df.filter(condition)
        meta = [F.col(ROW_ADDRESS)] + ([F.col(ROW_ID)] if stable else [])
        rows = df.select(*meta, *[exprs[n].cast(df.schema[n].dataType).alias(n)
                                  if n in exprs else F.col(n) for n in schema.names])
        field_ids = [snapshot.ctx.root_ids[n][0] for n in exprs]

        def task(batches):
            with job.task() as staging:
                out = _rewrite_rows(pinned.snapshot(), batches, staging, stable)
            fault_point("update")
            yield payload_batch(out)

        results = collect_payloads(rows.mapInArrow(task, RESULT_SCHEMA))
        deleted = [r for deletes, _, _ in results for r in deletes]
        if not deleted:
            return None, [], 0
        updated, removed, files, count = gather_deletions(deleted)
        new = [FragmentMetadata.from_bytes(b) for _, frags, _ in results for b in frags]
        files += [u for _, _, written in results for u in written]
        op = Update(removed_fragment_ids=removed, updated_fragments=updated, new_fragments=new,
                    fields_modified=[], fields_for_preserving_frag_bitmap=field_ids)
        return op, files, count

    _, count = commit_job(Pinned.latest(uri, storage_options, manifest_store), run,
                          conflict_retries)
    return count


def _rewrite_rows(snapshot, batches, staging: str, stable: bool):
    """One update task: the partition's matching rows (``_rowaddr`` [+ ``_rowid``] + every
    column with its new value) are written as new fragments and deleted from their fragments:
    (deletion results, new fragments as bytes, data files)."""
    caster = BatchCaster(snapshot.schema)
    required = [f.name for f in snapshot.schema if not f.nullable]
    deletes, row_ids, created = [], [], []

    def new_rows():
        for fid, parts in fragment_runs(batches):
            table = pa.Table.from_batches(parts)
            offsets = physical_offsets(table)
            if stable:
                pb = snapshot.fragment_pb(fid)
                row_ids.append(table.column(ROW_ID).to_numpy().astype(np.uint64))
                versions = load_created_at_versions(pb, snapshot.uri, snapshot.storage_options)
                created.append(versions[offsets.astype(np.int64)] if versions is not None
                               else np.ones(offsets.size, dtype=np.uint64))
            for batch in table.to_batches():
                out = caster(batch)
                bad = [n for n in required if out.column(n).null_count]
                if bad:
                    raise InvalidArgumentError(f"column(s) {bad} are not nullable")
                yield out
            deletes.append(delete_rows_of(snapshot, fid, table, staging))

    reader = pa.RecordBatchReader.from_batches(snapshot.schema, new_rows())
    fragments = write_fragments(reader, snapshot.uri, storage_options=snapshot.storage_options,
                                base_store_params=snapshot.base_store_params, staging=staging,
                                staging_open=True)
    if stable and row_ids:
        carry_row_ids(fragments, np.concatenate(row_ids), np.concatenate(created))
    return deletes, [f.to_bytes() for f in fragments], \
        data_file_uris(snapshot.ctx.resolver, fragments)
