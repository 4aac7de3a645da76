"""Compressive encodings of Lance 2.1/2.2 (``lance.encodings21.CompressiveEncoding``).

A page's structural layout (mini-block, full-zip, constant, blob) hands this module the bytes of
one chunk, one block or one full-zip page together with a ``CompressiveEncoding`` tree; the
functions here dispatch over the tree and return a :mod:`values` block. Three contexts exist
(lance_v21_encodings.md §8.1):

* **mini-block** (:func:`decode_miniblock`): one chunk's value buffers and its value count;
* **block** (:func:`decode_block`, :func:`decode_levels`): one opaque buffer and a count, used
  for rep/def levels and dictionary items;
* **per-value** (:class:`FullZipValues`): full-zip values already sliced by the structural
  layer, transformed value by value (FSST, per-value zstd, FSL validity, packed rows).

Read: Flat (bitmaps, 8..n-bit, wide), Variable (mini-block and block forms, 32/64-bit offsets),
InlineBitpacking and OutOfLineBitpacking (FastLanes, T = 8/16/32/64, every width), FSST,
RLE (mini-block and block forms), ByteStreamSplit, General (zstd, lz4), FixedSizeList,
PackedStruct, VariablePackedStruct, Constant. Range and Delta (2.3 only) and the structural
Dictionary node are refused with ``UnsupportedFeatureError``.

Every size is checked against the buffers before anything is allocated, so a corrupt count
or length raises ``CorruptFileError`` (naming the file) instead of asking for gigabytes.
"""
from __future__ import annotations

import numpy as np

from ..._proto import encodings_v2_1_pb2 as pb
from ...errors import CorruptFileError, UnsupportedFeatureError
from .. import compression
from ..pool_memory import pool_empty
from . import _fastlanes, _fsst, _gather
from .values import (FixedSizeListValues, FixedValues, StructValues,
                     ValueBlock, VariableValues)

__all__ = ["decode_miniblock", "decode_miniblock_batch", "decode_miniblock_page",
           "decode_levels_batch", "decode_block", "decode_levels", "FullZipValues",
           "gather_dictionary", "CompressiveEncoding"]

CompressiveEncoding = pb.CompressiveEncoding

_SCHEMES = {pb.COMPRESSION_ALGORITHM_LZ4: "lz4", pb.COMPRESSION_ALGORITHM_ZSTD: "zstd"}
_WORD_DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
# zstd cannot expand its input more than about 32 768-fold (lz4: 255-fold); a decompressed
# length beyond this bound is a corrupt prefix, refused before allocating.
_MAX_EXPANSION = 1 << 15
_EXPANSION_SLACK = 1 << 16
_EMPTY = np.zeros(0, dtype=np.uint8)
_ZERO = np.zeros(1, dtype=np.int64)


# ----------------------------------------------------------------------------------- helpers

def _kind(enc) -> str:
    kind = enc.WhichOneof("compression")
    if kind is None:
        raise CorruptFileError("compressive encoding with no compression set", None)
    return kind


def _corrupt(msg, path):
    return CorruptFileError(msg, path)


def _unsupported(kind, path, context=""):
    where = f" in {context} context" if context else ""
    if kind in ("range", "delta"):
        return UnsupportedFeatureError(
            f"compressive encoding {kind!r} belongs to Lance file format 2.3, not 2.1/2.2", path)
    return UnsupportedFeatureError(f"compressive encoding {kind!r}{where}", path)


def _u8(buf) -> np.ndarray:
    """``buf`` as a 1-d uint8 array (no copy for arrays, bytes, memoryviews)."""
    if isinstance(buf, np.ndarray):
        if buf.dtype != np.uint8 or buf.ndim != 1:
            buf = buf.reshape(-1).view(np.uint8)
        return buf
    return np.frombuffer(buf, dtype=np.uint8)


def _aligned(buf: np.ndarray, align: int) -> np.ndarray:
    """``buf``, copied when its start is not ``align``-byte aligned (the kernels need it)."""
    if align > 1 and buf.size and buf.ctypes.data % align:
        return buf.copy()
    return buf


def _scheme(bc, path) -> str:
    name = _SCHEMES.get(bc.scheme)
    if name is None:
        raise UnsupportedFeatureError(f"buffer compression scheme {bc.scheme}", path)
    return name


def _decompress(bc, buf: np.ndarray, limit: int | None, path) -> np.ndarray:
    """Undo a Lance-framed zstd/lz4 buffer, refusing implausible lengths up front."""
    scheme = _scheme(bc, path)
    head = 8 if scheme == "zstd" else 4
    if buf.size >= head and not (scheme == "zstd" and bytes(buf[:4]) == b"\x28\xb5\x2f\xfd"):
        size = int.from_bytes(bytes(buf[:head]), "little")
        bound = buf.size * _MAX_EXPANSION + _EXPANSION_SLACK
        if limit is not None:
            bound = min(bound, limit)
        if size > bound:
            raise _corrupt(f"{scheme} buffer of {buf.size} bytes claims {size} decompressed "
                           f"bytes (at most {bound} possible)", path)
    out = compression.decompress(scheme, buf, path)
    return np.frombuffer(out, dtype=np.uint8)


def _flat_bits(enc, what, path) -> int:
    if enc.WhichOneof("compression") != "flat":
        raise UnsupportedFeatureError(
            f"{what} encoded as {enc.WhichOneof('compression')!r} (2.1/2.2 require flat)", path)
    return int(enc.flat.bits_per_value)


def _fixed_bytes(bits: int, n: int) -> int:
    return (n + 7) // 8 if bits == 1 else n * (bits // 8)


def _check_fixed_bits(bits: int, path):
    if bits != 1 and (bits <= 0 or bits % 8):
        raise _corrupt(f"flat values of {bits} bits per value", path)


def _max_bytes(enc, n: int):
    """An upper bound of the decoded bytes ``enc`` can need for ``n`` values in mini-block or
    block context, or None when values are variable-width (bounded elsewhere)."""
    kind = enc.WhichOneof("compression")
    if kind == "flat":
        return _fixed_bytes(int(enc.flat.bits_per_value), n) + 8
    if kind == "inline_bitpacking":
        t = int(enc.inline_bitpacking.uncompressed_bits_per_value)
        return ((n + 1023) // 1024) * (t // 8 + 128 * t) + 8
    if kind == "out_of_line_bitpacking":
        t = int(enc.out_of_line_bitpacking.uncompressed_bits_per_value)
        return ((n + 1023) // 1024) * 128 * t + 8
    if kind == "byte_stream_split":
        return _max_bytes(enc.byte_stream_split.values, n)
    if kind == "rle":
        inner = _max_bytes(enc.rle.values, n)
        return None if inner is None else inner + 8
    if kind == "fixed_size_list":
        f = enc.fixed_size_list
        d = int(f.items_per_value)
        inner = _max_bytes(f.values, n * d)
        return None if inner is None else inner + (n * d + 7) // 8 + 8
    if kind == "packed_struct":
        return n * (sum(int(b) for b in enc.packed_struct.bits_per_value) // 8) + 8
    return None


# ------------------------------------------------------------------------- fixed-width pieces

def _flat(enc, buf, n, path) -> FixedValues:
    bits = int(enc.flat.bits_per_value)
    _check_fixed_bits(bits, path)
    if enc.flat.HasField("data"):
        buf = _decompress(enc.flat.data, buf, _fixed_bytes(bits, n), path)
    need = _fixed_bytes(bits, n)
    if buf.size < need:
        raise _corrupt(f"flat buffer of {buf.size} bytes is too short for {n} values of "
                       f"{bits} bits ({need} bytes)", path)
    return FixedValues(bits, n, buf[:need])


def _bitpack_t(t, path) -> int:
    t = int(t)
    if t not in _WORD_DTYPES:
        raise _corrupt(f"bit-packing of {t}-bit words (must be 8, 16, 32 or 64)", path)
    return t


def _inline_bitpacked(enc, buf, n, path) -> FixedValues:
    """``[T-bit width W][128*W packed bytes]`` per 1024 values (the last group zero-padded)."""
    ib = enc.inline_bitpacking
    t = _bitpack_t(ib.uncompressed_bits_per_value, path)
    if ib.HasField("values"):
        buf = _decompress(ib.values, buf, _max_bytes(enc, n), path)
    try:
        out = _fastlanes.decode_inline(buf, t, n)
    except ValueError as e:
        raise _corrupt(str(e), path) from None
    return FixedValues(t, n, out.view(np.uint8))


def _ool_bitpacked(enc, buf, n, path) -> FixedValues:
    """Fixed width W for the whole buffer; full blocks, then a packed or raw tail (§2.4)."""
    ob = enc.out_of_line_bitpacking
    t = _bitpack_t(ob.uncompressed_bits_per_value, path)
    w = _flat_bits(ob.values, "out-of-line bit-packed values", path)
    if w > t:
        raise _corrupt(f"out-of-line bit width {w} exceeds the {t}-bit word", path)
    full, tail = divmod(n, 1024)
    block = 128 * w
    packed_size = (full + (1 if tail else 0)) * block
    raw_size = full * block + tail * (t // 8)
    if tail and buf.size == raw_size and (
            raw_size != packed_size or not w * (1024 - tail) < (t - w) * tail):
        raw_tail = True
    elif buf.size >= packed_size:
        raw_tail = False
    elif tail and buf.size >= raw_size:
        raw_tail = True
    else:
        raise _corrupt(f"out-of-line bit-packed buffer of {buf.size} bytes is too short for "
                       f"{n} values at width {w}", path)
    nblocks = full if raw_tail else (n + 1023) // 1024
    out = pool_empty(((n + 1023) // 1024) * 1024, dtype=_WORD_DTYPES[t])
    if nblocks:
        _fastlanes.unpack_into(_aligned(buf[:nblocks * block], t // 8), t, w, nblocks, out, 0)
    if raw_tail:
        out[full * 1024:n] = buf[full * block:raw_size].view(_WORD_DTYPES[t]) if (
            (full * block) % (t // 8) == 0 and buf.ctypes.data % (t // 8) == 0) else \
            np.frombuffer(bytes(buf[full * block:raw_size]), dtype=_WORD_DTYPES[t])
    return FixedValues(t, n, out[:n].view(np.uint8))


def _bss(enc, buf, n, path) -> FixedValues:
    """Byte-stream split: w streams of n bytes each, transposed back to n values of w bytes."""
    bits = _flat_bits(enc.byte_stream_split.values, "byte-stream-split values", path)
    _check_fixed_bits(bits, path)
    if bits == 1:
        raise _corrupt("byte-stream split of 1-bit values", path)
    w = bits // 8
    if buf.size < n * w:
        raise _corrupt(f"byte-stream-split buffer of {buf.size} bytes is too short for {n} "
                       f"values of {w} bytes", path)
    data = np.ascontiguousarray(buf[:n * w].reshape(w, n).T).reshape(-1)
    return FixedValues(bits, n, data)


def _rle(enc, values_buf, lengths_buf, n, path) -> FixedValues:
    bits = _flat_bits(enc.rle.values, "RLE values", path)
    lbits = _flat_bits(enc.rle.run_lengths, "RLE run lengths", path)
    if lbits != 8:
        raise UnsupportedFeatureError(f"RLE run lengths of {lbits} bits (2.1/2.2 use u8)", path)
    _check_fixed_bits(bits, path)
    if bits == 1:
        raise _corrupt("run-length encoding of 1-bit values", path)
    w = bits // 8
    nruns = lengths_buf.size
    if values_buf.size < nruns * w:
        raise _corrupt(f"{nruns} RLE runs need {nruns * w} value bytes, the buffer has "
                       f"{values_buf.size}", path)
    try:
        data = _gather.rle_expand(values_buf, w, lengths_buf, n)
    except ValueError as e:
        raise _corrupt(str(e), path) from None
    return FixedValues(bits, n, data)


# ------------------------------------------------------------------------- variable pieces

def _offset_bits(enc, path) -> int:
    bits = _flat_bits(enc.variable.offsets, "variable-width offsets", path)
    if bits not in (32, 64):
        raise UnsupportedFeatureError(f"variable-width offsets of {bits} bits", path)
    return bits


def _check_offsets(offs: np.ndarray, lo: int, hi: int, path):
    if offs.size and (offs[0] < lo or offs[-1] > hi or np.any(offs[1:] < offs[:-1])):
        raise _corrupt(f"variable-width offsets are not ascending within {lo}..{hi}", path)


def _variable_miniblock(enc, buf, n, path) -> VariableValues:
    """``n + 1`` offsets counted from the buffer start, then the bytes (then padding)."""
    bits = _offset_bits(enc, path)
    if enc.variable.HasField("values"):
        buf = _decompress(enc.variable.values, buf, None, path)
    try:
        offs, data = _gather.decode_variable_chunks(buf, _ZERO, np.array([buf.size], np.int64),
                                                    np.array([n], np.int64), bits)
    except ValueError as e:
        raise _corrupt(f"variable-width buffer of {buf.size} bytes for {n} values: {e}",
                       path) from None
    return VariableValues(n, offs, data, bits)


def _variable_block(enc, buf, n, path) -> VariableValues:
    """``uW W | uW data_start | (n+1) uW offsets from 0 | bytes`` with W = 32 or 64."""
    bits = _offset_bits(enc, path)
    if enc.variable.HasField("values"):
        buf = _decompress(enc.variable.values, buf, None, path)
    ob = bits // 8
    if buf.size < 2 * ob:
        raise _corrupt(f"variable-width block of {buf.size} bytes has no header", path)
    stored = int.from_bytes(bytes(buf[:ob]), "little")
    if stored != bits:
        if buf[0] in (32, 64) and any(buf[1:4]):
            raise UnsupportedFeatureError("legacy variable-width block header", path)
        raise _corrupt(f"variable-width block header says {stored}-bit offsets, the encoding "
                       f"says {bits}", path)
    data_start = int.from_bytes(bytes(buf[ob:2 * ob]), "little")
    head = 2 * ob + (n + 1) * ob
    if data_start != head or buf.size < head:
        raise _corrupt(f"variable-width block: data starts at {data_start}, expected {head} "
                       f"(buffer of {buf.size} bytes, {n} values)", path)
    dt = np.dtype("<u4" if bits == 32 else "<u8")
    offs = np.frombuffer(bytes(buf[2 * ob:head]), dtype=dt)
    if offs.size and offs.max() > buf.size:
        raise _corrupt("variable-width offsets point past the buffer", path)
    offs = offs.astype(np.int64)
    _check_offsets(offs, 0, buf.size - head, path)
    first = int(offs[0])
    data = buf[head + first:head + int(offs[-1])]
    if first:
        offs -= first
    return VariableValues(n, offs, data, bits)


class FsstTable:
    """A parsed FSST symbol table (8-byte header, n symbols of 8 bytes, n lengths)."""

    __slots__ = ("compressed", "symbols", "lens")

    def __init__(self, table: bytes, path):
        if len(table) < 8:
            raise _corrupt(f"FSST symbol table of {len(table)} bytes", path)
        header = int.from_bytes(table[:8], "little")
        if header >> 32 != 0x46535354:
            raise _corrupt("FSST symbol table without the FSST magic", path)
        self.compressed = bool((header >> 24) & 1)
        nsym = header & 0xFF
        if nsym > 255:
            raise _corrupt(f"FSST table with {nsym} symbols", path)
        end = 8 + 9 * nsym
        if len(table) < end:
            raise _corrupt(f"FSST table of {len(table)} bytes is too short for {nsym} symbols",
                           path)
        self.symbols = np.zeros(256, dtype=np.uint64)
        self.symbols[:nsym] = np.frombuffer(table[8:8 + 8 * nsym], dtype="<u8")
        self.lens = np.zeros(256, dtype=np.uint8)
        lens = np.frombuffer(table[8 + 8 * nsym:end], dtype=np.uint8)
        if np.any((lens < 1) | (lens > 8)):
            raise _corrupt("FSST symbol lengths outside 1..8", path)
        self.lens[:nsym] = lens

    def decode(self, vals: VariableValues, path) -> VariableValues:
        if not self.compressed:
            return vals
        try:
            offs, data, bad = _fsst.fsst_decode(np.ascontiguousarray(vals.data),
                                                np.ascontiguousarray(vals.offsets, np.int64),
                                                self.symbols, self.lens)
        except ValueError as e:
            raise _corrupt(str(e), path) from None
        if bad != -1:
            raise _corrupt(f"FSST string {bad} holds an unknown code or a cut-off escape", path)
        return VariableValues(vals.num_values, offs, data, vals.offset_bits)


_FSST_CACHE: dict = {}


def _fsst_table(enc, path) -> FsstTable:
    """The parsed table (cached: every chunk of a page repeats the page's table)."""
    raw = enc.fsst.symbol_table
    table = _FSST_CACHE.get(raw)
    if table is None:
        table = FsstTable(bytes(raw), path)
        if len(_FSST_CACHE) >= 64:
            _FSST_CACHE.clear()
        _FSST_CACHE[raw] = table
    return table


# ------------------------------------------------------------------------- structured pieces

def _fsl_miniblock(enc, buffers, n, path) -> FixedSizeListValues:
    f = enc.fixed_size_list
    dim = int(f.items_per_value)
    if dim <= 0:
        raise _corrupt(f"fixed-size list of {dim} items per value", path)
    items = n * dim
    validity = None
    if f.has_validity:
        if not buffers:
            raise _corrupt("fixed-size list validity buffer missing", path)
        bm = buffers[0]
        if bm.size < (items + 7) // 8:
            raise _corrupt(f"fixed-size list validity of {bm.size} bytes for {items} items",
                           path)
        validity = np.unpackbits(bm[:(items + 7) // 8], count=items,
                                 bitorder="little").astype(np.bool_)
        buffers = buffers[1:]
    child = _miniblock(f.values, buffers, items, path)
    if not isinstance(child, (FixedValues, FixedSizeListValues)):
        raise UnsupportedFeatureError("fixed-size list of variable-width values", path)
    return FixedSizeListValues(dim, n, child, validity)


def _split_rows(data: np.ndarray, n: int, row_bytes: int, widths: list[int]) -> list:
    rows = data[:n * row_bytes].reshape(n, row_bytes)
    out = []
    pos = 0
    for w in widths:
        out.append(np.ascontiguousarray(rows[:, pos:pos + w]).reshape(-1))
        pos += w
    return out


def _packed_struct(enc, buffers, n, path) -> StructValues:
    ps = enc.packed_struct
    bits = [int(b) for b in ps.bits_per_value]
    for b in bits:
        if b <= 0 or b % 8:
            raise UnsupportedFeatureError(f"packed struct field of {b} bits", path)
    row_bytes = sum(bits) // 8
    inner = _miniblock(ps.values, buffers, n, path)
    if not isinstance(inner, FixedValues) or inner.bits_per_value != row_bytes * 8:
        raise _corrupt(f"packed struct rows are not {row_bytes}-byte fixed values", path)
    cols = _split_rows(inner.data, n, row_bytes, [b // 8 for b in bits])
    return StructValues(n, [FixedValues(b, n, c) for b, c in zip(bits, cols)])


def _constant(enc, n, path) -> FixedValues:
    c = enc.constant
    if not c.HasField("value") or not c.value:
        raise UnsupportedFeatureError("constant compressive encoding without a value", path)
    v = np.frombuffer(bytes(c.value), dtype=np.uint8)
    return FixedValues(v.size * 8, n, np.tile(v, n))


# ------------------------------------------------------------------------- mini-block context

def _miniblock(enc, buffers: list, n: int, path) -> ValueBlock:
    kind = _kind(enc)
    if kind == "flat":
        return _flat(enc, _first(buffers, kind, path), n, path)
    if kind == "inline_bitpacking":
        return _inline_bitpacked(enc, _first(buffers, kind, path), n, path)
    if kind == "variable":
        return _variable_miniblock(enc, _first(buffers, kind, path), n, path)
    if kind == "general":
        g = enc.general
        first = _first(buffers, kind, path)
        bound = _max_bytes(g.values, n)
        if bound is None and g.values.WhichOneof("compression") in ("variable", "fsst"):
            # mini-block values are < 256 bytes unless forced; offsets are 8 bytes at most
            bound = (n + 1) * 8 + n * (1 << 16) + 8
        plain = _decompress(g.compression, first, bound, path)
        return _miniblock(g.values, [plain] + list(buffers[1:]), n, path)
    if kind == "fsst":
        table = _fsst_table(enc, path)
        inner = _miniblock(enc.fsst.values, buffers, n, path)
        if not isinstance(inner, VariableValues):
            raise _corrupt("FSST over fixed-width values", path)
        return table.decode(inner, path)
    if kind == "rle":
        if len(buffers) < 2:
            raise _corrupt(f"RLE chunk with {len(buffers)} buffers (needs 2)", path)
        return _rle(enc, _u8(buffers[0]), _u8(buffers[1]), n, path)
    if kind == "byte_stream_split":
        return _bss(enc, _first(buffers, kind, path), n, path)
    if kind == "fixed_size_list":
        return _fsl_miniblock(enc, [_u8(b) for b in buffers], n, path)
    if kind == "packed_struct":
        return _packed_struct(enc, buffers, n, path)
    if kind == "out_of_line_bitpacking":
        return _ool_bitpacked(enc, _first(buffers, kind, path), n, path)
    if kind == "constant":
        return _constant(enc, n, path)
    raise _unsupported(kind, path, "mini-block")


def _first(buffers, kind, path) -> np.ndarray:
    if not buffers:
        raise _corrupt(f"{kind} chunk without a value buffer", path)
    return _u8(buffers[0])


def decode_miniblock(enc, buffers: list, num_values: int, *, path=None) -> ValueBlock:
    """One mini-block chunk's value buffers (``num_buffers`` of them, in order) decoded to a
    value block of ``num_values`` visible items."""
    if num_values < 0:
        raise _corrupt(f"negative value count {num_values}", path)
    try:
        return _miniblock(enc, buffers, int(num_values), path)
    except CorruptFileError as e:
        if e.path is None and path is not None:
            raise CorruptFileError(e.reason, path) from None
        raise


# ------------------------------------------------------------------------- block context

def _block(enc, buf: np.ndarray, n: int, path) -> ValueBlock:
    kind = _kind(enc)
    if kind == "flat":
        return _flat(enc, buf, n, path)
    if kind == "variable":
        return _variable_block(enc, buf, n, path)
    if kind == "inline_bitpacking":
        return _inline_bitpacked(enc, buf, n, path)
    if kind == "out_of_line_bitpacking":
        return _ool_bitpacked(enc, buf, n, path)
    if kind == "general":
        g = enc.general
        plain = _decompress(g.compression, buf, _max_bytes(g.values, n), path)
        return _block(g.values, plain, n, path)
    if kind == "rle":
        if buf.size < 8:
            raise _corrupt(f"RLE block of {buf.size} bytes has no header", path)
        vlen = int.from_bytes(bytes(buf[:8]), "little")
        if vlen > buf.size - 8:
            raise _corrupt(f"RLE block values of {vlen} bytes exceed the {buf.size}-byte "
                           f"buffer", path)
        bits = _flat_bits(enc.rle.values, "RLE values", path)
        w = max(bits // 8, 1)
        nruns = vlen // w
        lengths = buf[8 + vlen:]
        if lengths.size < nruns:
            raise _corrupt(f"RLE block holds {lengths.size} run lengths for {nruns} runs", path)
        return _rle(enc, buf[8:8 + vlen], lengths[:nruns], n, path)
    if kind == "fsst":
        table = _fsst_table(enc, path)
        inner = _block(enc.fsst.values, buf, n, path)
        if not isinstance(inner, VariableValues):
            raise _corrupt("FSST over fixed-width values", path)
        return table.decode(inner, path)
    if kind == "byte_stream_split":
        return _bss(enc, buf, n, path)
    if kind == "constant":
        return _constant(enc, n, path)
    raise _unsupported(kind, path, "block")


def decode_block(enc, buf, num_values: int, *, path=None) -> ValueBlock:
    """A whole block-encoded buffer (dictionary items, levels) of ``num_values`` values."""
    if num_values < 0:
        raise _corrupt(f"negative value count {num_values}", path)
    try:
        return _block(enc, _u8(buf), int(num_values), path)
    except CorruptFileError as e:
        if e.path is None and path is not None:
            raise CorruptFileError(e.reason, path) from None
        raise


def decode_levels(enc, buf, num_levels: int, *, path=None) -> np.ndarray:
    """Rep or def levels of a chunk (or a constant page) as ``np.uint16``."""
    block = decode_block(enc, buf, num_levels, path=path)
    if not isinstance(block, FixedValues) or block.bits_per_value not in (8, 16, 32, 64):
        raise _corrupt("levels must decode to fixed-width integers", path)
    bits = block.bits_per_value
    data = block.data[:num_levels * (bits // 8)]
    dt = np.dtype(f"<u{bits // 8}")
    vals = np.frombuffer(data.tobytes() if data.ctypes.data % dt.itemsize else data, dtype=dt)
    if bits == 16:
        return vals
    if bits > 16 and vals.size and vals.max() > 0xFFFF:
        raise _corrupt("a rep/def level exceeds 65535", path)
    return vals.astype(np.uint16)


# ------------------------------------------------------------------------- dictionaries

def gather_dictionary(dictionary, indices, *, path=None):
    """The dictionary items at ``indices`` (a flat block): FixedValues or VariableValues."""
    idx = np.asarray(indices)
    if idx.size and (idx.min() < 0 or idx.max() >= dictionary.num_values):
        raise _corrupt(f"dictionary index {int(idx.max())} out of range "
                       f"0..{dictionary.num_values}", path)
    n = idx.size
    if isinstance(dictionary, VariableValues):
        offs, data = _gather.gather_variable(
            np.ascontiguousarray(dictionary.offsets, np.int64),
            np.ascontiguousarray(dictionary.data), idx)
        return VariableValues(n, offs, data, dictionary.offset_bits)
    if isinstance(dictionary, FixedValues):
        bits = dictionary.bits_per_value
        if bits == 1:
            bools = np.unpackbits(dictionary.data, count=dictionary.num_values,
                                  bitorder="little")
            return FixedValues(1, n, np.packbits(bools[idx], bitorder="little"))
        w = bits // 8
        rows = dictionary.data[:dictionary.num_values * w].reshape(dictionary.num_values, w)
        return FixedValues(bits, n, rows[idx].reshape(-1))
    raise UnsupportedFeatureError(f"dictionary of {type(dictionary).__name__}", path)


# ------------------------------------------------------------------------- full-zip values

class FullZipValues:
    """Per-value decoding of a full-zip page's values.

    ``bits_per_value`` (fixed-width values: the zipped bytes of one value, a multiple of 8) or
    ``offset_bits`` (variable-width values: 32 or 64, the width of each value's length prefix)
    tells the structural layer how to slice the zipped buffer; :meth:`decode` then turns the
    sliced raw values (``FixedValues`` or ``VariableValues``) into the page's value block.
    """

    def __init__(self, enc, *, path=None):
        self.enc = enc
        self.path = path
        self.bits_per_value: int | None = None
        self.offset_bits: int | None = None
        self._fsst = None
        kind = _kind(enc)
        self._kind = kind
        if kind == "flat":
            bits = int(enc.flat.bits_per_value)
            if bits <= 0 or bits % 8:
                raise UnsupportedFeatureError(f"full-zip flat values of {bits} bits", path)
            self.bits_per_value = bits
        elif kind == "fixed_size_list":
            self._fsl_layers, self._leaf_bits = self._fsl_shape(enc)
            cum = 1
            total = 0
            for dim, has_v in self._fsl_layers:
                cum *= dim
                if has_v:
                    total += (cum + 7) // 8 * 8
            total += (cum * self._leaf_bits + 7) // 8 * 8
            self.bits_per_value = total
            self._cum = cum
        elif kind == "variable":
            self.offset_bits = _offset_bits(enc, path)
        elif kind == "fsst":
            self._fsst = _fsst_table(enc, path)
            inner = enc.fsst.values
            if inner.WhichOneof("compression") != "variable":
                raise UnsupportedFeatureError("full-zip FSST over non-variable values", path)
            self.offset_bits = _offset_bits(inner, path)
        elif kind == "general":
            inner = enc.general.values
            ik = inner.WhichOneof("compression")
            _scheme(enc.general.compression, path)
            if ik == "variable":
                self.offset_bits = _offset_bits(inner, path)
            elif ik == "fsst":
                self._fsst = _fsst_table(inner, path)
                self.offset_bits = _offset_bits(inner.fsst.values, path)
            else:
                raise UnsupportedFeatureError(f"full-zip general compression over {ik!r}", path)
        elif kind == "variable_packed_struct":
            self.offset_bits = 32
            self._vps_fields = []
            for f in enc.variable_packed_struct.fields:
                layout = f.WhichOneof("layout")
                if layout == "bits_per_value":
                    b = int(f.bits_per_value)
                    if b <= 0 or b % 8:
                        raise UnsupportedFeatureError(
                            f"variable packed struct field of {b} bits", path)
                    self._vps_fields.append(("fixed", b, f.value))
                elif layout == "bits_per_length":
                    b = int(f.bits_per_length)
                    if b not in (32, 64):
                        raise _corrupt(f"variable packed struct length of {b} bits", path)
                    vk = f.value.WhichOneof("compression")
                    table = _fsst_table(f.value, path) if vk == "fsst" else None
                    self._vps_fields.append(("var", b, table))
                else:
                    raise _corrupt("variable packed struct field without a layout", path)
        else:
            raise _unsupported(kind, path, "full-zip")

    def _fsl_shape(self, enc):
        layers = []
        while enc.WhichOneof("compression") == "fixed_size_list":
            f = enc.fixed_size_list
            if int(f.items_per_value) <= 0:
                raise _corrupt(f"fixed-size list of {f.items_per_value} items", self.path)
            layers.append((int(f.items_per_value), bool(f.has_validity)))
            enc = f.values
        bits = _flat_bits(enc, "full-zip fixed-size list items", self.path)
        if bits != 1 and bits % 8:
            raise UnsupportedFeatureError(f"full-zip list items of {bits} bits", self.path)
        return layers, bits

    def decode(self, raw) -> ValueBlock:
        kind = self._kind
        path = self.path
        if self.bits_per_value is not None:
            if not isinstance(raw, FixedValues) or raw.bits_per_value != self.bits_per_value:
                raise TypeError("full-zip fixed values expected")
            need = raw.num_values * (self.bits_per_value // 8)
            if raw.data.size < need:
                raise _corrupt(f"{raw.data.size} bytes for {raw.num_values} full-zip values",
                               path)
            if kind == "flat":
                return raw
            return self._decode_fsl(raw)
        if not isinstance(raw, VariableValues):
            raise TypeError("full-zip variable values expected")
        if kind == "variable":
            return raw
        if kind == "fsst":
            return self._fsst.decode(raw, path)
        if kind == "general":
            vals = self._per_value_decompress(raw)
            return self._fsst.decode(vals, path) if self._fsst is not None else vals
        return self._decode_vps(raw)

    def _decode_fsl(self, raw: FixedValues) -> FixedSizeListValues:
        n = raw.num_values
        row_bytes = self.bits_per_value // 8
        rows = _u8(raw.data)[:n * row_bytes].reshape(n, row_bytes)
        pos = 0
        cum = 1
        validities = []
        for dim, has_v in self._fsl_layers:
            cum *= dim
            if has_v:
                vb = (cum + 7) // 8
                bits = np.unpackbits(rows[:, pos:pos + vb], axis=1, count=cum,
                                     bitorder="little")
                validities.append(bits.reshape(-1).astype(np.bool_))
                pos += vb
            else:
                validities.append(None)
        leaf = self._leaf_bits
        if leaf == 1:
            db = (cum + 7) // 8
            bools = np.unpackbits(rows[:, pos:pos + db], axis=1, count=cum, bitorder="little")
            block = FixedValues(1, n * cum, np.packbits(bools.reshape(-1), bitorder="little"))
        else:
            db = cum * leaf // 8
            block = FixedValues(leaf, n * cum,
                                np.ascontiguousarray(rows[:, pos:pos + db]).reshape(-1))
        # build from the innermost layer outwards
        count = n * cum
        for (dim, _), validity in zip(reversed(self._fsl_layers), reversed(validities)):
            count //= dim
            block = FixedSizeListValues(dim, count, block, validity)
        return block

    def _per_value_decompress(self, raw: VariableValues) -> VariableValues:
        offs = raw.offsets
        data = _u8(raw.data)
        pieces = []
        lengths = np.zeros(raw.num_values, dtype=np.int64)
        for i in range(raw.num_values):
            a, b = int(offs[i]), int(offs[i + 1])
            if a == b:
                continue
            plain = _decompress(self.enc.general.compression, data[a:b], None, self.path)
            pieces.append(plain)
            lengths[i] = plain.size
        out_offs = np.zeros(raw.num_values + 1, dtype=np.int64)
        np.cumsum(lengths, out=out_offs[1:])
        out = np.concatenate(pieces) if pieces else _EMPTY
        return VariableValues(raw.num_values, out_offs, out, raw.offset_bits)

    def _decode_vps(self, raw: VariableValues) -> StructValues:
        """Rows of a variable packed struct: per field, fixed bytes or a length and bytes."""
        path = self.path
        n = raw.num_values
        fields = self._vps_fields
        widths = np.array([b // 8 for _, b, _ in fields], dtype=np.int64)
        is_var = np.array([form == "var" for form, _, _ in fields], dtype=np.uint8)
        try:
            cols = _gather.split_packed_rows(np.ascontiguousarray(raw.offsets, np.int64),
                                             np.ascontiguousarray(_u8(raw.data)), widths,
                                             is_var)
        except ValueError as e:
            raise _corrupt(str(e), path) from None
        children = []
        for (form, b, extra), col in zip(fields, cols):
            if form == "fixed":
                child = FixedValues(b, n, col) if extra.WhichOneof("compression") == "flat" \
                    else _miniblock(extra, [col], n, path)
            else:
                child = VariableValues(n, col[0], col[1], b)
                if extra is not None:
                    child = extra.decode(child, path)
            children.append(child)
        return StructValues(n, children)


# ------------------------------------------------------------------------- whole pages at once

def decode_miniblock_batch(enc, data, starts, sizes, counts, *, path=None):
    """Every chunk of a page in one call, for the single-buffer encodings where per-chunk
    dispatch would dominate (inline bit-packing, flat of whole bytes, variable, FSST over
    variable): chunk i's only value buffer is ``data[starts[i]:starts[i]+sizes[i]]`` with
    ``counts[i]`` values. Returns the concatenated ``FixedValues``/``VariableValues``, or None
    when ``enc`` is not batchable (then decode chunk by chunk)."""
    kind = enc.WhichOneof("compression")
    data = _u8(data)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    try:
        if kind == "inline_bitpacking" and not enc.inline_bitpacking.HasField("values"):
            t = _bitpack_t(enc.inline_bitpacking.uncompressed_bits_per_value, path)
            out = _fastlanes.decode_inline_chunks(data, starts, sizes, counts, t)
            return FixedValues(t, out.size, out.view(np.uint8))
        if kind == "flat" and not enc.flat.HasField("data"):
            bits = int(enc.flat.bits_per_value)
            if bits < 8 or bits % 8:
                return None
            w = bits // 8
            if np.any(sizes < counts * w):
                raise _corrupt("a flat chunk is shorter than its values", path)
            out = _fastlanes.gather_fixed_chunks(data, starts, counts, w)
            return FixedValues(bits, int(counts.sum()), out)
        if kind == "variable" or (kind == "fsst" and
                                  enc.fsst.values.WhichOneof("compression") == "variable"):
            venc = enc if kind == "variable" else enc.fsst.values
            if venc.variable.HasField("values"):
                return None
            bits = _offset_bits(venc, path)
            offs, out = _gather.decode_variable_chunks(data, starts, sizes, counts, bits)
            vals = VariableValues(offs.size - 1, offs, out, bits)
            return vals if kind == "variable" else _fsst_table(enc, path).decode(vals, path)
    except ValueError as e:
        raise _corrupt(str(e), path) from None
    return None


def decode_levels_batch(enc, data, starts, sizes, counts, *, path=None):
    """The rep/def levels of many chunks at once (``counts[i]`` levels in
    ``data[starts[i]:starts[i]+sizes[i]]``), concatenated as uint16; None when ``enc`` is not
    one of the batchable level codecs (flat 16, inline or out-of-line bit-packing of u16)."""
    kind = enc.WhichOneof("compression")
    data = _u8(data)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    try:
        if kind == "flat" and int(enc.flat.bits_per_value) == 16 and \
                not enc.flat.HasField("data"):
            if np.any(sizes < counts * 2):
                raise _corrupt("a level buffer is shorter than its levels", path)
            return _fastlanes.gather_fixed_chunks(data, starts, counts, 2).view(np.uint16)
        if kind == "inline_bitpacking" and \
                int(enc.inline_bitpacking.uncompressed_bits_per_value) == 16 and \
                not enc.inline_bitpacking.HasField("values"):
            return _fastlanes.decode_inline_chunks(data, starts, sizes, counts, 16)
        if kind == "out_of_line_bitpacking" and \
                int(enc.out_of_line_bitpacking.uncompressed_bits_per_value) == 16:
            w = _flat_bits(enc.out_of_line_bitpacking.values, "out-of-line bit width", path)
            if w > 16:
                raise _corrupt(f"out-of-line bit width {w} exceeds the 16-bit word", path)
            return _fastlanes.decode_ool_chunks(data, starts, sizes, counts, 16, w)
    except ValueError as e:
        raise _corrupt(str(e), path) from None
    return None


def _read_uint(data, at, width) -> np.ndarray:
    """Little-endian unsigned integers of ``width`` bytes at the positions ``at``."""
    raw = data[(at[:, None] + np.arange(width)).reshape(-1)].reshape(at.size, width)
    return raw.astype(np.int64) @ (np.int64(1) << (8 * np.arange(width, dtype=np.int64)))


def decode_miniblock_page(mb, data, chunk_offsets, chunk_sizes, counts, *, path=None):
    """All chunks of a mini-block page without repetition levels and with one value buffer
    per chunk, decoded in one pass: the chunk headers (``u16 num_levels``, ``u16 def_bytes``
    when the page has def levels, one u16/u32 value size, 0xFE padding to 8) are read
    vectorised, then the def levels and the values go through the batch kernels. Returns
    ``(def levels or None, values)``, or None when the page does not qualify (the caller then
    decodes chunk by chunk). ``chunk_offsets``/``chunk_sizes``/``counts`` come from the chunk
    metadata words (``chunk_offsets`` may carry one extra end entry)."""
    if mb.HasField("rep_compression") or int(mb.num_buffers) != 1:
        return None
    enc = mb.value_compression
    if enc.WhichOneof("compression") not in ("inline_bitpacking", "flat", "variable", "fsst"):
        return None
    has_def = mb.HasField("def_compression")
    if has_def and mb.def_compression.WhichOneof("compression") not in (
            "flat", "inline_bitpacking", "out_of_line_bitpacking"):
        return None
    data = _u8(data)
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    n = counts.size
    if n == 0:
        return None
    offs = np.asarray(chunk_offsets, dtype=np.int64)[:n]
    csz = np.asarray(chunk_sizes, dtype=np.int64)[:n]
    vw = 4 if mb.has_large_chunk else 2
    if np.any(csz < 8) or np.any(offs < 0) or int(offs[-1] + csz[-1]) > data.size:
        raise _corrupt("mini-block chunks lie outside the page's data buffer", path)
    defs = None
    if has_def:
        num_levels = _read_uint(data, offs, 2)
        if np.any(num_levels != counts):
            raise _corrupt("a chunk's level count differs from its value count", path)
        def_sizes = _read_uint(data, offs + 2, 2)
        sizes = _read_uint(data, offs + 4, vw)
        def_starts = offs + 8
        starts = def_starts + ((def_sizes + 7) & ~7)
        defs = decode_levels_batch(mb.def_compression, data, def_starts, def_sizes, counts,
                                   path=path)
        if defs is None:
            return None
    else:
        sizes = _read_uint(data, offs + 2, vw)
        starts = offs + 8
    if np.any(starts + sizes > offs + csz):
        raise _corrupt("a mini-block value buffer runs past its chunk", path)
    values = decode_miniblock_batch(enc, data, starts, sizes, counts, path=path)
    if values is None:
        return None
    return defs, values
