"""Decode the pages of a legacy (v0.1) Lance file into Arrow arrays, as pylance reads them.

Legacy files are split into *batches* (row groups); every field that stores data has one page
per batch (:mod:`lancefmt.file.legacy.format`). Page encodings (``rust/lance-io/src/encodings``):

* plain -- fixed-width values back to back (booleans bit-packed, fixed-size lists and binaries
  flattened); no validity: nulls were written as whatever the value buffer held;
* var-binary -- the value bytes, then ``n + 1`` int64 *absolute file offsets*; the page points
  at the offsets. A nullable field reads an empty value as null (Lance's ``BinaryDecoder``);
* list / large list -- ``n + 1`` int32 / int64 positions into the child's page of the same
  batch (no list validity); structs store nothing themselves (no validity either);
* dictionary -- plain keys; the values live in the file's schema (``Field.dictionary``);
* null -- no bytes, the page length is the row count.

So what comes back is what pylance returns for these files: primitive, list and struct nulls
are gone, empty strings of nullable fields are nulls. Every position is checked by the Cython
kernels of :mod:`._kernels` before an array is built on it.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, UnsupportedFeatureError
from .._utf8 import first_invalid_utf8_row
from ._kernels import check_dictionary_keys, rebase_positions

_KEY_TYPES = {pa.int8(), pa.int16(), pa.int32(), pa.int64(),
              pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()}


def fixed_bit_width(dtype: pa.DataType) -> int | None:
    """Bits per value of a type the plain encoding stores, None for other types."""
    if pa.types.is_boolean(dtype):
        return 1
    if pa.types.is_fixed_size_list(dtype):
        inner = fixed_bit_width(dtype.value_type)
        return None if inner is None else inner * dtype.list_size
    if pa.types.is_fixed_size_binary(dtype):
        return dtype.byte_width * 8
    if pa.types.is_decimal(dtype):
        return dtype.bit_width
    if pa.types.is_dictionary(dtype) or pa.types.is_null(dtype):
        return None
    try:
        return dtype.bit_width
    except ValueError:
        return None


def is_binary_like(dtype: pa.DataType) -> bool:
    return (pa.types.is_string(dtype) or pa.types.is_binary(dtype)
            or pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype))


def _aligned(buf: pa.Buffer, width_bytes: int) -> pa.Buffer:
    """Legacy pages are not aligned; Arrow kernels want values at their natural alignment."""
    if width_bytes > 1 and buf.address % min(width_bytes, 8):
        return pa.py_buffer(buf.to_pybytes())
    return buf


class PageDecoder:
    """Reads rows of one field's page in one batch. ``fetch(start, length) -> pa.Buffer``
    returns bytes of the file (checked against the page data region); ``page(field_id,
    batch)`` gives the page table entry; ``dictionary(field_id)`` the dictionary values."""

    def __init__(self, fetch, page, dictionary, data_end: int, path):
        self.fetch = fetch
        self.page = page
        self.dictionary = dictionary
        self.data_end = data_end
        self.path = path

    def _bytes(self, start: int, length: int, what) -> pa.Buffer:
        if start < 0 or length < 0 or start > self.data_end or length > self.data_end - start:
            raise CorruptFileError(f"{what}: {length} bytes at {start} lie outside the page data "
                                   f"(ends at {self.data_end})", self.path)
        return self.fetch(start, length)

    def rows(self, node, dtype: pa.DataType, batch: int) -> int:
        """How many rows ``node``'s page holds in ``batch``."""
        if pa.types.is_struct(dtype):
            if not node.children:
                raise UnsupportedFeatureError(f"field {node.name!r}: a struct without fields",
                                              self.path)
            return self.rows(node.children[0], dtype.field(0).type, batch)
        _, length = self.page(node.id, batch)
        if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            return max(length - 1, 0)
        return length

    def read(self, node, dtype: pa.DataType, batch: int, lo: int, hi: int) -> pa.Array:
        """Rows ``[lo, hi)`` of ``node``'s page in ``batch`` as an array of ``dtype``."""
        what = f"field {node.name!r} (id {node.id}) batch {batch}"
        if pa.types.is_struct(dtype):
            if len(node.children) != dtype.num_fields:
                raise CorruptFileError(f"{what}: struct of {dtype.num_fields} fields has "
                                       f"{len(node.children)} child fields", self.path)
            children = [self.read(c, dtype.field(i).type, batch, lo, hi)
                        for i, c in enumerate(node.children)]
            return pa.StructArray.from_arrays(children, fields=list(dtype), mask=None) \
                if children else pa.array([{}] * (hi - lo), dtype)
        pos, length = self.page(node.id, batch)
        if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            return self._list(node, dtype, batch, pos, length, lo, hi, what)
        if hi > length:
            raise CorruptFileError(f"{what}: rows up to {hi} asked of a page of {length}",
                                   self.path)
        if pa.types.is_null(dtype):
            return pa.nulls(hi - lo)
        if is_binary_like(dtype):
            return self._binary(bool(node.field.nullable), dtype, pos, lo, hi, what)
        if pa.types.is_dictionary(dtype):
            return self._dictionary(node, dtype, pos, lo, hi, what)
        bits = fixed_bit_width(dtype)
        if bits is None:
            raise UnsupportedFeatureError(f"{what}: type {dtype} in a legacy file", self.path)
        return self._fixed(dtype, bits, pos, lo, hi, what)

    def _fixed(self, dtype, bits: int, pos: int, lo: int, hi: int, what) -> pa.Array:
        n = hi - lo
        if pa.types.is_fixed_size_list(dtype):
            size = dtype.list_size
            if size == 0:
                return pa.array([[]] * n, dtype)
            values = self._fixed(dtype.value_type, bits // size, pos, lo * size, hi * size, what)
            return pa.FixedSizeListArray.from_arrays(values, type=dtype)
        if bits == 1:
            first, end = lo // 8, (hi + 7) // 8
            buf = self._bytes(pos + first, end - first, what)
            return pa.Array.from_buffers(dtype, n, [None, buf], offset=lo % 8)
        width = bits // 8
        buf = _aligned(self._bytes(pos + lo * width, n * width, what), width)
        return pa.Array.from_buffers(dtype, n, [None, buf])

    def _binary(self, nullable: bool, dtype, pos: int, lo: int, hi: int, what) -> pa.Array:
        n = hi - lo
        raw = _aligned(self._bytes(pos + lo * 8, (n + 1) * 8, what), 8)
        positions = np.frombuffer(raw, dtype="<i8")
        large = pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)
        offsets, validity, nulls, bad = rebase_positions(positions, 0, self.data_end, large,
                                                         nullable)
        if bad >= 0:
            raise CorruptFileError(f"{what}: value position {bad + lo} goes backwards or outside "
                                   f"the page data", self.path)
        start = int(positions[0])
        data = self._bytes(start, int(positions[-1]) - start, what)
        if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
            bad = first_invalid_utf8_row(data, offsets)
            if bad >= 0:  # Arrow's checked build in pylance's reader refuses these too
                raise CorruptFileError(f"{what}: string of row {bad + lo} is not valid UTF-8",
                                       self.path)
        vbuf = pa.py_buffer(validity) if validity is not None else None
        return pa.Array.from_buffers(dtype, n, [vbuf, pa.py_buffer(offsets), data],
                                     null_count=nulls)

    def _dictionary(self, node, dtype, pos: int, lo: int, hi: int, what) -> pa.Array:
        key_type = dtype.index_type
        if key_type not in _KEY_TYPES:
            raise CorruptFileError(f"{what}: dictionary keys of type {key_type}", self.path)
        values = self.dictionary(node)
        if not values.type.equals(dtype.value_type):
            raise CorruptFileError(f"{what}: dictionary values are {values.type}, the field "
                                   f"says {dtype.value_type}", self.path)
        width = key_type.bit_width // 8
        buf = _aligned(self._bytes(pos + lo * width, (hi - lo) * width, what), width)
        keys = np.frombuffer(buf, dtype=key_type.to_pandas_dtype())
        bad = check_dictionary_keys(keys, len(values))
        if bad >= 0:
            raise CorruptFileError(f"{what}: dictionary key {keys[bad]} at row {bad + lo} is "
                                   f"outside the {len(values)} values", self.path)
        return pa.DictionaryArray.from_arrays(pa.Array.from_buffers(key_type, hi - lo,
                                                                    [None, buf]), values)

    def _list(self, node, dtype, batch, pos, length, lo, hi, what) -> pa.Array:
        if len(node.children) != 1:
            raise CorruptFileError(f"{what}: a list needs one child field", self.path)
        if hi + 1 > length:
            raise CorruptFileError(f"{what}: list rows up to {hi} asked of {length} positions",
                                   self.path)
        large = pa.types.is_large_list(dtype)
        width = 8 if large else 4
        raw = _aligned(self._bytes(pos + lo * width, (hi - lo + 1) * width, what), width)
        positions = np.frombuffer(raw, dtype="<i8" if large else "<i4")
        child, child_type = node.children[0], dtype.value_type
        limit = self.rows(child, child_type, batch)
        offsets, _, _, bad = rebase_positions(positions, 0, limit, large, False)
        if bad >= 0:
            raise CorruptFileError(f"{what}: list position {bad + lo} goes backwards or past the "
                                   f"{limit} child values", self.path)
        first, last = int(positions[0]), int(positions[-1])
        values = self.read(child, child_type, batch, first, last)
        arr_cls = pa.LargeListArray if large else pa.ListArray
        return arr_cls.from_arrays(pa.array(offsets), values, type=dtype)


def read_dictionary_values(fetch, field, value_type: pa.DataType, data_end: int, path):
    """The values of a dictionary field, stored where its ``Field.dictionary`` points (the
    data file's schema, or a legacy manifest file). String values read empty as null, as
    Lance's ``load_field_dictionary`` does."""
    off, n = int(field.dictionary.offset), int(field.dictionary.length)
    what = f"dictionary of field {field.name!r}"
    if off < 0 or n < 0 or n > data_end:
        raise CorruptFileError(f"{what}: {n} values at {off}", path)

    dec = PageDecoder(fetch, lambda _i, _b: (off, n), None, data_end, path)
    if is_binary_like(value_type):
        return dec._binary(True, value_type, off, 0, n, what)
    if value_type in _KEY_TYPES:
        return dec._fixed(value_type, value_type.bit_width, off, 0, n, what)
    raise UnsupportedFeatureError(f"{what}: values of type {value_type}", path)
