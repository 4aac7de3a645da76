"""Spark on S3 (issue 26): executors write and read fragments in buckets of a moto server on
loopback with the options given as ``storage.<key>`` (pylance's names), one bucket or three
(a multi-base dataset, files round-robin); appends add one version each; the driver's and
pylance's reads agree with what was written."""
import json
import uuid

import pyarrow as pa
import pytest

import lancefmt

pytestmark = pytest.mark.spark


def _bucket(endpoint):
    import boto3

    name = f"lancefmt-spark-{uuid.uuid4().hex[:10]}"
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                 aws_secret_access_key="testing", region_name="us-east-1").create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3(s3_server):
    endpoint = s3_server["endpoint_url"]
    options = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing",
               "aws_region": "us-east-1", "aws_endpoint": endpoint, "allow_http": "true"}
    return endpoint, options


def _with_storage(rw, options):
    for k, v in options.items():
        rw = rw.option(f"storage.{k}", v)
    return rw


def frame(spark, n, start=0, parts=3):
    return spark.range(start, start + n, numPartitions=parts).selectExpr(
        "id", "CAST(id % 7 AS DOUBLE) AS v", "concat('r', CAST(id AS STRING)) AS s")


SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("s", pa.string())])


def _sorted(t: pa.Table) -> pa.Table:
    """Sorted by id, nullable as pyarrow builds it (Spark's id and s are non-null)."""
    return t.sort_by("id").cast(SCHEMA)


def _expected(n, start=0):
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [float(i % 7) for i in ids],
                     "s": [f"r{i}" for i in ids]})


def test_write_append_read_back_on_s3(spark, s3):
    endpoint, options = s3
    uri = f"s3://{_bucket(endpoint)}/events.lance"
    w = frame(spark, 3000).write.format("lance").mode("append").option("max_rows_per_file", 400)
    _with_storage(w, options).save(uri)
    w = frame(spark, 1000, start=3000).write.format("lance").mode("append")
    _with_storage(w, options).save(uri)
    ds = lancefmt.dataset(uri, storage_options=options)
    assert ds.version == 2 and ds.count_rows() == 4000
    assert _sorted(ds.to_table()).equals(_expected(4000))
    # the executors read it back through the source, with the same options
    df = _with_storage(spark.read.format("lance"), options).load(uri)
    got = pa.Table.from_pandas(df.toPandas(), preserve_index=False)
    assert _sorted(got).equals(_expected(4000))
    assert df.filter("id >= 3990").count() == 10
    lance = pytest.importorskip("lance")
    assert lance.dataset(uri, storage_options=options).count_rows() == 4000


def test_round_robin_over_three_buckets_from_spark(spark, s3):
    endpoint, options = s3
    root = _bucket(endpoint)
    data = [_bucket(endpoint) for _ in range(3)]
    uri = f"s3://{root}/multi.lance"
    bases = json.dumps([{"path": f"s3://{b}/multi", "name": f"b{i}"} for i, b in enumerate(data)])
    w = (frame(spark, 3000).write.format("lance").mode("append").option("initial_bases", bases)
         .option("target_bases", "b0,b1,b2").option("max_rows_per_file", 250))
    _with_storage(w, options).save(uri)
    w = (frame(spark, 600, start=3000).write.format("lance").mode("append")
         .option("target_bases", "b2"))
    _with_storage(w, options).save(uri)
    ds = lancefmt.dataset(uri, storage_options=options)
    assert ds.version == 2
    assert _sorted(ds.to_table()).equals(_expected(3600))
    files = [str(f) for frag in ds.get_fragments() for f in frag.data_files()]
    for b in data:  # every bucket holds files, and only files the manifest names
        assert any(f.startswith(f"s3://{b}/multi/") for f in files)
        listed = {i.uri for i in lancefmt.io.open_store(f"s3://{b}", options).walk(f"s3://{b}/multi")}
        assert listed == {f for f in files if f.startswith(f"s3://{b}/")}
    df = _with_storage(spark.read.format("lance"), options).load(uri)
    assert df.count() == 3600 and df.agg({"id": "sum"}).collect()[0][0] == sum(range(3600))
