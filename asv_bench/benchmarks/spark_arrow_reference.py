"""The fastest a Python data source can be in Spark: a reference source whose ``read`` only hands
over ready-made Arrow batches (memory-mapped from an Arrow IPC file, already in the exact Arrow
types Spark asks for), so a query through it costs only what Spark itself spends on a Python
data source (planning round trips to Python workers, the Arrow stream from the worker, and the
JVM turning every batch into rows: in pyspark 4.3 a Python source is read row by row, its
``PythonPartitionReaderFactory`` has no columnar mode and no column pruning).

``spark_source`` measures it next to the lance source: the ratio Parquet / reference is the
ceiling for any Python data source on that query, whatever its decoder does.
"""
import os

import pyarrow as pa
import pyarrow.ipc as ipc

NAME = "arrow_reference"
_SPARK_TYPES = {"int64": "bigint", "double": "double", "int32": "int", "string": "string"}


def write_arrow_file(table: pa.Table, path: str, batch_rows: int = 1 << 17) -> None:
    tmp = path + ".tmp"
    with ipc.new_file(tmp, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=batch_rows):
            writer.write_batch(batch)
    os.replace(tmp, path)


def source_class():
    """The data source class. Made here, not at import (asv imports every benchmark module, and
    pyspark is not a bench dependency); classes made in a function are pickled by value, so
    Spark's workers need not import this module."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Part(InputPartition):
        def __init__(self, index, count):
            super().__init__(index)
            self.index, self.count = index, count

    class Reader(DataSourceReader):
        def __init__(self, path, columns, partitions):
            self.path, self.columns, self.count = path, columns, partitions

        def partitions(self):
            return [Part(i, self.count) for i in range(self.count)]

        def read(self, part):
            source = ipc.open_file(pa.memory_map(self.path))
            n = source.num_record_batches
            for i in range(part.index * n // part.count, (part.index + 1) * n // part.count):
                batch = source.get_batch(i)
                yield batch.select(self.columns) if self.columns else batch

    class ArrowReferenceSource(DataSource):
        """``spark.read.format("arrow_reference").option("path", ...)[.option("columns", "x")]``"""

        @classmethod
        def name(cls):
            return NAME

        def _columns(self):
            cols = self.options.get("columns")
            return [c for c in cols.split(",") if c] if cols else None

        def schema(self):
            fields = ipc.open_file(pa.memory_map(self.options["path"])).schema
            cols = self._columns() or fields.names
            return ", ".join(f"{c} {_SPARK_TYPES[str(fields.field(c).type)]}" for c in cols)

        def reader(self, schema):
            return Reader(self.options["path"], self._columns(), int(self.options.get("partitions", 2)))

    return ArrowReferenceSource


def register(spark) -> None:
    spark.dataSource.register(source_class())
