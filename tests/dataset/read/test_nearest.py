"""nearest= and vector index builds refused as pylance refuses them, and corrupt index files
named in the error."""
import os

import numpy as np
import pyarrow as pa
import pytest

import lancefmt

D = 8


@pytest.fixture
def ds(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, D)).astype(np.float32)
    t = pa.table({"id": np.arange(400), "vec": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), D),
                  "u8": pa.FixedSizeListArray.from_arrays(pa.array((np.abs(X) * 40).astype(np.uint8).ravel()), D)})
    return lancefmt.write_dataset(t, str(tmp_path / "ds"), max_rows_per_file=200), X


@pytest.mark.parametrize("kwargs,err", [
    (dict(column="id", index_type="IVF_PQ", num_sub_vectors=2), TypeError),
    (dict(column="nope", index_type="IVF_PQ", num_sub_vectors=2), KeyError),
    (dict(column="vec", index_type="IVF_PQ", num_sub_vectors=3), ValueError),
    (dict(column="vec", index_type="IVF_PQ"), ValueError),
    (dict(column="vec", index_type="IVF_FLAT", metric="foo"), ValueError),
    (dict(column="vec", index_type="IVF_FLAT", metric="hamming"), ValueError),
    (dict(column="u8", index_type="IVF_PQ", num_sub_vectors=2), ValueError),
    (dict(column="vec", index_type="IVF_FOO"), NotImplementedError),
    (dict(column="vec", index_type="IVF_FLAT", ivf_centroids=np.zeros((3, 5), np.float32)), ValueError),
    (dict(column="vec", index_type="IVF_PQ", num_sub_vectors=2, pq_codebook=np.zeros((2, 256, 4))), ValueError),
])
def test_bad_builds_raise_pylances_error_types(ds, kwargs, err):
    with pytest.raises(err):
        ds[0].create_index(num_partitions=2, **kwargs)


def test_existing_names(ds):
    d, X = ds
    d.create_index("vec", "IVF_FLAT", num_partitions=2)
    with pytest.raises(RuntimeError, match="already exists"):
        d.create_index("vec", "IVF_FLAT", num_partitions=2)
    d.create_index("vec", "IVF_SQ", num_partitions=2, replace=True)
    assert [i.index_type for i in d.describe_indices()] == ["IVF_SQ"]
    # accelerator=: tests/index/vector/test_vector_accelerator.py


def test_uint8_hamming_index_and_metric_mismatch_falls_back_to_exact(ds):
    d, X = ds
    d.create_index("vec", "IVF_FLAT", num_partitions=2, metric="l2")
    q = X[5]
    assert "ANNIvfPartition" in d.scanner(nearest={"column": "vec", "q": q}).explain_plan()
    # a metric the index was not built for: exact search, as pylance 14 does
    plan = d.scanner(nearest={"column": "vec", "q": q, "metric": "cosine"}).explain_plan()
    assert "KNNVectorDistance: metric=cosine" in plan and "ANN" not in plan
    got = d.to_table(nearest={"column": "vec", "q": q, "k": 1, "metric": "cosine"})
    assert got["id"].to_pylist() == [5]


def test_corrupt_index_file_is_named(ds):
    d, X = ds
    d.create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    seg = d.describe_indices()[0].segments[0].uuid
    path = os.path.join(d.uri, "_indices", seg, "auxiliary.idx")
    with open(path, "r+b") as f:
        f.truncate(64)
    with pytest.raises(lancefmt.CorruptFileError, match="auxiliary.idx"):
        lancefmt.dataset(d.uri).to_table(nearest={"column": "vec", "q": X[0]})
    # the exact search does not need the index
    assert lancefmt.dataset(d.uri).to_table(
        nearest={"column": "vec", "q": X[0], "k": 1, "use_index": False})["id"].to_pylist() == [0]


def test_batches_counts_and_limits(ds):
    d, X = ds
    sc = d.scanner(nearest={"column": "vec", "q": X[:3], "k": 4}, columns=["id"], limit=5, offset=2)
    t = sc.to_table()
    assert t.column_names == ["query_index", "id", "_distance"]
    assert t["query_index"].to_pylist() == [0, 0, 1, 1, 1] and sc.count_rows() == 5
    assert d.to_table(nearest={"column": "vec", "q": X[7], "k": 3}, columns=["id"],
                      disable_scoring_autoprojection=True).column_names == ["id"]


def test_index_cache_hit_rate_and_a_disabled_cache(ds):
    d, X = ds
    d.create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    nearest = {"column": "vec", "q": X[1], "k": 3}
    cold = lancefmt.dataset(d.uri, index_cache_size_bytes=0)
    for _ in range(3):
        cold.to_table(nearest=nearest)
    assert cold._ds.index_cache_hit_rate() == 0.0 and cold._ds.index_cache_entry_count() == 0
    warm = lancefmt.dataset(d.uri, index_cache_size_bytes=20 << 20)
    assert warm._ds.index_cache_hit_rate() == 0.0
    for _ in range(10):
        assert warm.to_table(nearest=nearest).equals(cold.to_table(nearest=nearest))
    assert warm._ds.index_cache_hit_rate() >= 0.8 and warm._ds.index_cache_entry_count() == 1
