from lancefmt.table import version_hint as vh


def test_bytes_match_pylance():
    # pylance 14.0.2 writes exactly these 13 bytes for version 3 (checked in tests/interop).
    assert vh.encode_version_hint(3) == b'{"version":3}'
    assert vh.encode_version_hint(12345) == b'{"version":12345}'


def test_decode_tolerates_anything():
    assert vh.decode_version_hint(b'{"version":3}') == 3
    assert vh.decode_version_hint(b'{"version": 7, "extra": 1}') == 7
    for bad in (b"", b"garbage", b"[]", b'{"version":-1}', b'{"version":"3"}',
                b'{"version":true}', b'{"v":3}', b"\xff\xfe"):
        assert vh.decode_version_hint(bad) is None


def test_read_write(local_uri, memory_uri):
    for uri in (local_uri, memory_uri):
        assert vh.read_version_hint(uri) is None
        vh.write_version_hint(uri, 5)
        assert vh.read_version_hint(uri) == 5
        vh.write_version_hint(uri, 6)
        assert vh.read_version_hint(uri) == 6
        assert vh.version_hint_uri(uri).endswith("/_versions/latest_version_hint.json")


def test_only_local_datasets_get_a_hint():
    assert vh.wants_version_hint("/tmp/ds")
    assert vh.wants_version_hint("file:///tmp/ds")
    assert not vh.wants_version_hint("s3://bucket/ds")


def test_deeply_nested_hint_is_no_hint():
    from lancefmt.table.version_hint import decode_version_hint

    assert decode_version_hint(b"[" * 100000 + b"]" * 100000) is None
    assert decode_version_hint(b'{"version": 1e999}') is None
