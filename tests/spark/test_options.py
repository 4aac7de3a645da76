"""Spark option strings -> typed read/write settings (no SparkSession)."""
import pytest

from lancefmt.errors import InvalidArgumentError
from lancefmt.spark.options import ReadOptions, WriteOptions, storage_options


def test_read_options_defaults_and_parsing(tmp_path):
    o = ReadOptions.parse({"path": str(tmp_path)})
    assert o.version is None and o.columns is None and o.batch_size is None and o.max_batch_bytes == 64 << 20
    o = ReadOptions.parse({"PATH": str(tmp_path), "Version": "3", "columns": "a, b",
                           "with_row_id": "True", "batch_size": "100", "rows_per_partition": "10"})
    assert (o.version, o.columns, o.with_row_id, o.batch_size, o.rows_per_partition) == (3, ["a", "b"], True, 100, 10)
    assert ReadOptions.parse({"path": "x", "version": "nightly"}).version == "nightly"
    assert ReadOptions.parse({"path": "x", "columns": '["a,b", "c"]'}).columns == ["a,b", "c"]


@pytest.mark.parametrize("options, message", [
    ({}, "needs a dataset path"),
    ({"path": "x", "batch_size": "0"}, "at least 1"),
    ({"path": "x", "batch_size": "many"}, "integer"),
    ({"path": "x", "with_row_id": "perhaps"}, "true or false"),
    ({"path": "x", "columns": "[1]"}, "list of names"),
])
def test_bad_read_options(options, message):
    with pytest.raises(InvalidArgumentError, match=message):
        ReadOptions.parse(options)


def test_storage_options():
    assert storage_options({"path": "x"}) is None
    got = storage_options({"storage.endpoint_url": "http://h:1", "storage.anon": "false",
                           "storage.client_kwargs": '{"region_name": "eu"}',
                           "storage_options": '{"key": "k", "anon": true}'})
    assert got == {"endpoint_url": "http://h:1", "anon": False, "client_kwargs": {"region_name": "eu"},
                   "key": "k"}
    assert storage_options({"storage.secret": "12345"}) == {"secret": "12345"}  # never a number
    with pytest.raises(InvalidArgumentError, match="JSON object"):
        storage_options({"storage_options": "[1]"})


def test_write_options(tmp_path):
    o = WriteOptions.parse({"path": "x", "max_row_per_file": "10", "target_bases": "hot,2",
                            "initial_bases": '[{"path": "/b", "name": "hot"}, "/c"]',
                            "max_retries": "0"})
    assert o.max_rows_per_file == 10 and o.target_bases == ["hot", 2] and o.max_retries == 0
    assert [(b.path, b.name, b.is_dataset_root) for b in o.initial_bases] == [("/b", "hot", False), ("/c", None, False)]
    assert o.fragment_kwargs() == {"max_rows_per_file": 10, "target_bases": ["hot", 2]}
    assert WriteOptions.parse({"path": "x"}).fragment_kwargs() == {}
    assert WriteOptions.parse({"path": "x"}).encode_threads is None
    assert WriteOptions.parse({"path": "x", "encode_threads": "1"}).encode_threads == 1
    with pytest.raises(InvalidArgumentError, match="encode_threads"):
        WriteOptions.parse({"path": "x", "encode_threads": "0"})
    with pytest.raises(InvalidArgumentError, match="unknown initial base key"):
        WriteOptions.parse({"path": "x", "initial_bases": '[{"path": "/b", "nme": "x"}]'})
    with pytest.raises(InvalidArgumentError, match="JSON list"):
        WriteOptions.parse({"path": "x", "initial_bases": "{oops"})


def test_manifest_store_option(tmp_path):
    from lancefmt.spark.options import ReadOptions, WriteOptions

    uri = f"sqlite://{tmp_path}/m.db"
    assert ReadOptions.parse({"path": "/x", "manifest_store": uri}).manifest_store == uri
    assert WriteOptions.parse({"path": "/x", "MANIFEST_STORE": uri}).manifest_store == uri
    assert ReadOptions.parse({"path": "/x"}).manifest_store is None
    ddb = "dynamodb://tbl?endpoint_url=http://127.0.0.1:1&region_name=us-east-1"
    assert WriteOptions.parse({"path": "/x", "manifest_store": ddb}).manifest_store == ddb
    with pytest.raises(InvalidArgumentError, match="sqlite:///path"):
        WriteOptions.parse({"path": "/x", "manifest_store": "etcd://t"})
    with pytest.raises(InvalidArgumentError, match="unknown DynamoDB option"):
        WriteOptions.parse({"path": "/x", "manifest_store": "dynamodb://t?bogus=1"})
