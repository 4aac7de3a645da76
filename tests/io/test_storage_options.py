"""pylance's storage option names (Lance's "Object Store Configuration", object_store's config
keys) mapped onto s3fs/gcsfs/adlfs arguments: aliases, any case, the environment, validation
naming the key, warnings for what is dropped. No server here: tests/io/test_s3_remote.py checks
that the same options reach a store."""
import base64
import json
import warnings

import pytest

from lancefmt.errors import InvalidArgumentError, LanceWarning, MissingDependencyError
from lancefmt.io import options as o
from lancefmt.io.options import parse_duration, resolve

EP = "http://127.0.0.1:5000"


def s3(opts, env=None):
    with warnings.catch_warnings():
        warnings.simplefilter("error", LanceWarning)
        return resolve("s3", opts, environ=env or {})


@pytest.mark.parametrize("name", ["aws_endpoint", "AWS_ENDPOINT", "endpoint", "Endpoint",
                                  "aws_endpoint_url", "endpoint_url", "AWS_ENDPOINT_URL"])
def test_every_endpoint_alias_in_any_case(name):
    r = s3({name: EP, "allow_http": "true"})
    assert r.fs_kwargs["endpoint_url"] == EP


@pytest.mark.parametrize("names", [
    ("aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_region"),
    ("access_key_id", "secret_access_key", "session_token", "region"),
    ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_TOKEN", "AWS_REGION"),
])
def test_credentials_and_region(names):
    r = s3(dict(zip(names, ["AK", "SK", "TOK", "eu-west-3"])))
    assert (r.fs_kwargs["key"], r.fs_kwargs["secret"], r.fs_kwargs["token"]) == ("AK", "SK", "TOK")
    assert r.fs_kwargs["client_kwargs"]["region_name"] == "eu-west-3"


def test_environment_alone_as_pylance_reads_it():
    env = {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_ENDPOINT": EP,
           "AWS_REGION": "us-east-2", "AWS_ALLOW_HTTP": "true", "PATH": "/bin",
           "OBJECT_STORE_CLIENT_MAX_RETRIES": "4", "OBJECT_STORE_CLIENT_RETRY_TIMEOUT": "20",
           "LANCE_IO_THREADS": "7"}
    r = s3(None, env)
    assert r.fs_kwargs["endpoint_url"] == EP and r.fs_kwargs["key"] == "AK"
    assert r.fs_kwargs["client_kwargs"]["region_name"] == "us-east-2"
    assert (r.settings.max_retries, r.settings.retry_timeout, r.settings.io_parallelism) == (4, 20, 7)
    assert r.fs_kwargs["config_kwargs"]["max_pool_connections"] >= 7
    assert s3(None, {"AWS_ENDPOINT_URL": EP}).fs_kwargs["endpoint_url"] == EP
    assert s3(None, {"AWS_DEFAULT_REGION": "ap-south-1"}).fs_kwargs["client_kwargs"] == {
        "region_name": "ap-south-1"}


def test_explicit_options_win_over_the_environment():
    r = s3({"endpoint": "https://mine", "region": "r1"},
           {"AWS_ENDPOINT": EP, "AWS_REGION": "r2", "AWS_ALLOW_HTTP": "false"})
    assert r.fs_kwargs["endpoint_url"] == "https://mine"
    assert r.fs_kwargs["client_kwargs"]["region_name"] == "r1"


def test_unknown_keys_warn_by_name_and_are_ignored():
    with pytest.warns(LanceWarning, match="'no_such_option'"):
        r = resolve("s3", {"no_such_option": "1", "aws_region": "x"}, environ={})
    assert "no_such_option" not in str(r.fs_kwargs)
    assert r.warnings and "no_such_option" in r.warnings[0]
    # unknown environment variables are not the user's to be warned about
    assert s3(None, {"AWS_PROFILE": "p", "AWS_SOMETHING_ELSE": "1"}).warnings == []


def test_known_but_unhonoured_keys_warn_and_say_so():
    with pytest.warns(LanceWarning, match="'proxy_excludes' is not honoured"):
        resolve("s3", {"proxy_excludes": "example.com"}, environ={})


@pytest.mark.parametrize("opts,key", [
    ({"allow_http": "maybe"}, "allow_http"),
    ({"timeout": "-1s"}, "timeout"),
    ({"timeout": -3}, "timeout"),
    ({"request_timeout": "soon"}, "request_timeout"),
    ({"connect_timeout": "5 parsecs"}, "connect_timeout"),
    ({"client_max_retries": "-1"}, "client_max_retries"),
    ({"client_retry_timeout": "x"}, "client_retry_timeout"),
    ({"download_retry_count": "1.5"}, "download_retry_count"),
    ({"io_parallelism": "0"}, "io_parallelism"),
    ({"expires_at_millis": "tomorrow"}, "expires_at_millis"),
    ({"aws_server_side_encryption": "rot13"}, "aws_server_side_encryption"),
    ({"aws_sse_kms_key_id": "k", "aws_server_side_encryption": "AES256"}, "aws_sse_kms_key_id"),
    ({"aws_sse_customer_key_base64": "not base64!"}, "aws_sse_customer_key_base64"),
    ({"aws_virtual_hosted_style_request": "sometimes"}, "aws_virtual_hosted_style_request"),
    ({"aws_endpoint": "ftp://x"}, "aws_endpoint"),
    ({"aws_endpoint": EP, "allow_http": "false"}, "allow_http"),
    ({"proxy_url": "nowhere"}, "proxy_url"),
    ({"conditional_put": "sometimes"}, "conditional_put"),
    ({"checksum_algorithm": "md4"}, "checksum_algorithm"),
])
def test_bad_values_name_the_key(opts, key):
    with pytest.raises(InvalidArgumentError, match=repr(key).replace("'", "'")) as info:
        resolve("s3", opts, environ={})
    assert isinstance(info.value, ValueError)


def test_bad_environment_value_names_the_variable():
    with pytest.raises(InvalidArgumentError, match="AWS_ALLOW_HTTP"):
        resolve("s3", None, environ={"AWS_ALLOW_HTTP": "perhaps"})


def test_two_aliases_with_different_values_are_refused():
    with pytest.raises(InvalidArgumentError, match="'aws_region'.*'region'|'region'.*'aws_region'"):
        resolve("s3", {"aws_region": "a", "region": "b"}, environ={})
    assert s3({"aws_region": "a", "region": "a"}).fs_kwargs["client_kwargs"]["region_name"] == "a"


def test_fsspec_keys_pass_through_and_win():
    r = s3({"key": "fk", "secret": "fs", "client_kwargs": {"region_name": "r-fsspec", "verify": False},
            "config_kwargs": {"read_timeout": 99}, "aws_region": "r-pylance",
            "access_key_id": "pk"})
    assert r.fs_kwargs["key"] == "fk" and r.fs_kwargs["secret"] == "fs"
    assert r.fs_kwargs["client_kwargs"] == {"region_name": "r-fsspec", "verify": False}
    assert r.fs_kwargs["config_kwargs"]["read_timeout"] == 99
    assert r.fs_kwargs["config_kwargs"]["connect_timeout"] == 5.0  # the rest of ours kept


def test_client_settings_and_lance_defaults():
    r = s3({})
    st = r.settings
    assert (st.max_retries, st.retry_timeout, st.download_retries) == (10, 180.0, 3)
    assert (st.connect_timeout, st.request_timeout, st.io_parallelism) == (5.0, 30.0, 64)
    assert (st.coalesce_gap, st.max_iop_size) == (64 * 1024, 16 * 1024 * 1024)
    cfg = r.fs_kwargs["config_kwargs"]
    assert cfg["retries"] == {"mode": "standard", "total_max_attempts": 1}  # the store retries
    r = s3({"connect_timeout": "2s", "timeout": "1m 30s", "read_timeout": "500ms",
            "client_max_retries": "2", "client_retry_timeout": "7", "download_retry_count": 0,
            "proxy_url": "http://proxy:3128", "user_agent": "me/1",
            "aws_virtual_hosted_style_request": "true", "aws_unsigned_payload": "yes",
            "allow_invalid_certificates": "on", "io_parallelism": 5})
    cfg = r.fs_kwargs["config_kwargs"]
    assert cfg["connect_timeout"] == 2.0 and cfg["read_timeout"] == 0.5
    assert cfg["proxies"] == {"http": "http://proxy:3128", "https": "http://proxy:3128"}
    assert cfg["user_agent_extra"] == "me/1"
    assert cfg["s3"] == {"addressing_style": "virtual", "payload_signing_enabled": False}
    assert cfg["max_pool_connections"] >= 5
    assert r.fs_kwargs["client_kwargs"]["verify"] is False
    st = r.settings
    assert (st.max_retries, st.retry_timeout, st.download_retries) == (2, 7.0, 0)
    assert (st.request_timeout, st.connect_timeout, st.io_parallelism) == (90.0, 2.0, 5)


def test_encryption_and_request_arguments():
    key = base64.b64encode(bytes(range(32))).decode()
    r = s3({"aws_server_side_encryption": "aws:kms", "aws_sse_kms_key_id": "arn:k",
            "aws_sse_bucket_key_enabled": "true", "checksum_algorithm": "sha256",
            "request_payer": "true", "default_content_type": "application/x-lance"})
    w = dict(r.settings.write_kwargs)
    assert w == {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "arn:k",
                 "BucketKeyEnabled": True, "ChecksumAlgorithm": "SHA256",
                 "RequestPayer": "requester", "ContentType": "application/x-lance"}
    assert dict(r.settings.read_kwargs) == {"RequestPayer": "requester"}
    r = s3({"aws_sse_customer_key_base64": key})
    assert dict(r.settings.read_kwargs)["SSECustomerKey"] == bytes(range(32))
    assert dict(r.settings.write_kwargs)["SSECustomerAlgorithm"] == "AES256"


def test_misc_s3_keys():
    assert s3({"skip_signature": "true"}).fs_kwargs["anon"] is True
    assert s3({"conditional_put": "disabled"}).settings.conditional_put is False
    assert s3({"aws_disable_bulk_delete": "true"}).settings.bulk_delete is False
    assert s3({"expires_at_millis": "1700000000000"}).settings.expires_at == 1_700_000_000.0
    # recognised, nothing for lancefmt to do: no warning
    s3({"aws_s3_express": "false", "disable_tagging": "true", "bucket": "b", "http1_only": "true"})


@pytest.mark.parametrize("text,seconds", [("30s", 30), ("500ms", 0.5), ("1m 30s", 90),
                                          ("2min", 120), ("1h", 3600), ("5", 5), (2.5, 2.5),
                                          ("0", 0)])
def test_durations(text, seconds):
    assert parse_duration(text, "x") == seconds


def test_local_and_memory_stores_take_the_general_keys_only():
    r = resolve("file", {"io_parallelism": "3", "aws_region": "x"}, environ={})
    assert r.settings.io_parallelism == 3 and r.settings.coalesce_gap == 4096
    assert r.fs_kwargs == {"aws_region": "x"} and r.warnings == []  # ignored by a local store
    assert resolve("file", None, environ={}).settings.io_parallelism == 8


@pytest.mark.parametrize("uri_protocol,package", [("gs", "gcsfs"), ("az", "adlfs"),
                                                  ("abfss", "adlfs")])
def test_missing_cloud_package_is_named(uri_protocol, package, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == package else real(name, *a))
    with pytest.raises(MissingDependencyError, match=f"pip install {package}") as info:
        resolve(uri_protocol, {}, environ={})
    assert isinstance(info.value, ImportError)


@pytest.fixture
def no_package_check(monkeypatch):
    monkeypatch.setattr(o, "_require", lambda package, protocol: None)


def test_gcs_keys_map_onto_gcsfs(no_package_check):
    sa = {"type": "service_account", "client_email": "x@y"}
    r = resolve("gs", {"google_service_account_key": json.dumps(sa), "timeout": "10s",
                       "GOOGLE_BASE_URL": "http://127.0.0.1:4443"}, environ={})
    assert r.fs_kwargs == {"token": sa, "requests_timeout": 10.0,
                           "endpoint_url": "http://127.0.0.1:4443"}
    assert resolve("gs", {"service_account": "/k.json"}, environ={}).fs_kwargs["token"] == "/k.json"
    assert resolve("gs", None, environ={"GOOGLE_SERVICE_ACCOUNT": "/e.json"}).fs_kwargs == {
        "token": "/e.json"}
    assert resolve("gcs", {"skip_signature": "true"}, environ={}).fs_kwargs["token"] == "anon"
    with pytest.raises(InvalidArgumentError, match="service_account_key"):
        resolve("gs", {"service_account_key": "{not json"}, environ={})


def test_azure_keys_map_onto_adlfs(no_package_check):
    r = resolve("az", {"account_name": "acct", "AZURE_STORAGE_ACCOUNT_KEY": "k",
                       "sas_token": "sig", "azure_endpoint": "https://acct.blob.example",
                       "connect_timeout": "3s", "timeout": "1m"}, environ={})
    assert r.fs_kwargs == {"account_name": "acct", "account_key": "k", "sas_token": "sig",
                           "account_host": "acct.blob.example", "connection_timeout": 3,
                           "timeout": 60}
    r = resolve("az", {"use_emulator": "true"}, environ={"AZURE_STORAGE_ACCOUNT_NAME": "dev"})
    assert "AccountName=dev;" in r.fs_kwargs["connection_string"]
    assert "BlobEndpoint=http://127.0.0.1:10000/dev" in r.fs_kwargs["connection_string"]
    assert resolve("abfss", {"tenant_id": "t", "client_id": "c", "client_secret": "s"},
                   environ={}).fs_kwargs == {"tenant_id": "t", "client_id": "c",
                                             "client_secret": "s"}


def test_spark_storage_options_resolve_like_a_dict():
    """Spark hands ``storage.<key>`` options as strings (``true`` already a bool)."""
    from lancefmt.spark.options import storage_options

    opts = storage_options({"path": "s3://b/ds", "storage.aws_endpoint": EP,
                            "storage.allow_http": "true", "storage.AWS_REGION": "us-east-1",
                            "storage.client_max_retries": "2", "storage.timeout": "10s"})
    r = s3(opts)
    assert r.fs_kwargs["endpoint_url"] == EP
    assert r.fs_kwargs["client_kwargs"] == {"region_name": "us-east-1"}
    assert (r.settings.max_retries, r.settings.request_timeout) == (2, 10.0)
