"""Datasets written by lancefmt read by pylance and the reverse, version by version."""
import numpy as np
import pyarrow as pa
import pytest

import lancefmt

lance = pytest.importorskip("lance")


def table(n, start=0, seed=0):
    rng = np.random.default_rng(seed + start)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "f": rng.random(n),
        "i32": rng.integers(-1000, 1000, n).astype(np.int32),
        "s": pa.array([None if i % 11 == 0 else f"value-{i}" for i in ids]),
        "l": pa.array([list(range(int(i % 4))) if i % 13 else None for i in ids], pa.list_(pa.int64())),
        "st": pa.array([{"a": int(i), "b": f"b{i}"} for i in ids]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8).astype(np.float32)), 8),
        "ts": pa.array(ids * 1_000_000, pa.timestamp("us", tz="UTC")),
    })


def same(ours: pa.Table, theirs: pa.Table):
    assert ours.schema.names == theirs.schema.names
    for name in ours.schema.names:
        assert ours.column(name).to_pylist() == theirs.column(name).to_pylist(), name


def test_pylance_reads_what_we_write(tmp_path):
    uri = str(tmp_path / "ds")
    t1, t2, t3 = table(250), table(100, 250), table(30, 9000)
    lancefmt.write_dataset(t1, uri, max_rows_per_file=100)
    lancefmt.write_dataset(t2, uri, mode="append", max_rows_per_file=64)
    for version, expected in [(1, t1), (2, pa.concat_tables([t1, t2]))]:
        ds = lance.dataset(uri, version=version)
        ds.validate()
        same(ds.to_table(), expected)
        assert ds.count_rows("id < 50") == 50
    lancefmt.write_dataset(t3, uri, mode="overwrite")
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.version == 3 and ds.data_storage_version == "2.2"
    same(ds.to_table(), t3)
    # pylance keeps writing on top of ours
    ds = lance.write_dataset(table(5, 50_000), uri, mode="append")
    ds.delete("id = 50001")
    same(lancefmt.dataset(uri).to_table(), lance.dataset(uri).to_table())


def test_we_read_what_pylance_writes(tmp_path, storage_version):
    uri = str(tmp_path / "ds")
    t1 = table(300)
    lance.write_dataset(t1, uri, max_rows_per_file=128, data_storage_version=storage_version)
    lance.write_dataset(table(50, 300), uri, mode="append", data_storage_version=storage_version)
    lance.write_dataset(table(20, 1000), uri, mode="overwrite",
                        data_storage_version=storage_version)
    lance.write_dataset(table(20, 2000), uri, mode="append")
    for v in range(1, 5):
        ours, theirs = lancefmt.dataset(uri, version=v), lance.dataset(uri, version=v)
        same(ours.to_table(), theirs.to_table())
        assert ours.count_rows() == theirs.count_rows()
        assert [f.id for f in ours.get_fragments()] == [f.fragment_id for f in theirs.get_fragments()]
        same(ours.to_table(columns=["id"], with_row_address=True, filter="id % 3 = 0"),
             theirs.to_table(columns=["id"], with_row_address=True, filter="id % 3 = 0"))
        assert ours.data_storage_version == storage_version
        n = ours.count_rows()
        picks = [0, n // 3, n - 1, 1, n // 3]
        assert ours.take(picks).to_pylist() == theirs.take(picks).to_pylist()
        same(ours.head(7), theirs.head(7))
    assert [v["version"] for v in lancefmt.dataset(uri).versions()] == [1, 2, 3, 4]


def test_mixed_history_reads_identically(tmp_path):
    uri = str(tmp_path / "ds")
    writers = [
        lambda i: lancefmt.write_dataset(table(40, i * 100), uri, mode="append" if i else "create",
                                         max_rows_per_file=25),
        lambda i: lance.write_dataset(table(40, i * 100), uri, mode="append", max_rows_per_file=25),
    ]
    for i in range(6):
        writers[i % 2](i)
    lancefmt.dataset(uri).delete("id % 7 = 0")
    lance.dataset(uri).delete("id % 5 = 0")
    lancefmt.write_dataset(table(3, 9999), uri, mode="append")
    final = lance.dataset(uri)
    final.validate()
    for v in range(1, final.version + 1):
        ours, theirs = lancefmt.dataset(uri, version=v), lance.dataset(uri, version=v)
        same(ours.to_table(with_row_address=True), theirs.to_table(with_row_address=True))
        assert ours.count_rows() == theirs.count_rows()
        assert ours.take([0, ours.count_rows() - 1]).to_pylist() == theirs.take([0, theirs.count_rows() - 1]).to_pylist()


def test_distributed_write_fragments_and_commit(tmp_path):
    uri = str(tmp_path / "ds")
    base = lancefmt.write_dataset(table(10), uri)
    frags = []
    for w in range(3):  # "executors"
        frags += lancefmt.write_fragments(table(20, 100 * (w + 1)), uri, max_rows_per_file=15)
    assert all(f.id == 0 for f in frags)
    assert len(frags) == 6
    ds = lancefmt.commit(uri, lancefmt.Operation.Append(frags), read_version=base.version)
    assert ds.version == 2 and ds.count_rows() == 70
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.count_rows() == 70
    # our fragments can be committed by pylance, and pylance's by us
    ours_json = [lance.fragment.FragmentMetadata.from_json(__import__("json").dumps(f.to_json()))
                 for f in lancefmt.write_fragments(table(5, 700), uri)]
    lance.LanceDataset.commit(uri, lance.LanceOperation.Append(ours_json), read_version=2)
    pl = lance.fragment.LanceFragment.create(uri, table(5, 800), data_storage_version="2.2")
    lancefmt.commit(uri, lancefmt.Operation.Append([lancefmt.FragmentMetadata.from_json(pl.to_json())]),
                    read_version=3)
    same(lancefmt.dataset(uri).to_table(), lance.dataset(uri).to_table())
    assert lance.dataset(uri).count_rows() == 80
    # an Overwrite from fragments with a pyarrow schema
    t7 = table(7, 5000)
    frags = lancefmt.write_fragments(t7, uri, mode="overwrite")
    ds = lancefmt.commit(uri, lancefmt.Operation.Overwrite(t7.schema, frags))
    assert ds.version == 5
    same(lance.dataset(uri).to_table(), t7)


def test_stable_row_ids_dataset(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(30), uri, max_rows_per_file=10, enable_stable_row_ids=True)
    lancefmt.write_dataset(table(5, 30), uri, mode="append")
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.has_stable_row_ids
    assert ds.to_table(with_row_id=True)["_rowid"].to_pylist() == list(range(35))
    ours = lancefmt.dataset(uri)
    assert ours.has_stable_row_ids and ours.manifest.next_row_id == 35
    lance.dataset(uri).delete("id = 3")
    ours = lancefmt.dataset(uri)
    same(ours.to_table(with_row_id=True, with_row_address=True),
         lance.dataset(uri).to_table(with_row_id=True, with_row_address=True))
