"""A tiny test-local reader of the latest pylance manifest (until lancefmt.table.manifest lands).

The manifest file ends with a 16-byte footer ``[i64 LE position][i16 0][i16 2]["LANC"]``; the
``Manifest`` protobuf sits at ``position + 4`` after a u32 LE length. V2 file names are
``u64::MAX - version`` zero-padded to 20 digits; V1 names are the plain version.
"""
import os
import struct

from lancefmt._proto import table_pb2

_U64_MAX = (1 << 64) - 1


def _version_of(name):
    stem = name.split(".", 1)[0]
    if len(name) == 29:
        return _U64_MAX - int(stem)
    return int(stem)


def manifest_path(uri, version=None):
    names = [n for n in os.listdir(os.path.join(uri, "_versions")) if n.endswith(".manifest")]
    by_version = {_version_of(n): n for n in names}
    v = max(by_version) if version is None else version
    return os.path.join(uri, "_versions", by_version[v])


def read_manifest(uri, version=None) -> table_pb2.Manifest:
    with open(manifest_path(uri, version), "rb") as f:
        data = f.read()
    assert data[-4:] == b"LANC"
    pos, = struct.unpack_from("<q", data, len(data) - 16)
    n, = struct.unpack_from("<I", data, pos)
    m = table_pb2.Manifest()
    m.ParseFromString(data[pos + 4:pos + 4 + n])
    return m
