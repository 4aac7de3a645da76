"""TrinityLake storage locations: the seed's example, the reference implementation's values
(research sheet trinitylake_namespace.md, computed with Guava's murmur3_32_fixed), and the shapes
of every generated name."""
import re
import uuid

import pytest
from hypothesis import given, settings, strategies as st

from lancefmt import InvalidArgumentError, InvalidPathError
from lancefmt import trinitylake as tl
from lancefmt.trinitylake import locations as loc

PREFIX = re.compile(r"^[01]{4}/[01]{4}/[01]{4}/[01]{8}-")


def test_seed_root_node_example():
    assert tl.root_node_file_name(100) == "_00100110000000000000000000000000.ipc"


def test_java_root_node_names_64_bits():
    assert tl.root_node_file_name(100, bits=64) == "_0010011" + "0" * 57 + ".ipc"
    assert tl.root_node_file_name(1, bits=64) == "_1" + "0" * 63 + ".ipc"
    assert tl.root_node_file_name(12345678, bits=64).startswith("_01110010100001100011110100")
    assert len(tl.root_node_file_name(12345678, bits=64)) == 69
    big = 9223372036854775802
    name = tl.root_node_file_name(big, bits=64)
    assert name.startswith("_0101") and name.endswith("1110.ipc")
    assert tl.parse_root_node_file_name(name) == big


@pytest.mark.parametrize("name,hash_hex,expected", [
    ("my-table-definition.binpb", "bb3ba2cb", "1011/1010/0010/11001011-my-table-definition.binpb"),
    ("my-path-my-table-definition.binpb", "a0f2253d",
     "0010/0010/0101/00111101-my-path-my-table-definition.binpb"),
    ("node-6fcb514b-b878-4c9d-95b7-8dc3a7ce6fd8.ipc", "e6fb0a4e",
     "1011/0000/1010/01001110-node-6fcb514b-b878-4c9d-95b7-8dc3a7ce6fd8.ipc"),
    ("table-t1-ns1-6fcb514b-b878-4c9d-95b7-8dc3a7ce6fd8.binpb", "3a093896",
     "1001/0011/1000/10010110-table-t1-ns1-6fcb514b-b878-4c9d-95b7-8dc3a7ce6fd8.binpb"),
])
def test_reference_optimized_names(name, hash_hex, expected):
    assert tl.murmur3_32(name) == int(hash_hex, 16)
    assert tl.optimized_file_name(name) == expected
    assert tl.optimized_file_names([name, name]) == [expected, expected]


def test_node_file_name_goes_through_optimization():
    u = uuid.UUID("6fcb514b-b878-4c9d-95b7-8dc3a7ce6fd8")
    assert tl.node_file_name(u) == "1011/0000/1010/01001110-node-6fcb514b-b878-4c9d-95b7-8dc3a7ce6fd8.ipc"
    names = tl.node_file_names(50)
    assert len(set(names)) == 50
    for n in names:
        assert PREFIX.match(n)
        assert re.fullmatch(r"node-[0-9a-f-]{36}\.ipc", n[24:])
        assert uuid.UUID(n[29:65]).version == 4


def test_lakehouse_def_file_name():
    u = uuid.UUID("6fcb514b-b878-4c9d-95b7-8dc3a7ce6fd8")
    assert tl.lakehouse_def_file_name(u) == "_lakehouse_def_6fcb514b-b878-4c9d-95b7-8dc3a7ce6fd8.binpb"
    assert re.fullmatch(r"_lakehouse_def_[0-9a-f-]{36}\.binpb", tl.lakehouse_def_file_name())


def test_root_normalisation_and_relative_locations(tmp_path):
    assert tl.normalize_root("s3://my-bucket/my-lakehouse") == "s3://my-bucket/my-lakehouse/"
    assert tl.normalize_root("s3://my-bucket/my-lakehouse/") == "s3://my-bucket/my-lakehouse/"
    assert tl.normalize_root(str(tmp_path)) == str(tmp_path) + "/"
    assert (tl.file_location("s3://b/lake", "my-table-definition.binpb")
            == "s3://b/lake/my-table-definition.binpb")
    assert tl.relative_location("s3://b/lake", "s3://b/lake/x/y.binpb") == "x/y.binpb"
    for bad in ["../x", "a/../../x", "/abs", "s3://other/x", "", "a//b"]:
        with pytest.raises(InvalidPathError):
            tl.file_location("s3://b/lake", bad)
    with pytest.raises(InvalidPathError):
        tl.relative_location("s3://b/lake", "s3://b/lake2/x")


def test_version_range_checked():
    with pytest.raises(InvalidArgumentError):
        tl.root_node_file_name(1 << 32)
    with pytest.raises(InvalidArgumentError):
        tl.root_node_file_name(-1)
    with pytest.raises(InvalidArgumentError):
        tl.root_node_file_name(1 << 63, bits=64)
    with pytest.raises(InvalidArgumentError):
        tl.root_node_file_name(3, bits=16)
    assert tl.parse_root_node_file_name("_" + "1" * 64 + ".ipc") is None  # negative in Java
    for bad in ["_0101.ipc", "_" + "2" * 32 + ".ipc", "00100110000000000000000000000000.ipc",
                "_00100110000000000000000000000000.arrow"]:
        assert tl.parse_root_node_file_name(bad) is None


@settings(max_examples=200, deadline=None)
@given(st.integers(0, (1 << 32) - 1), st.integers(0, (1 << 63) - 1))
def test_root_node_names_roundtrip(v32, v64):
    n32 = tl.root_node_file_name(v32)
    assert re.fullmatch(r"_[01]{32}\.ipc", n32)
    assert tl.parse_root_node_file_name(n32) == v32
    assert n32[1:33] == format(v32, "032b")[::-1]
    n64 = tl.root_node_file_name(v64, bits=64)
    assert re.fullmatch(r"_[01]{64}\.ipc", n64)
    assert tl.parse_root_node_file_name(n64) == v64
    assert n64[1:65] == format(v64, "064b")[::-1]


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(blacklist_characters="/", blacklist_categories=("Cs",)), min_size=1,
               max_size=40))
def test_optimized_name_shape(name):
    out = tl.optimized_file_name(name)
    assert PREFIX.match(out) and out[24:] == name
    bits = out[:23].replace("/", "")
    assert int(bits, 2) == tl.murmur3_32(name) & 0xFFFFF  # low-order 20 bits
    assert tl.optimized_file_names([name]) == [out]


def test_latest_hint_probes_past_a_stale_hint(tmp_path):
    lh = tl.LakehouseLocations(str(tmp_path))
    assert lh.latest_version() is None
    for v in range(4):
        (tmp_path / tl.root_node_file_name(v)).write_bytes(b"node")
    assert lh.latest_version() == 3            # no hint: probe from 0
    lh.write_hint(1)                           # stale hint
    assert (tmp_path / "_latest_hint.txt").read_text() == "1"
    assert lh.latest_version() == 3
    lh.write_hint(9)                           # hint ahead of storage: start over from 0
    assert lh.latest_version() == 3
    (tmp_path / "_latest_hint.txt").write_bytes(b"garbage")
    assert lh.read_hint() is None and lh.latest_version() == 3
    lh64 = tl.LakehouseLocations(str(tmp_path), root_node_bits=64)
    assert lh64.latest_version() is None       # 64-bit names are different files


def test_find_latest_version_counts_probes():
    present = set(range(0, 101))
    probes = []

    def exists(v):
        probes.append(v)
        return v in present
    assert loc.find_latest_version(exists, 100) == 100
    assert probes == [100, 101]
    assert tl.parse_latest_hint(b"100\n") == 100
    assert tl.parse_latest_hint(b"-3") is None and tl.parse_latest_hint(b"9" * 40) is None
