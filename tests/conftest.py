"""Shared fixtures. Tests mirror the package: tests/io, tests/table, tests/file, ... and
tests/interop (against pylance, the oracle)."""
import os
import uuid

import pytest


@pytest.fixture
def memory_uri():
    """A fresh ``memory://`` location, removed afterwards."""
    import fsspec

    uri = f"memory://lancefmt-test-{uuid.uuid4().hex}"
    yield uri
    fs = fsspec.filesystem("memory")
    path = uri[len("memory://"):]
    if fs.exists("/" + path):
        fs.rm("/" + path, recursive=True)


@pytest.fixture
def local_uri(tmp_path):
    """A fresh local directory path (as a plain string)."""
    return str(tmp_path / "ds")


@pytest.fixture(scope="session")
def s3_server():
    """A local moto S3 server on loopback; yields storage_options for s3fs."""
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    options = {"key": "testing", "secret": "testing", "endpoint_url": endpoint,
               "client_kwargs": {"region_name": "us-east-1"}}
    yield options
    server.stop()


@pytest.fixture
def s3_uri(s3_server):
    """A fresh bucket on the moto server: (uri, storage_options)."""
    import boto3

    bucket = f"lancefmt-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server["endpoint_url"], aws_access_key_id="testing",
                 aws_secret_access_key="testing", region_name="us-east-1").create_bucket(Bucket=bucket)
    return f"s3://{bucket}/ds", s3_server


# Data file versions pylance 14 writes (2.2 is its default, 2.1 its predecessor's): every
# dataset-level test over a pylance-written dataset runs on each of them.
PYLANCE_STORAGE_VERSIONS = ("2.0", "2.1", "2.2")


@pytest.fixture(scope="module", params=PYLANCE_STORAGE_VERSIONS)
def storage_version(request):
    """The ``data_storage_version`` pylance writes the test's dataset in."""
    return request.param


@pytest.fixture(scope="session")
def counting_s3():
    """A moto S3 server on loopback (random port) that logs the requests it serves:
    ``(storage_options, RequestLog)``."""
    pytest.importorskip("moto.server")
    from s3_counting import CountingMotoServer

    server = CountingMotoServer()
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    options = {"key": "testing", "secret": "testing", "endpoint_url": endpoint,
               "client_kwargs": {"region_name": "us-east-1"}}
    yield options, server.log
    server.stop()



@pytest.fixture(scope="session")
def s3_proxy_server():
    """A moto S3 server behind the latency/bandwidth/fault proxy of ``tests/support/s3_proxy``:
    a :class:`s3_proxy.ProxiedS3` (``.proxy``, ``.endpoint``, ``.upstream``, option dicts)."""
    moto_server = pytest.importorskip("moto.server")
    from s3_proxy import ProxiedS3, S3Proxy

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    upstream = f"http://{host}:{port}"
    proxy = S3Proxy(upstream).start()
    yield ProxiedS3(proxy, upstream)
    proxy.stop()
    server.stop()


@pytest.fixture
def proxied_s3(s3_proxy_server):
    """The proxied S3 server with a fresh bucket, counts cleared, no delay, no faults pending:
    ``(env, bucket)``."""
    from s3_proxy import create_bucket

    bucket = create_bucket(s3_proxy_server.upstream)
    s3_proxy_server.proxy.reset(latency=0.0, bandwidth=None)
    yield s3_proxy_server, bucket
    s3_proxy_server.proxy.reset(latency=0.0, bandwidth=None)
