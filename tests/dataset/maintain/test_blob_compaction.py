"""Compaction rewrites blob v2 columns by their bytes (not their descriptors), so a dataset
with blobs compacts, and pylance reads the compacted blobs."""
import pyarrow as pa
import pytest

import lancefmt

lance = pytest.importorskip("lance")


def test_blob_dataset_compacts_and_pylance_reads_it(tmp_path):
    uri = str(tmp_path / "d")
    schema = pa.schema([pa.field("id", pa.int32()),
                        pa.field("blob", pa.large_binary(),
                                 metadata={"lance-encoding:blob": "true"})])
    blobs = [b"\x01\x02", None, b"\x03" * 5000, b"x"]
    ds = lancefmt.write_dataset(pa.table({"id": pa.array(range(4), pa.int32()),
                                          "blob": pa.array(blobs, pa.large_binary())},
                                         schema=schema), uri, max_rows_per_file=1)
    ds.delete("id = 3")
    metrics = ds.optimize.compact_files(num_threads=1)
    assert metrics.fragments_added == 1 and len(ds.get_fragments()) == 1
    ours = [None if f is None else f.readall() for f in ds.take_blobs("blob", indices=[0, 1, 2])]
    theirs = [None if f is None else f.readall()
              for f in lance.dataset(uri).take_blobs("blob", indices=[0, 1, 2])]
    assert ours == theirs == blobs[:3]
