import struct

import pyarrow as pa
import pytest

from lancefmt.encoding import compression
from lancefmt.errors import CorruptFileError, UnsupportedFeatureError


@pytest.mark.parametrize("scheme", ["zstd", "lz4"])
@pytest.mark.parametrize("data", [b"", b"x", b"hello world " * 1000])
def test_round_trip(scheme, data):
    framed = compression.compress(scheme, data)
    assert compression.decompress(scheme, framed).to_pybytes() == data


def test_frames_as_lance_does():
    data = b"abc" * 100
    z = compression.compress("zstd", data, level=3)
    assert struct.unpack_from("<Q", z)[0] == len(data) and z[8:12] == b"\x28\xb5\x2f\xfd"
    l4 = compression.compress("lz4", data)
    assert struct.unpack_from("<I", l4)[0] == len(data)
    # the body is a raw LZ4 block (not the LZ4 frame format)
    assert pa.Codec("lz4_raw").decompress(l4[4:], decompressed_size=len(data)).to_pybytes() == data


def test_bare_zstd_frame_is_accepted():
    data = b"legacy frame " * 50
    frame = pa.Codec("zstd").compress(data, asbytes=True)
    assert compression.decompress("zstd", frame).to_pybytes() == data


@pytest.mark.parametrize("scheme,bad", [
    ("zstd", struct.pack("<Q", 100) + b"garbage!garbage!"),
    ("zstd", b"\x01\x02"),
    ("lz4", b"\x01"),
    ("lz4", struct.pack("<I", 50) + b"\xff" * 10),
    ("zstd", struct.pack("<Q", 1 << 60) + b"x" * 10),
])
def test_corrupt_frames(scheme, bad):
    with pytest.raises(CorruptFileError):
        compression.decompress(scheme, bad, "some/file.lance")


def test_unknown_scheme():
    with pytest.raises(UnsupportedFeatureError):
        compression.decompress("snappy", b"1234")
    with pytest.raises(UnsupportedFeatureError):
        compression.compress("brotli", b"1234")


def test_page_decompression_is_bounded_by_what_the_page_needs(tmp_path):
    """A zstd page whose length prefix claims 1 GiB (under the global cap) for 100 short strings
    is refused before anything is allocated (fresh process: a clean allocation peak)."""
    import os
    import subprocess
    import sys

    script = f"""
import struct, pyarrow as pa
from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter
from lancefmt.errors import CorruptFileError
path = {str(tmp_path / "z.lance")!r}
field = pa.field("x", pa.string(), metadata={{"lance-encoding:compression": "zstd"}})
t = pa.table({{"x": pa.array([str(i) for i in range(100)])}}, schema=pa.schema([field]))
with LanceFileWriter(path, t.schema, version="2.0") as w:
    w.write_batch(t)
data = bytearray(open(path, "rb").read())
at = data.find(b"\\x28\\xb5\\x2f\\xfd")
assert struct.unpack_from("<Q", data, at - 8)[0] == 190, "not a framed zstd page"
struct.pack_into("<Q", data, at - 8, 1 << 30)
open(path, "wb").write(bytes(data))
try:
    LanceFileReader(path).read_all()
    print("read")
except CorruptFileError as e:
    print("corrupt")
print(pa.default_memory_pool().max_memory())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ})
    assert out.returncode == 0, out.stderr
    verdict, peak = out.stdout.split()
    assert verdict == "corrupt" and int(peak) < 1 << 26
