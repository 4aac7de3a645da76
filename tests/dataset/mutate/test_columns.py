"""add_columns / drop_columns / alter_columns / merge / Fragment.merge_columns and
update_columns on lancefmt alone: data files, field ids and transactions as Lance lays them out
(pylance reads them in tests/interop/test_write_api_interop.py)."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancefmt
from lancefmt.errors import InvalidArgumentError
from lancefmt.table.commit import read_transaction_of


def table(n=20):
    ids = np.arange(n, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 1.5, "st": pa.array([{"a": int(i)} for i in ids])})


@pytest.fixture(params=["2.0", "2.2"])
def ds(tmp_path, request):
    d = lancefmt.write_dataset(table(), str(tmp_path / "d"), max_rows_per_file=8,
                               data_storage_version=request.param)
    d.delete("id % 4 = 0")
    return d


def _files(ds):
    return [[list(df.fields) for df in f.metadata.pb.files] for f in ds.get_fragments()]


def _laid_out(ds, ids):
    """``ids`` as a data file of ``ds``'s version lists them: 2.0 lists every field, 2.1+ only
    the fields that own a column (not the struct ``st``, id 2), as pylance does."""
    return ids if ds.data_storage_version == "2.0" else [i for i in ids if i != 2]


def _txn(ds):
    return read_transaction_of(ds.manifest_file, ds.uri, ds.snapshot.store)


def test_sql_columns_one_file_per_fragment_ids_from_max(ds):
    assert max(f.id for f in ds.lance_fields) == 3
    ds.add_columns({"y": "id * 2", "z": "x + 1"})
    assert _files(ds) == [[_laid_out(ds, [0, 1, 2, 3]), [4, 5]]] * 3
    assert _txn(ds).kind == "merge"
    t = ds.to_table()
    assert t["y"] == pc.multiply(t["id"], 2) and t["z"] == pc.add(t["x"], 1)
    with pytest.raises(InvalidArgumentError):
        ds.add_columns({"y": "id"})          # exists
    with pytest.raises(InvalidArgumentError):
        ds.add_columns({"q": "nope + 1"})    # unknown column
    assert ds.version == 3


def test_all_null_columns_write_nothing(ds, tmp_path):
    before = sorted(p.name for p in (tmp_path / "d" / "data").iterdir())
    ds.add_columns([pa.field("n", pa.string()), pa.field("m", pa.int8())])
    assert sorted(p.name for p in (tmp_path / "d" / "data").iterdir()) == before
    assert ds.to_table(columns=["n", "m"]).to_pydict() == {"n": [None] * 15, "m": [None] * 15}
    with pytest.raises(InvalidArgumentError):
        ds.add_columns(pa.field("k", pa.int8(), nullable=False))


def test_udf_and_aligned_data(ds):
    calls = []

    @lancefmt.batch_udf()
    def double(batch):
        calls.append(batch.num_rows)
        return pa.record_batch([pc.multiply(batch["x"], 2)], names=["x2"])

    ds.add_columns(double, read_columns=["x"])
    assert sum(calls[1:]) == 20  # the first batch (the schema probe), then every physical row
    t = ds.to_table()
    assert t["x2"] == pc.multiply(t["x"], 2)
    ds.add_columns(pa.table({"live": pa.array(np.arange(15))}))
    assert ds.to_table()["live"].to_pylist() == list(range(15))
    with pytest.raises(InvalidArgumentError, match="Stream ended before producing values"):
        ds.add_columns(pa.table({"short": pa.array(np.arange(3))}))
    with pytest.raises(InvalidArgumentError, match="more"):
        ds.add_columns(pa.table({"long": pa.array(np.arange(16))}))


def test_drop_is_a_project(ds):
    ds.drop_columns(["st"])
    assert ds.schema.names == ["id", "x"] and _txn(ds).kind == "project"
    assert _files(ds) == [[_laid_out(ds, [0, 1, 2, 3])]] * 3  # data files untouched
    with pytest.raises(InvalidArgumentError):
        ds.drop_columns(["id", "x"])
    with pytest.raises(InvalidArgumentError):
        ds.drop_columns(["nope"])


def test_alter_rename_nullable_cast(ds):
    ds.alter_columns({"path": "st.a", "name": "b"}, {"path": "x", "name": "xx"})
    assert ds.schema.field("st").type == pa.struct([("b", pa.int64())])
    assert _txn(ds).kind == "project"
    ds.alter_columns({"path": "id", "nullable": False})
    assert not ds.schema.field("id").nullable
    ds.add_columns(pa.field("n", pa.int32()))
    with pytest.raises(InvalidArgumentError, match="NULL"):
        ds.alter_columns({"path": "n", "nullable": False})
    before = ds.to_table()
    ds.alter_columns({"path": "xx", "data_type": pa.float32()})
    assert ds.schema.names == ["id", "xx", "st", "n"] and ds.schema.field("xx").type == pa.float32()
    assert _files(ds) == [[_laid_out(ds, [0, -2, 2, 3]), [5]]] * 3  # old id tombstoned, new id 5
    assert ds.to_table()["xx"] == before["xx"].cast(pa.float32())
    with pytest.raises(InvalidArgumentError):
        ds.alter_columns({"path": "st", "data_type": pa.int8()})
    with pytest.raises(InvalidArgumentError):
        ds.alter_columns({"path": "id", "bogus": 1})


def test_merge_left_join(ds):
    ds.merge(pa.table({"key": pa.array([1, 2, 19], pa.int64()), "w": ["a", "b", "c"]}), "id", "key")
    t = ds.to_table()
    got = dict(zip(t["id"].to_pylist(), t["w"].to_pylist()))
    assert got[1] == "a" and got[2] == "b" and got[19] == "c" and got[3] is None
    with pytest.raises(InvalidArgumentError, match="duplicate"):
        ds.merge(pa.table({"id": pa.array([1, 1], pa.int64()), "v": [1, 2]}), "id")


def test_fragment_merge_and_update_columns(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(table(10), uri, max_rows_per_file=5)
    frags, fields = [], None
    for f in ds.get_fragments():
        meta, fields = f.merge_columns({"y": "id + 100"})
        frags.append(meta)
    assert [f.id for f in fields][-1] == 4
    lancefmt.commit(uri, lancefmt.Operation.Merge(frags, fields), read_version=ds.version)
    ds = lancefmt.dataset(uri)
    assert ds.to_table()["y"].to_pylist() == list(range(100, 110))
    meta, ids = ds.get_fragment(1).update_columns(
        pa.table({"id": pa.array([6, 8], pa.int64()), "y": pa.array([-6, -8], pa.int64())}),
        left_on="id")
    assert ids == [4]
    lancefmt.commit(uri, lancefmt.Operation.Update(updated_fragments=[meta], fields_modified=ids,
                                                   update_mode=1), read_version=ds.version)
    assert lancefmt.dataset(uri).to_table()["y"].to_pylist() == \
        [100, 101, 102, 103, 104, 105, -6, 107, -8, 109]
