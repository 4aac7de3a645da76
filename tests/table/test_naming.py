import random
import re
import uuid

import pytest

from lancefmt import CorruptFileError, InvalidArgumentError
from lancefmt.table import naming

# What pylance 14.0.2 writes: 24 bits MSB-first, then 26 hex chars of a UUID v4 (version nibble
# 4 at hex position 6, RFC 4122 variant at position 8).
LANCE_DATA_NAME = re.compile(r"^[01]{24}[0-9a-f]{6}4[0-9a-f]{3}[89ab][0-9a-f]{15}\.lance$")
U64 = (1 << 64) - 1


def reference_data_name(raw: bytes) -> str:
    return "".join(f"{b:08b}" for b in raw[:3]) + raw[3:].hex() + ".lance"


def test_data_file_name_matches_reference_on_many_uuids():
    rng = random.Random(1)
    for _ in range(2000):
        raw = rng.randbytes(16)
        assert naming.data_file_name(raw) == reference_data_name(raw)
        assert naming.data_file_name(uuid.UUID(bytes=raw)) == reference_data_name(raw)


def test_data_file_name_inverts_a_name_pylance_wrote():
    name = "1011001110100011100001017cd7da49f7afa1f600c80f25d1.lance"
    raw = int(name[:24], 2).to_bytes(3, "big") + bytes.fromhex(name[24:50])
    assert naming.data_file_name(raw) == name
    assert naming.data_file_name(str(uuid.UUID(bytes=raw))) == name
    assert naming.is_data_file_name(name)


def test_random_names_look_like_lance_names():
    assert LANCE_DATA_NAME.match(naming.data_file_name())
    for name in naming.data_file_names(5000):
        assert LANCE_DATA_NAME.match(name), name
        assert len(name) == 56


def test_a_million_names_are_unique():
    names = naming.data_file_names(1_000_000)
    assert len(names) == 1_000_000
    assert len(set(names)) == 1_000_000
    assert all(LANCE_DATA_NAME.match(n) for n in names[:: 997])


def test_data_file_names_edge_counts():
    assert naming.data_file_names(0) == []
    with pytest.raises(InvalidArgumentError):
        naming.data_file_names(-1)


@pytest.mark.parametrize("bad", [b"short", b"x" * 17, 12, "not-a-uuid"])
def test_data_file_name_rejects_bad_uuids(bad):
    with pytest.raises(InvalidArgumentError):
        naming.data_file_name(bad)


def test_deletion_file_names():
    assert naming.deletion_file_name(0, 1, 14296833039549868024, "arrow") == "0-1-14296833039549868024.arrow"
    assert naming.deletion_file_name(7, 3, 5, "bin") == "7-3-5.bin"
    assert naming.deletion_file_name(7, 3, 5, 1) == "7-3-5.bin"
    assert naming.parse_deletion_file_name("7-3-5.bin") == (7, 3, 5, "bin")
    assert naming.parse_deletion_file_name("7-3.bin") is None
    with pytest.raises(InvalidArgumentError):
        naming.deletion_file_name(1, 1, 1, "parquet")
    with pytest.raises(InvalidArgumentError):
        naming.deletion_file_name(-1, 1, 1, "bin")
    with pytest.raises(InvalidArgumentError):
        naming.deletion_file_name(1, 1, 1 << 64, "bin")


def test_transaction_file_names():
    u = uuid.UUID("550e8400-e29b-41d4-a716-446655440000")
    assert naming.transaction_file_name(5, u) == "5-550e8400-e29b-41d4-a716-446655440000.txn"
    name = naming.transaction_file_name(0)
    rv, us = naming.parse_transaction_file_name(name)
    assert rv == 0 and uuid.UUID(us).version == 4
    assert naming.parse_transaction_file_name("x.txn") is None


def test_manifest_names_both_schemes():
    assert naming.manifest_file_name(1) == "18446744073709551614.manifest"
    assert naming.manifest_file_name(1, "v2") == "18446744073709551614.manifest"
    assert naming.manifest_file_name(1, "v1") == "1.manifest"
    assert naming.manifest_file_name(0, "v2") == "18446744073709551615.manifest"
    assert naming.manifest_file_name(U64 >> 1, "v2") == f"{U64 - (U64 >> 1):020d}.manifest"
    with pytest.raises(InvalidArgumentError):
        naming.manifest_file_name(1, "v3")
    with pytest.raises(InvalidArgumentError):
        naming.manifest_file_name(-1)


def test_manifest_name_round_trips():
    rng = random.Random(7)
    versions = [0, 1, 2, 9, 10, 99, 1000, (1 << 63) - 1] + [rng.randrange(1 << 63) for _ in range(500)]
    for v in versions:
        for scheme in ("v1", "v2"):
            name = naming.manifest_file_name(v, scheme)
            assert naming.manifest_version(name) == v
            assert naming.parse_manifest_name(name) == (v, scheme, False)
    # V2 names sort newest first.
    names = [naming.manifest_file_name(v) for v in range(1, 200)]
    assert sorted(names) == names[::-1]


def test_detached_versions():
    v = (1 << 63) | 12345
    assert naming.is_detached_version(v)
    assert not naming.is_detached_version(12345)
    for scheme in ("v1", "v2"):
        assert naming.manifest_file_name(v, scheme) == f"d{v}.manifest"
    assert naming.parse_manifest_name(f"d{v}.manifest") == (v, "v2", True)
    assert naming.manifest_version(f"d{v}.manifest") == v
    assert naming.manifest_scheme(f"d{v}.manifest") == "v2"


@pytest.mark.parametrize("name", [
    "latest_version_hint.json", ".tmp_7.manifest_9c100374-3298-4537-afc6-f5ee7913666d",
    "18446744073709551614.manifest-9c100374-3298-4537-afc6-f5ee7913666d", "abc.manifest",
    ".manifest", "manifest", "1.manifest.bak", "-1.manifest", "99999999999999999999.manifest",
    "123456789012345678901.manifest", "d.manifest", "dx.manifest", "1 .manifest", "é.manifest",
])
def test_non_manifest_names_are_skipped(name):
    assert naming.parse_manifest_name(name) is None
    assert naming.manifest_scheme(name) is None
    with pytest.raises(InvalidArgumentError):
        naming.manifest_version(name)


def test_manifest_version_accepts_paths():
    assert naming.manifest_version("/x/_versions/18446744073709551613.manifest") == 2


def test_listing_scheme():
    v2 = [naming.manifest_file_name(v) for v in (1, 2, 3)]
    v1 = [naming.manifest_file_name(v, "v1") for v in (1, 2, 3)]
    junk = ["latest_version_hint.json", ".tmp_x", "1.manifest-abc"]
    detached = [f"d{(1 << 63) | 5}.manifest"]
    assert naming.listing_scheme(v2 + junk + detached) == "v2"
    assert naming.listing_scheme(v1 + junk + detached) == "v1"
    assert naming.listing_scheme(junk + detached) is None
    assert naming.listing_scheme([]) is None
    with pytest.raises(CorruptFileError) as e:
        naming.listing_scheme(v1 + v2, "s3://b/ds/_versions")
    assert "s3://b/ds/_versions" in str(e.value)
    assert isinstance(e.value, CorruptFileError) and e.value.path == "s3://b/ds/_versions"


def test_names_do_not_depend_on_os_random_state():
    a, b = naming.data_file_names(100), naming.data_file_names(100)
    assert not set(a) & set(b)
