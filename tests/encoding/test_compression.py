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
from lancefmt.encoding.pool_memory import decode_pool
print(pa.default_memory_pool().max_memory() + decode_pool().max_memory())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ})
    assert out.returncode == 0, out.stderr
    verdict, peak = out.stdout.split()
    assert verdict == "corrupt" and int(peak) < 1 << 26


def _bare_frame(content_size: int, blocks: bytes) -> bytes:
    """A zstd frame header (single segment, 8-byte content size, no checksum) and ``blocks``."""
    return b"\x28\xb5\x2f\xfd" + bytes([0xE0]) + content_size.to_bytes(8, "little") + blocks


def _block(kind: int, size: int, last: bool, payload: bytes) -> bytes:
    return ((size << 3) | (kind << 1) | int(last)).to_bytes(3, "little") + payload


@pytest.mark.parametrize("size", [0, 1, 131072, 131073, 1 << 21])
def test_zstd_bound_covers_what_the_frame_decodes_to(size):
    import os

    import zstandard

    for data in (bytes(size), os.urandom(size)):
        for frame in (compression.compress("zstd", data)[8:],
                      zstandard.ZstdCompressor(write_checksum=True).compress(data)):
            bound = compression.zstd_output_bound(frame, 0)
            assert size <= bound <= max(131072, 2 * size) + 131072
            assert compression.decompress("zstd", frame).to_pybytes() == data


def test_zstd_length_claiming_more_than_its_blocks_hold_is_refused():
    """A bare frame's content size (and a Lance prefix) is checked against the block headers
    before pyarrow allocates: one RLE block of 5 bytes decodes to 5 bytes, never to 8 GiB."""
    rle = _block(1, 5, True, b"a")
    assert compression.decompress("zstd", _bare_frame(5, rle)).to_pybytes() == b"aaaaa"
    with pytest.raises(CorruptFileError, match="claims 8589934592 .* at most 5") as e:
        compression.decompress("zstd", _bare_frame(1 << 33, rle), "f.lance")
    assert e.value.path == "f.lance"
    prefixed = struct.pack("<Q", 1 << 33) + _bare_frame(5, rle)
    with pytest.raises(CorruptFileError, match="at most 5"):
        compression.decompress("zstd", prefixed, "f.lance")


@pytest.mark.parametrize("frame", [
    _bare_frame(5, b""),                                # no block
    _bare_frame(5, _block(0, 100, True, b"x" * 10)),    # a raw block past the end
    _bare_frame(5, _block(3, 5, True, b"")),            # the reserved block type
    _bare_frame(5, _block(1, 5, False, b"a")),          # no last block
])
def test_zstd_malformed_frames_are_corrupt(frame):
    with pytest.raises(CorruptFileError):
        compression.decompress("zstd", frame, "f.lance")


def test_lz4_length_claiming_more_than_255x_is_refused():
    framed = compression.compress("lz4", bytes(10000))
    assert compression.decompress("lz4", framed).size == 10000
    body = framed[4:]
    with pytest.raises(CorruptFileError, match="at most"):
        compression.decompress("lz4", struct.pack("<I", len(body) * 255 + 1) + body)
