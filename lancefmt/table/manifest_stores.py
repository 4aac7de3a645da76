"""Manifest stores by name: what ``manifest_store=`` accepts (a store, ``sqlite://...`` or
``dynamodb://...``), resolved to an :class:`~.external_manifest.ExternalManifestStore`."""
from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from ..errors import InvalidArgumentError
from .dynamodb_manifest import DynamoDBManifestStore
from .external_manifest import ExternalManifestStore, SqliteManifestStore


def as_manifest_store(value) -> ExternalManifestStore | None:
    """An :class:`ExternalManifestStore` from what a user passed: None, a store, or a URI
    string ``sqlite:///abs/path.db`` (``sqlite://rel/path.db`` is relative)."""
    if value is None or value == "":
        return None
    if isinstance(value, ExternalManifestStore):
        return value
    if isinstance(value, str):
        if value.startswith("dynamodb://"):
            return _dynamodb_from_uri(value)
        if value.startswith("sqlite://"):
            path = value[len("sqlite://"):]
            if not path or path == "/":
                raise InvalidArgumentError(f"no file path in manifest store URI {value!r}")
            return SqliteManifestStore(path)
        raise InvalidArgumentError(
            f"unknown manifest store {value!r}: give an ExternalManifestStore, 'sqlite:///path' "
            "or 'dynamodb://table?endpoint_url=...&region_name=...'")
    raise InvalidArgumentError(f"manifest_store must be an ExternalManifestStore or a URI, "
                               f"got {type(value).__name__}")


def _dynamodb_from_uri(value: str):
    """``dynamodb://TABLE?endpoint_url=...&region_name=...`` (query keys go to boto3)."""
    parts = urlsplit(value)
    if not parts.netloc:
        raise InvalidArgumentError(f"no table name in manifest store URI {value!r}")
    allowed = {"endpoint_url", "region_name", "aws_access_key_id", "aws_secret_access_key",
               "aws_session_token"}
    kwargs = dict(parse_qsl(parts.query))
    unknown = set(kwargs) - allowed
    if unknown:
        raise InvalidArgumentError(f"unknown DynamoDB option(s) {sorted(unknown)} in {value!r}")
    return DynamoDBManifestStore(parts.netloc, **kwargs)
