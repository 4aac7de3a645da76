"""Scans keep the dataset's ``not null`` flags (to_table used to fail on non-nullable columns:
the batches came back nullable and no longer matched the dataset schema)."""
import lance
import pyarrow as pa

import lancefmt


def test_non_nullable_columns_scan_and_keep_their_flag(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string(), nullable=False),
                        pa.field("n", pa.float64())])
    t = pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"], "n": [None, 1.0, 2.0]}, schema=schema)
    for writer in ("lancefmt", "pylance"):
        uri = str(tmp_path / writer)
        if writer == "pylance":
            lance.write_dataset(t, uri, data_storage_version="2.0")
        else:
            lancefmt.write_dataset(t, uri)
        ds = lancefmt.dataset(uri)
        assert ds.to_table().equals(t)
        assert ds.to_table().schema.field("id").nullable is False
        got = ds.to_table(columns=["s"], filter="id > 1", with_row_id=True)
        assert got.schema.field("s").nullable is False and got["s"].to_pylist() == ["b", "c"]
