"""Decoding one Lance 2.0 page (an ``ArrayEncoding`` tree plus its buffers) into Arrow.

2.0 pages are shallow trees with explicit buffer numbers (see lance_facts.md §3.4):

* ``nullable{no_nulls|some_nulls|all_nulls}`` around ``flat`` values (fixed width, bool at 1
  bit) or around ``fixed_size_list{items}``;
* ``binary{indices, bytes, null_adjustment}`` for strings and binary (end offsets + null
  adjustment, bytes optionally zstd/lz4 compressed);
* ``dictionary{indices, items, num_dictionary_items}``: low-cardinality strings (u8 indices,
  0 = null) or Arrow dictionary columns (direct indices, nulls point at a null item);
* ``packed_struct{inner, buffer}``: fixed-width struct children interleaved row by row;
* ``list{offsets, null_offset_adjustment, num_items}`` and ``struct{}`` belong to the
  structural columns of lists and structs (see field_reader.py).

Fixed-width values are never copied: the Arrow array is built over the page buffer itself.
Every buffer length and every offset is checked; failures raise CorruptFileError naming the
file, and encodings this reader does not implement raise UnsupportedFeatureError.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..._proto import encodings_v2_0_pb2 as pb
from ...errors import CorruptFileError, UnsupportedFeatureError
from .. import compression
from .._dictionary import dictionary_validity, expand_string_dictionary
from .._offsets import decode_adjusted_offsets
from .._utf8 import first_invalid_utf8_row

# Bytes a compressed buffer may hold beyond what its page needs (padding): a length prefix
# claiming more than need + this is corrupt, and refused before anything is allocated.
DECOMPRESS_SLACK = 4096

_BINARY_LIKE = (pa.types.is_string, pa.types.is_binary, pa.types.is_large_string,
                pa.types.is_large_binary)


def is_binary_like(dtype: pa.DataType) -> bool:
    return any(f(dtype) for f in _BINARY_LIKE)


def is_large_binary_like(dtype: pa.DataType) -> bool:
    return pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)


def value_bits(dtype: pa.DataType) -> int | None:
    """Bits per value of a fixed-width Arrow type as 2.0 ``Flat`` stores it (None otherwise)."""
    if pa.types.is_boolean(dtype):
        return 1
    if pa.types.is_fixed_size_binary(dtype):
        return dtype.byte_width * 8
    if pa.types.is_dictionary(dtype) or pa.types.is_null(dtype):
        return None
    try:
        bits = dtype.bit_width
    except ValueError:
        return None
    return bits if bits and bits % 8 == 0 else None


class PageDecoder:
    """Decodes the ArrayEncoding tree of one page; holds the page's buffers and error context."""

    def __init__(self, buffers, path: str | None, where: str, column_buffers=()):
        self.buffers = buffers
        self.column_buffers = column_buffers
        self.path = path
        self.where = where

    # -- errors ---------------------------------------------------------------------------
    def corrupt(self, message: str) -> CorruptFileError:
        return CorruptFileError(f"{self.where}: {message}", self.path)

    def unsupported(self, message: str) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(f"{self.where}: {message}", self.path)

    # -- buffers --------------------------------------------------------------------------
    def buffer(self, ref: pb.Buffer) -> pa.Buffer:
        index = ref.buffer_index
        if ref.buffer_type == pb.Buffer.page:
            bufs = self.buffers
        elif ref.buffer_type == pb.Buffer.column:
            bufs = self.column_buffers
        else:
            raise self.unsupported("file-level (global) buffers in a 2.0 page encoding")
        if index >= len(bufs):
            raise self.corrupt(f"refers to buffer {index} of {len(bufs)}")
        return bufs[index]

    def flat_buffer(self, flat: pb.Flat, num_values: int, bits: int | None = None) -> pa.Buffer:
        """The (decompressed) buffer of a ``Flat`` node holding ``num_values`` values."""
        if bits is not None and flat.bits_per_value != bits:
            raise self.corrupt(f"flat values have {flat.bits_per_value} bits, expected {bits}")
        if not flat.HasField("buffer"):
            raise self.corrupt("flat encoding without a buffer")
        buf = self.buffer(flat.buffer)
        need = (num_values * flat.bits_per_value + 7) // 8
        if flat.HasField("compression") and flat.compression.scheme not in ("", "none"):
            buf = compression.decompress(flat.compression.scheme, buf, self.path,
                                         need + DECOMPRESS_SLACK)
        if buf.size < need:
            raise self.corrupt(f"buffer of {buf.size} bytes is too short for {num_values} "
                               f"{flat.bits_per_value}-bit values ({need} bytes)")
        return buf if buf.size == need else buf.slice(0, need)

    def bitmap(self, enc: pb.ArrayEncoding, n: int) -> pa.Buffer:
        """A validity bitmap: a 1-bit ``Flat``."""
        if enc.WhichOneof("array_encoding") != "flat":
            raise self.unsupported(f"validity stored as {enc.WhichOneof('array_encoding')!r}")
        return self.flat_buffer(enc.flat, n, 1)

    def u64_values(self, enc: pb.ArrayEncoding, n: int) -> np.ndarray:
        """``n`` u64 values of an offsets/indices encoding (``nullable{no_nulls{flat 64}}``)."""
        kind = enc.WhichOneof("array_encoding")
        if kind == "nullable":
            which = enc.nullable.WhichOneof("nullability")
            if which == "no_nulls":
                return self.u64_values(enc.nullable.no_nulls.values, n)
            if which == "all_nulls" and n == 0:
                return np.zeros(0, dtype=np.uint64)
            raise self.unsupported(f"offsets with {which!r} validity")
        if kind != "flat":
            raise self.unsupported(f"offsets encoded as {kind!r}")
        buf = self.flat_buffer(enc.flat, n, 64)
        return np.frombuffer(buf, dtype="<u8", count=n)

    # -- the tree -------------------------------------------------------------------------
    def decode(self, enc: pb.ArrayEncoding, n: int, dtype: pa.DataType) -> pa.Array:
        """``n`` values of Arrow type ``dtype`` from the encoding ``enc``."""
        kind = enc.WhichOneof("array_encoding")
        if kind == "nullable":
            return self._nullable(enc.nullable, n, dtype)
        if kind == "flat":
            return self._flat(enc.flat, n, dtype, None)
        if kind == "fixed_size_list":
            return self._fixed_size_list(enc.fixed_size_list, n, dtype, None)
        if kind == "binary":
            return self._binary(enc.binary, n, dtype)
        if kind == "dictionary":
            return self._dictionary(enc.dictionary, n, dtype)
        if kind == "packed_struct":
            return self._packed_struct(enc.packed_struct, n, dtype)
        if kind is None:
            raise self.corrupt("empty ArrayEncoding")
        if kind in ("list", "struct"):
            raise self.corrupt(f"a {kind!r} encoding where {dtype} values were expected")
        raise self.unsupported(f"2.0 encoding {kind!r} is not supported by lancefmt")

    def _nullable(self, nullable: pb.Nullable, n: int, dtype) -> pa.Array:
        which = nullable.WhichOneof("nullability")
        if which == "no_nulls":
            return self._values(nullable.no_nulls.values, n, dtype, None)
        if which == "some_nulls":
            validity = self.bitmap(nullable.some_nulls.validity, n)
            return self._values(nullable.some_nulls.values, n, dtype, validity)
        if which == "all_nulls":
            return pa.nulls(n, dtype)
        raise self.corrupt("Nullable without nullability")

    def _values(self, enc: pb.ArrayEncoding, n: int, dtype, validity) -> pa.Array:
        kind = enc.WhichOneof("array_encoding")
        if kind == "flat":
            return self._flat(enc.flat, n, dtype, validity)
        if kind == "fixed_size_list":
            return self._fixed_size_list(enc.fixed_size_list, n, dtype, validity)
        arr = self.decode(enc, n, dtype)
        return arr if validity is None else _mask(arr, validity)

    def _flat(self, flat: pb.Flat, n: int, dtype, validity) -> pa.Array:
        bits = value_bits(dtype)
        if bits is None:
            raise self.corrupt(f"flat values for a {dtype} field")
        buf = self.flat_buffer(flat, n, bits)
        return pa.Array.from_buffers(dtype, n, [validity, buf])

    def _fixed_size_list(self, fsl: pb.FixedSizeList, n: int, dtype, validity) -> pa.Array:
        if not pa.types.is_fixed_size_list(dtype):
            raise self.corrupt(f"fixed-size-list values for a {dtype} field")
        if fsl.dimension != dtype.list_size:
            raise self.corrupt(f"fixed-size list of dimension {fsl.dimension}, "
                               f"field has {dtype.list_size}")
        child = self.decode(fsl.items, n * fsl.dimension, dtype.value_type)
        return pa.Array.from_buffers(dtype, n, [validity], children=[child])

    def _binary(self, binary: pb.Binary, n: int, dtype) -> pa.Array:
        if not is_binary_like(dtype):
            raise self.corrupt(f"binary values for a {dtype} field")
        ends = self.u64_values(binary.indices, n)
        data = self._bytes(binary.bytes, int(ends.max()) if n else 0)
        large = is_large_binary_like(dtype)
        if not large and data.size > 2147483647:
            raise self.unsupported("a string page over 2 GiB read as 32-bit offsets")
        offsets, validity, _nulls, bad = decode_adjusted_offsets(
            ends, binary.null_adjustment, data.size, large)
        if bad >= 0:
            raise self.corrupt(f"string offset of row {bad} goes backwards or past the "
                               f"{data.size} data bytes")
        self._check_utf8(dtype, data, offsets)
        return pa.Array.from_buffers(
            dtype, n, [None if validity is None else pa.py_buffer(validity),
                       pa.py_buffer(offsets), data])

    def _check_utf8(self, dtype, data, offsets) -> None:
        """Strings must be valid UTF-8 row by row (binary may hold anything)."""
        if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
            bad = first_invalid_utf8_row(data if data is not None else b"", offsets)
            if bad >= 0:
                raise self.corrupt(f"string of row {bad} is not valid UTF-8")

    def _bytes(self, enc: pb.ArrayEncoding, max_size: int) -> pa.Buffer:
        """The data bytes of a binary page (a ``Flat`` of 8-bit values, maybe compressed);
        ``max_size``: the largest end offset the page declares."""
        if enc.WhichOneof("array_encoding") != "flat":
            raise self.unsupported(f"binary bytes encoded as {enc.WhichOneof('array_encoding')!r}")
        flat = enc.flat
        if flat.bits_per_value != 8:
            raise self.corrupt(f"binary bytes with {flat.bits_per_value} bits per value")
        buf = self.buffer(flat.buffer)
        if flat.HasField("compression") and flat.compression.scheme not in ("", "none"):
            buf = compression.decompress(flat.compression.scheme, buf, self.path,
                                         max_size + DECOMPRESS_SLACK)
        return buf

    def _dictionary(self, d: pb.Dictionary, n: int, dtype) -> pa.Array:
        m = d.num_dictionary_items
        if pa.types.is_dictionary(dtype):
            items = self.decode(d.items, m, dtype.value_type)
            indices = self.decode(d.indices, n, dtype.index_type)
            if indices.null_count:
                raise self.unsupported("dictionary indices with their own nulls")
            idx = np.frombuffer(indices.buffers()[1], dtype=indices.type.to_pandas_dtype(),
                                count=n)
            validity, _nulls, bad = dictionary_validity(idx, m, items.buffers()[0]
                                                        if items.null_count else None)
            if bad >= 0:
                raise self.corrupt(f"dictionary index of row {bad} is past the {m} items")
            return pa.DictionaryArray.from_buffers(
                dtype, n, [None if validity is None else pa.py_buffer(validity),
                           indices.buffers()[1]], dictionary=items)
        if not is_binary_like(dtype):
            raise self.unsupported(f"dictionary-encoded values for a {dtype} field")
        items = self.decode(d.items, m, pa.large_binary())
        idx = self._u8_indices(d.indices, n)
        item_offsets = np.frombuffer(items.buffers()[1], dtype=np.int64, count=m + 1)
        item_data = items.buffers()[2]
        item_validity = items.buffers()[0] if items.null_count else None
        self._check_utf8(dtype, item_data, item_offsets)  # each item once, not each row
        offsets, data, validity, _nulls, bad = expand_string_dictionary(
            idx, item_offsets, item_validity,
            np.frombuffer(item_data, dtype=np.uint8) if item_data is not None else
            np.zeros(0, np.uint8), is_large_binary_like(dtype))
        if bad >= 0:
            raise self.corrupt(f"dictionary index of row {bad} is past the {m} items")
        return pa.Array.from_buffers(
            dtype, n, [None if validity is None else pa.py_buffer(validity),
                       pa.py_buffer(offsets), pa.py_buffer(data)])

    def _u8_indices(self, enc: pb.ArrayEncoding, n: int) -> np.ndarray:
        kind = enc.WhichOneof("array_encoding")
        if kind == "nullable" and enc.nullable.WhichOneof("nullability") == "no_nulls":
            return self._u8_indices(enc.nullable.no_nulls.values, n)
        if kind != "flat":
            raise self.unsupported(f"dictionary indices encoded as {kind!r}")
        if enc.flat.bits_per_value != 8:
            raise self.unsupported(
                f"{enc.flat.bits_per_value}-bit indices of a low-cardinality string dictionary")
        return np.frombuffer(self.flat_buffer(enc.flat, n, 8), dtype=np.uint8, count=n)

    def _packed_struct(self, ps: pb.PackedStruct, n: int, dtype) -> pa.Array:
        if not pa.types.is_struct(dtype):
            raise self.corrupt(f"packed struct values for a {dtype} field")
        widths = []
        for i in range(dtype.num_fields):
            w = _byte_width(dtype.field(i).type)
            if w is None:
                raise self.unsupported(f"packed struct child of type {dtype.field(i).type}")
            widths.append(w)
        if len(ps.inner) != len(widths):
            raise self.corrupt(f"packed struct with {len(ps.inner)} inner encodings for "
                               f"{len(widths)} fields")
        row = sum(widths)
        buf = self.buffer(ps.buffer)
        if buf.size < n * row:
            raise self.corrupt(f"packed struct buffer of {buf.size} bytes, {n} rows need {n * row}")
        rows = np.frombuffer(buf, dtype=np.uint8, count=n * row).reshape(n, row) if row else None
        children, pos = [], 0
        for i, w in enumerate(widths):
            child_type = dtype.field(i).type
            raw = pa.py_buffer(np.ascontiguousarray(rows[:, pos:pos + w])) if w else pa.py_buffer(b"")
            children.append(_fixed_from_bytes(child_type, n, raw))
            pos += w
        return pa.StructArray.from_arrays(children, fields=list(dtype))

    # -- structural pages --------------------------------------------------------------------
    def list_offsets(self, enc: pb.ArrayEncoding, n: int):
        """``(offsets int64[n + 1], validity bitmap | None, num_items)`` of a 2.0 list page."""
        kind = enc.WhichOneof("array_encoding")
        if kind == "nullable" and enc.nullable.WhichOneof("nullability") == "all_nulls" and n == 0:
            return np.zeros(1, dtype=np.int64), None, 0
        if kind != "list":
            raise self.unsupported(f"list page encoded as {kind!r}")
        lst = enc.list
        ends = self.u64_values(lst.offsets, n)
        offsets, validity, _nulls, bad = decode_adjusted_offsets(
            ends, lst.null_offset_adjustment, lst.num_items, True)
        if bad >= 0:
            raise self.corrupt(f"list offset of row {bad} goes backwards or past the page's "
                               f"{lst.num_items} items")
        return offsets, validity, lst.num_items


def _byte_width(dtype: pa.DataType) -> int | None:
    if pa.types.is_fixed_size_list(dtype):
        inner = _byte_width(dtype.value_type)
        return None if inner is None else inner * dtype.list_size
    if pa.types.is_boolean(dtype):
        return None
    bits = value_bits(dtype)
    return None if bits is None else bits // 8


def _fixed_from_bytes(dtype: pa.DataType, n: int, raw: pa.Buffer) -> pa.Array:
    if pa.types.is_fixed_size_list(dtype):
        child = _fixed_from_bytes(dtype.value_type, n * dtype.list_size, raw)
        return pa.Array.from_buffers(dtype, n, [None], children=[child])
    return pa.Array.from_buffers(dtype, n, [None, raw])


def _mask(arr: pa.Array, validity: pa.Buffer) -> pa.Array:
    """``arr`` with the rows whose validity bit is 0 made null (rare, generic path)."""
    import pyarrow.compute as pc

    keep = pa.Array.from_buffers(pa.bool_(), len(arr), [None, validity])
    return pc.if_else(keep, arr, pa.scalar(None, arr.type))
