"""Request bodies the namespace tests send: Arrow IPC streams, as lance-namespace clients do."""
import pyarrow as pa


def ipc(table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()
