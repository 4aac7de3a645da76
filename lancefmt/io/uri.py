"""URI handling: one place that knows how plain paths, ``file://``, ``memory://`` and ``s3://``
URIs are split, joined and checked.

A *URI* here is what users pass and what manifests store (``s3://bucket/ds``, ``/data/ds``,
``memory://ds``). Local paths are made absolute once, when they enter, so the rest of lancefmt
only sees ``file`` URIs as absolute paths.
"""
from __future__ import annotations

import os
import posixpath
import re
from typing import NamedTuple

from ..errors import InvalidPathError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


class SplitUri(NamedTuple):
    protocol: str  # "file", "memory", "s3", ...
    path: str      # path as the store sees it: absolute local path, "/x" for memory, "bucket/key" for s3


def has_scheme(uri: str) -> bool:
    return bool(_SCHEME.match(uri))


def as_uri_string(uri) -> str:
    """``uri`` as a string, taken as pylance takes it: a ``pathlib.Path``, a dataset (its
    ``uri``), or a string; a leading ``~`` of a local path is expanded."""
    if not isinstance(uri, (str, bytes, os.PathLike)) and isinstance(getattr(uri, "uri", None), str):
        uri = uri.uri
    uri = os.fspath(uri)
    if isinstance(uri, bytes):
        uri = os.fsdecode(uri)
    if uri.startswith("~"):
        uri = os.path.expanduser(uri)
    return uri


def split_uri(uri) -> SplitUri:
    """Split a URI or local path into (protocol, store path); local paths become absolute."""
    uri = as_uri_string(uri)
    m = _SCHEME.match(uri)
    if not m:
        return SplitUri("file", os.path.abspath(uri))
    protocol = m.group(1).lower()
    rest = uri[m.end():]
    if protocol == "file":
        return SplitUri("file", os.path.abspath("/" + rest.lstrip("/")))
    if protocol == "memory":
        return SplitUri("memory", "/" + rest.lstrip("/"))
    if protocol in ("s3a", "s3n"):
        protocol = "s3"
    return SplitUri(protocol, rest)


def join_uri(protocol: str, path: str) -> str:
    """Inverse of :func:`split_uri`; local paths are returned as plain absolute paths."""
    if protocol == "file":
        return path
    if protocol == "memory":
        return "memory://" + path.lstrip("/")
    return f"{protocol}://{path}"


def normalize_uri(uri) -> str:
    """A canonical spelling of ``uri``: absolute local paths, no trailing slash."""
    proto, path = split_uri(uri)
    if len(path) > 1:
        path = path.rstrip("/")
    return join_uri(proto, path)


def child(base: str, *names: str) -> str:
    """Join relative names below ``base`` (a URI). Names are trusted: check them first."""
    if base.endswith("://"):  # the root of a store (``memory://``): keep the scheme whole
        parts = [n.strip("/") for n in names if n]
        return base + "/".join(parts)
    base = base.rstrip("/") if len(base) > 1 else base
    parts = [n.strip("/") for n in names if n]
    if not parts:
        return base
    if base.endswith("/"):
        return base + "/".join(parts)
    return base + "/" + "/".join(parts)


def check_relative(name: str, what: str = "path") -> str:
    """Refuse a relative path that could leave its directory.

    Allowed: ``a``, ``a/b.lance``. Refused with :class:`InvalidPathError`: empty, absolute
    (``/x``, ``C:\\x``, ``s3://...``), backslashes, ``.``/``..`` segments, NUL bytes.
    """
    if not isinstance(name, str) or not name:
        raise InvalidPathError(f"empty {what}")
    if "\x00" in name:
        raise InvalidPathError(f"{what} {name!r} contains a NUL byte")
    # (pylance's wording leads each message: callers match on it)
    if has_scheme(name):
        raise InvalidPathError(f"Absolute URIs are not allowed: {what} {name!r} must be relative")
    if name.startswith("/") or _WINDOWS_DRIVE.match(name):
        raise InvalidPathError(f"Absolute paths are not allowed: {what} {name!r} must be "
                               "relative")
    if "\\" in name:
        raise InvalidPathError(f"{what} {name!r} contains a backslash")
    for seg in name.split("/"):
        if seg in ("", ".", ".."):
            raise InvalidPathError(f"Path traversal is not allowed: {what} {name!r} escapes its "
                                   f"directory (segment {seg!r})")
    return name


def check_base_uri(uri: str, what: str = "base path") -> str:
    """Refuse a base location with ``..`` or ``.`` segments (it would point outside itself)."""
    if not isinstance(uri, str) or not uri:
        raise InvalidPathError(f"empty {what}")
    if "\x00" in uri:
        raise InvalidPathError(f"{what} {uri!r} contains a NUL byte")
    m = _SCHEME.match(uri)
    rest = uri[m.end():] if m else uri
    segs = rest.replace("\\", "/").split("/")
    if any(seg in (".", "..") for seg in segs):
        raise InvalidPathError(f"{what} {uri!r} contains '.' or '..' segments")
    return uri


def basename(uri: str) -> str:
    return posixpath.basename(uri.rstrip("/"))
