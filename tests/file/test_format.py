import struct

import pytest

from lancefmt.errors import CorruptFileError, UnsupportedFeatureError
from lancefmt.file.format import (FOOTER_SIZE, Footer, align, file_version, footer_version,
                                  offset_table_bytes, parse_offset_table, parse_version)


def test_footer_round_trip():
    f = Footer(100, 200, 232, 1, 2, 0, 3)
    b = f.to_bytes()
    assert len(b) == FOOTER_SIZE and b.endswith(b"LANC")
    assert Footer.parse(b"x" * 10 + b, 232 + 16 + FOOTER_SIZE) == f


@pytest.mark.parametrize("bad,size,match", [
    (Footer(100, 200, 232, 1, 2, 0, 3).to_bytes()[:-4] + b"LANX", 288, "magic"),
    (Footer(100, 200, 230, 1, 2, 0, 3).to_bytes(), 288, "global buffer table"),
    (Footer(100, 201, 232, 1, 2, 0, 3).to_bytes(), 288, "column metadata table"),
    (Footer(300, 200, 232, 1, 2, 0, 3).to_bytes(), 288, "starts after"),
    (Footer(100, 216, 232, 0, 1, 0, 3).to_bytes(), 272, "at least one global buffer"),
])
def test_footer_checks(bad, size, match):
    with pytest.raises(CorruptFileError, match=match) as e:
        Footer.parse(bad, size, "f.lance")
    assert e.value.path == "f.lance"


def test_tiny_file():
    with pytest.raises(CorruptFileError, match="too small"):
        Footer.parse(b"LANC", 4)


def test_versions():
    assert parse_version("2.0") == (2, 0) == parse_version((2, 0)) == parse_version("0.3")
    assert footer_version((2, 0)) == (0, 3)
    assert footer_version((2, 2)) == (2, 2)
    assert file_version(0, 3) == file_version(2, 0) == (2, 0)
    assert file_version(2, 1) == (2, 1)
    with pytest.raises(UnsupportedFeatureError, match="legacy"):
        file_version(0, 2)
    with pytest.raises(UnsupportedFeatureError):
        file_version(3, 0)
    assert parse_version("stable") == (2, 2)  # pylance 14's default
    for name in ("legacy", "next", "2.3", "banana"):
        with pytest.raises(UnsupportedFeatureError):
            parse_version(name)


def test_offset_tables():
    entries = [(0, 10), (64, 5)]
    data = offset_table_bytes(entries)
    assert data == struct.pack("<QQQQ", 0, 10, 64, 5)
    pos, size = parse_offset_table(data, 2, 100, "x")
    assert pos.tolist() == [0, 64] and size.tolist() == [10, 5]
    with pytest.raises(CorruptFileError, match="outside the file"):
        parse_offset_table(data, 2, 68, "column metadata")
    with pytest.raises(CorruptFileError, match="outside the file"):
        parse_offset_table(offset_table_bytes([(2**64 - 1, 2)]), 1, 100, "x")
    with pytest.raises(CorruptFileError, match="bytes"):
        parse_offset_table(data[:-1], 2, 100, "x")


def test_align():
    assert [align(n) for n in (0, 1, 64, 65)] == [0, 64, 64, 128]
