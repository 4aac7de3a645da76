"""Legacy (v0.1) files written by lancefmt (``LanceFileWriter(version="legacy")``) and legacy
datasets lancefmt commits on: pylance 14 reads them as it reads its own legacy writes."""
import uuid

import numpy as np
import pyarrow as pa
import pytest

import lance
import lancefmt
from lancefmt._proto import table_pb2
from lancefmt.errors import InvalidArgumentError
from lancefmt.file.legacy.writer import LegacyFileWriter
from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter
from lancefmt.table.versions import latest_manifest, load_manifest

from file_tables import equal_ignoring_dictionaries, wide_table


def append_legacy_file(uri: str, data: pa.Table, **writer_args) -> None:
    """Write ``data`` as one legacy data file with lancefmt and commit it as a new fragment
    (what lancefmt's dataset writer does for a legacy dataset)."""
    mf = load_manifest(uri, latest_manifest(uri).version)
    name = f"{uuid.uuid4().hex}.lance"
    w = LanceFileWriter(f"{uri}/data/{name}", data.schema, "legacy",
                        fields=list(mf.header.fields), **writer_args)
    assert isinstance(w, LegacyFileWriter)
    w.write_batch(data)
    w.close()
    assert w.column_indices == [] and w.version == (0, 2)
    df = table_pb2.DataFile(path=name, fields=w.field_ids, file_major_version=0,
                            file_minor_version=2, file_size_bytes=w.file_size)
    lancefmt.commit(uri, lancefmt.Operation.Append([lancefmt.FragmentMetadata.new([df], w.num_rows)]))


@pytest.mark.parametrize("group", [1024, 37])
def test_append_every_type_reads_in_pylance_as_its_own_write(tmp_path, group):
    t = wide_table(300, seed=11)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lance.write_dataset(t.slice(0, 120), ours, data_storage_version="legacy", max_rows_per_group=64)
    append_legacy_file(ours, t.slice(120), max_rows_per_group=group)
    lance.write_dataset(t, theirs, data_storage_version="legacy", max_rows_per_group=64)
    got, expected = lance.dataset(ours).to_table(), lance.dataset(theirs).to_table()
    assert equal_ignoring_dictionaries(got, expected)
    assert equal_ignoring_dictionaries(lancefmt.dataset(ours).to_table(), got)
    idx = np.random.default_rng(2).integers(0, 300, 50)
    assert equal_ignoring_dictionaries(lance.dataset(ours).take(idx),
                                       lance.dataset(theirs).take(idx))
    frag = lance.dataset(ours).get_fragments()[-1]
    r = LanceFileReader(f"{ours}/data/{frag.metadata.files[0].path}")
    assert r.num_rows == 180 and len(r.batch_offsets) - 1 == -(-180 // group)


def test_sliced_and_chunked_input(tmp_path):
    """Arrays with slice offsets (strings, lists, booleans, structs) are written from their
    offset, not from the start of their buffers."""
    t = wide_table(200, seed=4).select(["bool", "string", "list_i32", "struct", "vector", "dict",
                                        "large_list_str", "i16"])
    uri = str(tmp_path / "ds")
    lance.write_dataset(t.slice(0, 10), uri, data_storage_version="legacy")
    pieces = pa.concat_tables([t.slice(13, 50), t.slice(77, 60), t.slice(3, 1)])
    append_legacy_file(uri, pieces, max_rows_per_group=16)
    expected = pa.concat_tables([t.slice(0, 10), pieces])
    # pylance's own legacy writer panics on sliced input: give it fresh (concatenated) arrays,
    # which keep the bytes under nulls (the legacy format stores them as values)
    expected = expected.combine_chunks()
    ref = str(tmp_path / "ref")
    lance.write_dataset(expected, ref, data_storage_version="legacy")
    assert equal_ignoring_dictionaries(lance.dataset(uri).to_table(), lance.dataset(ref).to_table())


def test_deletes_keep_dictionaries_for_pylance(tmp_path):
    """A lancefmt commit on a legacy dataset writes the dictionary values into its manifest
    again (pylance reads them from there)."""
    uri = str(tmp_path / "ds")
    t = pa.table({"id": pa.array(range(50)), "d": pa.array(["x", "yy", ""] * 16 + ["x", "x"])
                  .dictionary_encode()})
    lance.write_dataset(t, uri, data_storage_version="legacy")
    ds = lancefmt.dataset(uri)
    ds.delete("id < 10")
    ds.delete("id > 45")
    got = lance.dataset(uri).to_table()
    assert got["d"].cast(pa.string()).to_pylist() == \
        lance.dataset(uri, version=1).to_table()["d"].cast(pa.string()).to_pylist()[10:46]
    assert got.equals(lancefmt.dataset(uri).to_table())


def test_every_batch_shares_one_dictionary(tmp_path):
    w = LanceFileWriter(str(tmp_path / "f.lance"), None, "legacy", max_rows_per_group=2)
    a = pa.table({"d": pa.array(["a", "b"]).dictionary_encode()})
    b = pa.table({"d": pa.array(["c", "d"]).dictionary_encode()})
    w.write_batch(a)
    with pytest.raises(InvalidArgumentError, match="one dictionary"):
        w.write_batch(b)
    w.abort()
    assert not (tmp_path / "f.lance").exists()


def test_roundtrip_through_lancefmt_alone(tmp_path):
    t = wide_table(150, seed=8)
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema, "0.1", max_rows_per_group=40) as w:
        w.write_batch(t)
    r = LanceFileReader(path)
    assert r.version == (0, 2) and r.num_rows == 150
    ref = str(tmp_path / "ref")
    lance.write_dataset(t, ref, data_storage_version="legacy")
    assert equal_ignoring_dictionaries(r.read_all(), lance.dataset(ref).to_table())


def test_write_dataset_legacy_end_to_end(tmp_path):
    """``data_storage_version="legacy"`` through lancefmt's own dataset API: create (with a
    dictionary column and pylance's row groups), append, add a column, compact and clone; pylance
    14 reads each result as lancefmt does and the dataset stays legacy."""
    uri = str(tmp_path / "ds")
    t = pa.table({"id": pa.array(range(40)),
                  "d": pa.array(["x", "yy", ""] * 13 + ["x"]).dictionary_encode()})
    ds = lancefmt.write_dataset(t, uri, data_storage_version="legacy", max_rows_per_group=16,
                                max_rows_per_file=25)
    assert ds.data_storage_version == "0.1"
    ds.insert(t.slice(0, 5))
    ds.add_columns({"twice": "id * 2"})
    ds.delete("id < 3")
    ds.optimize.compact_files()
    frag = lance.dataset(uri).get_fragments()[0]
    assert (frag.metadata.files[0].file_major_version, frag.metadata.files[0].file_minor_version) == (0, 2)
    assert lance.dataset(uri).data_storage_version == "0.1"
    theirs = lance.dataset(uri).to_table()
    assert theirs.num_rows == 39 and theirs.equals(lancefmt.dataset(uri).to_table())
    clone = ds.shallow_clone(str(tmp_path / "clone"))
    assert lance.dataset(clone.uri).to_table().equals(theirs)
