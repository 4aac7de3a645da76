import pyarrow as pa
import pytest

from lancefmt.errors import CorruptFileError
from lancefmt.file.writer import LanceFileWriter
from lancefmt.file.metadata import read_metadata


@pytest.fixture
def file_bytes(tmp_path):
    t = pa.table({"a": pa.array(range(100)), "s": pa.array([str(i) for i in range(100)]),
                  "l": pa.array([[i] for i in range(100)])})
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema, version="2.0", max_page_bytes=256,
                         page_buffer_bytes=512) as w:
        w.write_batch(t)
    return open(path, "rb").read()


def test_metadata(file_bytes):
    m = read_metadata(lambda s, n: file_bytes[s:s + n], len(file_bytes), "f")
    assert m.version == (2, 0) and m.num_rows == 100
    assert [f.name for f in m.fields] == ["a", "s", "l", "item"]
    assert len(m.columns) == 4 and all(c.num_rows == 100 for c in m.columns)
    assert all(p.type_url == "/lance.encodings.ArrayEncoding" for c in m.columns for p in c.pages)
    assert m.global_buffers[0][0] % 64 == 0
    assert m.data_end == m.footer.column_meta_start


def test_small_tail_guess_reads_the_rest(file_bytes):
    reads = []

    def read(s, n):
        reads.append((s, n))
        return file_bytes[s:s + n]

    m = read_metadata(read, len(file_bytes), "f", tail=file_bytes[-48:])
    assert m.num_rows == 100 and len(reads) >= 1


def _with_column0(file_bytes, edit):
    """The file with column 0's metadata edited, tables and footer rebuilt."""
    import struct

    from lancefmt._proto import file2_pb2
    from lancefmt.file.format import Footer, offset_table_bytes

    f = Footer.parse(file_bytes[-40:], len(file_bytes))
    cmo = [struct.unpack_from("<QQ", file_bytes, f.cmo_offset + 16 * i) for i in range(f.num_columns)]
    gbo = [struct.unpack_from("<QQ", file_bytes, f.gbo_offset + 16 * i)
           for i in range(f.num_global_buffers)]
    metas = [file_bytes[p:p + n] for p, n in cmo]
    cm = file2_pb2.ColumnMetadata.FromString(metas[0])
    edit(cm)
    metas[0] = cm.SerializeToString()
    out = bytearray(file_bytes[:f.column_meta_start])
    table = []
    for m in metas:
        table.append((len(out), len(m)))
        out += m
    cmo_offset = len(out)
    out += offset_table_bytes(table)
    gbo_offset = len(out)
    out += offset_table_bytes(gbo)
    out += Footer(f.column_meta_start, cmo_offset, gbo_offset, len(gbo), len(metas), 0, 3).to_bytes()
    return bytes(out)


@pytest.mark.parametrize("edit,match", [
    (lambda cm: cm.pages[0].buffer_offsets.__setitem__(0, 10**9), "outside the data region"),
    (lambda cm: cm.pages[0].buffer_sizes.__setitem__(0, 2**63), "outside the data region"),
    (lambda cm: cm.pages[0].buffer_sizes.append(5), "sizes"),
    (lambda cm: setattr(cm.pages[0].encoding.direct, "encoding", b"\xff\xff"), "undecodable"),
])
def test_bad_column_metadata(file_bytes, edit, match):
    data = _with_column0(file_bytes, edit)
    with pytest.raises(CorruptFileError, match=match):
        read_metadata(lambda s, n: data[s:s + n], len(data), "f")


def test_rebuilt_file_still_reads(file_bytes):
    data = _with_column0(file_bytes, lambda cm: None)
    assert read_metadata(lambda s, n: data[s:s + n], len(data), "f").num_rows == 100
