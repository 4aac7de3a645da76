"""Ranged GETs sent past the full S3 client (lancefmt/io/s3_ranged_get.py), against moto behind
the fault proxy: the request carries what the options set (SigV4 credential, region, session
token, User-Agent), the stores that need the full client keep it, errors read as before, and a
SigV2 URL is never sent."""
import base64
import uuid
from urllib.parse import parse_qs

import pytest

from lancefmt.errors import StorageNotFoundError
from lancefmt.io import open_store
from lancefmt.io.s3_ranged_get import usable

DATA = bytes(range(256)) * 64  # 16 KiB


@pytest.fixture
def env(proxied_s3):
    e, bucket = proxied_s3
    return e, f"s3://{bucket}/{uuid.uuid4().hex[:8]}/obj.bin"


def test_a_ranged_read_is_presigned_with_the_options(env):
    e, uri = env
    store = open_store(uri, {"AWS_ACCESS_KEY_ID": "AKIDRANGED", "aws_secret_access_key": "s",
                             "aws_session_token": "tok-1", "region": "eu-west-3",
                             "aws_endpoint": e.endpoint, "allow_http": "true",
                             "user_agent": "lancefmt-test/2"})
    assert store._ranged is not None
    store.put(uri, DATA)
    e.proxy.reset()
    assert store.read_range(uri, 100, 1000) == DATA[100:1100]
    assert store.read_tail(uri, 10) == (DATA[-10:], len(DATA))
    gets = e.proxy.seen("GET")
    assert [s.headers["range"] for s in gets] == ["bytes=100-1099", "bytes=-10"]
    for seen in gets:
        query = parse_qs(seen.query)
        assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
        assert query["X-Amz-Credential"][0].startswith("AKIDRANGED/")
        assert "/eu-west-3/s3/" in query["X-Amz-Credential"][0]
        assert query["X-Amz-Security-Token"] == ["tok-1"]
        assert "lancefmt-test/2" in seen.headers["user-agent"]
        assert "botocore" in seen.headers["user-agent"]
        assert "authorization" not in seen.headers


def test_ranges_past_the_end_and_of_an_empty_object(env):
    e, uri = env
    store = open_store(uri, e.pylance_options())
    store.put(uri, DATA)
    store.put(uri + ".empty", b"")
    assert store.read_range(uri, len(DATA) - 5, 100) == DATA[-5:]  # short, as pread
    assert store.read_range(uri, len(DATA) + 10, 5) == b""
    assert store.read_tail(uri + ".empty", 8) == (b"", 0)


def test_a_missing_object_reads_as_before(env):
    """A 404 is left to the full client: the same StorageNotFoundError naming the object."""
    e, uri = env
    store = open_store(uri, e.pylance_options())
    with pytest.raises(StorageNotFoundError) as info:
        store.read_range(uri, 0, 10)
    assert info.value.path == uri and "NoSuchKey" in str(info.value)


def test_a_virtual_hosted_ranged_read(env):
    from tests.io.test_s3_remote import _Loopback

    e, uri = env
    opts = e.pylance_options(aws_endpoint=f"http://localhost:{e.proxy.port}",
                             aws_virtual_hosted_style_request="true",
                             config_kwargs={"connector_args": {"resolver": _Loopback().resolver}})
    store = open_store(uri, opts)
    assert store._ranged is not None
    store.put(uri, DATA)
    e.proxy.reset()
    assert store.read_range(uri, 5, 50) == DATA[5:55]
    (seen,) = e.proxy.seen("GET")
    assert seen.virtual_host and "X-Amz-Signature=" in seen.query


@pytest.mark.parametrize("extra", [
    {"aws_sse_customer_key_base64": base64.b64encode(b"k" * 32).decode()},
    {"aws_request_payer": "true"},
    {"allow_invalid_certificates": "true"},
    {"proxy_url": "http://127.0.0.1:9"},
])
def test_stores_that_need_the_full_client_keep_it(env, extra):
    e, uri = env
    store = open_store(uri, e.pylance_options(**extra))
    assert store._ranged is None


def test_a_proxy_in_the_environment_keeps_the_full_client(env, monkeypatch):
    e, uri = env
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    fresh = {"user_agent": uuid.uuid4().hex}  # not a store opened (and cached) before
    assert open_store(uri, e.pylance_options(**fresh))._ranged is None


def test_usable_refuses_connector_arguments_aiohttp_would_not_honour():
    assert usable({"config_kwargs": {"connector_args": {"keepalive_timeout": 5}}}, ())
    assert not usable({"config_kwargs": {"connector_args": {"ssl_context": object()}}}, ())
    assert not usable({}, (("RequestPayer", "requester"),))


def test_a_sigv2_url_is_never_sent(env):
    """Asked for SigV2 signing, botocore presigns with it: the full client sends every read."""
    e, uri = env
    store = open_store(uri, e.pylance_options(config_kwargs={"signature_version": "s3"}))
    store.put(uri, DATA)
    e.proxy.reset()
    assert store.read_range(uri, 0, 100) == DATA[:100]
    assert store.read_range(uri, 100, 100) == DATA[100:200]
    gets = e.proxy.seen("GET")
    assert len(gets) == 2 and all("Signature=" not in s.query for s in gets)
    assert store._ranged.disabled


@pytest.mark.parametrize("key", ["with space/a b.bin", "plus+sign/a+b.bin", "pct%41/x%2Fy.bin",
                                 "uni/\u00fcn\u00ef\u20ac.bin", "tilde~/a~b.bin",
                                 "semi;colon/a=b&c.bin", "star*/(p)!'.bin"])
def test_keys_that_need_quoting_are_read_with_one_request_sent_as_signed(env, key):
    from yarl import URL

    e, uri = env
    uri = uri.rsplit("/", 1)[0] + "/" + key
    store = open_store(uri, e.pylance_options())
    store.put(uri, DATA)
    e.proxy.reset()
    assert store.read_range(uri, 3, 5) == DATA[3:8]
    assert e.proxy.counts() == {"GET": 1}  # not left to the full client
    bucket, _, path = uri[len("s3://"):].partition("/")
    signed = store._ranged._urls[(bucket, path)][0]
    sent = URL(signed, encoded=True)  # what the request line carries
    assert signed.endswith(sent.raw_path_qs) and signed.count("%") == str(sent).count("%")
