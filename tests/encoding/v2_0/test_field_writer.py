import numpy as np
import pyarrow as pa
import pytest

from lancefmt.encoding.v2_0.field_writer import (BlobFieldWriter, ListFieldWriter,
                                                 PrimitiveFieldWriter, StructFieldWriter,
                                                 build_field_writer, column_allocation)
from lancefmt.errors import InvalidArgumentError
from lancefmt.file.schema import field_tree, fields_from_arrow


class Recorder:
    def __init__(self):
        self.pages = []
        self.buffers = []
        self.encodings = {}

    def emit(self, column, page):
        self.pages.append((column, page))

    def write_buffer(self, data):
        self.buffers.append(bytes(memoryview(data)))
        return 64 * len(self.buffers), len(self.buffers[-1])

    def set_column_encoding(self, column, encoding):
        self.encodings[column] = encoding


def writers_for(schema, **kw):
    roots = field_tree(fields_from_arrow(schema))
    alloc = column_allocation(roots)
    sink = Recorder()
    ws = [build_field_writer(r, f, dict(alloc), sink, **kw) for r, f in zip(roots, schema)]
    return ws, sink, alloc


def test_column_allocation_matches_lance():
    schema = pa.schema([("a", pa.int8()), ("s", pa.struct([("x", pa.list_(pa.int8()))])),
                        pa.field("p", pa.struct([("u", pa.int8())]), True,
                                 {"lance-encoding:packed": "true"}), ("v", pa.list_(pa.int8(), 2))])
    _, _, alloc = writers_for(schema)
    assert alloc == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (6, 5)]


def test_primitive_pages_split_by_size():
    (w,), sink, _ = writers_for(pa.schema([("a", pa.int64())]), page_buffer_bytes=8000,
                                max_page_bytes=2000)
    assert isinstance(w, PrimitiveFieldWriter)
    for k in range(10):
        w.append(pa.array(np.arange(500) + 500 * k))
    w.flush()
    w.finish()
    rows = [p.num_rows for _, p in sink.pages]
    assert sum(rows) == 5000 and all(r <= 250 for r in rows)


def test_list_and_struct_writers():
    schema = pa.schema([("l", pa.list_(pa.int32())), ("s", pa.struct([("x", pa.int8())]))])
    (lw, sw), sink, _ = writers_for(schema)
    assert isinstance(lw, ListFieldWriter) and isinstance(sw, StructFieldWriter)
    lw.append(pa.array([[1, 2], None, []], pa.list_(pa.int32())).slice(1))
    lw.append(pa.array([[3]], pa.list_(pa.int32())))
    sw.append(pa.array([{"x": 1}, {"x": 2}], schema.field("s").type))
    for w in (lw, sw):
        w.flush()
    for w in (lw, sw):
        w.finish()
    kinds = [(c, p.encoding.WhichOneof("array_encoding"), p.num_rows) for c, p in sink.pages]
    assert (0, "list", 3) in kinds and (1, "nullable", 1) in kinds
    assert kinds[-2:] == [(3, "nullable", 2), (2, "struct", 2)]  # header page at finish
    lst = next(p for c, p in sink.pages if c == 0).encoding.list
    assert lst.num_items == 1 and lst.null_offset_adjustment == 2
    with pytest.raises(InvalidArgumentError, match="null"):
        sw.append(pa.array([None], schema.field("s").type))


def test_blob_writer():
    schema = pa.schema([pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    (w,), sink, _ = writers_for(schema)
    assert isinstance(w, BlobFieldWriter)
    assert sink.encodings[0].WhichOneof("column_encoding") == "blob"
    w.append(pa.array([b"ab", None, b"", b"cde"], pa.large_binary()))
    w.flush()
    assert sink.buffers == [b"ab", b"cde"]
    (col, page), = sink.pages
    desc = np.frombuffer(page.buffers[0], np.uint64).reshape(-1, 2).tolist()
    assert desc == [[64, 2], [1, 0], [0, 0], [128, 3]]
