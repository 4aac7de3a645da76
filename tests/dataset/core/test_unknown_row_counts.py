"""A fragment whose manifest says ``physical_rows = 0`` (legacy manifests leave it unset) has
its data file's row count, as pylance reads it: never empty, never a negative count."""
import lance
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.table.manifest import encode_manifest_file
from lancefmt.table.versions import latest_manifest, load_manifest


def _zero_row_counts(uri, positions):
    """Rewrite the latest manifest in place with physical_rows = 0 at ``positions``."""
    loc = latest_manifest(uri)
    mf = load_manifest(uri, loc.version)
    pb = mf.manifest
    for i in positions:
        pb.fragments[i].physical_rows = 0
    data = encode_manifest_file(pb, mf.transaction(), mf.indices)
    with open(loc.uri, "wb") as f:
        f.write(data)


@pytest.fixture
def ds_uri(tmp_path):
    uri = str(tmp_path / "ds")
    data = pa.table({"id": pa.array(range(30), pa.int64()), "s": [str(i) for i in range(30)]})
    lancefmt.write_dataset(data, uri, max_rows_per_file=10).delete("id = 3 or id = 25")
    _zero_row_counts(uri, [0, 2])
    return uri


def test_zero_physical_rows_reads_the_data_files_count(ds_uri):
    expected = lance.dataset(ds_uri).to_table()
    assert expected.num_rows == 28  # pylance takes the count from the data file
    ds = lancefmt.dataset(ds_uri)
    assert ds.count_rows() == 28
    assert ds.to_table() == expected
    assert [f.physical_rows for f in ds.get_fragments()] == [10, 10, 10]
    assert ds.count_rows("id > 20") == 8
    assert ds.take([0, 27]).column("id").to_pylist() == [0, 29]


def test_zero_physical_rows_then_delete_and_append(ds_uri):
    ds = lancefmt.dataset(ds_uri)
    ds.delete("id = 4")
    ds = lancefmt.write_dataset(pa.table({"id": pa.array([100], pa.int64()), "s": ["x"]}), ds,
                                mode="append")
    assert ds.count_rows() == 28
    assert lance.dataset(ds_uri).count_rows() == 28


@pytest.mark.parametrize("physical_rows", [0, 5])
def test_row_id_range_beyond_the_fragment_is_refused_before_allocating(physical_rows):
    """A 12-byte ``Range(0, 2^32)`` must not make the decoder allocate 32 GiB."""
    from lancefmt._proto import table_pb2
    from lancefmt.errors import CorruptFileError
    from lancefmt.table.rowids import RowIdSequence, load_row_ids

    data = RowIdSequence.from_range(0, 1 << 32).to_bytes()
    assert len(data) < 32
    frag = table_pb2.DataFragment(id=0, physical_rows=physical_rows, inline_row_ids=data)
    with pytest.raises(CorruptFileError):
        load_row_ids(frag, "/nowhere")
