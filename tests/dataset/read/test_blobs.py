"""Blob v2 pieces on their own: sidecar naming, descriptor building, the file schema's
id-less descriptor fields."""
import numpy as np
import pyarrow as pa
import pytest

from lancefmt.dataset.write.blobs import BlobSidecars
from lancefmt.dataset.core.blob_layout import blob_sidecar_uri
from lancefmt.errors import CorruptFileError
from lancefmt.file.schema import BLOB_V2_DESCRIPTOR, Field, field_tree
from lancefmt.io import open_store


def test_sidecar_names_are_the_id_bits_lowest_first():
    # pylance 14 names blob ids 1 and 2 like this (observed next to its data files).
    assert blob_sidecar_uri("/d/data/abc.lance", 1) == "/d/data/abc/" + "1" + "0" * 31 + ".blob"
    assert blob_sidecar_uri("/d/data/abc.lance", 2) == "/d/data/abc/" + "01" + "0" * 30 + ".blob"
    with pytest.raises(CorruptFileError):
        blob_sidecar_uri("/d/data/abc.lance", 1 << 32)


def test_descriptors_of_a_sliced_chunk(tmp_path):
    data_uri = str(tmp_path / "f.lance")
    side = BlobSidecars(open_store(str(tmp_path)), data_uri, ["b"])
    values = pa.array([b"skip", b"abc", None, b"", b"hello", b"z"], pa.large_binary())
    first = side.descriptors("b", values.slice(1, 4))
    second = side.descriptors("b", values.slice(5))
    assert first.type == BLOB_V2_DESCRIPTOR
    rows = first.to_pylist() + second.to_pylist()
    assert [None if r is None else (r["kind"], r["position"], r["size"], r["blob_id"])
            for r in rows] == [(1, 0, 3, 1), None, (0, 0, 0, 0), (1, 3, 5, 1), (1, 8, 1, 1)]
    uris = side.close()
    assert uris == [blob_sidecar_uri(data_uri, 1)]
    with open(uris[0], "rb") as fh:
        assert fh.read() == b"abchelloz"


def test_all_empty_or_null_chunk_writes_no_sidecar(tmp_path):
    side = BlobSidecars(open_store(str(tmp_path)), str(tmp_path / "f.lance"), ["b"])
    d = side.descriptors("b", pa.array([None, b""], pa.large_binary()))
    assert d.null_count == 1 and np.all(d.field("size").to_numpy() == 0)
    assert side.close() == []


def _blob_file_fields():
    meta = {"lance-encoding:packed": b"true", "lance-encoding:blob": b"true"}
    out = [Field(name="id", id=0, parent_id=-1, logical_type="int64"),
           Field(name="blob", id=1, parent_id=-1, logical_type="struct", metadata=meta)]
    for f in BLOB_V2_DESCRIPTOR:
        lt = {pa.uint8(): "uint8", pa.uint64(): "uint64", pa.uint32(): "uint32",
              pa.string(): "string"}[f.type]
        out.append(Field(name=f.name, id=-1, parent_id=-1, logical_type=lt))
    return out


def test_file_schema_descriptor_fields_attach_to_the_blob_struct():
    roots = field_tree(_blob_file_fields())
    assert [r.name for r in roots] == ["id", "blob"]
    assert [c.name for c in roots[1].children] == [f.name for f in BLOB_V2_DESCRIPTOR]
    assert roots[1].arrow_field().type == BLOB_V2_DESCRIPTOR


def test_too_many_descriptor_fields_are_corrupt():
    fields = _blob_file_fields()
    fields.append(Field(name="extra", id=-1, parent_id=-1, logical_type="uint8"))
    with pytest.raises(CorruptFileError):
        field_tree(fields)
