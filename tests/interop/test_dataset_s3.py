"""Datasets on S3 (a local moto server): lancefmt writes, commits with conditional PUTs, and
pylance reads the same bucket."""
import pyarrow as pa
import pytest

import lancefmt

lance = pytest.importorskip("lance")


def pylance_options(opts):
    return {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1",
            "endpoint": opts["endpoint_url"], "allow_http": "true"}


def test_write_append_delete_on_s3(s3_uri):
    uri, opts = s3_uri
    t = pa.table({"a": pa.array(range(100), pa.int64()), "s": [f"v{i}" for i in range(100)]})
    ds = lancefmt.write_dataset(t, uri, max_rows_per_file=40, storage_options=opts)
    ds = lancefmt.write_dataset(t, uri, mode="append", storage_options=opts)
    ds.delete("a < 10")
    assert ds.version == 3 and ds.count_rows() == 180
    ours = lancefmt.dataset(uri, storage_options=opts)
    assert ours.to_table(filter="a >= 95")["a"].to_pylist() == [95, 96, 97, 98, 99] * 2
    theirs = lance.dataset(uri, storage_options=pylance_options(opts))
    theirs.validate()
    assert theirs.version == 3 and theirs.count_rows() == 180
    assert theirs.to_table().sort_by("a").equals(ours.to_table().sort_by("a"))
    # pylance appends on S3, we read it
    lance.write_dataset(t, uri, mode="append", storage_options=pylance_options(opts))
    assert lancefmt.dataset(uri, storage_options=opts).count_rows() == 280


def test_probe_left_by_a_killed_writer_is_a_temporary_both_cleanups_remove(s3_uri, monkeypatch):
    """The conditional-put probe of a writer killed before it removed it stays behind: it is a
    ``_versions/.tmp*`` object, which both libraries read past and clean up (it was once an
    object in the dataset root that nothing would ever remove)."""
    from datetime import timedelta

    from lancefmt.io import open_store
    from lancefmt.io.s3 import S3Store
    from lancefmt.table import conditional_put

    uri, opts = s3_uri
    lancefmt.write_dataset(pa.table({"a": pa.array(range(10), pa.int64())}), uri, storage_options=opts)
    store = open_store(uri, opts)
    monkeypatch.setattr(S3Store, "delete", lambda self, u, missing_ok=True: None)  # killed here
    assert conditional_put.probe_conditional_put(store, uri) is None
    monkeypatch.undo()
    names = [i.name for i in store.list(uri + "/_versions")]
    probes = [n for n in names if n.startswith(conditional_put.PROBE_PREFIX)]
    assert len(probes) == 1 and probes[0].startswith(".tmp")
    assert not [i for i in store.list(uri) if not i.is_dir]  # nothing in the dataset root
    theirs = lance.dataset(uri, storage_options=pylance_options(opts))
    assert theirs.count_rows() == lancefmt.dataset(uri, storage_options=opts).count_rows() == 10
    lancefmt.write_dataset(pa.table({"a": pa.array([10], pa.int64())}), uri, mode="append",
                           storage_options=opts)
    lance.dataset(uri, storage_options=pylance_options(opts)).cleanup_old_versions(
        older_than=timedelta(0), delete_unverified=True)
    assert not [i.name for i in store.list(uri + "/_versions") if "probe" in i.name]
    assert lance.dataset(uri, storage_options=pylance_options(opts)).count_rows() == 11
