"""lancefmt.sampler shards rows as pylance's samplers do."""
import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.sampler import (ShardedBatchSampler, ShardedFixedBatchSampler,
                              ShardedFragmentSampler, maybe_sample)


@pytest.fixture
def ds(tmp_path):
    return lancefmt.write_dataset(pa.table({"id": range(1000)}), str(tmp_path / "d"),
                                  max_rows_per_file=250)


def test_fixed_batches_are_consecutive_blocks_per_rank():
    assert list(ShardedFixedBatchSampler(3, 4, batch_size=250, total_num_rows=1000)) == \
        [list(range(750, 1000))]
    assert list(ShardedFixedBatchSampler(0, 2, batch_size=128, total_num_rows=500))[1] == \
        list(range(128, 250))
    assert list(ShardedFixedBatchSampler(2, 4, batch_size=10, total_num_rows=2)) == []
    s = ShardedFixedBatchSampler(0, 1, randomize=True, seed=1, batch_size=10, total_num_rows=100)
    s.set_epoch(1)
    first = list(s)
    s.set_epoch(2)
    assert sorted(first) == sorted(list(s)) and first != list(s)


def test_batch_sampler_ranges_and_filter(ds):
    batches = list(ShardedBatchSampler(1, 4)(ds, batch_size=100, columns=["id"]))
    assert batches[0]["id"].to_pylist() == list(range(100, 200))
    ids = [i for b in ShardedBatchSampler(0, 4)(ds, batch_size=64, filter="id < 500")
           for i in b["id"].to_pylist()]
    assert ids == list(range(0, 500, 4))


def test_fragment_sampler_and_maybe_sample(ds):
    got = [i for b in ShardedFragmentSampler(1, 2)(ds) for i in b["id"].to_pylist()]
    assert got == list(range(250, 500)) + list(range(750, 1000))
    for takes in (2048, 8):
        out = list(maybe_sample(ds, 100, "id", max_takes=takes))
        ids = np.concatenate([b["id"].to_numpy() for b in out])
        assert len(ids) == 100 and len(set(ids)) == 100
