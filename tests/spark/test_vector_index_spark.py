"""Vector indices built with Spark: the model trained once on the driver, fragments encoded on
the executors, one segment and one commit; pylance searches the result through the index."""
import os

import numpy as np
import pyarrow as pa
import pytest

import lancefmt

D = 16


def clustered(n, seed=3):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((8, D)).astype(np.float32) * 4
    X = centers[rng.integers(0, 8, n)] + rng.standard_normal((n, D)).astype(np.float32)
    return pa.table({"id": np.arange(n), "vec": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), D)}), X


@pytest.mark.parametrize("kind,kw", [("IVF_PQ", {"num_sub_vectors": 4}), ("IVF_HNSW_SQ", {"m": 8})])
def test_spark_builds_a_vector_index_in_one_commit(spark, tmp_path, kind, kw):
    from lancefmt.spark.indexing import create_vector_index

    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "ds")
    table, X = clustered(6000)
    lancefmt.write_dataset(table, uri, max_rows_per_file=1000)
    before = lancefmt.dataset(uri).version
    ds = create_vector_index(spark, uri, "vec", kind, num_partitions=4, rows_per_task=2000, **kw)
    assert ds.version == before + 1
    segments = ds.describe_indices()[0].segments
    assert len(segments) == 1 and sorted(segments[0].fragment_ids) == list(range(6))
    assert len(os.listdir(uri + "/_indices")) == 1           # the task segments were merged away
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.describe_indices()[0].index_type == kind
    assert theirs.stats.index_stats("vec_idx")["num_indexed_rows"] == 6000
    got = []
    for q in X[:10] + 0.01:
        nearest = {"column": "vec", "q": q, "k": 10, "nprobes": 4}
        assert "ANNIvfPartition" in theirs.scanner(nearest=nearest).explain_plan()
        ann = theirs.to_table(nearest=nearest, columns=["id"])["id"].to_pylist()
        exact = theirs.to_table(nearest={**nearest, "use_index": False}, columns=["id"])["id"].to_pylist()
        assert ds.to_table(nearest=nearest, columns=["id"])["id"].to_pylist() == ann or kind != "IVF_PQ"
        got.append(len(set(ann) & set(exact)) / 10)
    assert np.mean(got) >= (0.5 if kind == "IVF_PQ" else 0.8)
