"""A manifest whose ``column_indices`` give one column to two fields (of other types) is
corrupt: before, the pages were decoded for one kind of field and the cached arrays handed
to the other (ArrowTypeError, AttributeError, or an Arrow abort)."""
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import CorruptFileError
from lancefmt.table.manifest import encode_manifest_file
from lancefmt.table.versions import latest_manifest, load_manifest

TABLE = pa.table({"i": pa.array(range(10), pa.int64()), "s": [str(i) for i in range(10)],
                  "l": pa.array([[i] for i in range(10)]),
                  "st": pa.array([{"a": i} for i in range(10)])})


@pytest.mark.parametrize("perm", [[0, 0, 2, 3, 4, 5], [0, 1, 2, 2, 4, 5], [0, 1, 2, 3, 0, 5]])
@pytest.mark.parametrize("op", ["to_table", "take"])
def test_one_column_for_two_fields_is_corrupt(tmp_path, perm, op):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(TABLE, uri, data_storage_version="2.0")  # a column per field
    loc = latest_manifest(uri)
    mf = load_manifest(uri, loc.version)
    pb = mf.manifest
    df = pb.fragments[0].files[0]
    ci = list(df.column_indices)
    assert len(ci) == len(perm)
    del df.column_indices[:]
    df.column_indices.extend([ci[p] for p in perm])
    with open(loc.uri, "wb") as f:
        f.write(encode_manifest_file(pb, mf.transaction(), mf.indices))
    ds = lancefmt.dataset(uri)
    with pytest.raises(CorruptFileError) as info:
        ds.to_table() if op == "to_table" else ds.take([1, 3])
    assert info.value.path.endswith(".lance")
