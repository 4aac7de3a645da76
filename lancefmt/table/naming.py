"""File and directory names of a Lance dataset, exactly as Lance spells them.

* data files: ``data/<24 binary chars><26 hex chars>.lance`` from a UUID v4 (the binary prefix
  spreads S3 key partitions); ``DataFile.path`` stores only the name;
* deletion files: ``_deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}``;
* transaction files: ``_transactions/{read_version}-{uuid4}.txn``;
* manifests in ``_versions/``: V1 ``{v}.manifest`` or V2 ``{u64::MAX - v:020}.manifest`` (the
  newest version sorts first in an object-store listing); detached versions (MSB set) are
  ``d{v}.manifest`` under either scheme and never count as the latest version.

The per-name work runs in ``_naming.pyx``.
"""
from __future__ import annotations

import os
import re
import uuid as _uuid

from ..errors import CorruptFileError, InvalidArgumentError
from ._naming import (
    data_file_name_from_bytes as _data_name,
    data_file_names_from_random as _data_names,
    parse_manifest_name as _parse_manifest_name,
    v2_manifest_name as _v2_name,
)

VERSIONS_DIR = "_versions"
DATA_DIR = "data"
DELETIONS_DIR = "_deletions"
INDICES_DIR = "_indices"
TRANSACTIONS_DIR = "_transactions"
REFS_DIR = "_refs"
TAGS_DIR = "_refs/tags"
BRANCHES_DIR = "_refs/branches"
TREE_DIR = "tree"

MANIFEST_SUFFIX = ".manifest"
DATA_FILE_SUFFIX = ".lance"
TRANSACTION_SUFFIX = ".txn"

U64_MAX = (1 << 64) - 1
DETACHED_VERSION_MASK = 1 << 63
SCHEMES = ("v1", "v2")

DELETION_SUFFIXES = {"arrow": "arrow", "bin": "bin", 0: "arrow", 1: "bin"}

_DATA_NAME = re.compile(r"^[01]{24}[0-9a-f]{26}\.lance$")
_DELETION_NAME = re.compile(r"^(\d+)-(\d+)-(\d+)\.(arrow|bin)$")
_TXN_NAME = re.compile(r"^(\d+)-([0-9a-fA-F-]{36})\.txn$")


def _uuid_bytes(value) -> bytes:
    if value is None:
        return _uuid.uuid4().bytes
    if isinstance(value, _uuid.UUID):
        return value.bytes
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) != 16:
            raise InvalidArgumentError(f"a UUID is 16 bytes, got {len(raw)}")
        return raw
    if isinstance(value, str):
        try:
            return _uuid.UUID(value).bytes
        except ValueError as e:
            raise InvalidArgumentError(f"not a UUID: {value!r}") from e
    raise InvalidArgumentError(f"expected uuid.UUID, 16 bytes or None, got {type(value).__name__}")


def _check_u64(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(value)  # numpy integers
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"{what} must be an integer, got {value!r}") from None
    if value < 0 or value > U64_MAX:
        raise InvalidArgumentError(f"{what} {value} is outside 0..2**64-1")
    return value


# -- data files -------------------------------------------------------------------------------

def data_file_name(uuid=None) -> str:
    """The data file name Lance derives from a UUID (random v4 when ``uuid`` is None)."""
    return _data_name(_uuid_bytes(uuid))


def data_file_names(n: int) -> list[str]:
    """``n`` fresh random data file names (one ``os.urandom`` call, one C loop)."""
    n = int(n)
    if n < 0:
        raise InvalidArgumentError("n must be >= 0")
    if n == 0:
        return []
    return _data_names(bytearray(os.urandom(16 * n)))


def is_data_file_name(name: str) -> bool:
    """Whether ``name`` looks like a name Lance (or we) generated for a data file."""
    return bool(_DATA_NAME.match(name))


# -- deletion and transaction files -----------------------------------------------------------

def deletion_file_name(fragment_id: int, read_version: int, id: int, kind) -> str:
    """``{fragment_id}-{read_version}-{id}.{arrow|bin}``; ``kind`` is ``"arrow"``/``"bin"``
    (or the DeletionFile.file_type value 0/1)."""
    suffix = DELETION_SUFFIXES.get(kind)
    if suffix is None:
        raise InvalidArgumentError(f"deletion file kind must be 'arrow' or 'bin', got {kind!r}")
    return (f"{_check_u64(fragment_id, 'fragment_id')}-{_check_u64(read_version, 'read_version')}"
            f"-{_check_u64(id, 'deletion file id')}.{suffix}")


def parse_deletion_file_name(name: str):
    """``(fragment_id, read_version, id, kind)`` for a deletion file name, else None."""
    m = _DELETION_NAME.match(name)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)


def transaction_file_name(read_version: int, uuid=None) -> str:
    """``{read_version}-{hyphenated uuid4}.txn``."""
    u = _uuid.UUID(bytes=_uuid_bytes(uuid))
    return f"{_check_u64(read_version, 'read_version')}-{u}.txn"


def parse_transaction_file_name(name: str):
    """``(read_version, uuid string)`` for a transaction file name, else None."""
    m = _TXN_NAME.match(name)
    if not m:
        return None
    return int(m.group(1)), m.group(2)


# -- manifests --------------------------------------------------------------------------------

def is_detached_version(version: int) -> bool:
    """Detached versions (written outside the version sequence) have the top bit set."""
    return bool(int(version) & DETACHED_VERSION_MASK)


def manifest_file_name(version: int, scheme: str = "v2") -> str:
    """The manifest name of ``version``: V1 ``{v}.manifest``, V2 ``{u64::MAX - v:020}.manifest``;
    a detached version is ``d{v}.manifest`` whatever the scheme (as in Lance)."""
    version = _check_u64(version, "version")
    if scheme not in SCHEMES:
        raise InvalidArgumentError(f"manifest naming scheme must be 'v1' or 'v2', got {scheme!r}")
    if version & DETACHED_VERSION_MASK:
        return f"d{version}{MANIFEST_SUFFIX}"
    if scheme == "v1":
        return f"{version}{MANIFEST_SUFFIX}"
    return _v2_name(version)


def parse_manifest_name(name: str):
    """``(version, scheme, detached)`` for a manifest name (scheme ``"v1"``/``"v2"``), or None
    for any other name in ``_versions/`` (hint file, ``.tmp_*`` files, staged
    ``*.manifest-<uuid>`` names)."""
    parsed = _parse_manifest_name(name)
    if parsed is None:
        return None
    version, scheme, detached = parsed
    return version, SCHEMES[scheme - 1], detached


def manifest_version(name: str) -> int:
    """The version a manifest file name stands for (either scheme, or a detached name)."""
    parsed = _parse_manifest_name(os.path.basename(name) if "/" in name else name)
    if parsed is None:
        raise InvalidArgumentError(f"not a manifest file name: {name!r}")
    return parsed[0]


def manifest_scheme(name: str):
    """``"v1"`` or ``"v2"`` for a manifest name (detached names imply V2), None otherwise."""
    parsed = _parse_manifest_name(name)
    return None if parsed is None else SCHEMES[parsed[1] - 1]


def listing_scheme(names, where: str | None = None):
    """The naming scheme of a ``_versions/`` listing: ``"v1"``, ``"v2"``, or None if it holds no
    attached manifest. Detached and non-manifest names are ignored. A directory that mixes V1 and
    V2 names is corrupt (Lance refuses it too; ``migrate_manifest_paths_v2`` fixes it), and the
    :class:`CorruptFileError` names ``where``."""
    seen = 0
    for name in names:
        parsed = _parse_manifest_name(name)
        if parsed is None or parsed[2]:
            continue
        seen |= parsed[1]
        if seen == 3:
            raise CorruptFileError(
                "found V1 and V2 manifest names in the same directory; migrate the directory "
                "to V2 names", where)
    return {0: None, 1: "v1", 2: "v2"}[seen]
