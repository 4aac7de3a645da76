"""Spark reads Lance datasets through the ``lance`` source: pylance is the oracle for counts, sums
and row ids; partitions are even; the version is pinned; filters are pushed when allowed."""
import os

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance import DatasetBasePath

import lancefmt

pytestmark = pytest.mark.spark


def table(n, start=0):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": pa.array(ids),
                     "v": pa.array((ids % 97).astype(np.float64) * 0.5),
                     "s": pa.array([f"row {i}" for i in ids])})


@pytest.fixture(scope="module")
def pylance_datasets(tmp_path_factory, storage_version):
    """pylance 14.0.2 datasets in each file format it writes: deletions, appends, tags,
    multi-base."""
    root = tmp_path_factory.mktemp("pylance")
    out = {}
    uri = str(root / "plain")
    lance.write_dataset(table(5000), uri, data_storage_version=storage_version,
                        max_rows_per_file=1500)
    ds = lance.dataset(uri)
    ds.delete("id % 7 = 0")                                   # v2
    ds.tags.create("after_delete", 2)
    lance.write_dataset(table(1000, 5000), uri, mode="append", max_rows_per_file=1500)  # v3
    lance.dataset(uri).delete("id >= 5100 AND id < 5200")    # v4
    out["plain"] = uri

    hot, cold = str(root / "hot"), str(root / "cold")
    os.makedirs(hot)
    os.makedirs(cold)
    uri = str(root / "multibase")
    lance.write_dataset(table(3000), uri, data_storage_version=storage_version,
                        max_rows_per_file=700,
                        initial_bases=[DatasetBasePath(hot, name="hot"),
                                       DatasetBasePath(cold, name="cold", is_dataset_root=True)],
                        target_bases=["hot"])
    lance.write_dataset(table(1200, 3000), uri, mode="append", max_rows_per_file=700,
                        target_bases=["cold"])
    lance.dataset(uri).delete("id % 10 = 3")
    out["multibase"] = uri
    return out


def spark_stats(df):
    row = df.selectExpr("count(*) AS n", "sum(id) AS sid", "sum(v) AS sv",
                        "count(DISTINCT s) AS ns").collect()[0]
    return row.n, row.sid, row.sv, row.ns


def lance_stats(ds):
    t = ds.to_table()
    return (t.num_rows, pa.compute.sum(t["id"]).as_py(), pa.compute.sum(t["v"]).as_py(),
            len(set(t["s"].to_pylist())))


@pytest.mark.parametrize("name", ["plain", "multibase"])
def test_counts_and_sums_match_pylance(spark, pylance_datasets, name):
    uri = pylance_datasets[name]
    ours = spark_stats(spark.read.format("lance").load(uri))
    theirs = lance_stats(lance.dataset(uri))
    assert ours[0] == theirs[0] and ours[1] == theirs[1] and ours[3] == theirs[3]
    assert ours[2] == pytest.approx(theirs[2])


def test_old_versions_and_tags(spark, pylance_datasets):
    uri = pylance_datasets["plain"]
    for version in (1, 2, 3):
        df = spark.read.format("lance").option("version", version).load(uri)
        assert spark_stats(df)[:2] == lance_stats(lance.dataset(uri, version=version))[:2]
    tagged = spark.read.format("lance").option("version", "after_delete").load(uri)
    assert tagged.count() == lance.dataset(uri, version=2).count_rows()


def test_row_ids_and_addresses_match_pylance(spark, pylance_datasets):
    uri = pylance_datasets["plain"]
    df = (spark.read.format("lance").option("with_row_id", "true")
          .option("with_row_address", "true").option("columns", "id").load(uri))
    assert [f.name for f in df.schema.fields] == ["id", "_rowid", "_rowaddr"]
    assert not df.schema["_rowid"].nullable
    ours = sorted((r.id, r._rowid, r._rowaddr) for r in df.collect())
    t = lance.dataset(uri).to_table(columns=["id"], with_row_id=True, with_row_address=True)
    theirs = sorted(zip(t["id"].to_pylist(), t["_rowid"].to_pylist(), t["_rowaddr"].to_pylist()))
    assert ours == theirs


def test_columns_option_projects(spark, pylance_datasets):
    uri = pylance_datasets["plain"]
    df = spark.read.format("lance").option("columns", "s,id").load(uri)
    assert df.columns == ["s", "id"]
    assert df.count() == lance.dataset(uri).count_rows()
    with pytest.raises(Exception, match="no column 'nope'"):
        spark.read.format("lance").option("columns", "id,nope").load(uri)


def test_user_schema_selects_columns(spark, pylance_datasets):
    uri = pylance_datasets["plain"]
    df = spark.read.format("lance").schema("id long, _rowid long").load(uri)
    rows = df.orderBy("id").limit(3).collect()
    t = lance.dataset(uri).to_table(columns=["id"], with_row_id=True).sort_by("id").slice(0, 3)
    assert [(r.id, r._rowid) for r in rows] == list(zip(t["id"].to_pylist(), t["_rowid"].to_pylist()))


def test_partitions_are_even_and_cover_every_row(spark, tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(10_000), uri, max_rows_per_file=7_000)  # fragments 7000 + 3000
    df = spark.read.format("lance").option("rows_per_partition", 2_500).load(uri)
    sizes = sorted(df.rdd.glom().map(len).collect())
    # 7000 -> 3 x ~2333; 3000 -> 2 x 1500; no partition above 2500, nothing lost
    assert sum(sizes) == 10_000
    assert len(sizes) == 5 and max(sizes) <= 2_500


def test_small_fragments_are_packed(spark, tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(1_000), uri, max_rows_per_file=100)  # 10 fragments
    df = spark.read.format("lance").option("rows_per_partition", 300).load(uri)
    assert df.rdd.getNumPartitions() == 4
    assert df.count() == 1_000


def test_every_core_gets_a_partition(spark, tmp_path):
    """7 small fragments (20,000 rows) on local[2]: at least two partitions, every row once."""
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(20_000), uri, max_rows_per_file=2_858)
    assert len(lancefmt.dataset(uri).get_fragments()) == 7
    cores = spark.sparkContext.defaultParallelism
    df = spark.read.format("lance").load(uri)
    sizes = df.rdd.glom().map(len).collect()
    assert len(sizes) >= min(7, cores) and min(sizes) > 0 and sum(sizes) == 20_000
    assert df.select("id").distinct().count() == 20_000
    # the min_partitions option asks for more
    assert spark.read.format("lance").option("min_partitions", 5).load(uri).rdd.getNumPartitions() >= 5


def test_version_is_pinned_when_loaded(spark, tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(100), uri)
    df = spark.read.format("lance").load(uri)
    assert df.count() == 100
    lancefmt.write_dataset(table(50, 100), uri, mode="append")
    assert df.count() == 100                                     # same DataFrame: same version
    assert spark.read.format("lance").load(uri).count() == 150   # a new load sees the append


def test_filter_pushdown_when_enabled(pushdown, pylance_datasets):
    spark = pushdown
    uri = pylance_datasets["plain"]
    df = spark.read.format("lance").load(uri).filter("id >= 100 AND id < 200 AND s LIKE 'row 1%'")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "Filter (" not in plan  # all three were pushed: Spark evaluates nothing after the scan
    expected = lance.dataset(uri).to_table(filter="id >= 100 AND id < 200").num_rows
    assert df.count() == expected
    # a predicate Spark cannot push (OR) is evaluated by Spark
    df = spark.read.format("lance").load(uri).filter("id < 10 OR id > 5990")
    assert df.count() == lance.dataset(uri).count_rows("id < 10 OR id > 5990")


def test_pushdown_reader_actually_filters(pushdown, tmp_path):
    """With the conf on, translated filters run in the scan: a filter on a column that Spark sees
    as always-true after the scan proves the rows were dropped by us, not by Spark."""
    from pyspark.sql.datasource import EqualTo, GreaterThan

    from lancefmt.spark.options import ReadOptions
    from lancefmt.spark.source import LanceDataSource

    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(1000), uri, max_rows_per_file=400)
    source = LanceDataSource({"path": uri})
    reader = source.reader(source.schema())
    rejected = list(reader.pushFilters([GreaterThan(("id",), 900), EqualTo(("nope",), 1)]))
    assert [type(f).__name__ for f in rejected] == ["EqualTo"]
    rows = sum(b.num_rows for p in reader.partitions() for b in reader.read(p))
    assert rows == 99
    assert ReadOptions.parse({"path": uri}).uri == reader.options.uri


def test_filter_pushdown_off_is_not_an_error(spark, pylance_datasets):
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "false"
    uri = pylance_datasets["plain"]
    df = spark.read.format("lance").load(uri).filter("id > 5990")
    assert "Filter (" in df._jdf.queryExecution().executedPlan().toString()
    assert df.count() == lance.dataset(uri).count_rows("id > 5990")


def test_filter_option_is_applied_in_the_scan(spark, pylance_datasets):
    uri = pylance_datasets["plain"]
    df = spark.read.format("lance").option("filter", "id < 1000 AND v > 10").load(uri)
    assert df.count() == lance.dataset(uri).count_rows("id < 1000 AND v > 10")


def test_storage_options_reach_the_store(spark, tmp_path):
    """``storage.*`` options are handed to the object store (here: an fsspec option for
    ``file://`` that LocalStore accepts and ignores); a bad JSON value is a clear error."""
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(10), uri)
    assert spark.read.format("lance").option("storage.auto_mkdir", "true").load(uri).count() == 10
    with pytest.raises(Exception, match="not valid JSON"):
        spark.read.format("lance").option("storage.client_kwargs", "{bad").load(uri)


def test_missing_dataset_is_a_clear_error(spark, tmp_path):
    with pytest.raises(Exception, match="DatasetNotFoundError|no Lance dataset"):
        spark.read.format("lance").load(str(tmp_path / "nothing"))


def test_auto_discovery_module():
    """Spark's lookup imports top-level ``pyspark_*`` modules and registers ``DefaultSource``."""
    import pyspark_lancefmt
    from pyspark.sql.datasource import DataSource

    assert issubclass(pyspark_lancefmt.DefaultSource, DataSource)
    assert pyspark_lancefmt.DefaultSource.name() == "lance"


def test_auto_discovery_in_a_session(spark, tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(42), uri)
    fresh = spark.newSession()  # no register() call in this session
    assert fresh.read.format("lance").load(uri).count() == 42


def _all_types():
    import datetime as dt
    import decimal

    return pa.table({
        "k": pa.array(range(5), pa.int32()),
        "b": pa.array([True, False, None, True, False]),
        "i8": pa.array([1, -2, None, 4, 5], pa.int8()),
        "i16": pa.array([1, -2, None, 4, 5], pa.int16()),
        "u8": pa.array([1, 255, None, 4, 5], pa.uint8()),
        "u16": pa.array([1, 65535, None, 4, 5], pa.uint16()),
        "u32": pa.array([1, 2**32 - 1, None, 4, 5], pa.uint32()),
        "u64": pa.array([1, 2**64 - 1, None, 4, 5], pa.uint64()),
        "f16": pa.array(np.array([1.5, 2, 0, 4, -0.25], np.float16)),
        "f32": pa.array([1.5, 2, None, 4, 5], pa.float32()),
        "dec": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50"),
                         decimal.Decimal("0"), decimal.Decimal("9.99")], pa.decimal128(10, 2)),
        "ls": pa.array(["a", None, "c", "d", "é"], pa.large_string()),
        "bin": pa.array([b"a", None, b"c", b"", b"e"]),
        "lbin": pa.array([b"a", None, b"c", b"", b"e"], pa.large_binary()),
        "fsb": pa.array([b"ab", b"cd", None, b"ef", b"gh"], pa.binary(2)),
        "d32": pa.array([dt.date(2024, 1, i + 1) for i in range(5)]),
        "d64": pa.array([dt.date(2024, 1, i + 1) for i in range(5)], pa.date64()),
        "ts_ns": pa.array([1_000_000_001 * i for i in range(5)], pa.timestamp("ns", tz="UTC")),
        "ts_paris": pa.array([1_000_001 * i for i in range(5)], pa.timestamp("us", tz="Europe/Paris")),
        "ts_ntz_ms": pa.array([1_001 * i for i in range(5)], pa.timestamp("ms")),
        "t64": pa.array([1_000_000 * i for i in range(5)], pa.time64("us")),
        "dur": pa.array([1_000 * i for i in range(5)], pa.duration("us")),
        "lst": pa.array([[1, 2], None, [], [3], [None, 4]], pa.list_(pa.int32())),
        "llst": pa.array([[1, 2], None, [], [3], [4]], pa.large_list(pa.int64())),
        "vec": pa.array([[float(i), i + 0.5] for i in range(5)], pa.list_(pa.float32(), 2)),
        "st": pa.array([{"x": i, "y": str(i)} for i in range(5)]),
        "dict": pa.array(["a", "b", "a", None, "b"]).dictionary_encode(),
    })


def test_every_type_reads_exactly(spark, tmp_path):
    """Spark 4.2+ compares each yielded batch's schema with its own Arrow mapping: every Lance
    type has to arrive cast exactly, with its values intact."""
    import datetime as dt
    import decimal

    from pyspark.sql import types as T

    source = _all_types()
    uri = str(tmp_path / "types")
    lancefmt.write_dataset(source, uri)
    df = spark.read.format("lance").load(uri)
    kinds = {f.name: type(f.dataType) for f in df.schema.fields}
    assert kinds["u8"] is T.ShortType and kinds["u32"] is T.LongType
    assert df.schema["u64"].dataType == T.DecimalType(20, 0)
    assert kinds["ts_ntz_ms"] is T.TimestampNTZType and kinds["ts_paris"] is T.TimestampType
    assert df.schema["vec"].dataType == T.ArrayType(T.FloatType(), True)
    got = df.orderBy("k").toArrow()

    def col(name):
        c = got.column(name)
        if pa.types.is_timestamp(c.type) and c.type.tz is not None:
            c = c.cast(pa.timestamp("us", tz="UTC"))
        return c.to_pylist()

    utc = dt.timezone.utc
    epoch = dt.datetime(1970, 1, 1, tzinfo=utc)
    for name in ("k", "b", "i8", "i16", "u8", "u16", "u32", "f32", "dec", "ls", "bin", "lbin",
                 "fsb", "d32", "d64", "lst", "llst", "vec", "st", "dict", "dur"):
        assert col(name) == source.column(name).to_pylist(), name
    assert col("u64") == [decimal.Decimal(1), decimal.Decimal(2**64 - 1), None,
                          decimal.Decimal(4), decimal.Decimal(5)]
    assert col("f16") == [1.5, 2.0, 0.0, 4.0, -0.25]
    assert col("ts_ns") == [epoch + dt.timedelta(seconds=i) for i in range(5)]  # ns truncated
    assert col("ts_paris") == [epoch + dt.timedelta(microseconds=1_000_001 * i) for i in range(5)]
    assert col("ts_ntz_ms") == [dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=1_001 * i)
                                for i in range(5)]
    assert col("t64") == [dt.time(0, 0, i) for i in range(5)]


def test_pushed_plan_reuse_on_one_dataframe(pushdown, tmp_path):
    """The Spark 4.1-4.3 bug described in lancefmt.spark.reader: after a filtered query pushed
    its filter, a later unfiltered query on the *same DataFrame object* reuses that read plan.
    A fresh load() is the workaround (and what lancefmt's examples do)."""
    import pyspark

    spark = pushdown
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(100), uri)
    df = spark.read.format("lance").load(uri)
    assert df.filter("id < 10").count() == 10
    buggy = tuple(int(x) for x in pyspark.__version__.split(".")[:2]) <= (4, 3)
    assert df.count() == (10 if buggy else 100)  # 10: the pushed filter stuck to the DataFrame
    assert spark.read.format("lance").load(uri).count() == 100


def test_empty_dataset_reads_as_no_rows(spark, tmp_path):
    uri = str(tmp_path / "empty")
    lancefmt.write_dataset(table(0), uri)
    df = spark.read.format("lance").load(uri)
    assert df.columns == ["id", "v", "s"] and df.count() == 0
