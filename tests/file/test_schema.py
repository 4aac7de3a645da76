"""Lance Field lists <-> Arrow, checked against the Field lists pylance writes."""
import glob
import struct

import lance
import pyarrow as pa
import pytest
from lance.file import LanceFileWriter as PyLanceWriter

from lancefmt._proto import file_pb2, table_pb2
from lancefmt.errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from lancefmt.file.schema import (arrow_from_fields, arrow_type, field_subtree_ids, field_tree,
                                  fields_from_arrow, logical_type, max_field_id, project_fields)

WIDE = pa.schema([
    pa.field("i8", pa.int8()), pa.field("u64", pa.uint64(), nullable=False),
    pa.field("f16", pa.float16()), pa.field("f32", pa.float32()), pa.field("f64", pa.float64()),
    pa.field("b", pa.bool_()), pa.field("d32", pa.date32()), pa.field("d64", pa.date64()),
    pa.field("t32", pa.time32("s")), pa.field("t64", pa.time64("ns")),
    pa.field("ts", pa.timestamp("ms")), pa.field("tsz", pa.timestamp("ns", tz="Asia/Kolkata")),
    pa.field("tso", pa.timestamp("us", tz="+05:30")), pa.field("dur", pa.duration("us")),
    pa.field("dec", pa.decimal128(20, 4)), pa.field("dec256", pa.decimal256(60, 10)),
    pa.field("s", pa.string(), metadata={"lance-encoding:compression": "zstd"}),
    pa.field("ls", pa.large_string()), pa.field("bin", pa.binary()),
    pa.field("lb", pa.large_binary()), pa.field("fsb", pa.binary(16)),
    pa.field("l", pa.list_(pa.int32())), pa.field("ll", pa.large_list(pa.field("el", pa.utf8(), False))),
    pa.field("lst", pa.list_(pa.struct([("a", pa.int8()), ("b", pa.list_(pa.float64()))]))),
    pa.field("llst", pa.large_list(pa.struct([("z", pa.int8())]))),
    pa.field("v", pa.list_(pa.float32(), 768)),
    pa.field("vv", pa.list_(pa.list_(pa.int16(), 2), 3)),
    pa.field("st", pa.struct([pa.field("x", pa.int64(), metadata={"k": "v"}),
                              pa.field("y", pa.struct([("z", pa.string())]))])),
    pa.field("dict", pa.dictionary(pa.int32(), pa.string())),
    pa.field("dict8", pa.dictionary(pa.int8(), pa.large_string())),
    pa.field("n", pa.null()),
    pa.field("uuid", pa.uuid()),
    pa.field("pk", pa.int64(), nullable=False,
             metadata={"lance-schema:unenforced-primary-key": "true"}),
], metadata={"schema-key": "schema-value", "x": "y"})


def _descriptor_fields(path):
    d = open(path, "rb").read()
    gbo = struct.unpack_from("<Q", d, len(d) - 40 + 16)[0]
    pos, size = struct.unpack_from("<QQ", d, gbo)
    return file_pb2.FileDescriptor.FromString(d[pos:pos + size])


def test_fields_match_pylance_file_descriptor(tmp_path):
    path = str(tmp_path / "f.lance")
    with PyLanceWriter(path, WIDE, version="2.0"):
        pass
    fd = _descriptor_fields(path)
    ours = fields_from_arrow(WIDE)
    assert [f.SerializeToString(deterministic=True) for f in ours] == \
        [f.SerializeToString(deterministic=True) for f in fd.schema.fields]
    assert {k: v for k, v in fd.schema.metadata.items()} == {b"schema-key".decode(): b"schema-value",
                                                            "x": b"y"}


def test_fields_match_pylance_manifest(tmp_path):
    schema = pa.schema([f for f in WIDE if f.name not in ("n",)])  # datasets refuse null type
    uri = str(tmp_path / "ds")
    lance.write_dataset(schema.empty_table(), uri, data_storage_version="2.0")
    (manifest,) = glob.glob(uri + "/_versions/*.manifest")
    data = open(manifest, "rb").read()
    pos = struct.unpack_from("<q", data, len(data) - 16)[0]
    n = struct.unpack_from("<I", data, pos)[0]
    m = table_pb2.Manifest.FromString(data[pos + 4:pos + 4 + n])
    ours = fields_from_arrow(schema)
    assert [f.SerializeToString(deterministic=True) for f in ours] == \
        [f.SerializeToString(deterministic=True) for f in m.fields]


def test_arrow_round_trip_exact():
    back = arrow_from_fields(fields_from_arrow(WIDE), {k: v for k, v in WIDE.metadata.items()})
    for a, b in zip(back, WIDE):
        if pa.types.is_fixed_size_list(b.type):
            continue  # Lance does not store the FSL item field (it comes back as nullable "item")
        assert a.equals(b, check_metadata=True), (a, b)
    assert back.metadata == WIDE.metadata
    assert back.field("v").type == pa.list_(pa.field("item", pa.float32()), 768)
    assert back.field("uuid").type == pa.uuid()


def test_ids_parents_and_order():
    fields = fields_from_arrow(pa.schema([
        ("a", pa.int32()), ("s", pa.struct([("x", pa.list_(pa.int8())), ("y", pa.int8())])),
        ("v", pa.list_(pa.float32(), 4))]), start_id=10)
    assert [(f.name, f.id, f.parent_id) for f in fields] == [
        ("a", 10, -1), ("s", 11, -1), ("x", 12, 11), ("item", 13, 12), ("y", 14, 11), ("v", 15, -1)]
    assert [f.logical_type for f in fields] == ["int32", "struct", "list", "int8", "int8",
                                                "fixed_size_list:float:4"]
    assert [f.encoding for f in fields] == [1, 0, 1, 1, 1, 1]
    assert max_field_id(fields) == 15 and max_field_id([]) == -1


@pytest.mark.parametrize("dtype,lt", [
    (pa.timestamp("s"), "timestamp:s:-"), (pa.timestamp("ns", "UTC"), "timestamp:ns:UTC"),
    (pa.decimal128(7, 3), "decimal:128:7:3"), (pa.list_(pa.struct([("a", pa.int8())])), "list.struct"),
    (pa.large_list(pa.struct([("a", pa.int8())])), "large_list.struct"),
    (pa.dictionary(pa.int16(), pa.binary()), "dict:binary:int16:false"),
    (pa.list_(pa.list_(pa.int32(), 2), 2), "fixed_size_list:fixed_size_list:int32:2:2"),
    (pa.list_(pa.timestamp("us", "-03:00"), 2), "fixed_size_list:timestamp:us:-03:00:2"),
    (pa.binary(3), "fixed_size_binary:3"), (pa.float16(), "halffloat"), (pa.null(), "null"),
])
def test_logical_types(dtype, lt):
    assert logical_type(dtype) == lt
    if not lt.startswith(("list", "large_list")):
        assert arrow_type(lt) == dtype


def test_map_logical_type_reads_as_arrow_map():
    entries = pa.field("entries", pa.struct([pa.field("key", pa.string(), False),
                                             pa.field("value", pa.int32())]), False)
    assert arrow_type("map", [entries]) == pa.map_(pa.string(), pa.int32())
    with pytest.raises(CorruptFileError):
        arrow_type("map")


@pytest.mark.parametrize("lt", ["int128", "fixed_size_list:int32", "decimal:64:3:1",
                                "timestamp:fortnight:-", "dict:string:int32", "fixed_size_binary:x",
                                "fixed_size_list:lance.bfloat17:4"])
def test_unknown_logical_types(lt):
    with pytest.raises(UnsupportedFeatureError):
        arrow_type(lt)


def test_maps_as_lance_writes_them():
    """map -> one non-null ``entries`` struct of key, value (as pylance 14's 2.2 schema)."""
    fields = fields_from_arrow(pa.schema([("m", pa.map_(pa.string(), pa.int32()))]))
    assert [(f.name, f.logical_type, f.nullable, f.parent_id) for f in fields] == [
        ("m", "map", True, -1), ("entries", "struct", False, 0), ("key", "string", False, 1),
        ("value", "int32", True, 1)]


def test_arrow_json_is_stored_as_lance_json():
    """``pa.json_()`` is written as pylance writes it: logical type json, large_binary JSONB."""
    (f,) = fields_from_arrow(pa.schema([("j", pa.json_())]))
    assert (f.logical_type, f.extension_name, dict(f.metadata)) == (
        "json", "lance.json", {"ARROW:extension:name": b"lance.json", "ARROW:extension:metadata": b""})


def test_json_and_bfloat16_logical_types_read():
    f = file_pb2.Field(name="j", id=0, parent_id=-1, logical_type="json", nullable=True)
    field = arrow_from_fields([f]).field("j")
    assert field.type == pa.large_binary()
    assert field.metadata[b"ARROW:extension:name"] == b"lance.json"
    g = file_pb2.Field(name="b", id=0, parent_id=-1, logical_type="fixed_size_list:lance.bfloat16:4")
    t = arrow_from_fields([g]).field("b").type
    assert t.list_size == 4 and t.value_type == pa.binary(2)
    assert t.value_field.metadata[b"ARROW:extension:name"] == b"lance.bfloat16"
    assert logical_type(t) == "fixed_size_list:lance.bfloat16:4"


def test_tree_errors():
    a = file_pb2.Field(name="a", id=0, parent_id=-1, logical_type="int32")
    with pytest.raises(CorruptFileError, match="duplicate"):
        field_tree([a, a])
    orphan = file_pb2.Field(name="x", id=1, parent_id=7, logical_type="int32")
    with pytest.raises(CorruptFileError, match="parent"):
        field_tree([a, orphan])
    lst = file_pb2.Field(name="l", id=2, parent_id=-1, logical_type="list")
    with pytest.raises(CorruptFileError):
        arrow_from_fields([lst])


def test_dataset_helpers():
    fields = fields_from_arrow(WIDE)
    proj = project_fields(fields, ["st", "a" if False else "i8", "lst"])
    assert [f.name for f in proj if f.parent_id == -1] == ["i8", "lst", "st"]  # schema order
    ids = field_subtree_ids(fields, "lst")
    assert [f.name for f in fields if f.id in ids] == ["lst", "item", "a", "b", "item"]
    assert field_subtree_ids(fields, ids[0]) == ids
    assert {f.id for f in proj} == {f.id for f in fields if f.id in
                                    set(field_subtree_ids(fields, "st")) | set(ids) |
                                    set(field_subtree_ids(fields, "i8"))}
    with pytest.raises(InvalidArgumentError):
        project_fields(fields, ["nope"])
    with pytest.raises(InvalidArgumentError):
        field_subtree_ids(fields, "nope")
