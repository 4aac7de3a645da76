"""Arrow IPC streams: a compressed buffer's length prefix is checked against what its bytes can
decode to before pyarrow allocates it (table data sent to the namespace server)."""
import struct

import pyarrow as pa
import pytest

from lancefmt.encoding.ipc_bounds import check_ipc_stream_sizes
from lancefmt.errors import CorruptFileError

T = pa.table({"id": pa.array(range(1000), pa.int64()), "s": [f"v{i}" for i in range(1000)],
              "d": pa.array(["a", "b"] * 500).dictionary_encode()})


def _stream(compression) -> bytes:
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, T.schema, options=options) as w:
        w.write_table(T)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("compression", [None, "zstd", "lz4"])
def test_honest_streams_pass(compression):
    data = _stream(compression)
    check_ipc_stream_sizes(data)
    assert pa.ipc.open_stream(data).read_all().equals(T)


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_a_prefix_claiming_more_than_its_frame_holds_is_corrupt(compression):
    bad = bytearray(_stream(compression))
    at = bad.find(struct.pack("<q", 8000))  # the int64 values buffer's prefix
    assert at > 0
    struct.pack_into("<q", bad, at, 3 << 30)
    with pytest.raises(CorruptFileError, match="claims 3221225472 bytes") as info:
        check_ipc_stream_sizes(bytes(bad), "request data")
    assert info.value.path == "request data"


def test_namespace_request_data_is_checked(tmp_path):
    from lancefmt.namespace import DirectoryNamespace
    from lancefmt.namespace import errors as nserr

    ns = DirectoryNamespace(root=str(tmp_path / "lake"))
    bad = bytearray(_stream("zstd"))
    struct.pack_into("<q", bad, bad.find(struct.pack("<q", 8000)), 3 << 30)
    with pytest.raises(nserr.InvalidInputError, match="claims"):
        ns.create_table(["t"], bytes(bad))
    ns.create_table(["t"], _stream("zstd"))
    assert ns.open_table(["t"]).to_table().column("id").to_pylist() == list(range(1000))
