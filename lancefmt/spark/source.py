"""The ``lance`` data source: ``spark.read.format("lance")`` and ``df.write.format("lance")``.

Spark creates this object in short-lived driver-side Python processes and pickles it between
them: ``schema()`` runs at ``load()`` and pins the version it describes (the ``version``
option -- a number or a tag -- or the latest), so the DataFrame keeps reading that version
however many commits follow; ``reader()`` and ``writer()`` build the picklable reader/writer.
"""
from __future__ import annotations

import os

import pyarrow as pa
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from ..errors import InvalidArgumentError
from .options import ReadOptions, WriteOptions
from .reader import LancePushdownReader, LanceReader, pushdown_enabled
from .schema import METADATA_COLUMNS, ROW_ADDRESS, ROW_ID, spark_schema, spark_type
from .writer import LanceWriter

SHORT_NAME = "lance"


def _scan_schema(dataset_schema: pa.Schema, options: ReadOptions) -> StructType:
    """The Spark schema of a read: the ``columns`` option's columns (in its order) or all
    columns, then the metadata columns asked for."""
    if not options.columns:
        return spark_schema(dataset_schema, with_row_id=options.with_row_id,
                            with_row_address=options.with_row_address)
    from pyspark.sql.types import LongType, StructField

    fields = []
    for name in options.columns:
        idx = dataset_schema.get_field_index(name)
        if idx >= 0:
            f = dataset_schema.field(idx)
            fields.append(StructField(name, spark_type(f.type), nullable=f.nullable))
        elif name in METADATA_COLUMNS:
            fields.append(StructField(name, LongType(), nullable=False))
        else:
            raise InvalidArgumentError(f"option 'columns': no column {name!r} "
                                       f"(the dataset has {dataset_schema.names})")
    names = [f.name for f in fields]
    for flag, name in ((options.with_row_id, ROW_ID), (options.with_row_address, ROW_ADDRESS)):
        if flag and name not in names:
            fields.append(StructField(name, LongType(), nullable=False))
    return StructType(fields)


class LanceDataSource(DataSource):
    """Lance datasets as a Spark source and sink (Spark 4.x Python Data Source API)."""

    # The session's defaultParallelism, recorded by lancefmt.spark.register() on a subclass that
    # travels to Spark's planning processes (they have no SparkContext to ask).
    default_parallelism: int | None = None

    def _parallelism(self, options: ReadOptions) -> int:
        """Cores a read should keep busy: the ``min_partitions`` option, else the registered
        session's default parallelism, else this (driver) machine's CPU count."""
        return options.min_partitions or self.default_parallelism or os.cpu_count() or 1

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def _open(self, options: ReadOptions):
        from ..dataset import dataset

        version = getattr(self, "_pinned_version", None)
        return dataset(options.uri, options.version if version is None else version,
                       storage_options=options.storage_options,
                       manifest_store=options.manifest_store)

    def schema(self) -> StructType:
        options = ReadOptions.parse(self.options)
        ds = self._open(options)
        self._pinned_version = ds.version
        return _scan_schema(ds.schema, options)

    def reader(self, schema: StructType) -> LanceReader:
        options = ReadOptions.parse(self.options)
        ds = self._open(options)
        self._pinned_version = ds.version
        unknown = [n for n in schema.fieldNames()
                   if ds.schema.get_field_index(n) < 0 and n not in METADATA_COLUMNS]
        if unknown:
            raise InvalidArgumentError(f"no column(s) {unknown} in {options.uri} version {ds.version}")
        cls = LancePushdownReader if pushdown_enabled() else LanceReader
        return cls(options, ds.version, schema, ds.schema, self._parallelism(options))

    def writer(self, schema: StructType, overwrite: bool) -> LanceWriter:
        return LanceWriter.plan(WriteOptions.parse(self.options), schema, overwrite)

    def streamReader(self, schema: StructType):
        from .stream_reader import stream_reader

        return stream_reader(self, schema)

    def streamWriter(self, schema: StructType, overwrite: bool):
        from .stream_writer import LanceStreamWriter

        return LanceStreamWriter.plan_stream(self.options, schema, overwrite)
