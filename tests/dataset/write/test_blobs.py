"""Blob v2 sidecars on S3 (``lancefmt/dataset/write/blobs.py``), against moto behind the
proxy: a sidecar's upload finishes in the background like its data file's (the commit's
barrier waits for both), and a failed sidecar upload leaves no version and no object."""
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import StorageError
from lancefmt.io import open_store, uploads

BLOB = {"lance-encoding:blob": "true"}


def blob_table(rows=6, size=300_000):
    """Blobs big enough to go to packed sidecars (not inline)."""
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("blob", pa.large_binary(), metadata=BLOB)])
    return pa.table({"id": list(range(rows)), "blob": [bytes([i]) * size for i in range(rows)]},
                    schema=schema)


def _objects(options, bucket, prefix):
    store = open_store("s3://x", options)
    return sorted(i.uri for i in store.walk(f"s3://{bucket}/{prefix}"))


def test_sidecar_uploads_overlap_and_the_commit_waits_for_them(proxied_s3, upload_log):
    env, bucket = proxied_s3
    options = env.pylance_options()
    env.proxy.reset(latency=0.05)
    closes, waited = upload_log
    uri = f"s3://{bucket}/blobs"
    ds = lancefmt.write_dataset(blob_table(), uri, data_storage_version="2.2",
                                max_rows_per_file=3, storage_options=options)
    sidecars = [u for u in closes if u.endswith(".blob")]
    assert len(sidecars) == 2 and len(closes) == 4  # two data files, two sidecars
    assert waited == []  # no close waited for its upload: the commit's barrier did
    assert uploads.pending_count() == 0
    assert set(sidecars) <= set(_objects(options, bucket, "blobs/data"))
    again = lancefmt.dataset(uri, storage_options=options)
    assert again.to_table().equals(ds.to_table())
    assert [f.readall() for f in again.take_blobs("blob", indices=[0, 5])] == \
        [b"\x00" * 300_000, b"\x05" * 300_000]


def test_a_failed_sidecar_upload_leaves_no_version_and_no_object(proxied_s3):
    env, bucket = proxied_s3
    options = env.pylance_options(client_max_retries="0")
    uri = f"s3://{bucket}/failing"
    lancefmt.write_dataset(blob_table(), uri, data_storage_version="2.2", max_rows_per_file=3,
                           storage_options=options)
    before = _objects(options, bucket, "failing")
    env.proxy.inject("internal", times=100, method="PUT", path_contains=".blob")
    with pytest.raises(StorageError) as err:
        lancefmt.write_dataset(blob_table(), uri, mode="append", max_rows_per_file=3,
                               storage_options=options)
    assert ".blob" in str(err.value)  # names the sidecar that failed
    env.proxy.reset()
    assert lancefmt.dataset(uri, storage_options=options).version == 1
    assert _objects(options, bucket, "failing") == before
    assert uploads.failed_uris() == [] and uploads.pending_count() == 0

