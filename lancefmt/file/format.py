"""The container of a Lance v2 data file: constants, the 40-byte footer, the offset tables.

Layout (identical for file versions 2.0, 2.1 and 2.2)::

    [page buffers, each starting 64-byte aligned, padded with 0x48]
    [global buffer 0: FileDescriptor]  [column metadata 0..n-1]
    [CMO table: (u64 position, u64 size) per column]
    [GBO table: (u64 position, u64 size) per global buffer]
    [footer: u64 column-meta start, u64 CMO offset, u64 GBO offset,
             u32 #global buffers, u32 #columns, u16 major, u16 minor, "LANC"]

File version 2.0 writes footer version 0.3; 2.1 and 2.2 write themselves. (0, 1)/(0, 2) are
the legacy v1 format.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ..errors import CorruptFileError, UnsupportedFeatureError

MAGIC = b"LANC"
FOOTER_SIZE = 40
ALIGNMENT = 64
PAD_BYTE = b"\x48"
_FOOTER = struct.Struct("<QQQIIHH4s")

# Any type URLs of the encoding descriptors (prost writes them without a domain).
ARRAY_ENCODING_URL = "/lance.encodings.ArrayEncoding"
COLUMN_ENCODING_URL = "/lance.encodings.ColumnEncoding"
PAGE_LAYOUT_URL = "/lance.encodings21.PageLayout"

# Supported data file versions and how their footers spell them.
V2_0 = (2, 0)
V2_1 = (2, 1)
V2_2 = (2, 2)
_FOOTER_VERSION = {V2_0: (0, 3), V2_1: (2, 1), V2_2: (2, 2)}
_VERSION_NAMES = {"2.0": V2_0, "0.3": V2_0, "2.1": V2_1, "2.2": V2_2}


DEFAULT_WRITE_VERSION = "2.2"   # pylance 14's "stable"
_LEGACY_NAMES = ("legacy", "0.1", "0.2")
LEGACY_VERSION_NAME = "0.1"   # how manifests (DataStorageFormat.version) name the legacy format
_UNWRITABLE_NAMES = ("next", "2.3")


def storage_version_name(version) -> str:
    """pylance 14's data storage version names -> the written version ("2.0" / "2.1" / "2.2"):
    None and "stable" are 2.2, "0.3" is 2.0; "legacy" (the v1 format), "next" / "2.3" and
    unknown names raise UnsupportedFeatureError before anything is written."""
    if version is None:
        return DEFAULT_WRITE_VERSION
    if isinstance(version, tuple):
        version = ".".join(str(int(x)) for x in version)
    name = str(version).strip().lower()
    if name == "stable":
        return DEFAULT_WRITE_VERSION
    if name in _LEGACY_NAMES:
        raise UnsupportedFeatureError(
            f"data storage version {version!r}: the legacy (v1) Lance file format is not "
            f"written by lancefmt; use 2.0, 2.1 or 2.2 (the default, 'stable')")
    if name in _UNWRITABLE_NAMES:
        raise UnsupportedFeatureError(
            f"data storage version {version!r} (Lance file format 2.3) is not written by "
            f"lancefmt; use 2.0, 2.1 or 2.2 (the default, 'stable')")
    if name not in _VERSION_NAMES:
        raise UnsupportedFeatureError(
            f"unknown data storage version {version!r} (known: 2.0, 2.1, 2.2, 'stable')")
    v = _VERSION_NAMES[name]
    return f"{v[0]}.{v[1]}"


def is_legacy_name(version) -> bool:
    """Whether ``version`` names the legacy (v0.1) format: "legacy", "0.1", "0.2"."""
    if isinstance(version, tuple):
        version = ".".join(str(int(x)) for x in version)
    return version is not None and str(version).strip().lower() in _LEGACY_NAMES


def write_version_name(version) -> str:
    """Like :func:`storage_version_name`, but the legacy names give "0.1" (written by
    :mod:`lancefmt.file.legacy`) instead of an error."""
    return LEGACY_VERSION_NAME if is_legacy_name(version) else storage_version_name(version)


def parse_version(version) -> tuple[int, int]:
    """``"2.2"`` / ``(2, 2)`` / ``"stable"`` -> ``(2, 2)``; unknown spellings raise
    UnsupportedFeatureError."""
    if isinstance(version, tuple):
        if version in _FOOTER_VERSION:
            return version
        raise UnsupportedFeatureError(f"Lance file version {version!r} (known: 2.0, 2.1, 2.2)")
    return _VERSION_NAMES[storage_version_name(version)]


def footer_version(version: tuple[int, int]) -> tuple[int, int]:
    """The (major, minor) a footer stores for a data file version."""
    return _FOOTER_VERSION[version]


def file_version(major: int, minor: int, path: str | None = None) -> tuple[int, int]:
    """The data file version a footer's (major, minor) denotes."""
    if (major, minor) in ((0, 3), (2, 0)):
        return V2_0
    if (major, minor) in ((2, 1), (2, 2)):
        return (major, minor)
    if major == 0 and minor < 3:
        raise UnsupportedFeatureError(
            f"legacy Lance file format 0.1 (a v1 file, footer version 0.{minor}; lancefmt "
            f"reads data file versions 2.0, 2.1 and 2.2)", path)
    raise UnsupportedFeatureError(
        f"Lance file version {major}.{minor} (lancefmt reads 2.0, 2.1 and 2.2)", path)


def align(n: int) -> int:
    """``n`` rounded up to the 64-byte alignment of page buffers."""
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


@dataclass(frozen=True)
class Footer:
    column_meta_start: int
    cmo_offset: int
    gbo_offset: int
    num_global_buffers: int
    num_columns: int
    major: int
    minor: int

    @classmethod
    def parse(cls, tail: bytes, file_size: int, path: str | None = None) -> "Footer":
        """Parse and check the footer from the last bytes of a file of ``file_size`` bytes."""
        if file_size < FOOTER_SIZE or len(tail) < FOOTER_SIZE:
            raise CorruptFileError(f"file of {file_size} bytes is too small for a Lance footer", path)
        a, b, c, ngb, ncol, major, minor, magic = _FOOTER.unpack_from(tail, len(tail) - FOOTER_SIZE)
        if magic != MAGIC:
            raise CorruptFileError("bad magic: not a Lance file (or truncated)", path)
        footer = cls(a, b, c, ngb, ncol, major, minor)
        file_version(major, minor, path)  # refuse legacy / unknown versions by name first
        footer.check(file_size, path)
        return footer

    def check(self, file_size: int, path: str | None = None) -> None:
        end = file_size - FOOTER_SIZE
        if self.gbo_offset + 16 * self.num_global_buffers != end:
            raise CorruptFileError("global buffer table does not end at the footer", path)
        if self.cmo_offset + 16 * self.num_columns != self.gbo_offset:
            raise CorruptFileError("column metadata table does not end at the global buffer table",
                                   path)
        if self.column_meta_start > self.cmo_offset:
            raise CorruptFileError("column metadata starts after its offset table", path)
        if self.num_global_buffers < 1:
            raise CorruptFileError("a Lance file needs at least one global buffer", path)

    def to_bytes(self) -> bytes:
        return _FOOTER.pack(self.column_meta_start, self.cmo_offset, self.gbo_offset,
                            self.num_global_buffers, self.num_columns, self.major, self.minor,
                            MAGIC)


def parse_offset_table(data, count: int, limit: int, what: str, path: str | None = None):
    """``count`` (position, size) u64 pairs as two numpy arrays; each range must end <= ``limit``."""
    if len(data) != 16 * count:
        raise CorruptFileError(f"{what} table has {len(data)} bytes, expected {16 * count}", path)
    table = np.frombuffer(data, dtype="<u8").reshape(count, 2) if count else np.zeros((0, 2), "<u8")
    pos, size = table[:, 0], table[:, 1]
    if count and (np.any(pos > limit) or np.any(size > limit - pos)):
        bad = int(np.argmax((pos > limit) | (size > limit - np.minimum(pos, limit))))
        raise CorruptFileError(
            f"{what} {bad} (position {int(pos[bad])}, size {int(size[bad])}) lies outside the file",
            path)
    return pos.astype(np.int64), size.astype(np.int64)


def offset_table_bytes(entries) -> bytes:
    """The bytes of a CMO/GBO table from ``(position, size)`` pairs."""
    return b"".join(struct.pack("<QQ", p, s) for p, s in entries)
