"""lancefmt and pylance commit to one S3 dataset through one DynamoDB table (moto on loopback):
pylance's ``s3+ddb://`` external store and lancefmt's DynamoDBManifestStore share Lance's table
layout, so each sees and finishes the other's commits."""
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.table import commit_external
from lancefmt.table.dynamodb_manifest import DynamoDBManifestStore
from s3_counting import new_bucket

lance = pytest.importorskip("lance")
boto3 = pytest.importorskip("boto3")


@pytest.fixture
def ddb(counting_s3, monkeypatch):
    opts, _ = counting_s3
    endpoint = opts["endpoint_url"]
    client = boto3.client("dynamodb", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    table = f"lance-{new_bucket(opts)}"
    client.create_table(
        TableName=table, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "base_uri", "KeyType": "HASH"},
                   {"AttributeName": "version", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "base_uri", "AttributeType": "S"},
                              {"AttributeName": "version", "AttributeType": "N"}])
    monkeypatch.setenv("DYNAMODB_ENDPOINT", endpoint)  # pylance's DynamoDB client
    ms = DynamoDBManifestStore(table, endpoint_url=endpoint, region_name="us-east-1",
                               aws_access_key_id="testing", aws_secret_access_key="testing")
    bucket = new_bucket(opts)
    popts = {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1",
             "endpoint": endpoint, "allow_http": "true"}
    return (f"s3://{bucket}/ds", f"s3+ddb://{bucket}/ds?ddbTableName={table}", opts, popts, ms)


def rows(n, start=0):
    return pa.table({"a": pa.array(range(start, start + n), pa.int64())})


def test_both_commit_through_one_dynamodb_table(ddb):
    uri, pl_uri, opts, popts, ms = ddb
    lancefmt.write_dataset(rows(3), uri, storage_options=opts, manifest_store=ms)
    lance.write_dataset(rows(3, 3), pl_uri, mode="append", storage_options=popts)
    ds = lancefmt.write_dataset(rows(3, 6), uri, mode="append", storage_options=opts,
                                manifest_store=ms)
    assert ds.version == 3
    lance.write_dataset(rows(3, 9), pl_uri, mode="append", storage_options=popts)
    entry = ms.get_latest_version(uri)
    assert entry.version == 4 and entry.path.startswith(uri + "/_versions/")
    ours = lancefmt.dataset(uri, storage_options=opts, manifest_store=ms)
    theirs = lance.dataset(pl_uri, storage_options=popts)
    assert ours.version == theirs.version == 4
    assert ours.to_table().sort_by("a").equals(rows(12))
    assert theirs.to_table().sort_by("a").equals(rows(12))


def test_pylance_finishes_a_dead_lancefmt_writers_commit(ddb, monkeypatch):
    uri, pl_uri, opts, popts, ms = ddb
    lancefmt.write_dataset(rows(2), uri, storage_options=opts, manifest_store=ms)

    def died(*a, **k):
        raise OSError("writer died after its commit point")
    with monkeypatch.context() as m:
        m.setattr(commit_external, "_finish_commit", died)
        lancefmt.write_dataset(rows(2, 2), uri, mode="append", storage_options=opts,
                               manifest_store=ms)
    assert not ms.get_latest_version(uri).path.endswith(".manifest")  # staged, committed
    theirs = lance.dataset(pl_uri, storage_options=popts)
    assert theirs.version == 2 and theirs.count_rows() == 4
    assert ms.get_latest_version(uri).path.endswith(".manifest")  # pylance finished the copy
    assert lancefmt.dataset(uri, storage_options=opts).version == 2  # the final name exists


def test_uri_form_pickling_and_delete(ddb):
    import pickle

    uri, _, opts, _, ms = ddb
    lancefmt.write_dataset(rows(1), uri, storage_options=opts, manifest_store=ms)
    kw = ms.client_kwargs
    as_uri = (f"dynamodb://{ms.table_name}?endpoint_url={kw['endpoint_url']}"
              f"&region_name=us-east-1&aws_access_key_id=testing&aws_secret_access_key=testing")
    again = lancefmt.dataset(uri, storage_options=opts, manifest_store=as_uri)
    assert again.version == 1 and pickle.loads(pickle.dumps(ms)).get(uri, 1) == ms.get(uri, 1)
    ms.delete(uri)
    assert ms.get_latest_version(uri) is None
