"""LanceScanner and projections over lancefmt-written datasets (pylance parity lives in
tests/interop/test_pylance_api_dual.py)."""
import pickle

import pyarrow as pa
import pyarrow.dataset as pads
import pytest

import lancefmt


@pytest.fixture
def ds(tmp_path):
    t = pa.table({"id": pa.array(range(100), pa.int64()), "s": [f"row-{i}" for i in range(100)],
                  "st": [{"small": i % 3, "name": f"n{i}"} for i in range(100)]})
    return lancefmt.write_dataset(t, str(tmp_path / "ds"), max_rows_per_file=30)


def test_scanner_runs_many_times_and_exports_arrow(ds):
    sc = ds.scanner(columns=["id"], filter="id >= 90")
    assert isinstance(sc, pads.Scanner) and isinstance(ds, pads.Dataset)
    assert sc.to_table()["id"].to_pylist() == list(range(90, 100))
    assert sc.to_reader().read_all().num_rows == 10
    assert sum(b.num_rows for b in sc.to_batches()) == 10
    assert sc.count_rows() == 10 and sc.head(3).num_rows == 3
    assert pa.table(sc).num_rows == 10 and pa.table(ds).num_rows == 100
    assert sc.projected_schema == pa.schema([("id", pa.int64())])
    assert sc.dataset_schema == ds.schema
    plan = sc.explain_plan(verbose=True)
    assert "projection=[id]" in plan and "id >= 90" in plan and "fragment ids: [0, 1, 2, 3]" in plan


def test_projections(ds):
    t = ds.to_table(columns={"twice": "id * 2", "small": "st.small", "up": "upper(s)"}, limit=2)
    assert t.to_pydict() == {"twice": [0, 2], "small": [0, 1], "up": ["ROW-0", "ROW-1"]}
    t = ds.to_table(columns=["st.name", "_rowid", "id"], offset=98)
    assert t.column_names == ["st.name", "_rowid", "id"] and t["st.name"].to_pylist() == ["n98", "n99"]
    assert ds.to_table(columns=["id"], with_row_address=True, filter="_rowaddr = 4294967296")["id"].to_pylist() == [30]
    with pytest.raises(lancefmt.InvalidArgumentError):
        ds.to_table(columns="id")
    with pytest.raises(lancefmt.InvalidArgumentError):
        ds.to_table(columns=["st.nope"])
    with pytest.raises(lancefmt.InvalidArgumentError):
        ds.to_table(columns={"x": "nope + 1"})


def test_refused_and_ignored_options(ds):
    assert ds.scanner(batch_readahead=4, fragment_readahead=2, scan_in_order=False,
                      use_scalar_index=True).to_table().num_rows == 100
    for bad in ({"nearest": {"column": "v", "q": [1.0], "k": 1}}, {"order_by": ["id"]},
                {"limit": -1}, {"bogus": 1}):
        with pytest.raises(lancefmt.InvalidArgumentError):
            ds.scanner(**bad)


def test_pylance_positional_arguments(ds):
    # to_table(columns, filter, limit, offset, nearest, batch_size, ...)
    t = ds.to_table(["id"], "id > 10", 5, 2, None, 2)
    assert t["id"].to_pylist() == [13, 14, 15, 16, 17]


def test_fragment_scanner_and_pickle(ds):
    frag = pickle.loads(pickle.dumps(ds.get_fragment(1)))
    assert frag.scanner(columns=["id"], filter="id > 50").to_table()["id"].to_pylist() == list(range(51, 60))
    assert frag.to_table(columns=["id"], limit=2, offset=1)["id"].to_pylist() == [31, 32]
    assert frag.head(1)["id"].to_pylist() == [30]
    assert [f.fragment_id for f in ds.get_fragments(filter="id > 85")] == [2, 3]


def test_conveniences(ds):
    assert len(ds) == 100
    assert ds.slice(10, 13, columns=["id"])["id"].to_pylist() == [10, 11, 12]
    assert ds.to_pandas(columns=["id"], filter="id < 3")["id"].tolist() == [0, 1, 2]
    got = ds.sample(5, columns={"i": "id"})["i"].to_pylist()
    assert len(got) == len(set(got)) == 5 and all(0 <= i < 100 for i in got)
    assert ds.sort_by([("id", "descending")])["id"][0].as_py() == 99
    assert ds.config() == {} and ds.max_field_id == 4
