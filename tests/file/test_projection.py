import pyarrow as pa
import pytest

from lancefmt.errors import InvalidArgumentError
from lancefmt.file.projection import data_file_column_map, make_projection, select_roots
from lancefmt.file.schema import field_tree, fields_from_arrow


def test_select_roots_and_projection():
    schema = pa.schema([("a", pa.int8()), ("u", pa.uuid()), ("s", pa.struct([("x", pa.int8())]))])
    roots = field_tree(fields_from_arrow(schema))
    picked = select_roots(roots, ["s", "u"])
    assert [r.name for r in picked] == ["s", "u"]
    proj = make_projection(picked, {0: 0, 1: 1, 2: 2, 3: 3}, {"k": b"v"})
    assert proj.names == ["s", "u"]
    assert proj.storage_schema.field("u").type == pa.binary(16)
    assert proj.schema.field("u").type == pa.uuid()
    assert proj.schema.metadata == {b"k": b"v"}
    assert select_roots(roots, None) == roots
    with pytest.raises(InvalidArgumentError):
        select_roots(roots, ["zz"])
    with pytest.raises(InvalidArgumentError):
        select_roots(roots, "a")


def test_data_file_column_map():
    assert data_file_column_map([4, 5, 6], [0, -1, 1]) == {4: 0, 6: 1}
    with pytest.raises(InvalidArgumentError):
        data_file_column_map([1, 2], [0])
