"""Spark reads use scalar indices: fragments no row of which matches are never scheduled, the
others read only the rows the index selected, and the answers equal a full scan."""
import pickle

import numpy as np
import pyarrow as pa
import pytest

import lancefmt

datasource = pytest.importorskip("pyspark.sql.datasource")
from pyspark.sql.datasource import EqualTo, GreaterThan, In  # noqa: E402

from lancefmt.spark.source import LanceDataSource  # noqa: E402


@pytest.fixture
def indexed_uri(tmp_path):
    uri = str(tmp_path / "ds")
    t = pa.table({"id": np.arange(6000), "s": [f"s{i % 7}" for i in range(6000)]})
    lancefmt.write_dataset(t, uri, max_rows_per_file=1000)
    lancefmt.dataset(uri).create_scalar_index("id", "BTREE")
    return uri


def read_all(reader, parts):
    out = []
    for p in parts:
        for batch in pickle.loads(pickle.dumps(reader)).read(pickle.loads(pickle.dumps(p))):
            out.extend(batch.column("id").to_pylist())
    return sorted(out)


def test_pushed_equality_schedules_one_fragment_and_reads_one_row(indexed_uri):
    source = LanceDataSource({"path": indexed_uri, "rows_per_partition": "1000"})
    reader = source.reader(source.schema())
    assert reader.pushFilters([EqualTo(("id",), 4321)]) == []
    parts = reader.partitions()
    assert [[f.fragment_id for f, _, _ in p.pieces] for p in parts] == [[4]]
    chosen, negated, exact = parts[0].selections[4]
    assert chosen.tolist() == [321] and exact and not negated
    assert read_all(reader, parts) == [4321]


def test_option_filter_and_pushed_ranges_prune_together(indexed_uri):
    source = LanceDataSource({"path": indexed_uri, "rows_per_partition": "1000",
                              "filter": "id < 2500"})
    reader = source.reader(source.schema())
    reader.pushFilters([GreaterThan(("id",), 1990), In(("s",), ("s1", "s2"))])
    parts = reader.partitions()
    assert sorted(f.fragment_id for p in parts for f, _, _ in p.pieces) == [1, 2]
    want = [i for i in range(1991, 2500) if i % 7 in (1, 2)]
    assert read_all(reader, parts) == want   # the unindexed part (s) is re-checked


def test_spark_query_matches_a_full_scan(pushdown, indexed_uri):
    df = pushdown.read.format("lance").load(indexed_uri)
    got = sorted(r.id for r in df.filter("id IN (5, 3333, 5999) OR id = 77").collect())
    assert got == [5, 77, 3333, 5999]


@pytest.mark.parametrize("merge", [True, False])
def test_spark_builds_an_index_on_the_executors_in_one_commit(spark, tmp_path, merge):
    from lancefmt.spark.indexing import create_scalar_index

    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "ds")
    t = pa.table({"id": np.arange(9000)[::-1].copy(), "s": [f"s{i % 7}" for i in range(9000)]})
    lancefmt.write_dataset(t, uri, max_rows_per_file=1000)
    before = lancefmt.dataset(uri).version
    ds = create_scalar_index(spark, uri, "id", "BTREE", rows_per_task=3000, merge=merge)
    assert ds.version == before + 1                       # one commit
    segments = ds.describe_indices()[0].segments
    assert len(segments) == (1 if merge else 3)
    assert sorted(f for s in segments for f in s.fragment_ids) == list(range(9))
    import os
    assert len(os.listdir(uri + "/_indices")) == len(segments)   # no stray task segments
    theirs = lance.dataset(uri)
    for f in ["id = 8000", "id BETWEEN 10 AND 2500", "id IN (1, 4000, 8999)"]:
        assert "@id_idx(BTree)" in theirs.scanner(filter=f).explain_plan()
        assert theirs.count_rows(f) == ds.count_rows(f) == theirs.count_rows(f) == \
            lance.dataset(uri).to_table(filter=f, use_scalar_index=False).num_rows


@pytest.mark.parametrize("stable", [False, True])
def test_spark_jobs_keep_pylance_indices_valid(spark, tmp_path, stable):
    """Spark compaction remaps a pylance-built index (it keeps covering the new fragments, as
    pylance's compaction does), and Spark deletes and updates keep indexed answers right."""
    from lancefmt.spark import compaction, dml

    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "ds")
    t = pa.table({"id": np.arange(6000), "v": np.arange(6000) % 11})
    lance.write_dataset(t, uri, max_rows_per_file=1000, enable_stable_row_ids=stable)
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    lance.dataset(uri).create_scalar_index("v", "BTREE")
    dml.delete(spark, uri, "id % 3 = 0")
    dml.update(spark, uri, {"v": "v + 100"}, "id < 500")
    compaction.compact(spark, uri, target_rows_per_fragment=3000)
    theirs = lance.dataset(uri)
    theirs.validate()
    live = {f.fragment_id for f in theirs.get_fragments()}
    for d in theirs.describe_indices():
        covered = {f for s in d.segments for f in s.fragment_ids}
        assert covered and covered <= live, (d.name, covered, live)
    for f in ["id = 4001", "id < 30", "v = 3", "v > 105", "id IN (3, 4, 5999)"]:
        want = theirs.to_table(filter=f, use_scalar_index=False).sort_by("id")
        assert theirs.to_table(filter=f).sort_by("id").equals(want), f
        assert lancefmt.dataset(uri).to_table(filter=f).sort_by("id").equals(want), f


def test_spark_builds_an_inverted_index_from_staged_partitions(spark, tmp_path):
    """INVERTED: each task stages a partition, the driver unites them and commits once; the
    index is the one a single build writes, and pylance answers from it."""
    from lancefmt.spark.indexing import create_scalar_index

    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "ds")
    words = np.array(["quick", "brown", "fox", "lazy", "dog", "search", "index"])
    rng = np.random.default_rng(4)
    texts = [" ".join(rng.choice(words, 6)) for _ in range(3000)]
    lancefmt.write_dataset(pa.table({"id": np.arange(3000), "text": texts}), uri, max_rows_per_file=500)
    before = lancefmt.dataset(uri).version
    ds = create_scalar_index(spark, uri, "text", "INVERTED", rows_per_task=1000, with_position=True)
    assert ds.version == before + 1
    (desc,) = ds.describe_indices()
    assert len(desc.segments) == 1 and sorted(desc.segments[0].fragment_ids) == list(range(6))
    import os
    (d,) = os.listdir(uri + "/_indices")
    assert sorted(os.listdir(f"{uri}/_indices/{d}")) == [
        "metadata.lance", "part_0_docs.lance", "part_0_invert.lance", "part_0_tokens.lance", "staging"]
    theirs = lance.dataset(uri)
    want = theirs.to_table(full_text_query="quick fox", columns=["id"])
    got = ds.to_table(full_text_query="quick fox", columns=["id"])
    assert sorted(want["id"].to_pylist()) == sorted(got["id"].to_pylist())
    assert "MatchQuery" in theirs.scanner(full_text_query="quick fox").explain_plan()


@pytest.mark.parametrize("merge", [True, False])
def test_a_killed_index_task_leaves_no_segment_behind(spark, tmp_path, merge):
    """A task whose Python worker dies after writing its segment is retried by Spark; the job
    removes the dead attempt's segment directory (it staged it before writing), so only the
    committed segments are left, without waiting for a cleanup."""
    import os

    from lancefmt.spark.indexing import create_scalar_index

    from .conftest import arm_fault

    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"id": np.arange(6000)}), uri, max_rows_per_file=1000)
    marker = arm_fault("index")
    ds = create_scalar_index(spark, uri, "id", "BTREE", rows_per_task=2000, merge=merge)
    assert not os.path.exists(marker)                     # the fault fired, a task was retried
    segments = {s.uuid for s in ds.describe_indices()[0].segments}
    assert set(os.listdir(uri + "/_indices")) == segments
    assert not os.path.exists(uri + "/_lancefmt_staging") or not os.listdir(uri + "/_lancefmt_staging")
    assert lance.dataset(uri).count_rows("id BETWEEN 100 AND 4100") == 4001


def test_a_killed_inverted_task_is_not_counted_twice(spark, tmp_path):
    """INVERTED tasks share one index directory: a task whose worker dies after staging its
    partition is retried, and the retry writes the same partition (its id is its first
    fragment's), so the driver unites each group once: the scores are those of pylance's own
    build of the same rows, no document twice."""
    import os
    import shutil

    from lancefmt.spark.indexing import create_scalar_index

    from .conftest import arm_fault

    lance = pytest.importorskip("lance")
    uri, copy = str(tmp_path / "ds"), str(tmp_path / "copy")
    words = np.array(["quick", "brown", "fox", "lazy", "dog", "search", "index"])
    rng = np.random.default_rng(7)
    texts = [" ".join(rng.choice(words, int(rng.integers(2, 9)))) for _ in range(3000)]
    lancefmt.write_dataset(pa.table({"id": np.arange(3000), "text": texts}), uri, max_rows_per_file=500)
    shutil.copytree(uri, copy)
    marker = arm_fault("index")
    ds = create_scalar_index(spark, uri, "text", "INVERTED", rows_per_task=1000)
    assert not os.path.exists(marker)                     # the fault fired, a task was retried
    (d,) = os.listdir(uri + "/_indices")
    assert not os.listdir(f"{uri}/_indices/{d}/staging")  # every staged partition was united
    theirs = lance.dataset(copy)
    theirs.create_scalar_index("text", "INVERTED")
    for query in ("quick fox", "lazy", "search index dog"):
        want = theirs.to_table(full_text_query=query, columns=["id"], with_row_id=False).sort_by("id")
        for got in (ds.to_table(full_text_query=query, columns=["id"]),
                    lance.dataset(uri).to_table(full_text_query=query, columns=["id"])):
            got = got.sort_by("id")
            assert got["id"].to_pylist() == want["id"].to_pylist(), query
            np.testing.assert_allclose(got["_score"].to_numpy(), want["_score"].to_numpy(), rtol=1e-5)
    assert lance.dataset(uri).stats.index_stats("text_idx")["num_indexed_rows"] == 3000
