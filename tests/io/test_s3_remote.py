"""The S3 store against moto behind the fault proxy (tests/support/s3_proxy.py): pylance's option
names reach the store (the proxy sees what they set), faults are retried and counted, budgets
end in a StorageError naming the object, a short read is never returned, a store that is down
is a StorageError, and a lost PUT response does not turn a commit into a lost race."""
import socket
import uuid

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import (
    ConditionalPutUnsupportedError, InvalidArgumentError, LanceError, LanceWarning, StorageError,
    StoragePermissionError,
)
from lancefmt.io import open_store

DATA = bytes(range(256)) * 400  # 100 KiB


@pytest.fixture
def env(proxied_s3):
    return proxied_s3


def _obj(env, name="obj.bin"):
    e, bucket = env
    return e, f"s3://{bucket}/{uuid.uuid4().hex[:8]}/{name}"


def _store(e, **opts):
    return open_store("s3://x", e.pylance_options(**opts))


# -- option names reach the store ------------------------------------------------------------------
def test_pylance_names_reach_the_store(env):
    e, uri = _obj(env)
    opts = {"AWS_ACCESS_KEY_ID": "AKIDLANCEFMT", "aws_secret_access_key": "s",
            "aws_session_token": "session-tok", "region": "eu-west-3",
            "AWS_ENDPOINT": e.endpoint, "ALLOW_HTTP": "true", "user_agent": "lancefmt-test/1"}
    store = open_store(uri, opts)
    store.put(uri, DATA)
    assert store.read(uri) == DATA
    for seen in e.proxy.seen():
        auth = seen.headers["authorization"]
        assert "Credential=AKIDLANCEFMT/" in auth and "/eu-west-3/s3/" in auth
        assert seen.headers["x-amz-security-token"] == "session-tok"
        assert "lancefmt-test/1" in seen.headers["user-agent"]
    assert e.proxy.counts() == {"PUT": 1, "GET": 1}


@pytest.mark.parametrize("endpoint_var", ["AWS_ENDPOINT", "AWS_ENDPOINT_URL"])
def test_environment_alone(env, monkeypatch, endpoint_var):
    e, uri = _obj(env)
    for k, v in {"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "s",
                 endpoint_var: e.endpoint, "AWS_REGION": "us-east-2",
                 "AWS_ALLOW_HTTP": "true"}.items():
        monkeypatch.setenv(k, v)
    store = open_store(uri)
    store.put(uri, b"x")
    assert store.exists(uri)
    seen = e.proxy.seen()
    assert [s.kind for s in seen] == ["PUT", "HEAD"]
    assert all("Credential=AKIDENV/" in s.headers["authorization"] and "/us-east-2/" in
               s.headers["authorization"] for s in seen)


def test_encryption_headers_reach_the_store(env):
    e, uri = _obj(env)
    store = _store(e, aws_server_side_encryption="aws:kms", aws_sse_kms_key_id="my-key",
                   aws_sse_bucket_key_enabled="true", checksum_algorithm="sha256",
                   default_content_type="application/x-lance")
    store.put(uri, DATA)
    with store.open_output(uri + ".big") as f:  # multipart: the encryption goes on the upload
        f.write(b"z" * (6 << 20))
    put = e.proxy.seen("PUT")[0].headers
    assert put["x-amz-server-side-encryption"] == "aws:kms"
    assert put["x-amz-server-side-encryption-aws-kms-key-id"] == "my-key"
    assert put["x-amz-server-side-encryption-bucket-key-enabled"] == "true"
    assert "x-amz-checksum-sha256" in put and put["content-type"] == "application/x-lance"
    create = e.proxy.seen("CREATE_MULTIPART")[0].headers
    assert create["x-amz-server-side-encryption-aws-kms-key-id"] == "my-key"
    assert len(e.proxy.seen("UPLOAD_PART")) == 2 and len(e.proxy.seen("COMPLETE_MULTIPART")) == 1
    assert store.size(uri + ".big") == 6 << 20


def test_request_payer_and_skip_signature(env):
    e, uri = _obj(env)
    _store(e, request_payer="true").put(uri, b"x")
    assert e.proxy.seen("PUT")[-1].headers["x-amz-request-payer"] == "requester"
    e.proxy.reset()
    anonymous = open_store(uri, {"endpoint": e.endpoint, "skip_signature": "true",
                                 "region": "us-east-1"})
    with pytest.raises(StoragePermissionError):  # a private object, an unsigned request: 403
        anonymous.read(uri)
    assert "authorization" not in e.proxy.seen("GET")[0].headers


class _Loopback:
    """An aiohttp resolver sending every host name (``bucket.localhost``) to 127.0.0.1."""

    def __init__(self):
        from aiohttp.abc import AbstractResolver

        class R(AbstractResolver):
            async def resolve(self, host, port=0, family=socket.AF_INET):
                return [{"hostname": host, "host": "127.0.0.1", "port": port,
                         "family": socket.AF_INET, "proto": 0, "flags": 0}]

            async def close(self):
                pass

        self.resolver = R()


@pytest.mark.parametrize("virtual", [True, False])
def test_virtual_hosted_style_request(env, virtual):
    e, uri = _obj(env)
    opts = e.pylance_options(aws_endpoint=f"http://localhost:{e.proxy.port}",
                             aws_virtual_hosted_style_request=str(virtual).lower(),
                             config_kwargs={"connector_args": {"resolver": _Loopback().resolver}})
    store = open_store(uri, opts)
    store.put(uri, b"v")
    assert store.read(uri) == b"v"
    seen = e.proxy.seen()
    assert [s.virtual_host for s in seen] == [virtual, virtual]
    assert all(s.headers["host"].startswith(f"{uri.split('/')[2]}.localhost") == virtual
               for s in seen)


def test_proxy_url(env):
    """Straight to moto's address, through the proxy as an HTTP forward proxy."""
    e, uri = _obj(env)
    store = open_store(uri, e.pylance_options(aws_endpoint=e.upstream, proxy_url=e.endpoint))
    store.put(uri, b"p")
    assert store.read(uri) == b"p"
    assert e.proxy.counts() == {"PUT": 1, "GET": 1}


def test_connect_timeout_reaches_the_client(env):
    e, _ = env
    store = _store(e, connect_timeout="2s", timeout="7s", io_parallelism="5")
    config = store.fs.s3.meta.config
    assert config.connect_timeout == 2 and config.read_timeout == 7
    assert store.settings.request_timeout == 7 and store.settings.io_parallelism == 5


def test_request_timeout_is_retried(env):
    e, uri = _obj(env)
    store = _store(e, timeout="300ms", client_max_retries="3")
    store.put(uri, DATA)
    e.proxy.reset()
    e.proxy.inject("delay:2", method="GET")
    assert store.read_range(uri, 10, 100) == DATA[10:110]
    assert e.proxy.counts() == {"GET": 2} and e.proxy.faults_served["delay:2"] == 1


# -- faults ------------------------------------------------------------------------------------------
FAULTS = ["slowdown", "internal", "reset", "truncate", "lost_response"]


@pytest.mark.parametrize("fault", FAULTS + ["short_range"])
def test_each_read_fault_is_retried(env, fault):
    e, uri = _obj(env)
    store = _store(e)
    store.put(uri, DATA)
    e.proxy.reset()
    e.proxy.inject(fault, method="GET")
    assert store.read_range(uri, 1000, 50_000) == DATA[1000:51_000]
    assert e.proxy.faults_served[fault] == 1
    assert e.proxy.counts() == {"GET": 2}


@pytest.mark.parametrize("fault", FAULTS)
def test_each_write_fault_is_retried(env, fault):
    e, uri = _obj(env)
    store = _store(e)
    e.proxy.inject(fault, method="PUT")
    store.put(uri, DATA)
    assert e.proxy.faults_served[fault] == 1
    assert e.proxy.counts()["PUT"] == 2
    assert store.read(uri) == DATA


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_on_a_multipart_upload_is_retried(env, fault):
    e, uri = _obj(env)
    store = _store(e)
    e.proxy.inject(fault, kind="UPLOAD_PART")
    payload = bytes(range(256)) * ((11 << 20) // 256)
    with store.open_output(uri) as f:
        f.write(payload)
    assert e.proxy.faults_served[fault] == 1 and e.proxy.counts()["UPLOAD_PART"] == 4
    assert store.read(uri) == payload


def test_lost_complete_multipart_response(env):
    e, uri = _obj(env)
    store = _store(e)
    e.proxy.inject("lost_response", kind="COMPLETE_MULTIPART")
    with store.open_output(uri) as f:
        f.write(b"m" * (6 << 20))
    assert e.proxy.faults_served["lost_response"] == 1
    assert store.size(uri) == 6 << 20


def test_retries_run_out_with_a_storage_error_naming_the_object(env):
    e, uri = _obj(env)
    store = _store(e, client_max_retries="2")
    store.put(uri, DATA)
    e.proxy.reset()
    e.proxy.inject("internal", times=10, method="GET")
    with pytest.raises(StorageError) as info:
        store.read(uri)
    err = info.value
    assert err.path == uri and uri in str(err) and "3 attempts" in str(err)
    assert e.proxy.counts() == {"GET": 3}  # one request and client_max_retries retries


def test_retry_timeout_bounds_the_retries(env):
    e, uri = _obj(env)
    store = _store(e, client_retry_timeout="0")
    e.proxy.inject("slowdown", times=5, method="PUT")
    with pytest.raises(StorageError, match="SlowDown"):
        store.put(uri, b"x")
    assert e.proxy.counts() == {"PUT": 1}


@pytest.mark.parametrize("fault", ["truncate", "short_range"])
def test_short_reads_are_never_returned(env, fault):
    """As pylance: a cut body is resumed from the bytes received (client_max_retries times),
    then the range starts over (download_retry_count times), then a StorageError naming the
    object and the range."""
    e, uri = _obj(env)
    store = _store(e, download_retry_count="2", client_max_retries="1")
    store.put(uri, DATA)
    e.proxy.reset()
    e.proxy.inject(fault, times=100, method="GET")
    with pytest.raises(StorageError) as info:
        store.read_range(uri, 0, 60_000)
    assert info.value.path == uri and "bytes 0-59999" in str(info.value)
    assert "gave up after 6 attempts" in str(info.value)
    ranges = [s.headers["range"] for s in e.proxy.seen("GET")]
    assert ranges == ["bytes=0-59999", "bytes=30000-59999"] * 3


@pytest.mark.parametrize("fault", ["truncate", "short_range"])
def test_a_cut_body_is_resumed_from_the_bytes_received(env, fault):
    e, uri = _obj(env)
    store = _store(e)
    store.put(uri, DATA)
    e.proxy.reset()
    e.proxy.inject(fault, times=3, method="GET")
    assert store.read_range(uri, 1000, 40_000) == DATA[1000:41_000]
    ranges = [s.headers["range"] for s in e.proxy.seen("GET")]
    assert ranges == ["bytes=1000-40999", "bytes=21000-40999", "bytes=31000-40999",
                      "bytes=36000-40999"]


def test_every_other_data_get_cut_off_a_take_still_answers(env):
    """The fault pylance rides out (issue 38): every other GET of the data files cut off half
    way. Each range keeps its own count, so no range runs out while others succeed."""
    import numpy as np

    e, bucket = env
    uri = f"s3://{bucket}/take-{uuid.uuid4().hex[:6]}"
    n = 40_000
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "s": pa.array([f"value-{i:08d}" for i in range(n)])})
    lancefmt.write_dataset(t, uri, storage_options=e.pylance_options(), max_rows_per_file=10_000)
    ds = lancefmt.dataset(uri, storage_options=e.pylance_options())
    idx = sorted(np.random.default_rng(3).choice(n, 200, replace=False).tolist())
    e.proxy.reset()
    e.proxy.inject("truncate", times=10_000, method="GET", path_contains="/data/", every=2)
    got = ds.take(idx, columns=["id", "s"])
    assert got["id"].to_pylist() == idx
    assert got["s"].to_pylist() == [f"value-{i:08d}" for i in idx]
    assert e.proxy.faults_served["truncate"] >= 4


def test_a_store_that_is_down_is_a_storage_error(env):
    e, uri = _obj(env)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there
    store = _store(e, aws_endpoint=f"http://127.0.0.1:{port}", client_max_retries="2")
    with pytest.raises(StorageError) as info:
        store.read(uri)
    assert "3 attempts" in str(info.value) and info.value.path == uri
    assert type(info.value.__cause__).__module__.startswith("botocore")
    with pytest.raises(LanceError) as info:
        lancefmt.dataset(f"s3://{uri.split('/')[2]}/ds", storage_options=e.pylance_options(
            aws_endpoint=f"http://127.0.0.1:{port}", client_max_retries="1"))
    assert isinstance(info.value, OSError)


def test_a_missing_object_is_storage_not_found(env):
    e, uri = _obj(env)
    with pytest.raises(FileNotFoundError) as info:
        _store(e).read(uri)
    assert isinstance(info.value, StorageError) and e.proxy.counts() == {"GET": 1}


# -- batches -----------------------------------------------------------------------------------------
def test_read_many_is_concurrent_coalesced_and_in_order(env):
    e, uri = _obj(env)
    store = _store(e)
    other = uri + ".2"
    big = bytes(range(256)) * 4096  # 1 MiB
    store.put(uri, big)
    store.put(other, big)
    e.proxy.reset(latency=0.05)
    far = [(uri, i * 100_000, 1000) for i in range(10)] + [(other, i * 100_000, 10) for i in range(10)]
    near = [(uri, 2_000 + i * 3_000, 500) for i in range(20)]
    requests = far + near + [(uri, len(big) - 5, 50), (other, 7, 0)]
    got = store.read_many(requests[::-1])
    assert got == [big[s:s + n] for _, s, n in requests[::-1]]  # asked order; the last is cut at EOF
    # gaps under 64 KiB are read through: the near ranges and the first two far ones of ``uri``
    # are one request; the other 8 far ones, the tail and the 10 of ``other`` one each
    assert e.proxy.counts() == {"GET": 1 + 8 + 1 + 10}
    assert e.proxy.max_in_flight >= 10  # sent together, not one after another


@pytest.mark.parametrize("parallelism,most", [("3", 3), (None, 20)])
def test_io_parallelism_caps_requests_in_flight(env, parallelism, most):
    e, uri = _obj(env)
    store = _store(e, **({"io_parallelism": parallelism} if parallelism else {}))
    big = bytes(range(256)) * 8192  # 2 MiB
    store.put(uri, big)
    e.proxy.reset(latency=0.05)
    ranges = [(i * 100_000, 100) for i in range(20)]
    assert store.read_ranges(uri, ranges) == [big[s:s + n] for s, n in ranges]
    assert e.proxy.counts() == {"GET": 20}
    assert 2 <= e.proxy.max_in_flight <= most
    if parallelism is None:
        assert e.proxy.max_in_flight >= 10


def test_open_input_reads_through_the_store(env):
    e, uri = _obj(env)
    store = _store(e)
    store.put(uri, DATA)
    e.proxy.reset()
    e.proxy.inject("truncate", method="GET")
    with store.open_input(uri) as f:
        f.seek(1000)
        assert f.read(10) == DATA[1000:1010]
        f.seek(-5, 2)
        assert f.read() == DATA[-5:]
    assert e.proxy.faults_served["truncate"] == 1


def test_read_tail_is_one_request(env):
    e, uri = _obj(env)
    store = _store(e)
    store.put(uri, DATA)
    e.proxy.reset()
    assert store.read_tail(uri, 1000) == (DATA[-1000:], len(DATA))
    assert store.read_tail(uri, 10 * len(DATA)) == (DATA, len(DATA))
    assert e.proxy.counts() == {"GET": 2}


# -- commits -----------------------------------------------------------------------------------------
def test_lost_put_response_keeps_commits_exactly_once(env):
    e, bucket = env
    uri = f"s3://{bucket}/ds-{uuid.uuid4().hex[:6]}"
    opts = e.pylance_options()
    t = pa.table({"id": pa.array(range(10), pa.int64())})
    lancefmt.write_dataset(t, uri, storage_options=opts)
    for _ in range(2):
        e.proxy.inject("lost_response", method="PUT", path_contains="/_versions/")
        ds = lancefmt.write_dataset(t, uri, mode="append", storage_options=opts)
    assert e.proxy.faults_served["lost_response"] == 2
    assert ds.version == 3
    ds = lancefmt.dataset(uri, storage_options=opts)
    assert ds.version == 3 and ds.count_rows() == 30
    assert [v["version"] for v in ds.versions()] == [1, 2, 3]
    # version 1 once, versions 2 and 3 twice each (the lost attempt and the retry: a 412 that
    # the read-back recognised as ours)
    assert len(e.proxy.seen("PUT", "/_versions/")) == 1 + 2 * 2


def test_conditional_put_disabled_refuses_to_commit(env):
    e, bucket = env
    with pytest.raises(ConditionalPutUnsupportedError):
        lancefmt.write_dataset(pa.table({"a": [1]}), f"s3://{bucket}/nocp",
                               storage_options=e.pylance_options(conditional_put="disabled"))


def test_disable_bulk_delete(env):
    e, uri = _obj(env)
    store = _store(e, aws_disable_bulk_delete="true")
    for i in range(3):
        store.put(f"{uri}{i}", b"d")
    e.proxy.reset()
    store.delete_many([f"{uri}{i}" for i in range(3)])
    assert e.proxy.counts() == {"DELETE": 3}
    _store(e).put(uri, b"d")
    e.proxy.reset()
    _store(e).delete_many([uri])
    assert e.proxy.counts() == {"DELETE_MANY": 1}


# -- credentials, warnings, bad values through the dataset API ---------------------------------------
def test_expired_credentials_are_refused_before_sending(env):
    e, uri = _obj(env)
    with pytest.raises(StoragePermissionError, match="expires_at_millis"):
        _store(e, expires_at_millis="1000").read(uri)
    assert e.proxy.counts() == {}
    _store(e, expires_at_millis=str(2 ** 50)).put(uri, b"fresh")


def test_unknown_key_warns_and_the_dataset_opens(env):
    e, bucket = env
    uri = f"s3://{bucket}/warned"
    lancefmt.write_dataset(pa.table({"a": [1, 2]}), uri, storage_options=e.pylance_options())
    with pytest.warns(LanceWarning, match="'shared_with_pylance_only'"):
        ds = lancefmt.dataset(uri, storage_options=e.pylance_options(
            shared_with_pylance_only="1"))
    assert ds.count_rows() == 2


def test_bad_value_through_the_dataset_api(env):
    e, bucket = env
    with pytest.raises(InvalidArgumentError, match="allow_http"):
        lancefmt.dataset(f"s3://{bucket}/x", storage_options=e.pylance_options(allow_http="maybe"))
    with pytest.raises(InvalidArgumentError, match="timeout"):
        lancefmt.dataset(f"s3://{bucket}/x", storage_options=e.pylance_options(timeout="-5s"))


def test_user_agent_is_built_once_and_still_sent(env):
    """fix_user_agent: every request carries botocore's User-Agent, built once per client."""
    e, uri = _obj(env)
    store = _store(e)
    store.put(uri, DATA)
    client = store.fs.s3
    calls = []
    creator = client._user_agent_creator
    real = type(creator).to_string

    def counting(self):
        calls.append(1)
        return real(self)

    type(creator).to_string, was = counting, type(creator).to_string
    try:
        e.proxy.reset()
        for _ in range(3):
            assert store.read_range(uri, 10, 5) == DATA[10:15]
    finally:
        type(creator).to_string = was
    assert calls == []  # the instance's fixed string answered, not the class's builder
    agents = {s.headers.get("user-agent") for s in e.proxy.seen("GET")}
    assert len(agents) == 1 and "botocore" in agents.pop()


def test_pylance_names_reach_every_entry_point(env):
    """The same pylance-style dict works for the file writer and reader, other versions of a
    dataset, per-base options of a multi-base dataset and a directory namespace's
    ``storage.`` properties: every request goes through the proxy it names."""
    from lancefmt import BasePath
    from lancefmt.file import LanceFileReader, LanceFileWriter
    from lancefmt.namespace import DirectoryNamespace

    e, bucket = env
    opts = e.pylance_options()
    table = pa.table({"x": list(range(10))})
    root = f"s3://{bucket}/{uuid.uuid4().hex[:8]}"
    e.proxy.reset()
    with LanceFileWriter(f"{root}/one.lance", table.schema, storage_options=opts) as w:
        w.write_batch(table)
    assert LanceFileReader(f"{root}/one.lance", opts).read_all().to_table().equals(table)

    ds = lancefmt.write_dataset(table, f"{root}/ds", storage_options=opts)
    ds.insert(table)
    assert ds.checkout_version(1).count_rows() == 10

    cold = {"cold": {"aws_endpoint": e.endpoint, "allow_http": "true"}}
    multi = lancefmt.write_dataset(
        table, f"{root}/multi", storage_options=opts, base_store_params=cold,
        initial_bases=[BasePath(f"s3://{bucket}/cold-{uuid.uuid4().hex[:6]}", name="cold")],
        target_bases=["cold"])
    assert lancefmt.dataset(f"{root}/multi", storage_options=opts,
                            base_store_params=cold).to_table().equals(multi.to_table())

    ns = DirectoryNamespace(root=f"{root}/ns", **{f"storage.{k}": v for k, v in opts.items()})
    ns.create_table(["t"], table)
    assert ns.open_table(["t"]).to_table().equals(table)
    assert e.proxy.counts()["PUT"] >= 4 and e.proxy.counts()["GET"] >= 4


def test_checksums_only_when_asked(env):
    """As Lance: a PUT carries no checksum unless ``checksum_algorithm`` asks for one, and a
    GET does not ask the server for one to check."""
    e, uri = _obj(env)
    e.proxy.reset()
    _store(e).put(uri, DATA)
    assert _store(e).read(uri) == DATA
    for seen in e.proxy.seen():
        assert not any(h.startswith("x-amz-checksum") or h == "x-amz-checksum-mode"
                       for h in seen.headers), (seen.method, seen.headers)
    e.proxy.reset()
    _store(e, checksum_algorithm="sha256").put(uri, DATA)
    (put,) = e.proxy.seen("PUT")
    assert any(h.startswith("x-amz-checksum") or h == "x-amz-sdk-checksum-algorithm"
               for h in put.headers), put.headers
