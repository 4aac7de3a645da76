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
