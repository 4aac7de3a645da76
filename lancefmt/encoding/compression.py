"""General-purpose buffer compression as Lance frames it (zstd, lz4), via ``pyarrow.Codec``.

Lance wraps each compressed buffer in its own small frame (checked against pylance 14.0.2
bytes and rust/lance-encoding/src/encodings/physical/block.rs):

* ``zstd``: u64 LE uncompressed length, then one zstd frame. Older writers stored a bare zstd
  frame; a buffer that starts with the zstd magic and has a clear reserved bit is read that way.
* ``lz4``: u32 LE uncompressed length, then one raw LZ4 *block* (not the LZ4 frame format):
  pyarrow's ``lz4_raw`` codec.

pyarrow allocates whatever length it is told, so a claimed length is checked first against
what the compressed bytes can decode to at most (zstd: from its block headers; lz4: 255 times
its size).

The field metadata keys that ask a writer for compression are
``lance-encoding:compression`` (``zstd`` | ``lz4``) and ``lance-encoding:compression-level``.
"""
from __future__ import annotations

import struct

import pyarrow as pa

from ..errors import CorruptFileError, UnsupportedFeatureError

COMPRESSION_META_KEY = "lance-encoding:compression"
COMPRESSION_LEVEL_META_KEY = "lance-encoding:compression-level"

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# A decompressed buffer larger than this is refused outright (a corrupt length prefix must not
# make us allocate terabytes). Lance pages are capped far below it.
MAX_DECOMPRESSED_BYTES = 1 << 34

_CODECS: dict = {}


def _codec(name: str, level: int | None = None) -> pa.Codec:
    key = (name, level)
    codec = _CODECS.get(key)
    if codec is None:
        codec = pa.Codec(name, compression_level=level) if level is not None else pa.Codec(name)
        _CODECS[key] = codec
    return codec


def supported_schemes() -> tuple[str, ...]:
    return ("zstd", "lz4")


def compress(scheme: str, data, level: int | None = None) -> bytes:
    """``data`` compressed and framed the way Lance frames it."""
    view = memoryview(data).cast("B")
    n = view.nbytes
    if scheme == "zstd":
        return struct.pack("<Q", n) + _codec("zstd", level).compress(view, asbytes=True)
    if scheme == "lz4":
        return struct.pack("<I", n) + _codec("lz4_raw").compress(view, asbytes=True)
    raise UnsupportedFeatureError(f"compression scheme {scheme!r} (supported: zstd, lz4)")


def _zstd_frame_content_size(buf: bytes) -> int | None:
    """The Frame_Content_Size of a zstd frame header (RFC 8878 §3.1.1.1), if it is recorded."""
    if len(buf) < 6:
        return None
    fhd = buf[4]
    fcs_flag = fhd >> 6
    single_segment = (fhd >> 5) & 1
    did_flag = fhd & 3
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[did_flag]
    size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if size == 0 or len(buf) < pos + size:
        return None
    value = int.from_bytes(buf[pos:pos + size], "little")
    return value + 256 if size == 2 else value


_ZSTD_BLOCK_MAX = 1 << 17  # Block_Maximum_Size: no block decodes to more (RFC 8878 §3.1.1.2.4)
_LZ4_MAX_RATIO = 255  # each byte of an LZ4 length extension adds at most 255 bytes of output


def zstd_output_bound(buf: bytes, start: int, path=None) -> int:
    """The most bytes the zstd frames in ``buf[start:]`` can decode to, from their block headers
    alone (raw and RLE blocks say their size; a compressed block is at most 128 KiB). A frame
    cut short or with a reserved block type is a CorruptFileError: zstd would refuse it too."""
    pos, end, total = start, len(buf), 0
    while pos < end:
        if end - pos < 8:
            raise CorruptFileError("zstd frame cut short in its header", path)
        magic = int.from_bytes(buf[pos:pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame: no output
            pos += 8 + int.from_bytes(buf[pos + 4:pos + 8], "little")
            continue
        if buf[pos:pos + 4] != _ZSTD_MAGIC:
            raise CorruptFileError("bytes after a zstd frame are not another frame", path)
        fhd = buf[pos + 4]
        single = (fhd >> 5) & 1
        pos += 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] \
            + (1 if single else 0, 2, 4, 8)[fhd >> 6]
        while True:
            if pos + 3 > end:
                raise CorruptFileError("zstd frame cut short before a block header", path)
            header = int.from_bytes(buf[pos:pos + 3], "little")
            kind, size = (header >> 1) & 3, header >> 3
            if kind == 3 or size > _ZSTD_BLOCK_MAX:
                raise CorruptFileError("zstd block of a reserved type or size", path)
            pos += 3 + (1 if kind == 1 else size)
            total += _ZSTD_BLOCK_MAX if kind == 2 else size
            if header & 1:
                break
        pos += 4 if fhd & 4 else 0
        if pos > end:
            raise CorruptFileError("zstd frame cut short in a block", path)
    return total


def _is_bare_zstd_frame(buf: bytes) -> bool:
    return len(buf) >= 8 and buf[:4] == _ZSTD_MAGIC and not (buf[4] & 0x10)


def decompress(scheme: str, data, path: str | None = None, max_size: int | None = None) -> pa.Buffer:
    """Undo :func:`compress` (``data`` is any buffer); CorruptFileError on any bad frame.

    ``max_size``: the most bytes the page can need (from the sizes it declares): a length
    prefix claiming more is refused before anything is allocated."""
    buf = data.to_pybytes() if isinstance(data, pa.Buffer) else bytes(data)
    try:
        if scheme == "zstd":
            if not buf:
                return pa.py_buffer(b"")
            if _is_bare_zstd_frame(buf):
                size = _zstd_frame_content_size(buf)
                if size is None:
                    raise UnsupportedFeatureError(
                        "zstd frame without a recorded content size", path)
                body = buf
            else:
                if len(buf) < 8:
                    raise CorruptFileError("zstd buffer shorter than its length prefix", path)
                size = struct.unpack_from("<Q", buf)[0]
                body = buf[8:]
            _check_size(size, path, max_size)
            if size > (bound := zstd_output_bound(body, 0, path)):
                raise CorruptFileError(
                    f"zstd buffer of {len(body)} bytes claims {size} decompressed bytes, its "
                    f"blocks hold at most {bound}", path)
            if size == 0:
                return pa.py_buffer(b"")
            out = _codec("zstd").decompress(body, decompressed_size=size)
        elif scheme == "lz4":
            if len(buf) < 4:
                raise CorruptFileError("lz4 buffer shorter than its length prefix", path)
            size = struct.unpack_from("<I", buf)[0]
            _check_size(size, path, max_size)
            if size > (bound := (len(buf) - 4) * _LZ4_MAX_RATIO):
                raise CorruptFileError(
                    f"lz4 block of {len(buf) - 4} bytes claims {size} decompressed bytes "
                    f"(at most {bound} possible)", path)
            if size == 0:
                return pa.py_buffer(b"")
            out = _codec("lz4_raw").decompress(buf[4:], decompressed_size=size)
        else:
            raise UnsupportedFeatureError(f"compression scheme {scheme!r}", path)
    except CorruptFileError:
        raise
    except (OSError, pa.ArrowException, ValueError) as e:
        raise CorruptFileError(f"{scheme} buffer does not decompress: {e}", path) from None
    if out.size != size:
        raise CorruptFileError(
            f"{scheme} buffer decompressed to {out.size} bytes, expected {size}", path)
    return out


def _check_size(size: int, path, max_size: int | None):
    if size > MAX_DECOMPRESSED_BYTES:
        raise CorruptFileError(f"implausible decompressed size {size}", path)
    if max_size is not None and size > max_size:
        raise CorruptFileError(
            f"compressed buffer claims {size} bytes, the page needs at most {max_size}", path)
