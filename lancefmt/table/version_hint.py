"""``_versions/latest_version_hint.json``: the latest-version hint pylance 14 keeps beside the
manifests.

pylance 14.0.2 writes it after each commit to a local dataset as the 13 bytes
``{"version":N}`` (compact JSON, no newline); on object stores (s3, whose listings are
lexically ordered so the newest V2 name comes first) it writes none. It is only a hint: a
stale, missing, garbled or too-new hint must never change which version is the latest, so
lancefmt reads it for information only and always resolves the latest version from the listing
(:mod:`lancefmt.table.versions`).
"""
from __future__ import annotations

import json

from ..io import open_store, split_uri
from ..io.uri import child
from .naming import VERSIONS_DIR

VERSION_HINT_NAME = "latest_version_hint.json"


def version_hint_uri(dataset_uri: str) -> str:
    return child(dataset_uri, VERSIONS_DIR, VERSION_HINT_NAME)


def encode_version_hint(version: int) -> bytes:
    """The exact bytes pylance writes: ``{"version":N}``."""
    return b'{"version":%d}' % int(version)


def decode_version_hint(data: bytes):
    """The version in a hint file, or None if it is not a well-formed hint."""
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    v = obj.get("version") if isinstance(obj, dict) else None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        return None
    return v


def read_version_hint(dataset_uri: str, *, store=None, storage_options=None):
    """The hinted latest version, or None when there is no usable hint."""
    store = store or open_store(dataset_uri, storage_options)
    try:
        data = store.read(version_hint_uri(dataset_uri))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return decode_version_hint(data)


def wants_version_hint(dataset_uri: str) -> bool:
    """Whether pylance keeps a hint for a dataset at this URI (local files only)."""
    return split_uri(dataset_uri).protocol == "file"


def write_version_hint(dataset_uri: str, version: int, *, store=None, storage_options=None) -> None:
    """Replace the hint with ``version`` (atomically on local files)."""
    store = store or open_store(dataset_uri, storage_options)
    store.put(version_hint_uri(dataset_uri), encode_version_hint(version))
