"""The same storage_options dicts (and environment) work for pylance 14 and lancefmt: the names
are pylance's. Both go through the fault proxy in front of moto, which sees each library's
requests signed with the credentials and region the dict (or the environment) names."""
import uuid
import warnings
from urllib.parse import unquote

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import LanceWarning

lance = pytest.importorskip("lance")

T = pa.table({"id": pa.array(range(100), pa.int64()), "s": [f"v{i}" for i in range(100)]})


def _dicts(endpoint):
    return {
        "long names": {"aws_access_key_id": "AKIDLONG", "aws_secret_access_key": "s",
                       "aws_region": "us-east-1", "aws_endpoint": endpoint, "allow_http": "true"},
        "short names": {"access_key_id": "AKIDSHORT", "secret_access_key": "s",
                        "region": "eu-central-1", "endpoint": endpoint, "allow_http": "true"},
        "upper case": {"AWS_ACCESS_KEY_ID": "AKIDUPPER", "AWS_SECRET_ACCESS_KEY": "s",
                       "AWS_REGION": "us-west-1", "AWS_ENDPOINT": endpoint, "AWS_ALLOW_HTTP": "true"},
        "with tuning and an unknown key": {
            "aws_access_key_id": "AKIDTUNED", "aws_secret_access_key": "s",
            "aws_region": "us-east-1", "aws_endpoint_url": endpoint, "allow_http": "true",
            "connect_timeout": "5s", "timeout": "60s", "client_max_retries": "3",
            "client_retry_timeout": "30", "download_retry_count": "2",
            "aws_virtual_hosted_style_request": "false", "not_a_lance_option": "x"},
    }


@pytest.mark.parametrize("name", ["long names", "short names", "upper case",
                                  "with tuning and an unknown key"])
def test_one_dict_for_both_libraries(proxied_s3, name):
    e, bucket = proxied_s3
    opts = _dicts(e.endpoint)[name]
    key_id = next(v for k, v in opts.items() if "access_key_id" in k.lower())
    uri = f"s3://{bucket}/ds-{uuid.uuid4().hex[:6]}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lancefmt.write_dataset(T, uri, storage_options=opts)
    ours = [str(w.message) for w in caught if issubclass(w.category, LanceWarning)]
    assert len(ours) == (1 if "unknown" in name else 0)  # the unknown key, warned once by name
    assert all("'not_a_lance_option'" in m for m in ours)
    e.proxy.reset()
    theirs = lance.dataset(uri, storage_options=opts)
    assert theirs.to_table().equals(T)
    lance.write_dataset(T, uri, mode="append", storage_options=opts)
    assert e.proxy.counts()["GET"] >= 1 and e.proxy.counts()["PUT"] >= 1  # pylance came through
    assert all(f"Credential={key_id}/" in s.headers.get("authorization", "")
               for s in e.proxy.seen())
    assert lancefmt.dataset(uri, storage_options=opts).count_rows() == 200


@pytest.mark.parametrize("endpoint_var", ["AWS_ENDPOINT", "AWS_ENDPOINT_URL"])
def test_environment_alone_for_both_libraries(proxied_s3, monkeypatch, endpoint_var):
    e, bucket = proxied_s3
    for k, v in {"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "s",
                 "AWS_REGION": "us-east-1", endpoint_var: e.endpoint,
                 "AWS_ALLOW_HTTP": "true"}.items():
        monkeypatch.setenv(k, v)
    uri = f"s3://{bucket}/env-{uuid.uuid4().hex[:6]}"
    lancefmt.write_dataset(T, uri)
    assert lance.dataset(uri).count_rows() == 100
    lance.write_dataset(T, uri, mode="append")
    assert lancefmt.dataset(uri).count_rows() == 200
    # signed in the Authorization header, or (presigned ranged GETs) in the query
    assert all("Credential=AKIDENV/" in s.headers.get("authorization", "") or
               "X-Amz-Credential=AKIDENV/" in unquote(s.query) for s in e.proxy.seen())


def _data_gets(proxy) -> list:
    return [s.headers.get("range") for s in proxy.seen("GET", "/data/")]


def test_cut_bodies_are_ridden_out_and_given_up_on_as_pylance_does(proxied_s3):
    """Every other data GET cut off half way: both libraries answer a take with the right rows.
    Every data GET cut off: both resume each range from the bytes received, start it over,
    and give up after the same requests (client_max_retries=2, download_retry_count=1)."""
    import numpy as np

    e, bucket = proxied_s3
    uri = f"s3://{bucket}/faults-{uuid.uuid4().hex[:6]}"
    opts = {**_dicts(e.endpoint)["long names"], "aws_access_key_id": "testing"}
    n = 40_000
    t = pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"v{i:06d}" for i in range(n)]})
    lance.write_dataset(t, uri, storage_options=opts, max_rows_per_file=10_000)
    idx = sorted(np.random.default_rng(7).choice(n, 200, replace=False).tolist())
    for lib in (lance, lancefmt):
        e.proxy.reset()
        ds = lib.dataset(uri, storage_options=opts)
        ds.take([0])  # metadata cached: what follows reads data pages only
        e.proxy.reset()
        e.proxy.inject("truncate", times=10_000, method="GET", path_contains="/data/", every=2)
        got = ds.take(idx, columns=["id", "s"])
        assert got["id"].to_pylist() == idx, lib.__name__
        assert got["s"].to_pylist() == [f"v{i:06d}" for i in idx], lib.__name__
        assert e.proxy.faults_served["truncate"] >= 4, lib.__name__
    tuned = {**opts, "client_max_retries": "2", "download_retry_count": "1"}
    patterns = {}
    for lib in (lance, lancefmt):
        e.proxy.reset()
        ds = lib.dataset(uri, storage_options=tuned)
        ds.take([0])
        e.proxy.reset()
        e.proxy.inject("truncate", times=10_000, method="GET", path_contains="/data/")
        with pytest.raises(OSError) as info:
            ds.take([5], columns=["id"])
        gets = _data_gets(e.proxy)
        first = gets[0]
        patterns[lib.__name__] = [r for r in gets if r.split("-")[1] == first.split("-")[1]]
    ours = patterns["lancefmt"]
    assert len(ours) == len(patterns["lance"]) == 6  # (2 resumes + 1) x (1 restart + 1)
    assert ours[0] == ours[3] and ours[1] == ours[4] and ours[0] != ours[1]  # resumed, restarted
    assert "bytes " in str(info.value) and "gave up after 6 attempts" in str(info.value)
