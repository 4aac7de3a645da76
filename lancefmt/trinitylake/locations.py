"""TrinityLake storage locations (seeds/trinitylake-storage-location.md).

Where the seed and TrinityLake's Java code (``FileLocations.java``) differ, the choices here are:

* optimized names hash the UTF-8 original name with MurmurHash3 x86 32-bit, seed 0 (the ``mmh3``
  package), and keep the **low-order 20 bits** as ``bbbb/bbbb/bbbb/bbbbbbbb`` (the Java code's
  bit choice; the seed's example prefix is illustrative, no hash reproduces it);
* root-node names hold the version's binary digits least-significant first: 32 digits by default
  (the seed's ``_00100110000000000000000000000000.ipc`` for version 100), 64 with ``bits=64`` (as
  the Java code writes and parses);
* the root is a directory: it always ends in ``/``, and file locations are relative to it.

Readers never reverse an optimized name; :func:`find_latest_version` trusts storage, not the
best-effort ``_latest_hint.txt``.
"""
from __future__ import annotations

import re
import uuid as _uuid
from typing import Callable, Iterable

import mmh3
import numpy as np

from ..errors import InvalidArgumentError
from ..io.uri import check_relative, has_scheme, split_uri, join_uri
from ._naming import hash_prefix, hash_prefixes, parse_reversed_binary, reversed_binary

LATEST_HINT_FILE = "_latest_hint.txt"
LAKEHOUSE_DEF_PREFIX = "_lakehouse_def_"
LAKEHOUSE_DEF_SUFFIX = ".binpb"
NODE_PREFIX = "node-"
NODE_SUFFIX = ".ipc"
ROOT_NODE_BITS = 32
_ROOT_NODE = re.compile(r"^_([01]{32}|[01]{64})\.ipc$")
_HINT_MAX_BYTES = 32


def normalize_root(root) -> str:
    """The root as a directory URI ending in ``/`` (local paths become absolute)."""
    text = str(root)
    if not text:
        raise InvalidArgumentError("empty lakehouse root")
    if has_scheme(text):
        proto, path = split_uri(text)
        uri = join_uri(proto, path) if proto != "file" else "file://" + path
    else:
        uri = split_uri(text).path
    return uri if uri.endswith("/") else uri + "/"


def file_location(root, relative: str) -> str:
    """The full location of ``relative`` (a file path stored in the format) under ``root``.

    A relative path that is absolute, has a scheme, or leaves the root with ``.``/``..`` raises
    :class:`~lancefmt.InvalidPathError`."""
    return normalize_root(root) + check_relative(relative, "lakehouse file path")


def relative_location(root, location: str) -> str:
    """The inverse of :func:`file_location`: ``location`` relative to ``root``."""
    base = normalize_root(root)
    if not location.startswith(base):
        from ..errors import InvalidPathError

        raise InvalidPathError(f"{location!r} is not under the lakehouse root {base!r}")
    return check_relative(location[len(base):], "lakehouse file path")


def murmur3_32(name: str) -> int:
    """MurmurHash3 x86 32-bit, seed 0, of the UTF-8 name, as an unsigned int."""
    return mmh3.hash(name.encode("utf-8"), 0, signed=False)


def optimized_file_name(original: str) -> str:
    """``bbbb/bbbb/bbbb/bbbbbbbb-<original>``: the binary prefix spreads object-store prefixes."""
    if not original or "/" in original:
        raise InvalidArgumentError(f"an original file name is one path segment, not {original!r}")
    return hash_prefix(murmur3_32(original)) + "-" + original


def optimized_file_names(originals: Iterable[str]) -> list[str]:
    """:func:`optimized_file_name` for many names; the prefixes are formatted in one C pass."""
    names = list(originals)
    for n in names:
        if not n or "/" in n:
            raise InvalidArgumentError(f"an original file name is one path segment, not {n!r}")
    hashes = np.fromiter((murmur3_32(n) for n in names), dtype=np.uint32, count=len(names))
    return [p + "-" + n for p, n in zip(hash_prefixes(hashes), names)]


def node_file_name(node_uuid: _uuid.UUID | None = None) -> str:
    """The optimized name of a non-root node file, ``node-<uuid4>.ipc`` underneath."""
    u = node_uuid if node_uuid is not None else _uuid.uuid4()
    return optimized_file_name(f"{NODE_PREFIX}{u}{NODE_SUFFIX}")


def node_file_names(count: int) -> list[str]:
    """``count`` fresh non-root node names (random UUID v4s)."""
    return optimized_file_names(f"{NODE_PREFIX}{_uuid.uuid4()}{NODE_SUFFIX}" for _ in range(count))


def _check_version(version: int, bits: int) -> int:
    if bits not in (32, 64):
        raise InvalidArgumentError(f"root node names use 32 or 64 bits, not {bits}")
    limit = (1 << 32) if bits == 32 else (1 << 63)  # Java's long: no negative versions
    if not isinstance(version, (int, np.integer)) or not 0 <= int(version) < limit:
        raise InvalidArgumentError(f"root node version {version!r} is not in [0, {limit})")
    return int(version)


def root_node_file_name(version: int, bits: int = ROOT_NODE_BITS) -> str:
    """``_<version, binary, least significant digit first>.ipc`` (not optimized)."""
    return "_" + reversed_binary(_check_version(version, bits), bits) + ".ipc"


def parse_root_node_file_name(name: str) -> int | None:
    """The version of a root-node file name (32 or 64 digits), or None for any other name."""
    m = _ROOT_NODE.match(name)
    if not m:
        return None
    v = parse_reversed_binary(m.group(1))
    if v is None or (len(m.group(1)) == 64 and v >= 1 << 63):
        return None
    return v


def lakehouse_def_file_name(def_uuid: _uuid.UUID | None = None) -> str:
    """``_lakehouse_def_<uuid4>.binpb`` at the root (not optimized)."""
    u = def_uuid if def_uuid is not None else _uuid.uuid4()
    return f"{LAKEHOUSE_DEF_PREFIX}{u}{LAKEHOUSE_DEF_SUFFIX}"


def encode_latest_hint(version: int) -> bytes:
    """The hint file body: the decimal version."""
    return str(_check_version(version, 64)).encode("ascii")


def parse_latest_hint(data: bytes) -> int | None:
    """The version in a hint body, or None when it is unusable (a hint is only a hint)."""
    text = data[:_HINT_MAX_BYTES + 1].strip()
    if not text or len(text) > _HINT_MAX_BYTES or not text.isdigit():
        return None
    return int(text)


def find_latest_version(exists: Callable[[int], bool], hint: int | None) -> int | None:
    """The latest root-node version: start at the hint (0 without one) and probe forward while
    the next version exists. If the hinted version itself is missing (a bad hint), probe from 0.
    None when not even version 0 exists."""
    start = hint if hint is not None and hint >= 0 else 0
    if not exists(start):
        if start == 0 or not exists(0):
            return None
        start = 0
    v = start
    while exists(v + 1):
        v += 1
    return v


class LakehouseLocations:
    """The storage locations of one lakehouse root, and the latest-version lookup against a store."""

    def __init__(self, root, *, root_node_bits: int = ROOT_NODE_BITS, storage_options=None):
        if root_node_bits not in (32, 64):
            raise InvalidArgumentError(f"root_node_bits must be 32 or 64, not {root_node_bits}")
        self.root = normalize_root(root)
        self.root_node_bits = root_node_bits
        self.storage_options = storage_options

    def _store(self):
        from ..io import open_store

        return open_store(self.root, self.storage_options)

    def location(self, relative: str) -> str:
        return file_location(self.root, relative)

    def root_node(self, version: int) -> str:
        return self.location(root_node_file_name(version, self.root_node_bits))

    @property
    def latest_hint(self) -> str:
        return self.location(LATEST_HINT_FILE)

    def read_hint(self) -> int | None:
        try:
            return parse_latest_hint(self._store().read_range(self.latest_hint, 0, _HINT_MAX_BYTES + 1))
        except (FileNotFoundError, OSError):
            return None

    def write_hint(self, version: int) -> None:
        self._store().put(self.latest_hint, encode_latest_hint(version))

    def latest_version(self) -> int | None:
        store = self._store()
        return find_latest_version(lambda v: store.exists(self.root_node(v)), self.read_hint())


__all__ = [
    "LATEST_HINT_FILE", "LakehouseLocations", "encode_latest_hint",
    "file_location", "find_latest_version", "lakehouse_def_file_name", "murmur3_32",
    "node_file_name", "node_file_names", "normalize_root", "optimized_file_name",
    "optimized_file_names", "parse_latest_hint", "parse_root_node_file_name",
    "relative_location", "root_node_file_name",
]
