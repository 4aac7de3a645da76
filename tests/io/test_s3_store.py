"""The s3 store against a local moto server (conditional PUT is what commits rely on)."""
from lancefmt.io import open_store


def test_s3_roundtrip_and_conditional_put(s3_uri):
    root, opts = s3_uri
    store = open_store(root, opts)
    uri = root + "/_versions/18446744073709551614.manifest"
    assert store.put_if_absent(uri, b"v1") is True
    assert store.put_if_absent(uri, b"v1-again") is False
    assert store.read(uri) == b"v1"
    assert store.read_range(uri, 1, 1) == b"1"
    store.put(root + "/data/a.lance", b"x" * 100)
    assert store.size(root + "/data/a.lance") == 100
    assert store.read_ranges(root + "/data/a.lance", [(0, 3), (97, 3)]) == [b"xxx", b"xxx"]
    names = sorted(i.name for i in store.list(root + "/_versions"))
    assert names == ["18446744073709551614.manifest"]
    assert sorted(i.name for i in store.walk(root)) == ["18446744073709551614.manifest", "a.lance"]
    with store.open_output(root + "/data/b.lance") as f:
        f.write(b"streamed")
    assert store.read(root + "/data/b.lance") == b"streamed"
    store.delete(root + "/data/a.lance")
    assert not store.exists(root + "/data/a.lance")
