"""JSON indices on an IndexStore: training infers the values' type and hands them to the
target type, searches answer only what json_get reads, update/remap/merge keep the target's
files, and damaged files or documents are refused."""
import numpy as np
import pyarrow as pa
import pytest

from lancefmt._proto import index_pb2
from lancefmt.errors import CorruptFileError, InvalidArgumentError, NotSupportedError
from lancefmt.index.core.registry import RowIdMapping, TrainingData
from lancefmt.index.core.store import IndexStore
from lancefmt.index.scalar.json_index import JSON, plain_key
from lancefmt.jsonb.codec import encode_array
from lancefmt.sql.sargable import Equals, IsIn, IsNull, JsonPath, Range


def training(docs: list, stable=False, start=0):
    n = len(docs)
    addr = np.arange(start, start + n, dtype=np.uint64)
    t = pa.table({"value": encode_array(pa.array(docs)), "_rowid": pa.array(addr), "_rowaddr": pa.array(addr)})
    return TrainingData.from_table(pa.field("j", pa.large_binary()), t, stable)


def built(tmp_path, docs, target="btree", path="x", name="idx", **extra):
    store = IndexStore(str(tmp_path / name))
    details = JSON.train(training(docs), store, {"target_index_type": target, "path": path, **extra})
    return JSON.load(IndexStore(str(tmp_path / name)), details), details


DOCS = ['{"x": 3}', '{"x": 1}', None, '{"y": 2}', '{"x": 3}', '{"x": null}', "[1]", '{"x": -4}']


def q(inner, fn="json_get_int", key="x"):
    return JsonPath(key, fn, inner)


@pytest.mark.parametrize("target", ["btree", "bitmap", "zonemap"])
def test_answers_json_get_int_from_the_target(tmp_path, target):
    idx, details = built(tmp_path, DOCS, target)
    assert details.path == "x" and details.target_details.type_url.startswith("/lance.")
    i64 = pa.int64()
    exact = target != "zonemap"
    def rows(query):
        return sorted(idx.search(query).rows.tolist())
    if exact:
        assert rows(q(Equals(3, i64))) == [0, 4]
        assert rows(q(Range(0, False, None, False, i64))) == [0, 1, 4]
        assert rows(q(IsIn((1, -4), i64))) == [1, 7]
    else:  # zones: every row of a zone that may match
        assert {0, 4} <= set(rows(q(Equals(3, i64))))
    assert rows(q(IsNull())) == [2, 3, 5, 6]
    assert idx.value_type == pa.int64() and idx.answers(q(Equals(3, i64)))
    assert not idx.answers(q(Equals(3.0, pa.float64()), "json_get_float"))  # another reading of x
    assert not idx.answers(q(Equals(3, i64), key="y"))


def test_the_first_value_decides_the_type(tmp_path):
    assert built(tmp_path, ['{"x": 1.5}', '{"x": 2}'], name="f")[0].value_type == pa.float64()
    assert built(tmp_path, ['{"x": "a"}', None], name="s")[0].value_type == pa.string()
    assert built(tmp_path, ['{"y": 1}'], name="n")[0].value_type == pa.string()
    assert built(tmp_path, ['{"x": false}'], name="b")[0].value_type == pa.bool_()
    idx, _ = built(tmp_path, ['{"x": 2.5}', '{"x": 2}', '{"x": 1e400}'], name="g")
    assert sorted(idx.search(q(Range(2.0, True, None, False, pa.float64()), "json_get_float")).rows.tolist()) == [0, 1, 2]


@pytest.mark.parametrize("docs, params, error, match", [
    (['{"x": 1}', '{"x": "a"}'], {}, InvalidArgumentError, "expected Int64, but batch row 1 has JSON type String"),
    (['{"x": [1]}'], {}, InvalidArgumentError, "JSON type Array; only scalar values"),
    (['{"x": 1}'], {"target_index_type": "json"}, InvalidArgumentError, "No scalar index plugin"),
    (['{"x": 1}'], {"target_index_type": "fts"}, NotSupportedError, "do not support target"),
    (['{"x": 1}'], {"path": "a b"}, InvalidArgumentError, "Invalid JSONPath"),
    (['{"x": 1}'], {"target_index_type": "ngram"}, Exception, "NGRAM index column"),
])
def test_bad_requests_are_refused(tmp_path, docs, params, error, match):
    with pytest.raises(error, match=match):
        JSON.train(training(docs), IndexStore(str(tmp_path / "i")),
                   {"target_index_type": "btree", "path": "x", **params})


def test_btree_target_needs_row_addresses(tmp_path):
    with pytest.raises(NotSupportedError, match="stable row ids"):
        JSON.train(training(DOCS, stable=True), IndexStore(str(tmp_path / "i")),
                   {"target_index_type": "btree", "path": "x"})


def test_only_plain_member_keys_read_as_json_get_reads():
    assert plain_key("x") and plain_key("some_key")
    assert not plain_key("$.x") and not plain_key("a.b") and not plain_key("a[0]") and not plain_key("0")


def test_update_remap_and_merge_keep_the_target(tmp_path):
    idx, _ = built(tmp_path, DOCS)
    new = training(['{"x": 3}', '{"x": 9}'], start=100)
    details = idx.update(new, IndexStore(str(tmp_path / "u")), keep=lambda ids: ids != 0)
    up = JSON.load(IndexStore(str(tmp_path / "u")), details)
    assert sorted(up.search(q(Equals(3, pa.int64()))).rows.tolist()) == [4, 100]
    with pytest.raises(InvalidArgumentError, match="expected Int64"):
        idx.update(training(['{"x": "s"}']), IndexStore(str(tmp_path / "u2")))
    mapping = RowIdMapping(np.array([0, 4], np.uint64), np.array([50, 54], np.uint64), np.array([1], np.uint64))
    details = idx.remap(mapping, IndexStore(str(tmp_path / "r")))
    moved = JSON.load(IndexStore(str(tmp_path / "r")), details)
    assert sorted(moved.search(q(Equals(3, pa.int64()))).rows.tolist()) == [50, 54]
    assert moved.search(q(Equals(1, pa.int64()))).rows.tolist() == []
    other, _ = built(tmp_path, ['{"x": 3}'], name="o")
    merged = JSON.merge([idx, other], IndexStore(str(tmp_path / "m")))
    assert isinstance(merged, index_pb2.JsonIndexDetails) and merged.path == "x"
    strings, _ = built(tmp_path, ['{"x": "a"}'], name="s")
    with pytest.raises(NotImplementedError):
        JSON.merge([idx, strings], IndexStore(str(tmp_path / "m2")))
    assert idx.params() == {"target_index_type": "BTREE", "path": "x", "target_index_parameters": {}}


def test_damaged_target_files_are_corrupt(tmp_path):
    _, details = built(tmp_path, DOCS)
    data = (tmp_path / "idx" / "page_lookup.lance").read_bytes()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "page_data.lance").write_bytes((tmp_path / "idx" / "page_data.lance").read_bytes())
    (bad / "page_lookup.lance").write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptFileError) as e:
        JSON.load(IndexStore(str(bad)), details).search(q(Equals(3, pa.int64())))
    assert "page_lookup.lance" in e.value.path
    unknown = index_pb2.JsonIndexDetails(path="x")
    unknown.target_details.type_url = "/lance.table.NoSuchIndexDetails"
    with pytest.raises(Exception, match="NoSuchIndexDetails"):
        JSON.load(IndexStore(str(tmp_path / "idx")), unknown)


def test_damaged_documents_are_corrupt(tmp_path):
    good = encode_array(pa.array(['{"x": {"y": 1}}'])).to_pylist()[0]
    t = pa.table({"value": pa.array([good, good[:9]], pa.large_binary()),
                  "_rowid": pa.array([0, 1], pa.uint64()), "_rowaddr": pa.array([0, 1], pa.uint64())})
    data = TrainingData.from_table(pa.field("j", pa.large_binary()), t)
    with pytest.raises(CorruptFileError):
        JSON.train(data, IndexStore(str(tmp_path / "i")), {"target_index_type": "btree", "path": "x.y"})
