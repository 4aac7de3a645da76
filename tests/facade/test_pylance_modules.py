"""The modules and names pylance code imports exist and behave as pylance's do
(lance.fragment, lance.commit, lance.schema, lance.file, lance.progress, lance.vector...)."""
import json
import pickle

import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt import BlobColumn, DatasetBasePath, LanceError
from lancefmt._dataset.sharded_batch_iterator import ShardedBatchIterator
from lancefmt.commit import CommitConflictError
from lancefmt.dataset import LANCE_COMMIT_MESSAGE_KEY, AutoCleanupConfig
from lancefmt.file import LanceFileReader, LanceFileSession, LanceFileWriter, stable_version
from lancefmt.fragment import DeletionFile, FragmentMetadata, write_fragments
from lancefmt.progress import FileSystemFragmentWriteProgress
from lancefmt.schema import LanceSchema
from lancefmt.vector import vec_to_table

lance = pytest.importorskip("lance")
import lance.file  # noqa: E402
import lance.vector  # noqa: E402


def test_constants_match_pylance():
    import sys

    theirs = sys.modules["lance.dataset"]
    assert LANCE_COMMIT_MESSAGE_KEY == theirs.LANCE_COMMIT_MESSAGE_KEY
    assert stable_version() == lance.file.stable_version()
    assert AutoCleanupConfig.__annotations__.keys() == \
        theirs.AutoCleanupConfig.__annotations__.keys()
    assert issubclass(CommitConflictError, LanceError) and issubclass(CommitConflictError, OSError)
    assert DatasetBasePath("/x", name="n").name == "n"


def test_lance_schema_roundtrip_and_project(tmp_path):
    data = pa.table({"x": [1, 2], "s": [{"a": 1, "b": "h"}, {"a": 2, "b": "w"}]})
    ds = lancefmt.write_dataset(data, str(tmp_path / "d"))
    schema = ds.lance_schema
    assert pickle.loads(pickle.dumps(schema)) == schema
    assert schema.to_pyarrow() == data.schema
    assert LanceSchema.from_pyarrow(data.schema) == schema
    assert [(f.name(), f.id()) for f in schema.fields()] == [("x", 0), ("s", 1)]
    assert [(c.name(), c.id()) for c in schema.fields()[1].children()] == [("a", 2), ("b", 3)]
    assert repr(schema).startswith("Schema {")
    # Project with a LanceSchema renames by field id, as pylance
    renamed = LanceSchema.from_pyarrow(pa.schema([("y", pa.int64())]))
    ds = lancefmt.Dataset.commit(ds, lancefmt.LanceOperation.Project(renamed), read_version=1)
    assert ds.to_table() == pa.table({"y": [1, 2]})


def test_deletion_file_and_fragment_metadata_keywords():
    d = DeletionFile(read_version=1, id=123, file_type="array", num_deleted_rows=10, base_id=456)
    assert d.asdict()["base_id"] == 456
    meta = FragmentMetadata(id=1, files=[], physical_rows=1000, deletion_file=d)
    back = pickle.loads(pickle.dumps(meta))
    assert back == meta and back.deletion_file.base_id == 456 and back.num_rows == 990
    assert FragmentMetadata.from_json(json.dumps(meta.to_json())).deletion_file == d
    assert meta.row_id_meta is None
    with pytest.raises(ValueError):
        DeletionFile(1, 1, file_type="zip")


def test_file_session_and_global_buffers(tmp_path):
    session = LanceFileSession(tmp_path)
    with session.open_writer("a.lance") as w:
        w.write_batch(pa.table({"a": [1, 2, 3]}))
        idx = w.add_global_buffer(b"hello")
    assert session.contains("a.lance") and not session.contains("b.lance")
    assert session.open_reader("a.lance").read_all().to_table() == pa.table({"a": [1, 2, 3]})
    # pylance reads the extra global buffer we wrote, at the index we returned
    theirs = lance.file.LanceFileReader(str(tmp_path / "a.lance"))
    assert idx == 1 and bytes(theirs.read_global_buffer(idx)) == b"hello"
    assert bytes(LanceFileReader(str(tmp_path / "a.lance")).read_global_buffer(idx)) == b"hello"
    with LanceFileWriter(str(tmp_path / "b.lance")) as w:
        w.write_batch(pa.table({"a": [1]}))
    assert theirs.metadata().num_rows == 3


def test_filesystem_progress_files(tmp_path):
    progress = FileSystemFragmentWriteProgress(str(tmp_path / "p"), {"host": "h"})
    frags = write_fragments(pa.table({"a": [1, 2]}), str(tmp_path / "d"), progress=progress,
                            max_rows_per_group=1)
    assert (tmp_path / "p" / f"fragment_{frags[0].id}.json").exists()
    assert not list((tmp_path / "p").glob("*.in_progress"))


@pytest.mark.parametrize("lib", ["lance", "lancefmt"])
def test_fragment_create_progress_names_the_file_being_written(tmp_path, lib):
    """LanceFragment.create tells progress of its data file when the file is opened (its name
    chosen, nothing written yet: a crash leaves the marker and the name) and when done."""
    import json
    import os

    import lance as pylance

    create = pylance.fragment.LanceFragment.create if lib == "lance" else lancefmt.Fragment.create
    progress_cls = pylance.progress.FileSystemFragmentWriteProgress if lib == "lance" \
        else FileSystemFragmentWriteProgress
    frag = create(str(tmp_path / "d"), pa.table({"a": range(100)}), fragment_id=2,
                  progress=progress_cls(str(tmp_path / "p")))
    meta = json.loads((tmp_path / "p" / "fragment_2.json").read_text())
    assert meta["id"] == 2 and [f["path"] for f in meta["files"]] == [frag.files[0].path]
    assert not (tmp_path / "p" / "fragment_2.in_progress").exists()
    seen = []

    class Probe(progress_cls):
        def begin(self, fragment, **kwargs):
            name = fragment.files[0].path
            seen.append(("begin", os.path.exists(tmp_path / "d2" / "data" / name)))
            super().begin(fragment, **kwargs)

        def complete(self, fragment, **kwargs):
            seen.append(("complete", True))
            super().complete(fragment, **kwargs)

    create(str(tmp_path / "d2"), pa.table({"a": range(10)}), progress=Probe(str(tmp_path / "p2")))
    assert seen[0] == ("begin", False) and ("complete", True) in seen


@pytest.mark.parametrize("lib", ["lance", "lancefmt"])
def test_data_files_are_pylances_data_file(tmp_path, lib):
    """FragmentMetadata.files: DataFile objects whose path is a str that still answers the
    deprecated path() call with a DeprecationWarning; they pickle and rebuild fragments."""
    import pickle

    import lance as pylance

    mod = pylance.fragment if lib == "lance" else lancefmt.fragment
    frag = mod.LanceFragment.create(str(tmp_path / "d"), pa.table({"a": range(10), "b": range(10)}))
    (df,) = frag.files
    assert isinstance(df.path, str) and df.fields == [0, 1] and df.file_size_bytes > 0
    with pytest.warns(DeprecationWarning):
        assert df.path() == df.path
    assert type(pickle.loads(pickle.dumps(df.path))) is str
    rebuilt = mod.FragmentMetadata(id=frag.id, files=frag.files, physical_rows=frag.physical_rows)
    assert rebuilt == frag and pickle.loads(pickle.dumps(frag)) == frag
    assert repr(df).startswith(f"DataFile(path='{df.path}', fields=[0, 1], column_indices=[0, 1]")
    if lib == "lancefmt":   # operations built from DataFile objects hold the manifest entry
        from lancefmt.table.transaction import DataReplacementGroup

        assert DataReplacementGroup(0, df).new_file == df.pb


def test_blob_column_and_vectors():
    files = list(BlobColumn(pa.array([b"ab", None, b"c"], pa.large_binary())))
    assert files[0].read() == b"ab" and files[1] is None and files[2].read() == b"c"
    with pytest.raises(ValueError):
        BlobColumn(pa.array([1]))
    t = vec_to_table({"a": np.ones(3), "b": np.zeros(3)})
    assert t.schema.field("vector").type == pa.list_(pa.float32(), 3)
    assert t.equals(lance.vector.vec_to_table({"a": np.ones(3), "b": np.zeros(3)}))


@pytest.mark.parametrize("granularity", ["fragment", "batch"])
def test_sharded_batch_iterator(tmp_path, granularity):
    ds = lancefmt.write_dataset(pa.table({"a": range(1000)}), str(tmp_path / "d"),
                                max_rows_per_file=100)
    with pytest.warns(UserWarning):
        it = ShardedBatchIterator(ds, 1, 2, columns=["a"], batch_size=15,
                                  granularity=granularity)
    got = pa.concat_arrays([b["a"] for b in it]).to_pylist()
    if granularity == "fragment":
        assert got == [i for f in range(1, 10, 2) for i in range(f * 100, f * 100 + 100)]
    else:
        assert got == [j for i in range(15, 1000, 30) for j in range(i, min(i + 15, 1000))]


def test_commit_module_is_still_the_commit_function(tmp_path):
    import lancefmt.commit as commit_module

    assert lancefmt.commit is commit_module
    frags = write_fragments(pa.table({"a": [1]}), str(tmp_path / "d"), mode="overwrite")
    ds = lancefmt.commit(str(tmp_path / "d"),
                         lancefmt.Operation.Overwrite(pa.schema([("a", pa.int64())]), frags))
    assert ds.to_table()["a"].to_pylist() == [1]


def test_write_fragments_return_transaction(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(pa.table({"a": [1]}), uri)
    txn = write_fragments(pa.table({"a": [2]}), ds, return_transaction=True)
    assert txn.read_version == 1 and isinstance(txn.operation, lancefmt.Operation.Append)
    assert lancefmt.LanceDataset.commit(uri, txn).to_table()["a"].to_pylist() == [1, 2]
    with pytest.raises(ValueError):  # pylance: a blind append needs read_version
        lancefmt.LanceDataset.commit(uri, txn.operation)


def test_plans_name_pylance_nodes_and_count_reads(tmp_path):
    import re

    ds = lancefmt.write_dataset(pa.table({"a": range(100), "b": range(100)}), str(tmp_path / "d"))
    scan = ds.scanner(columns=[], filter="a < 50", with_row_id=True)
    assert "projection=[a]" in scan.explain_plan(True)
    before = lancefmt.iops_counter()
    plan = lancefmt.dataset(str(tmp_path / "d")).scanner(filter="a < 50").analyze_plan()
    assert re.search(r"LanceRead:.*output_rows=50.*rows_scanned=100.*bytes_read=[1-9]\d*", plan)
    assert lancefmt.iops_counter() > before


def test_merge_insert_plans_and_no_action(tmp_path):
    ds = lancefmt.write_dataset(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}),
                                str(tmp_path / "d"))
    b = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    assert b.explain_plan().startswith("MergeInsert: on=[id], when_matched=UpdateAll")
    text = b.analyze_plan(pa.table({"id": [2, 4], "v": ["x", "y"]}))
    assert "num_inserted_rows=1" in text and "num_updated_rows=1" in text
    assert "num_files_written=1" in text and ds.version == 1  # nothing committed
    assert ds.count_rows() == 3 and len(list((tmp_path / "d" / "data").iterdir())) == 1
    with pytest.raises(ValueError):
        ds.merge_insert("id").execute(pa.table({"id": [9], "v": ["z"]}))


def test_dataset_sql_through_duckdb(tmp_path):
    pytest.importorskip("duckdb")
    ds = lancefmt.write_dataset(pa.table({"id": [1, 2, 3], "value": ["a", "b", "c"]}),
                                str(tmp_path / "d"))
    q = ds.sql("SELECT * FROM t WHERE id > 1").table_name("t").build()
    assert pa.Table.from_batches(q.to_batch_records()) == pa.table({"id": [2, 3],
                                                                    "value": ["b", "c"]})
    rows = ds.sql("SELECT _rowid FROM dataset").with_row_id().build().to_stream_reader()
    assert rows.read_all()["_rowid"].to_pylist() == [0, 1, 2]
    with pytest.raises(ValueError):
        ds.sql("SELECT nope FROM dataset").build().to_batch_records()


def test_file_writer_takes_tables_from_many_threads(tmp_path):
    import threading

    path = str(tmp_path / "t.lance")
    with LanceFileWriter(path) as w:
        w.write_batch(pa.table({"a": [0, 1]}))  # a Table: written batch by batch
        threads = [threading.Thread(target=w.write_batch,
                                    args=(pa.table({"a": [10 * i, 10 * i + 1]}),))
                   for i in range(1, 5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    values = LanceFileReader(path).read_all().to_table()["a"].to_pylist()
    pairs = sorted(zip(values[::2], values[1::2]))
    assert pairs == [(0, 1)] + [(10 * i, 10 * i + 1) for i in range(1, 5)]
