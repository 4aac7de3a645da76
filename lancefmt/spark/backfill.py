"""Backfilling new columns on executors: one new column file per existing fragment, one commit.

Data evolution as ``Dataset.add_columns`` does it: no other column is rewritten; each fragment
gets one data file holding the new columns for all its physical rows, and one ``Merge``
commits the new fragment list and schema. Two ways to compute the values:

* Spark expressions (``{"name": "SQL text" | Column}``; Python UDFs, pandas UDFs and every
  Spark function included): the pinned version is read through the ``lance`` source in whole
  fragments, the expressions are evaluated by Spark, and a task per partition scatters each
  fragment's values back to physical order and writes its file. Deleted rows, which a scan
  never returns, get nulls (they are never read), so new columns are nullable;
* a pylance-style batch UDF (``RecordBatch -> RecordBatch``, or a ``lancefmt.batch_udf``):
  tasks of whole fragments read the rows with lancefmt and call it, as ``add_columns`` does.

``Merge`` conflicts with concurrent appends and column changes (Lance's rules): on such a
retryable conflict the job runs again on the latest version, reusing the files of fragments
that did not change, so a backfill keeps up with a table that is being appended to.
"""
from __future__ import annotations

import abc

import numpy as np
import pyarrow as pa

from .._proto import file_pb2, table_pb2
from ..dataset.core.commit import CONFLICT_RETRIES
from ..dataset.mutate.column_files import (
    check_new_names, merge_operation, new_fields, write_column_files,
)
from ..dataset.mutate.new_columns import udf_tables
from ..dataset.mutate.udf import BatchUDF
from ..errors import InvalidArgumentError
from ..table.fragment import FragmentMetadata
from .expressions import as_column, select_pruned
from .jobs import (
    RESULT_SCHEMA, Pinned, collect_payloads, commit_job, fault_point, fragment_runs,
    payload_batch, physical_offsets, run_tasks,
)
from .schema import ROW_ADDRESS, arrow_schema

ROWS_PER_TASK = 1 << 20


def add_columns(spark, uri, transforms, *, read_columns=None, output_schema=None,
                batch_size: int | None = None, storage_options: dict | None = None,
                manifest_store: str | None = None,
                conflict_retries: int = CONFLICT_RETRIES) -> int:
    """Add the columns ``transforms`` describes to the dataset at ``uri`` with ``spark``'s
    executors (see the module docstring); the committed version. ``read_columns`` and
    ``output_schema`` are the batch UDF's, as pylance's ``add_columns`` takes them."""
    pinned = Pinned.latest(uri, storage_options, manifest_store)
    if isinstance(transforms, dict):
        if not transforms:
            raise InvalidArgumentError("add_columns needs at least one column")
        plan = _ExpressionBackfill(spark, transforms)
    elif callable(transforms):
        udf = transforms if isinstance(transforms, BatchUDF) else \
            BatchUDF(getattr(transforms, "func", transforms),
                     output_schema or getattr(transforms, "output_schema", None))
        plan = _UdfBackfill(spark, udf, read_columns, batch_size)
    else:
        raise InvalidArgumentError("add_columns takes {name: Spark SQL text or Column} or a "
                                   f"batch UDF, not {type(transforms).__name__}")
    committed, _ = commit_job(pinned, plan.run, conflict_retries, carry=plan.reusable)
    return committed.version


def _fields_bytes(fields) -> bytes:
    """Lance fields as bytes (protobuf objects do not pickle)."""
    return file_pb2.Schema(fields=list(fields)).SerializeToString()


def _fields_of(data: bytes) -> list:
    schema = file_pb2.Schema()
    schema.ParseFromString(data)
    return list(schema.fields)


def _signature(pb) -> tuple:
    """What a fragment's new column file depends on: its data files and row count."""
    return tuple(f.path for f in pb.files), pb.physical_rows


class _Backfill(abc.ABC):
    """Runs one backfill attempt per call of :meth:`run`, remembering the files written so
    that a re-run after a conflict only writes those of new or changed fragments."""

    def __init__(self, spark):
        self.spark = spark
        self.done: dict = {}     # fragment id -> (signature, field ids, DataFile, uri)

    @abc.abstractmethod
    def schema(self, pinned: Pinned) -> pa.Schema:
        """The new columns' Arrow schema."""

    @abc.abstractmethod
    def write(self, pinned, job, pbs, schema, fields) -> list:
        """[(fragment id, DataFile bytes, uri)] of the fragments ``pbs``."""

    def run(self, pinned: Pinned, job):
        snapshot = pinned.snapshot()
        schema = self.schema(pinned)
        check_new_names(snapshot, schema.names)
        fields = new_fields(snapshot, schema)
        ids = tuple(f.id for f in fields)
        pbs = snapshot.fragment_pbs()
        todo = [pb for pb in pbs if (self.done.get(pb.id) or (None, None))[:2] != (_signature(pb), ids)]
        if todo:
            by_id = {pb.id: pb for pb in todo}
            for fid, df_bytes, uri in self.write(pinned, job, todo, schema, fields):
                df = table_pb2.DataFile()
                df.ParseFromString(df_bytes)
                self.done[fid] = (_signature(by_id[fid]), ids, df, uri)
        fragments = []
        for pb in pbs:
            meta = FragmentMetadata.from_bytes(pb.SerializeToString())
            meta.pb.files.add().CopyFrom(self.done[pb.id][2])
            fragments.append(meta)
        files = [self.done[pb.id][3] for pb in pbs]
        return merge_operation(snapshot, fragments, fields), files, None

    def reusable(self) -> set:
        return {entry[3] for entry in self.done.values()}


class _ExpressionBackfill(_Backfill):
    """Values computed by Spark from expressions over the pinned version."""

    def __init__(self, spark, transforms: dict):
        super().__init__(spark)
        self.transforms = dict(transforms)
        for name, value in self.transforms.items():
            as_column(value, f"the expression of column {name!r}")

    def _selected(self, pinned, snapshot, fragment_ids=None):
        from pyspark.sql import functions as F

        def read(columns):
            return pinned.read(self.spark, columns, fragment_ids=fragment_ids)

        def select(df):
            return df.select(F.col(ROW_ADDRESS), *[as_column(v, n).alias(n)
                                                   for n, v in self.transforms.items()])

        return select_pruned(read, snapshot.schema.names, self.transforms.values(), select)

    def schema(self, pinned: Pinned) -> pa.Schema:
        from pyspark.sql.types import StructType

        selected = self._selected(pinned, pinned.snapshot(), fragment_ids=[])
        out = arrow_schema(StructType(selected.schema.fields[1:]))
        return pa.schema([f.with_nullable(True) for f in out])  # deleted rows: nulls

    def write(self, pinned, job, pbs, schema, fields) -> list:
        snapshot = pinned.snapshot()
        selected = self._selected(pinned, snapshot, [pb.id for pb in pbs])
        field_bytes = _fields_bytes(fields)

        def task(batches):
            with job.task() as staging:
                written = _write_scattered(pinned.snapshot(), batches, schema,
                                           _fields_of(field_bytes), staging)
            fault_point("backfill")
            yield payload_batch(written)

        results = collect_payloads(selected.mapInArrow(task, RESULT_SCHEMA))
        return [item for written in results for item in written]


def _write_scattered(snapshot, batches, schema: pa.Schema, fields, staging) -> list:
    """Write one column file per fragment of the (whole-fragment, ordered) ``batches`` of
    ``_rowaddr`` + new values, deleted rows null: [(fragment id, DataFile bytes, uri)]."""
    out = []
    for fid, parts in fragment_runs(batches):
        pb = snapshot.fragment_pb(fid)
        live = pa.Table.from_batches(parts)
        positions = np.full(pb.physical_rows, -1, dtype=np.int64)
        positions[physical_offsets(live).astype(np.int64)] = np.arange(live.num_rows)
        values = live.drop_columns([ROW_ADDRESS]).cast(schema)
        full = values.take(pa.array(positions, mask=positions < 0))
        for meta, uri in write_column_files(snapshot, schema, fields, lambda _pb: [full], [pb],
                                            staging, staging_open=True):
            out.append((pb.id, meta.pb.files[-1].SerializeToString(), uri))
    return out


class _UdfBackfill(_Backfill):
    """Values computed by a batch UDF over every physical row, fragment by fragment."""

    def __init__(self, spark, udf: BatchUDF, read_columns, batch_size):
        super().__init__(spark)
        self.udf, self.read_columns, self.batch_size = udf, read_columns, batch_size

    def schema(self, pinned: Pinned) -> pa.Schema:
        schema, _ = udf_tables(pinned.snapshot(), self.udf, self.read_columns, self.batch_size)
        return schema

    def write(self, pinned, job, pbs, schema, fields) -> list:
        groups, current, rows = [], [], 0
        for pb in pbs:
            current.append(pb.id)
            rows += pb.physical_rows
            if rows >= ROWS_PER_TASK:
                groups.append(current)
                current, rows = [], 0
        if current:
            groups.append(current)
        tasks = [(pinned, ids, self.udf, self.read_columns, self.batch_size, schema,
                  _fields_bytes(fields)) for ids in groups]
        results = run_tasks(self.spark, job, tasks, udf_on_executor, "backfill")
        return [item for written in results for item in written]


def udf_on_executor(task, staging: str) -> list:
    """Column files of some fragments computed by a batch UDF, on an executor."""
    pinned, ids, udf, read_columns, batch_size, schema, field_bytes = task
    snapshot = pinned.snapshot()
    _, tables_for = udf_tables(snapshot, udf, read_columns, batch_size)
    pbs = [snapshot.fragment_pb(i) for i in ids]
    return [(meta.id, meta.pb.files[-1].SerializeToString(), uri) for meta, uri in
            write_column_files(snapshot, schema, _fields_of(field_bytes), tables_for, pbs,
                               staging, staging_open=True)]
