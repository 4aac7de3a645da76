"""lancefmt.file's pylance-style API (results objects, metadata() method); parity with pylance
is checked in tests/interop/test_pylance_api_dual.py."""
import pathlib

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.file import LanceFileReader, LanceFileWriter, ReaderResults


def test_write_then_read(tmp_path):
    path = tmp_path / "f.lance"
    with LanceFileWriter(path, pa.schema([("a", pa.int64()), ("b", pa.string())]),
                         version="2.0") as w:
        w.write_batch(pa.record_batch({"a": [1, 2, 3], "b": ["x", "y", "z"]}))
        w.add_schema_metadata("owner", "me")
    r = LanceFileReader(pathlib.Path(path), columns=["b"])
    res = r.read_all(batch_size=2)
    assert isinstance(res, ReaderResults)
    assert [b.num_rows for b in res.to_batches()] == [2, 1]
    assert r.read_range(1, 2).to_table()["b"].to_pylist() == ["y", "z"]
    assert r.take_rows([0, 2]).to_table()["b"].to_pylist() == ["x", "z"]
    assert r.num_rows() == 3
    m = r.metadata()
    assert m.num_rows == 3 and m.schema.metadata == {b"owner": b"me"} and len(m.columns) == 2
    assert (m.major_version, m.minor_version) == (0, 3)  # a 2.0 file's footer numbers
    assert [c.num_pages for c in r.file_statistics().columns] == [1, 1]
    with pytest.raises(ValueError):
        r.take_rows([2, 0])
    with pytest.raises(lancefmt.InvalidArgumentError):
        r.read_range(2, 5)
