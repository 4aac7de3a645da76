"""``batch_udf(checkpoint_file=...)``: the results of a UDF's batches kept in a SQLite file,
so an ``add_columns`` that failed part-way does not call the UDF again for the batches it had
finished. Batches are keyed by (fragment id, first physical row, row count); the file is
removed once the columns are committed (as pylance does)."""
from __future__ import annotations

import os
import sqlite3

import pyarrow as pa


class UdfCheckpoint:
    def __init__(self, path):
        self.path = os.fspath(path)
        self._db = sqlite3.connect(self.path)
        self._db.execute("CREATE TABLE IF NOT EXISTS batches (fragment INTEGER, start INTEGER, "
                         "rows INTEGER, data BLOB, PRIMARY KEY (fragment, start, rows))")
        self._db.commit()

    def get(self, fragment: int, start: int, rows: int) -> pa.RecordBatch | None:
        row = self._db.execute("SELECT data FROM batches WHERE fragment=? AND start=? AND rows=?",
                               (fragment, start, rows)).fetchone()
        if row is None:
            return None
        return pa.ipc.open_stream(pa.py_buffer(row[0])).read_next_batch()

    def put(self, fragment: int, start: int, batch: pa.RecordBatch) -> None:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as w:
            w.write_batch(batch)
        self._db.execute("INSERT OR REPLACE INTO batches VALUES (?, ?, ?, ?)",
                         (fragment, start, batch.num_rows, sink.getvalue().to_pybytes()))
        self._db.commit()

    def remove(self) -> None:
        self._db.close()
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
