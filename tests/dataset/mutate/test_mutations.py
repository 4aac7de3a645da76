"""Mutations move the Dataset object (as pylance's do); write_dataset's pylance signature;
insert; config and metadata updates; auto cleanup (lancefmt alone; pylance checks in
tests/interop/test_write_api_interop.py)."""
import inspect
import os

import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.dataset.maintain.auto_cleanup import cleanup_policy, parse_duration
from lancefmt.errors import InvalidArgumentError


def table(n=20, start=0):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "s": pa.array([f"s{i}" for i in ids])})


def test_write_dataset_takes_pylance_positional_order(tmp_path):
    params = list(inspect.signature(lancefmt.write_dataset).parameters)
    assert params[:4] == ["data_obj", "uri", "schema", "mode"]  # pylance 14's names
    schema = pa.schema([("id", pa.int64()), ("s", pa.large_string())])
    ds = lancefmt.write_dataset(table(3), str(tmp_path / "a"), schema, "create",
                                max_rows_per_group=10)
    assert ds.schema.field("s").type == pa.large_string()
    lancefmt.write_dataset(table(2, 3).cast(schema), str(tmp_path / "a"), None, "append")
    assert lancefmt.dataset(str(tmp_path / "a")).count_rows() == 5
    with pytest.raises(InvalidArgumentError):
        lancefmt.write_dataset(table(2), str(tmp_path / "b"), max_rows_per_group=0)


def test_mutations_move_the_object_checkout_stays(tmp_path):
    ds = lancefmt.write_dataset(table(), str(tmp_path / "d"), max_rows_per_file=5)
    pinned = ds.checkout_version(1)
    assert ds.delete("id < 3") == {"num_deleted_rows": 3}
    assert (ds.version, ds.count_rows()) == (2, 17)
    assert ds.update({"s": "'x'"}, "id = 10") == {"num_rows_updated": 1}
    assert ds.version == 3 and ds.to_table(filter="id = 10")["s"].to_pylist() == ["x"]
    assert ds.insert(table(2, 100)) is None and ds.count_rows() == 19
    assert ds.add_bases([lancefmt.BasePath(str(tmp_path / "b1"), name="b1")]) is ds
    assert ds.version == 5 and 1 in ds.base_paths
    assert pinned.version == 1 and pinned.count_rows() == 20  # checkout is separate
    assert pinned.restore() is None
    assert pinned.version == 6 and lancefmt.dataset(str(tmp_path / "d")).count_rows() == 20
    assert ds.version == 5  # another object is not moved by someone else's commit


def test_insert_overwrite_mode(tmp_path):
    ds = lancefmt.write_dataset(table(), str(tmp_path / "d"))
    ds.insert(table(4, 50), mode="overwrite")
    assert ds.version == 2 and ds.to_table() == table(4, 50)


def test_progress_and_auto_cleanup_config(tmp_path):
    seen = []

    class Progress:
        def begin(self, fragment):
            seen.append(("begin", fragment.physical_rows))

        def complete(self, fragment):
            seen.append(("complete", fragment.physical_rows))

    ds = lancefmt.write_dataset(table(12), str(tmp_path / "d"), max_rows_per_file=5,
                                progress=Progress(),
                                auto_cleanup_options={"interval": 2, "older_than_seconds": 3600})
    assert seen == [("begin", 5), ("complete", 5), ("begin", 5), ("complete", 5),
                    ("begin", 2), ("complete", 2)]
    assert ds.config() == {"lance.auto_cleanup.interval": "2", "lance.auto_cleanup.older_than": "3600s"}
    with pytest.raises(InvalidArgumentError):
        lancefmt.write_dataset(table(), str(tmp_path / "e"), auto_cleanup_options={"interval": 1})


def test_auto_cleanup_runs_every_interval(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(table(2), uri,
                                auto_cleanup_options={"interval": 2, "older_than_seconds": 0})
    ds.insert(table(1, 10))     # version 2: cleans versions older than 1 -> none
    assert [v["version"] for v in ds.versions()] == [1, 2]
    ds.insert(table(1, 11))     # version 3: not a multiple of 2
    ds.insert(table(1, 12))     # version 4: cleans what is older than 3
    assert [v["version"] for v in ds.versions()] == [3, 4]
    assert ds.count_rows() == 5
    ds.update_config({"lance.auto_cleanup.retain_versions": "2"})   # version 5
    ds.insert(table(1, 13))     # version 6: the last 2 versions are retained
    assert [v["version"] for v in ds.versions()] == [5, 6]
    ds.delete_config_keys(["lance.auto_cleanup.interval"])
    for i in range(3):
        ds.insert(table(1, 20 + i))
    assert len(ds.versions()) == 6  # no more cleanup (5..10)


def test_cleanup_policy_and_durations():
    assert parse_duration("14days").days == 14
    assert parse_duration("1h 30m").total_seconds() == 5400
    assert parse_duration("3600s").total_seconds() == 3600
    with pytest.raises(InvalidArgumentError):
        parse_duration("soon")
    cfg = {"lance.auto_cleanup.interval": "5", "lance.auto_cleanup.older_than": "1h"}
    assert cleanup_policy(cfg, 4) is None
    assert cleanup_policy(cfg, 10)[0].total_seconds() == 3600
    assert cleanup_policy({}, 10) is None


def test_config_and_metadata_updates(tmp_path):
    ds = lancefmt.write_dataset(table(), str(tmp_path / "d"))
    assert ds.update_config({"a": "1", "b": "2"}) == {"a": "1", "b": "2"}
    assert ds.update_config({"c": "3"}, replace=True) == {"c": "3"}
    assert ds.delete_config_keys(["c", "missing"]) is None and ds.config() == {}
    assert ds.update_metadata({"owner": "me"}) == {"owner": "me"}
    assert ds.update_schema_metadata({"k": "v"}) == {"k": "v"}
    assert ds.schema.metadata == {b"k": b"v"}
    ds.replace_schema_metadata({"only": "this"})
    assert ds.schema.metadata == {b"only": b"this"}
    ds.update_field_metadata({"s": {"unit": "none"}, 0: {"pk": "yes"}})
    assert ds.schema.field("s").metadata == {b"unit": b"none"}
    assert ds.schema.field("id").metadata == {b"pk": b"yes"}
    ds.replace_field_metadata("s", {"x": "y"})
    assert ds.schema.field("s").metadata == {b"x": b"y"}
    with pytest.raises(TypeError):
        ds.update_config({"a": 1})
    with pytest.raises(InvalidArgumentError):
        ds.update_field_metadata({"nope": {"a": "b"}})
    assert isinstance(TypeError(), Exception) and ds.version == 9


def test_non_utf8_field_metadata_refused(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), metadata={b"k": b"\xff"})])
    with pytest.raises(InvalidArgumentError, match="utf8"):
        lancefmt.write_dataset(pa.table({"id": [1]}).cast(schema), str(tmp_path / "d"))
    assert not os.path.exists(tmp_path / "d" / "_versions")


def test_append_may_omit_nullable_columns_only(tmp_path):
    ds = lancefmt.write_dataset(table(3), str(tmp_path / "d"))
    ds.add_columns(pa.field("extra", pa.float64()))
    ds.insert(table(2, 10))
    assert ds.to_table()["extra"].null_count == 5
    assert [len(f.metadata.pb.files[0].fields) for f in ds.get_fragments()] == [2, 2]
    ds.alter_columns({"path": "s", "nullable": False})
    with pytest.raises(InvalidArgumentError):
        ds.insert(table(1, 20).select(["id"]))
