"""``storage_options`` as pylance names them, turned into arguments for the client behind a store.

pylance (Rust ``object_store`` under ``lance-io``) takes string options with case-insensitive
keys and several aliases per setting (``aws_endpoint``, ``endpoint``, ``AWS_ENDPOINT_URL``...),
fills in what is missing from ``AWS_*`` (``GOOGLE_*``, ``AZURE_*``) environment variables, and
ignores keys it does not know. lancefmt's remote stores sit on fsspec (s3fs, gcsfs, adlfs), whose
arguments are other names (``key``, ``secret``, ``endpoint_url``, ``client_kwargs``...).
:func:`resolve` maps one onto the other, so a dict written for pylance works unchanged:

* pylance's keys, any case, any alias; a value that does not parse (``allow_http="maybe"``, a
  negative timeout) is an :class:`~lancefmt.errors.InvalidArgumentError` naming the key;
* fsspec's own keyword arguments (exact, case-sensitive names) pass through and win over what
  pylance's keys derived, so dicts written for lancefmt before keep working;
* a key neither knows is dropped with a :class:`~lancefmt.errors.LanceWarning` naming it
  (pylance drops it silently; a dict shared with pylance code must not fail), and so is a key
  pylance knows that this store cannot honour (the warning says so);
* explicit options win over environment variables (``AWS_ALLOW_HTTP`` included, which Lance lets
  override the option).

Besides the client's arguments the result carries what the store itself enforces
(:class:`StoreSettings`): retries (``client_max_retries``, ``client_retry_timeout``,
``download_retry_count``), the per-request ``timeout``, ``io_parallelism`` and range coalescing,
credential expiry (``expires_at_millis``), server-side encryption arguments, conditional puts.
Defaults are Lance's (``lance-io`` ``object_store.rs``, ``object_store``'s ``RetryConfig`` and
``ClientOptions``).
"""
from __future__ import annotations

import json
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Mapping

from ..errors import InvalidArgumentError, LanceWarning, MissingDependencyError

# Lance's defaults: lance-io object_store.rs and object_store's RetryConfig / ClientOptions.
DEFAULT_CLIENT_MAX_RETRIES = 10
DEFAULT_CLIENT_RETRY_TIMEOUT = 180.0       # seconds from the first attempt
DEFAULT_DOWNLOAD_RETRY_COUNT = 3           # body cut short after a successful response
# A ranged body cut short is resumed from the bytes received, this many times per download
# (then the range starts over, download_retry_count times). pylance 14.0.2 measured behind the
# fault proxy: 3 resumes by default, client_max_retries resumes when that option is given.
DEFAULT_BODY_RESUMES = 3
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_REQUEST_TIMEOUT = 30.0             # one attempt, request to last body byte
DEFAULT_CLOUD_IO_PARALLELISM = 64          # requests in flight per store (LANCE_IO_THREADS)
DEFAULT_LOCAL_IO_PARALLELISM = 8
DEFAULT_PROCESS_IO_LIMIT = 128             # LANCE_PROCESS_IO_THREADS_LIMIT
DEFAULT_CLOUD_BLOCK_SIZE = 64 * 1024       # ranges closer than this are fetched as one
DEFAULT_LOCAL_BLOCK_SIZE = 4 * 1024
DEFAULT_MAX_IOP_SIZE = 16 * 1024 * 1024    # ... and one request is never larger (LANCE_MAX_IOP_SIZE)

S3_PROTOCOLS = ("s3", "s3a")
GCS_PROTOCOLS = ("gs", "gcs")
AZURE_PROTOCOLS = ("az", "abfs", "abfss", "azure", "adl")


def _table(*groups) -> dict:
    out = {}
    for canonical, *aliases in groups:
        for a in (canonical, *aliases):
            out[a] = canonical
    return out


# Keys every store understands (lance-io StorageOptions; io_parallelism is lancefmt's own knob,
# LANCE_IO_THREADS its environment variable as in Lance).
_GENERAL = _table(
    ("client_max_retries",), ("client_retry_timeout",), ("download_retry_count",),
    ("expires_at_millis",), ("io_parallelism",),
)
# object_store's ClientConfigKey (HTTP client), optionally with the store's prefix (aws_...).
_CLIENT = _table(
    ("allow_http",), ("allow_invalid_certificates",), ("disable_system_certificates",),
    ("connect_timeout",), ("default_content_type",), ("http1_only",), ("http2_only",),
    ("http2_keep_alive_interval",), ("http2_keep_alive_timeout",),
    ("http2_keep_alive_while_idle",), ("http2_max_frame_size",), ("pool_idle_timeout",),
    ("pool_max_idle_per_host",), ("proxy_url",), ("proxy_ca_certificate",), ("proxy_excludes",),
    ("randomize_addresses",), ("read_timeout",), ("timeout", "request_timeout"), ("user_agent",),
)
# object_store's AmazonS3ConfigKey::from_str.
_S3 = _table(
    ("access_key_id", "aws_access_key_id"),
    ("secret_access_key", "aws_secret_access_key"),
    ("session_token", "aws_session_token", "aws_token", "token"),
    ("region", "aws_region"),
    ("default_region", "aws_default_region"),
    ("endpoint", "aws_endpoint", "aws_endpoint_url", "endpoint_url"),
    ("endpoint_s3", "aws_endpoint_url_s3"),
    ("virtual_hosted_style_request", "aws_virtual_hosted_style_request"),
    ("s3_express", "aws_s3_express"),
    ("server_side_encryption", "aws_server_side_encryption"),
    ("sse_kms_key_id", "aws_sse_kms_key_id"),
    ("sse_bucket_key_enabled", "aws_sse_bucket_key_enabled"),
    ("sse_customer_key_base64", "aws_sse_customer_key_base64"),
    ("skip_signature", "aws_skip_signature"),
    ("request_payer", "aws_request_payer"),
    ("checksum_algorithm", "aws_checksum_algorithm"),
    ("unsigned_payload", "aws_unsigned_payload"),
    ("conditional_put", "aws_conditional_put"),
    ("copy_if_not_exists", "aws_copy_if_not_exists"),
    ("disable_tagging", "aws_disable_tagging"),
    ("disable_bulk_delete", "aws_disable_bulk_delete"),
    ("bucket", "aws_bucket", "aws_bucket_name", "bucket_name"),
    ("imdsv1_fallback", "aws_imdsv1_fallback"),
    ("metadata_endpoint", "aws_metadata_endpoint"),
    ("container_credentials_relative_uri", "aws_container_credentials_relative_uri"),
    ("container_credentials_full_uri", "aws_container_credentials_full_uri"),
    ("container_authorization_token_file", "aws_container_authorization_token_file"),
    ("web_identity_token_file", "aws_web_identity_token_file"),
    ("role_arn", "aws_role_arn"),
    ("role_session_name", "aws_role_session_name"),
    ("endpoint_url_sts", "aws_endpoint_url_sts"),
)
# object_store's GoogleConfigKey::from_str.
_GCS = _table(
    ("service_account", "google_service_account", "google_service_account_path",
     "service_account_path"),
    ("service_account_key", "google_service_account_key"),
    ("bucket", "google_bucket", "google_bucket_name", "bucket_name"),
    ("base_url", "google_base_url"),
    ("application_credentials", "google_application_credentials"),
    ("bearer_token", "google_bearer_token"),
    ("skip_signature", "google_skip_signature"),
)
# object_store's AzureConfigKey::from_str.
_AZURE = _table(
    ("account_key", "azure_storage_account_key", "azure_storage_access_key",
     "azure_storage_master_key", "master_key", "access_key"),
    ("account_name", "azure_storage_account_name"),
    ("client_id", "azure_storage_client_id", "azure_client_id"),
    ("client_secret", "azure_storage_client_secret", "azure_client_secret"),
    ("tenant_id", "azure_storage_tenant_id", "azure_storage_authority_id", "azure_tenant_id",
     "azure_authority_id", "authority_id"),
    ("authority_host", "azure_storage_authority_host", "azure_authority_host"),
    ("sas_key", "azure_storage_sas_key", "azure_storage_sas_token", "sas_token"),
    ("bearer_token", "azure_storage_token", "token"),
    ("use_emulator", "azure_storage_use_emulator"),
    ("endpoint", "azure_storage_endpoint", "azure_endpoint"),
    ("msi_endpoint", "azure_msi_endpoint", "azure_identity_endpoint", "identity_endpoint"),
    ("object_id", "azure_object_id"),
    ("msi_resource_id", "azure_msi_resource_id"),
    ("federated_token_file", "azure_federated_token_file"),
    ("use_fabric_endpoint", "azure_use_fabric_endpoint"),
    ("use_azure_cli", "azure_use_azure_cli"),
    ("skip_signature", "azure_skip_signature"),
    ("container_name", "azure_container_name"),
    ("disable_tagging", "azure_disable_tagging"),
    ("credential_type", "azure_credential_type"),
    ("encryption_key", "azure_storage_encryption_key"),
)

# fsspec's own keyword arguments, per file system (exact names). ``token`` and ``endpoint_url``
# are pylance aliases for S3 too, with the same meaning; they are read as pylance's there.
_FSSPEC_COMMON = {"use_listings_cache", "listings_expiry_time", "max_paths", "skip_instance_cache",
                  "asynchronous", "loop"}
_FSSPEC_KEYS = {
    "s3": _FSSPEC_COMMON | {
        "anon", "key", "secret", "use_ssl", "client_kwargs", "requester_pays",
        "default_block_size", "default_fill_cache", "default_cache_type", "version_aware",
        "config_kwargs", "s3_additional_kwargs", "session", "username", "password",
        "cache_regions", "max_concurrency", "fixed_upload_size", "local_expiry_check", "profile"},
    "gcs": _FSSPEC_COMMON | {
        "project", "access", "token", "block_size", "consistency", "cache_timeout",
        "secure_serialize", "check_connection", "requests_timeout", "requester_pays",
        "session_kwargs", "endpoint_url", "default_location", "version_aware"},
    "azure": _FSSPEC_COMMON | {
        "connection_string", "credential", "request_session", "socket_timeout", "blocksize",
        "anon", "location_mode", "default_fill_cache", "default_cache_type", "version_aware",
        "assume_container_exists", "max_concurrency", "connection_timeout", "account_host"},
}

_TRUE = ("1", "true", "on", "yes", "y")    # object_store's bool parsing
_FALSE = ("0", "false", "off", "no", "n")
_SSE_TYPES = ("AES256", "aws:kms", "aws:kms:dsse")
_CHECKSUMS = ("CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256")
_AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
                "KBHBeksoGMGw==")  # the emulator's published development key


@dataclass(frozen=True)
class StoreSettings:
    """What the store enforces itself, beyond the client's arguments."""

    max_retries: int = DEFAULT_CLIENT_MAX_RETRIES
    retry_timeout: float = DEFAULT_CLIENT_RETRY_TIMEOUT
    download_retries: int = DEFAULT_DOWNLOAD_RETRY_COUNT
    body_resumes: int = DEFAULT_BODY_RESUMES
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    io_parallelism: int = DEFAULT_CLOUD_IO_PARALLELISM
    coalesce_gap: int = DEFAULT_CLOUD_BLOCK_SIZE
    max_iop_size: int = DEFAULT_MAX_IOP_SIZE
    expires_at: float | None = None          # seconds since the epoch (expires_at_millis)
    conditional_put: bool = True             # False: conditional_put=disabled
    bulk_delete: bool = True
    read_kwargs: tuple = ()                  # (name, value) added to GET/HEAD (SSE-C, payer)
    write_kwargs: tuple = ()                 # ... to PUT/multipart/copy (SSE, checksums)


@dataclass
class Resolved:
    """:func:`resolve`'s answer: the fsspec file system's arguments, the store's settings and
    the warnings already issued (for tests and logs)."""

    fs_kwargs: dict
    settings: StoreSettings
    warnings: list = field(default_factory=list)


def family(protocol: str) -> str:
    if protocol in S3_PROTOCOLS:
        return "s3"
    if protocol in GCS_PROTOCOLS:
        return "gcs"
    if protocol in AZURE_PROTOCOLS:
        return "azure"
    return protocol


def env_fingerprint(protocol: str, environ: Mapping[str, str] | None = None) -> tuple:
    """The environment variables :func:`resolve` may read for ``protocol``: part of a store's
    cache key, so a changed environment gets a new store."""
    env = os.environ if environ is None else environ
    kind = family(protocol)
    if kind not in ("s3", "gcs", "azure"):  # local stores read three names: no scan (hot path)
        return tuple(env.get(k) for k in _LOCAL_ENV)
    prefixes = {"s3": ("AWS_",), "gcs": ("GOOGLE_",), "azure": ("AZURE_",)}[kind]
    prefixes = prefixes + ("OBJECT_STORE_",) + _LOCAL_ENV
    return tuple(sorted((k, v) for k, v in env.items() if k.startswith(prefixes)))


_LOCAL_ENV = ("LANCE_IO_THREADS", "LANCE_MAX_IOP_SIZE", "LANCE_PROCESS_IO_THREADS_LIMIT")


class _Options:
    """The user's options and the environment's, by canonical name; remembers which were used."""

    def __init__(self, kind: str, raw: Mapping, environ: Mapping[str, str], fsspec_keys: set):
        self.kind = kind
        self.values: dict[str, tuple[str, object]] = {}   # canonical -> (where it came from, value)
        self.fsspec: dict = {}
        self.unknown: list[str] = []
        self.used: set[str] = set()
        table = {"s3": _S3, "gcs": _GCS, "azure": _AZURE}.get(kind, {})
        prefix = {"s3": "aws_", "gcs": "google_", "azure": "azure_"}.get(kind)
        for key, value in raw.items():
            if not isinstance(key, str):
                raise InvalidArgumentError(f"storage option names must be strings, not {key!r}")
            if key in fsspec_keys and key.lower() not in table:
                self.fsspec[key] = value
                continue
            canon = _lookup(key.lower(), table, prefix)
            if canon is None:
                self.unknown.append(key)
                continue
            self._set(canon, f"storage option {key!r}", value)
        for name, value in environ.items():
            canon = None
            if prefix and name.startswith(prefix.upper()):
                canon = _lookup(name.lower(), table, prefix)
            elif name in ("OBJECT_STORE_CLIENT_MAX_RETRIES", "OBJECT_STORE_CLIENT_RETRY_TIMEOUT"):
                canon = name[len("OBJECT_STORE_"):].lower()
            elif name == "LANCE_IO_THREADS":
                canon = "io_parallelism"
            if canon is not None and canon not in self.values:
                self.values[canon] = (f"environment variable {name}", value)

    def _set(self, canon, where, value):
        if canon in self.values and self.values[canon][1] != value:
            raise InvalidArgumentError(
                f"{self.values[canon][0]} and {where} set the same option to different values")
        self.values[canon] = (where, value)

    def get(self, canon):
        """The raw value (or None) and where it came from."""
        self.used.add(canon)
        where, value = self.values.get(canon, (None, None))
        return value, where

    def from_user(self, canon) -> bool:
        return canon in self.values and self.values[canon][0].startswith("storage option")


def _lookup(key: str, table: dict, prefix: str | None):
    if key in _GENERAL:
        return _GENERAL[key]
    if key in table:
        return table[key]
    if key in _CLIENT:
        return _CLIENT[key]
    if prefix and key.startswith(prefix) and key[len(prefix):] in _CLIENT:
        return _CLIENT[key[len(prefix):]]
    return None


# -- value parsing: every failure names the key --------------------------------------------------
def parse_bool(value, where) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidArgumentError(f"{where}: expected true or false, got {value!r}")


_DURATION_UNITS = {
    "ns": 1e-9, "nsec": 1e-9, "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "millis": 1e-3,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
}
_DURATION_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*")


def parse_duration(value, where) -> float:
    """Seconds from ``"30s"``, ``"1m 30s"``, ``"500ms"`` (object_store's humantime syntax) or a
    plain number of seconds."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{where}: expected a duration such as '30s', got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = str(value).strip().lower()
        try:
            seconds = float(text)
        except ValueError:
            seconds, pos, parts = 0.0, 0, 0
            for m in _DURATION_PART.finditer(text):
                if m.start() != pos or m.group(2) not in _DURATION_UNITS:
                    break
                seconds += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
                pos, parts = m.end(), parts + 1
            if parts == 0 or pos != len(text):
                raise InvalidArgumentError(
                    f"{where}: expected a duration such as '30s' or '500ms', got {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise InvalidArgumentError(f"{where}: a duration must be zero or positive, got {value!r}")
    return seconds


def parse_count(value, where, minimum=0) -> int:
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{where}: expected a whole number, got {value!r}")
    try:
        n = int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise InvalidArgumentError(f"{where}: expected a whole number, got {value!r}") from None
    if n < minimum:
        raise InvalidArgumentError(f"{where}: must be at least {minimum}, got {value!r}")
    return n


def _warn(messages: list, text: str) -> None:
    messages.append(text)
    warnings.warn(text, LanceWarning, stacklevel=4)


# -- the mapping --------------------------------------------------------------------------------
def resolve(protocol: str, storage_options: Mapping | None,
            environ: Mapping[str, str] | None = None) -> Resolved:
    """Map ``storage_options`` (pylance's or fsspec's names) and the environment onto the
    arguments of ``protocol``'s fsspec file system and the store's own settings."""
    env = dict(os.environ if environ is None else environ)
    raw = dict(storage_options or {})
    kind = family(protocol)
    if kind not in ("s3", "gcs", "azure"):
        return _resolve_plain(kind, raw, env)
    opts = _Options(kind, raw, env, _FSSPEC_KEYS[kind])
    messages: list = []
    settings = _general_settings(opts, env)
    if kind == "s3":
        fs_kwargs, settings = _resolve_s3(opts, settings, messages)
    elif kind == "gcs":
        _require("gcsfs", protocol)
        fs_kwargs = _resolve_gcs(opts, messages)
    else:
        _require("adlfs", protocol)
        fs_kwargs = _resolve_azure(opts, messages)
    for key, value in opts.fsspec.items():  # fsspec's own arguments win, dicts merged key by key
        if isinstance(value, dict) and isinstance(fs_kwargs.get(key), dict):
            fs_kwargs[key] = {**fs_kwargs[key], **value}
        else:
            fs_kwargs[key] = value
    for key in opts.unknown:
        _warn(messages, f"storage option {key!r} is not a {protocol}:// option lancefmt knows; "
                        "it is ignored (as pylance ignores keys it does not know)")
    for canon, (where, _) in opts.values.items():
        if canon not in opts.used and where.startswith("storage option"):
            _warn(messages, f"{where} is not honoured by lancefmt's {protocol}:// store; "
                            "it is ignored")
    return Resolved(fs_kwargs, settings, messages)


def _resolve_plain(kind: str, raw: dict, env: Mapping[str, str]) -> Resolved:
    """Local, memory and other fsspec stores: Lance's general keys are read (and removed), the
    rest goes to the file system unchanged."""
    opts = _Options(kind, {k: v for k, v in raw.items()
                           if isinstance(k, str) and k.lower() in _GENERAL}, env, set())
    settings = _general_settings(opts, env, local=(kind == "file"))
    rest = {k: v for k, v in raw.items() if not (isinstance(k, str) and k.lower() in _GENERAL)}
    return Resolved(rest, settings, [])


def _general_settings(opts: _Options, env, local=False) -> StoreSettings:
    s = {}
    v, where = opts.get("client_max_retries")
    if v is not None:
        s["max_retries"] = s["body_resumes"] = parse_count(v, where)
    v, where = opts.get("client_retry_timeout")
    if v is not None:
        s["retry_timeout"] = parse_duration(v, where)
    v, where = opts.get("download_retry_count")
    if v is not None:
        s["download_retries"] = parse_count(v, where)
    v, where = opts.get("io_parallelism")
    s["io_parallelism"] = (parse_count(v, where, 1) if v is not None else
                           DEFAULT_LOCAL_IO_PARALLELISM if local else DEFAULT_CLOUD_IO_PARALLELISM)
    if local:
        s["coalesce_gap"] = DEFAULT_LOCAL_BLOCK_SIZE
    if env.get("LANCE_MAX_IOP_SIZE"):
        s["max_iop_size"] = parse_count(env["LANCE_MAX_IOP_SIZE"],
                                        "environment variable LANCE_MAX_IOP_SIZE", 1)
    v, where = opts.get("expires_at_millis")
    if v is not None:
        s["expires_at"] = parse_count(v, where) / 1000.0
    v, where = opts.get("timeout")
    if v is not None:
        t = parse_duration(v, where)
        s["request_timeout"] = t if t > 0 else None
    v, where = opts.get("connect_timeout")
    if v is not None:
        s["connect_timeout"] = parse_duration(v, where)
    return StoreSettings(**s)


def _require(package: str, protocol: str) -> None:
    import importlib.util

    if importlib.util.find_spec(package) is None:
        raise MissingDependencyError(
            f"{protocol}:// storage needs the {package!r} package, which is not installed: "
            f"pip install {package}")


def _resolve_s3(opts: _Options, settings: StoreSettings, messages: list):
    fs: dict = {}
    client_kwargs: dict = {}
    config: dict = {"connect_timeout": settings.connect_timeout,
                    # concurrency is bounded by io_parallelism; botocore's pool must not queue
                    "max_pool_connections": max(10, settings.io_parallelism),
                    # one retry layer, the store's (botocore's would multiply the attempts)
                    "retries": {"mode": "standard", "total_max_attempts": 1}}
    if settings.request_timeout:
        config["read_timeout"] = settings.request_timeout
    s3_config: dict = {}
    read_kw: dict = {}
    write_kw: dict = {}
    extra: dict = {}

    for canon, arg in (("access_key_id", "key"), ("secret_access_key", "secret"),
                       ("session_token", "token")):
        v, _ = opts.get(canon)
        if v is not None:
            fs[arg] = str(v)
    region, _ = opts.get("region")
    default_region, _ = opts.get("default_region")
    if region or default_region:
        client_kwargs["region_name"] = str(region or default_region)
    endpoint, ep_where = opts.get("endpoint")
    endpoint_s3, ep3_where = opts.get("endpoint_s3")
    if endpoint is None and endpoint_s3 is not None:
        endpoint, ep_where = endpoint_s3, ep3_where
    allow_http, ah_where = opts.get("allow_http")
    if allow_http is not None:
        allow_http = parse_bool(allow_http, ah_where)
    if endpoint is not None:
        endpoint = str(endpoint).rstrip("/")
        if not re.match(r"^https?://", endpoint):
            raise InvalidArgumentError(f"{ep_where}: expected an http(s):// URL, got {endpoint!r}")
        if endpoint.startswith("http://") and allow_http is False:
            raise InvalidArgumentError(
                f"{ah_where} is false but {ep_where} is a plain-HTTP URL ({endpoint}); "
                "set allow_http to true to use it")
        fs["endpoint_url"] = endpoint
    v, where = opts.get("virtual_hosted_style_request")
    if v is not None:
        s3_config["addressing_style"] = "virtual" if parse_bool(v, where) else "path"
    v, where = opts.get("unsigned_payload")
    if v is not None:
        s3_config["payload_signing_enabled"] = not parse_bool(v, where)
    v, where = opts.get("allow_invalid_certificates")
    if v is not None and parse_bool(v, where):
        client_kwargs["verify"] = False
    v, where = opts.get("read_timeout")
    if v is not None:
        config["read_timeout"] = parse_duration(v, where)
    v, where = opts.get("proxy_url")
    if v is not None:
        if not re.match(r"^https?://", str(v)):
            raise InvalidArgumentError(f"{where}: expected an http(s):// URL, got {v!r}")
        config["proxies"] = {"http": str(v), "https": str(v)}
    v, where = opts.get("user_agent")
    if v is not None:
        config["user_agent_extra"] = str(v)
    v, where = opts.get("pool_idle_timeout")
    if v is not None:
        config["connector_args"] = {"keepalive_timeout": parse_duration(v, where)}
    v, where = opts.get("default_content_type")
    if v is not None:
        write_kw["ContentType"] = str(v)
    for quiet in ("s3_express", "copy_if_not_exists", "disable_tagging", "bucket",
                  "imdsv1_fallback", "http1_only", "randomize_addresses",
                  "pool_max_idle_per_host"):
        # recognised, nothing to do: botocore does it by itself, or it configures something
        # lancefmt never does (tagging, copy-if-not-exists, HTTP/2)
        opts.get(quiet)

    # server-side encryption (object_store S3EncryptionConfigKey)
    sse, sse_where = opts.get("server_side_encryption")
    kms, kms_where = opts.get("sse_kms_key_id")
    if sse is not None:
        if str(sse) not in _SSE_TYPES:
            raise InvalidArgumentError(f"{sse_where}: expected one of {', '.join(_SSE_TYPES)}, "
                                       f"got {sse!r}")
        write_kw["ServerSideEncryption"] = str(sse)
    if kms is not None:
        if str(sse) not in ("aws:kms", "aws:kms:dsse"):
            raise InvalidArgumentError(
                f"{kms_where} needs server_side_encryption 'aws:kms' or 'aws:kms:dsse', not {sse!r}")
        write_kw["SSEKMSKeyId"] = str(kms)
    v, where = opts.get("sse_bucket_key_enabled")
    if v is not None:
        write_kw["BucketKeyEnabled"] = parse_bool(v, where)
    v, where = opts.get("sse_customer_key_base64")
    if v is not None:
        import base64
        import binascii

        try:
            key = base64.b64decode(str(v), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidArgumentError(f"{where}: not valid base64") from None
        if len(key) != 32:
            raise InvalidArgumentError(f"{where}: an SSE-C key is 32 bytes, got {len(key)}")
        for kw in (read_kw, write_kw):
            kw["SSECustomerAlgorithm"] = "AES256"
            kw["SSECustomerKey"] = key
    v, where = opts.get("checksum_algorithm")
    if v is not None:
        if str(v).upper() not in _CHECKSUMS:
            raise InvalidArgumentError(f"{where}: expected one of {', '.join(_CHECKSUMS)}, "
                                       f"got {v!r}")
        write_kw["ChecksumAlgorithm"] = str(v).upper()
    v, where = opts.get("skip_signature")
    if v is not None and parse_bool(v, where):
        fs["anon"] = True
    v, where = opts.get("request_payer")
    if v is not None and parse_bool(v, where):
        fs["requester_pays"] = True
        read_kw["RequestPayer"] = write_kw["RequestPayer"] = "requester"
    v, where = opts.get("conditional_put")
    if v is not None:
        text = str(v).strip().lower()
        if text not in ("etag", "disabled"):
            raise InvalidArgumentError(f"{where}: expected 'etag' or 'disabled', got {v!r}")
        extra["conditional_put"] = text == "etag"
    v, where = opts.get("disable_bulk_delete")
    if v is not None:
        extra["bulk_delete"] = not parse_bool(v, where)

    if s3_config:
        config["s3"] = s3_config
    # As Lance's object_store: no checksum computed over what is sent, none checked over what
    # comes back, unless asked for (``checksum_algorithm``) or the operation needs one. botocore
    # would otherwise CRC every PUT body and every GET body (a fifth of a GET's client CPU).
    express, ex_where = opts.get("s3_express")
    if not (express is not None and parse_bool(express, ex_where)):
        # botocore signs requests with SigV4 either way, but presigns with SigV2 unless told
        config.setdefault("signature_version", "s3v4")
    config.setdefault("request_checksum_calculation", "when_required")
    config.setdefault("response_checksum_validation", "when_required")
    fs["client_kwargs"] = client_kwargs
    fs["config_kwargs"] = config
    settings = StoreSettings(**{**settings.__dict__, **extra,
                                "read_kwargs": tuple(sorted(read_kw.items())),
                                "write_kwargs": tuple(sorted(write_kw.items()))})
    return fs, settings


def _resolve_gcs(opts: _Options, messages: list) -> dict:
    fs: dict = {}
    path, _ = opts.get("service_account")
    key, key_where = opts.get("service_account_key")
    creds, _ = opts.get("application_credentials")
    if key is not None:
        try:
            fs["token"] = json.loads(key) if isinstance(key, str) else dict(key)
        except (ValueError, TypeError):
            raise InvalidArgumentError(f"{key_where}: expected a service account key as JSON") from None
    elif path is not None:
        fs["token"] = str(path)
    elif creds is not None:
        fs["token"] = str(creds)
    bearer, _ = opts.get("bearer_token")
    if bearer is not None and "token" not in fs:
        from google.oauth2.credentials import Credentials  # a gcsfs dependency

        fs["token"] = Credentials(str(bearer))
    v, where = opts.get("skip_signature")
    if v is not None and parse_bool(v, where):
        fs["token"] = "anon"
    v, _ = opts.get("base_url")
    if v is not None:
        fs["endpoint_url"] = str(v)
    v, where = opts.get("timeout")
    if v is not None:
        fs["requests_timeout"] = parse_duration(v, where)
    v, where = opts.get("allow_http")
    if v is not None:
        parse_bool(v, where)
    opts.get("bucket")
    return fs


def _resolve_azure(opts: _Options, messages: list) -> dict:
    fs: dict = {}
    for canon, arg in (("account_name", "account_name"), ("account_key", "account_key"),
                       ("client_id", "client_id"), ("client_secret", "client_secret"),
                       ("tenant_id", "tenant_id"), ("sas_key", "sas_token")):
        v, _ = opts.get(canon)
        if v is not None:
            fs[arg] = str(v)
    v, where = opts.get("use_emulator")
    if v is not None and parse_bool(v, where):
        url = os.environ.get("AZURITE_BLOB_STORAGE_URL", "http://127.0.0.1:10000").rstrip("/")
        name = fs.get("account_name", "devstoreaccount1")
        fs["connection_string"] = (f"DefaultEndpointsProtocol=http;AccountName={name};"
                                   f"AccountKey={fs.get('account_key', _AZURITE_KEY)};"
                                   f"BlobEndpoint={url}/{name};")
    v, _ = opts.get("endpoint")
    if v is not None:
        fs["account_host"] = re.sub(r"^https?://", "", str(v)).rstrip("/")
    v, where = opts.get("skip_signature")
    if v is not None and parse_bool(v, where):
        fs["anon"] = True
    v, where = opts.get("use_azure_cli")
    if v is not None and parse_bool(v, where):
        fs["anon"] = False  # adlfs then uses DefaultAzureCredential, which asks the Azure CLI
    for canon, arg in (("connect_timeout", "connection_timeout"), ("timeout", "timeout"),
                       ("read_timeout", "read_timeout")):
        v, where = opts.get(canon)
        if v is not None:
            fs[arg] = int(math.ceil(parse_duration(v, where)))
    v, where = opts.get("allow_http")
    if v is not None:
        parse_bool(v, where)
    opts.get("container_name")
    opts.get("disable_tagging")
    return fs
