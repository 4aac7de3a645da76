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
