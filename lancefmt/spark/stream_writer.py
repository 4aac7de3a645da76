"""Structured Streaming into Lance: ``df.writeStream.format("lance").option("checkpointLocation",
...).start(uri)``, every micro-batch with rows committed exactly once.

Spark makes the :class:`LanceStreamWriter` once when the query starts and pickles it to the
executors, whose ``write()`` writes a task's rows as data files (as the batch writer does, staged
under the query's staging prefix); then, per micro-batch, it builds a fresh writer on the driver
and calls ``commit(messages, batch_id)`` or ``abort(messages, batch_id)``.

Exactly once: each commit is one ``Append`` (``Overwrite`` creating the dataset on the first
batch) whose transaction properties name the query (the id Spark keeps in
``<checkpointLocation>/metadata``, stable across restarts) and the batch id. A query restarted
after a crash replays the batches its checkpoint had not marked done; the commit finds the
query's last committed batch id in the dataset's history and, for a batch at or below it, keeps
nothing (it deletes the replay's files). A micro-batch without rows commits nothing. ``abort``
and a failed commit delete every file of the batch, including those of tasks that died (the
staging records), so a failed batch leaves no version and no files.

A query killed between a commit and the clean-up of that batch's staging records leaves records
of files the dataset now references; the replayed batch's commit (or an abort) first drops those
records (:meth:`LanceStreamWriter._release_committed`), so it never deletes committed data.
"""
from __future__ import annotations

import hashlib
import json

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter
from pyspark.sql.types import StructType

from ..errors import DatasetNotFoundError, InvalidArgumentError
from ..io import open_store
from ..io.uri import child, normalize_uri
from .history import BATCH_ID_KEY, QUERY_ID_KEY, last_streamed_batch, version_numbers
from .options import WriteOptions
from .schema import arrow_schema
from .writer import APPEND, CREATE, LanceCommitMessage, LanceWriter, check_appendable, data_columns

QUERY_ID_OPTION = "query_id"
CHECKPOINT_OPTION = "checkpointlocation"


def query_identity(options) -> str:
    """The streaming query's stable id: the ``query_id`` option, else the id Spark recorded in
    ``<checkpointLocation>/metadata``, else a digest of the checkpoint location itself."""
    opts = {str(k).lower(): v for k, v in dict(options).items()}
    explicit = opts.get(QUERY_ID_OPTION)
    if explicit:
        return str(explicit)
    location = opts.get(CHECKPOINT_OPTION)
    if not location:
        raise InvalidArgumentError(
            "the lance streaming sink needs .option('checkpointLocation', ...) (or a 'query_id' "
            "option): it is what makes a restarted query skip the micro-batches already committed")
    try:
        uri = normalize_uri(str(location))
        meta = json.loads(open_store(uri).read(child(uri, "metadata")))
        if isinstance(meta, dict) and meta.get("id"):
            return str(meta["id"])
    except Exception:  # an object store we cannot open from here: the location is stable too
        pass
    return "checkpoint-" + hashlib.sha256(str(location).encode("utf-8")).hexdigest()[:32]


class LanceStreamWriter(LanceWriter, DataSourceStreamArrowWriter):
    """The sink of one streaming query (micro-batch mode, append output mode)."""

    # one staging prefix serves every micro-batch of the query, so there is no per-job marker:
    # a later batch's commit (or a restart) sweeps what a late task of an earlier one staged
    staging_open = False

    def __init__(self, options: WriteOptions, mode: str, schema: pa.Schema, bases: list,
                 query_id: str):
        super().__init__(options, mode, 0, schema, bases)
        self.query_id = query_id
        # the staging prefix is the query's, so a restarted query finds what a killed one left
        self.job_id = "stream-" + hashlib.sha256(query_id.encode("utf-8")).hexdigest()[:32]

    @classmethod
    def plan_stream(cls, raw_options, spark_schema: StructType, overwrite: bool) -> "LanceStreamWriter":
        from ..dataset import dataset

        if overwrite:
            raise InvalidArgumentError("the lance streaming sink supports outputMode('append') only")
        options = WriteOptions.parse(raw_options)
        query_id = query_identity(raw_options)
        data = data_columns(spark_schema)
        try:
            ds = dataset(options.uri, storage_options=options.storage_options)
        except DatasetNotFoundError:
            from ..table.base_paths import assign_base_ids
            from .schema import write_arrow_schema

            return cls(options, CREATE, write_arrow_schema(data),
                       assign_base_ids([], options.initial_bases or []), query_id)
        check_appendable(arrow_schema(data), ds.schema, options.uri)
        return cls(options, APPEND, ds.schema, list(ds.base_paths.values()), query_id)

    # -- executors -------------------------------------------------------------------------
    def write(self, iterator):
        """LanceWriter.write; once an earlier micro-batch has created the dataset, a writer
        planned as "create" appends to it (its schema and base paths)."""
        if self.mode == CREATE and version_numbers(self.options.uri, self.options.storage_options):
            self.mode = APPEND
        return super().write(iterator)

    # -- driver, once per micro-batch ----------------------------------------------------------
    def _release_committed(self, staging: str) -> None:
        """Drop the staging records of data files the latest version references (left by a run
        killed after its commit, before its clean-up): they are no longer the batch's to delete."""
        from ..table.versions import load_manifest

        storage = self.options.storage_options
        store = open_store(staging, storage)
        records = [i for i in store.list(staging) if not i.is_dir and i.name.endswith(".pending")]
        if not records or not version_numbers(self.options.uri, storage):
            return
        mf = load_manifest(self.options.uri, store=open_store(self.options.uri, storage))
        referenced = {p.rsplit("/", 1)[-1] for p in mf.fragments.data_file_paths().to_pylist()}
        for info in records:
            if info.name.rsplit("/", 1)[-1][:-len(".pending")] in referenced:
                store.delete(info.uri)

    def commit(self, messages, batchId):
        from ..dataset import commit
        from ..dataset.core.files import delete_files
        from ..dataset.write.staging import clear_staging, staged_files
        from ..table.transaction import Append, Overwrite

        staging = self._staging()
        storage = self.options.storage_options
        self._release_committed(staging)
        messages = [m for m in messages if isinstance(m, LanceCommitMessage)]
        fragments = [f for m in messages for f in m.fragments]
        committed: set = set()
        done = last_streamed_batch(self.options.uri, self.query_id, storage) if fragments else None
        if fragments and (done is None or int(batchId) > done):
            props = {QUERY_ID_KEY: self.query_id, BATCH_ID_KEY: str(int(batchId))}
            if not version_numbers(self.options.uri, storage):  # the first batch creates it
                op = Overwrite(self.schema, fragments, [b.to_pb() for b in self.bases])
                must_create = True
            else:
                op, must_create = Append(fragments), False
            try:
                commit(self.options.uri, op, None, storage_options=storage,
                       max_retries=self.options.max_retries,
                       enable_stable_row_ids=self.options.enable_stable_row_ids and must_create,
                       commit_message=self.options.commit_message,
                       transaction_properties=props, must_create=must_create)
            except BaseException:
                self.abort(messages, batchId)
                raise
            committed = set(self._written(messages))
        # a replayed batch, an empty one, or files of retried tasks: nothing else stays
        stray = [u for u in set(self._written(messages)) | set(staged_files(staging, storage))
                 if u not in committed]
        delete_files(stray, storage)
        clear_staging(staging, storage)

    def abort(self, messages, batchId=None):
        self._release_committed(self._staging())
        super().abort(messages)
