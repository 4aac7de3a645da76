"""UTF-8 validation of string pages: the Cython kernel against Python's own decoder, and a
corrupt string page read through the file reader."""
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from lancefmt.encoding._utf8 import first_invalid_utf8_row


def _python_first_bad(data: bytes, offsets) -> int:
    for i in range(len(offsets) - 1):
        try:
            data[offsets[i]:offsets[i + 1]].decode("utf-8")
        except UnicodeDecodeError:
            return i
    return -1


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=12).map(lambda t: t.encode("utf-8")),
                          st.binary(max_size=12)), max_size=20),
       st.sampled_from([np.int32, np.int64]))
def test_matches_python_decoder(rows, dtype):
    data = b"".join(rows)
    offsets = np.cumsum([0] + [len(r) for r in rows]).astype(dtype)
    assert first_invalid_utf8_row(data, offsets) == _python_first_bad(data, offsets)


@pytest.mark.parametrize("bad", [b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82",
                                 b"\xff", b"\x80", b"abcdefgh\xe2\x28\xa1"])
def test_known_bad_sequences(bad):
    data = b"ok" + bad
    assert first_invalid_utf8_row(data, np.array([0, 2, len(data)], np.int64)) == 1


def test_row_split_inside_a_character_is_bad():
    data = "é".encode()  # two bytes, each row gets half
    assert first_invalid_utf8_row(data, np.array([0, 1, 2], np.int32)) == 0


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_string_page_with_invalid_utf8_is_corrupt(tmp_path, compression):
    from lancefmt.errors import CorruptFileError
    from lancefmt.file.reader import LanceFileReader
    from lancefmt.file.writer import LanceFileWriter as _Writer


def LanceFileWriter(*args, version="2.0", **kwargs):
    """These tests are about the 2.0 layout (the writer's default is 2.2)."""
    return _Writer(*args, version=version, **kwargs)

    meta = {"lance-encoding:compression": compression} if compression else None
    field = pa.field("s", pa.string(), metadata=meta)
    t = pa.table({"s": ["alpha", "béta", "gamma"]}, schema=pa.schema([field]))
    path = str(tmp_path / "u.lance")
    with LanceFileWriter(path, t.schema) as w:
        w.write_batch(t)
    assert LanceFileReader(path).read_all().column("s").to_pylist() == ["alpha", "béta", "gamma"]
    if compression:  # rewrite the compressed bytes buffer with one bad byte
        import struct

        from lancefmt.encoding import compression as comp

        raw = bytearray(open(path, "rb").read())
        at = raw.find(b"\x28\xb5\x2f\xfd") - 8
        size = struct.unpack_from("<Q", raw, at)[0]
        framed = comp.compress("zstd", "alphab\xffta".encode("latin-1")[:size].ljust(size, b"a"))
        old = comp.compress("zstd", b"alphab\xc3\xa9tagamma")
        assert raw[at:at + len(old)] == old and len(framed) <= len(old)
        raw[at:at + len(framed)] = framed
        data = bytes(raw)
    else:
        data = open(path, "rb").read().replace("béta".encode(), b"b\xff\xfeta", 1)
    open(path, "wb").write(data)
    with pytest.raises(CorruptFileError, match="UTF-8"):
        LanceFileReader(path).read_all()
