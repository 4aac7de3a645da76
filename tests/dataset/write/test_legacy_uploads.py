"""Legacy (0.1) data files on S3 finish uploading in the background like 2.x files and blob
sidecars (tests/dataset/write/test_blobs.py): no close waits, the commit's barrier does."""
import pyarrow as pa

import lancefmt
from lancefmt.io import uploads


def test_legacy_file_uploads_overlap_and_the_commit_waits_for_them(proxied_s3, upload_log):
    """Legacy (0.1) data files upload in the background like 2.x files (issue 37)."""
    env, bucket = proxied_s3
    options = env.pylance_options()
    env.proxy.reset(latency=0.05)
    closes, waited = upload_log
    uri = f"s3://{bucket}/legacy"
    t = pa.table({"id": list(range(9)), "s": [f"r{i}" for i in range(9)]})
    ds = lancefmt.write_dataset(t, uri, data_storage_version="legacy", max_rows_per_file=3,
                                storage_options=options)
    assert ds.data_storage_version == "0.1"
    assert len([u for u in closes if u.endswith(".lance")]) == 3
    assert waited == []  # no close waited for its upload: the commit's barrier did
    assert uploads.pending_count() == 0
    assert lancefmt.dataset(uri, storage_options=options).to_table().equals(t)
