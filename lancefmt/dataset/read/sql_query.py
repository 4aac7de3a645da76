"""pylance's ``Dataset.sql(query)``: a SQL query over the dataset, as a builder
(``table_name``, ``with_row_id``, ``with_row_addr``) and a built query
(``to_batch_records``, ``to_stream_reader``).

lancefmt has no query engine of its own: the query runs in DuckDB (an optional dependency,
``pip install duckdb``) over the dataset's Arrow stream, registered under the table name
(``dataset`` unless ``table_name`` says otherwise)."""
from __future__ import annotations

import pyarrow as pa

from ...errors import InvalidArgumentError, NotSupportedError


class SqlQuery:
    def __init__(self, dataset, sql: str, table_name: str, with_row_id: bool,
                 with_row_addr: bool):
        self._dataset, self._sql, self._name = dataset, sql, table_name
        self._row_id, self._row_addr = with_row_id, with_row_addr

    def _run(self) -> pa.Table:
        try:
            import duckdb
        except ImportError:
            raise NotSupportedError("Dataset.sql runs queries in DuckDB: pip install duckdb") \
                from None
        data = self._dataset.scanner(with_row_id=self._row_id,
                                     with_row_address=self._row_addr).to_reader()
        con = duckdb.connect()
        try:
            con.register(self._name, data)
            try:
                rel = con.sql(self._sql)
                # DuckDB 2.x: to_arrow_table; 1.x: arrow()
                return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
            except duckdb.Error as e:
                raise InvalidArgumentError(f"SQL query failed: {e}") from None
        finally:
            con.close()

    def to_batch_records(self) -> list:
        table = self._run()
        return table.combine_chunks().to_batches() or [
            pa.RecordBatch.from_pylist([], schema=table.schema)]

    def to_stream_reader(self) -> pa.RecordBatchReader:
        table = self._run().combine_chunks()
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())


class SqlQueryBuilder:
    def __init__(self, dataset, sql: str):
        if not isinstance(sql, str) or not sql.strip():
            raise InvalidArgumentError("Dataset.sql needs a query")
        self._dataset, self._sql = dataset, sql
        self._name, self._row_id, self._row_addr = "dataset", False, False

    def table_name(self, table_name: str) -> "SqlQueryBuilder":
        self._name = str(table_name)
        return self

    def with_row_id(self, with_row_id: bool = True) -> "SqlQueryBuilder":
        self._row_id = bool(with_row_id)
        return self

    def with_row_addr(self, with_row_addr: bool = True) -> "SqlQueryBuilder":
        self._row_addr = bool(with_row_addr)
        return self

    def build(self) -> SqlQuery:
        return SqlQuery(self._dataset, self._sql, self._name, self._row_id, self._row_addr)
