"""Spark writes: executors write fragments, the driver commits one transaction.

``writer()`` runs on the driver at planning time and pins what the write is against: the latest
version (its number becomes the commit's ``read_version``), its schema and base paths -- or
"no dataset yet". The :class:`LanceWriter` is then pickled to the executors, where ``write()``
casts the task's Arrow batches to the dataset schema, streams them into data files with
:func:`lancefmt.write_fragments` (round-robin across ``target_bases``) and returns the
fragments plus the URIs of the files written. Back on the driver, ``commit()`` makes exactly one
``Append`` or ``Overwrite`` transaction of all tasks' fragments; the commit protocol rebases it
over concurrent compatible commits and raises :class:`~lancefmt.CommitConflictError` otherwise.
``abort()`` deletes the files the successful tasks wrote (a failing task deletes its own before
re-raising), so a failed job leaves no version and no files behind.

Modes: ``append`` to an existing dataset appends; ``append`` to a missing one creates it (and
refuses to clobber a dataset someone else created meanwhile); ``overwrite`` replaces (or creates).
"""
from __future__ import annotations

import uuid

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from ..errors import DatasetNotFoundError, InvalidArgumentError
from ..table.base_paths import BasePathResolver, assign_base_ids
from .options import WriteOptions
from .schema import METADATA_COLUMNS, BatchCaster, arrow_schema, write_arrow_schema

APPEND, OVERWRITE, CREATE = "append", "overwrite", "create"


class LanceCommitMessage(WriterCommitMessage):
    """What one task wrote: fragments (ids 0, assigned at commit) and the files' URIs."""

    def __init__(self, fragments, files, rows: int):
        self.fragments = list(fragments)
        self.files = list(files)
        self.rows = int(rows)

    def __repr__(self):
        return f"LanceCommitMessage({len(self.fragments)} fragments, {self.rows} rows)"


def data_columns(schema: StructType) -> StructType:
    """Spark's schema without Lance metadata columns (a scan's ``_rowid``/``_rowaddr`` are never
    data: Lance reserves those names)."""
    return StructType([f for f in schema.fields if f.name not in METADATA_COLUMNS])


def check_appendable(source: pa.Schema, target: pa.Schema, uri: str) -> None:
    missing = [n for n in target.names if source.get_field_index(n) < 0]
    extra = [n for n in source.names if target.get_field_index(n) < 0]
    if missing or extra:
        raise InvalidArgumentError(
            f"cannot append to {uri}: the DataFrame's columns {source.names} differ from the "
            f"dataset's {target.names}" + (f" (missing {missing})" if missing else "")
            + (f" (unknown {extra})" if extra else ""))
    bad = []
    for f in target:
        src = source.field(f.name).type
        try:
            pa.array([], src).cast(f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            bad.append(f"{f.name}: {src} -> {f.type}")
    if bad:
        raise InvalidArgumentError(f"cannot append to {uri}: column types do not convert ({'; '.join(bad)})")


class LanceWriter(DataSourceArrowWriter):
    """One Spark write job; pickled to the executors and to the committing driver process."""

    # the job is opened on the driver before its tasks run (see open_staged_job): a task that
    # starts after the commit or abort closed it writes nothing
    staging_open = True

    def __init__(self, options: WriteOptions, mode: str, read_version: int, schema: pa.Schema,
                 bases: list):
        self.options = options
        self.mode = mode                  # append | overwrite | create
        self.read_version = int(read_version)
        self.schema = schema              # Arrow schema of the files written
        self.bases = list(bases)          # BasePaths (with ids) the files may go to
        self.must_create = False
        self.job_id = uuid.uuid4().hex    # names the job's staging records (see abort)

    @classmethod
    def plan(cls, options: WriteOptions, spark_schema: StructType, overwrite: bool) -> "LanceWriter":
        """Pin the write against the latest version (driver side, at planning time), and open
        the job's staging area."""
        from ..dataset.write.staging import open_staged_job

        writer = cls._pinned(options, spark_schema, overwrite)
        open_staged_job(writer._staging(), options.storage_options)
        return writer

    @classmethod
    def _pinned(cls, options: WriteOptions, spark_schema: StructType, overwrite: bool) -> "LanceWriter":
        from ..dataset import dataset

        data = data_columns(spark_schema)
        try:
            ds = dataset(options.uri, storage_options=options.storage_options,
                         manifest_store=options.manifest_store)
        except DatasetNotFoundError:
            ds = None
        if ds is None:
            bases = assign_base_ids([], options.initial_bases or [])
            writer = cls(options, CREATE, 0, write_arrow_schema(data), bases)
            writer.must_create = not overwrite  # an append never replaces someone else's rows
            return writer
        if options.initial_bases:
            raise InvalidArgumentError(
                f"option 'initial_bases' only applies when creating a dataset; {options.uri} exists")
        bases = list(ds.base_paths.values())
        if overwrite:
            return cls(options, OVERWRITE, ds.version, write_arrow_schema(data, ds.schema), bases)
        check_appendable(arrow_schema(data), ds.schema, options.uri)
        return cls(options, APPEND, ds.version, ds.schema, bases)

    # -- executors --------------------------------------------------------------------------
    def write(self, iterator):
        from ..dataset import write_fragments
        from ..file.encode_pool import encode_threads
        from .task_cores import task_cores

        caster = BatchCaster(self.schema)
        counted = [0]

        def batches():
            for batch in iterator:
                if batch.num_rows:
                    counted[0] += batch.num_rows
                    yield caster(batch)

        reader = pa.RecordBatchReader.from_batches(self.schema, batches())
        kwargs = self.options.fragment_kwargs()
        if self.mode == CREATE and self.bases:
            kwargs["initial_bases"] = self.bases
        threads = self.options.encode_threads or task_encode_threads()
        with encode_threads(threads), task_cores():
            fragments = write_fragments(reader, self.options.uri,
                                        mode="append" if self.mode == APPEND else "overwrite",
                                        storage_options=self.options.storage_options,
                                        manifest_store=self.options.manifest_store,
                                        target_offset=_task_number(), staging=self._staging(),
                                        staging_open=self.staging_open, **kwargs)
        return LanceCommitMessage(fragments, self._file_uris(fragments), counted[0])

    def _staging(self) -> str:
        from ..dataset.write.staging import staging_uri

        return staging_uri(self.options.uri, self.job_id)

    def _file_uris(self, fragments) -> list[str]:
        resolver = BasePathResolver(self.options.uri, self.bases)
        return [resolver.data_file_uri(df.path, df.base_id if df.HasField("base_id") else None)
                for frag in fragments for df in frag.files]

    # -- driver -----------------------------------------------------------------------------
    def operation(self, messages):
        from ..table.transaction import Append, Overwrite

        fragments = [f for m in messages if m is not None for f in m.fragments]
        if self.mode == APPEND:
            return Append(fragments)
        initial = [b.to_pb() for b in self.bases] if self.mode == CREATE else None
        return Overwrite(self.schema, fragments, initial)

    def commit(self, messages):
        from ..dataset import commit
        from ..dataset.core.files import delete_files
        from ..dataset.write.staging import clear_staging, staged_files

        try:
            commit(self.options.uri, self.operation(messages), self.read_version,
                   storage_options=self.options.storage_options,
                   manifest_store=self.options.manifest_store,
                   max_retries=self.options.max_retries,
                   enable_stable_row_ids=self.options.enable_stable_row_ids and self.mode == CREATE,
                   commit_message=self.options.commit_message,
                   must_create=self.must_create)
        except BaseException:
            # nothing was committed: every file of the job is garbage (Spark calls abort() too;
            # deleting twice is harmless)
            self.abort(messages)
            raise
        # Files of task attempts whose results Spark did not use (retried or speculative
        # attempts) are in the staging records but not in the commit: remove them.
        staging = self._staging()
        committed = set(self._written(messages))
        stray = [u for u in staged_files(staging, self.options.storage_options) if u not in committed]
        delete_files(stray, self.options.storage_options)
        clear_staging(staging, self.options.storage_options)

    def abort(self, messages):
        """Delete every file the job wrote: those the successful tasks reported, and those the
        staging records name (tasks that failed, were killed, or whose results Spark dropped)."""
        from ..dataset.core.files import delete_files
        from ..dataset.write.staging import abort_staged_job

        delete_files(self._written(messages), self.options.storage_options)
        abort_staged_job(self._staging(), self.options.storage_options)

    @staticmethod
    def _written(messages) -> list[str]:
        return [u for m in messages if m is not None for u in m.files]


def task_encode_threads() -> int | None:
    """Encoding threads for this Spark task when the ``encode_threads`` option is not set: the
    cores Spark gave the task (``spark.task.cpus``, usually 1: Spark already runs a task per
    core, and an encode pool per task would compete with the other tasks and with the JVM
    threads feeding them for those cores); None (the process default, which also honours
    ``LANCEFMT_WRITE_THREADS``) outside a task or when that variable is set."""
    import os

    from .task_cores import task_cpus

    if os.environ.get("LANCEFMT_WRITE_THREADS"):
        return None
    return task_cpus()


def _task_number() -> int:
    """This Spark task's partition id (0 outside a task): where its round-robin starts."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return 0
    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0
