"""add_columns behaviours pylance code relies on: UDF checkpoints survive a failed run, a
constant NULL expression adds a column without writing data, a UDF's schema comes from its
output for the whole first batch."""
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancefmt


@pytest.fixture
def ds(tmp_path):
    return lancefmt.write_dataset(pa.table({"a": range(100), "b": range(100)}),
                                  str(tmp_path / "d"), max_rows_per_file=20)


def test_udf_checkpoint_skips_finished_batches(ds, tmp_path):
    ckpt = tmp_path / "cache.sqlite"

    @lancefmt.batch_udf(checkpoint_file=ckpt)
    def failing(batch):
        if batch["a"][0].as_py() >= 50:
            raise RuntimeError("boom")
        return pa.record_batch([pc.multiply(batch["a"], 2)], ["a2"])

    with pytest.raises(RuntimeError):
        ds.add_columns(failing, read_columns=["a"])
    assert ds.version == 1 and ckpt.exists()
    seen = []

    @lancefmt.batch_udf(checkpoint_file=ckpt)
    def again(batch):
        seen.append(batch["a"][0].as_py())
        return pa.record_batch([pc.multiply(batch["a"], 2)], ["a2"])

    ds.add_columns(again, read_columns=["a"])
    assert seen == [0, 60, 80] and not ckpt.exists()  # 0: the schema probe, as pylance
    assert ds.to_table()["a2"].to_pylist() == [2 * i for i in range(100)]


def test_constant_null_expression_is_metadata_only(ds):
    before = [f.data_files() for f in ds.get_fragments()]
    ds.add_columns({"n": "CAST(NULL AS INT)"})
    assert [f.data_files() for f in ds.get_fragments()] == before
    assert ds.schema.field("n").type == pa.int32() and ds.to_table()["n"].null_count == 100
    ds.add_columns({"c": "a + 1"})  # expressions reading columns still write data
    assert ds.to_table()["c"].to_pylist()[:2] == [1, 2]


def test_udf_schema_comes_from_a_whole_first_batch(ds):
    calls = []

    def plus(batch):
        calls.append(batch.num_rows)
        return pa.record_batch([pc.add(batch["a"], 1)], ["p"])

    ds.add_columns(plus, read_columns=["a"])
    assert calls[0] == 20 and sum(calls[1:]) == 100  # the first batch twice, as pylance
