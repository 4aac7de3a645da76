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
