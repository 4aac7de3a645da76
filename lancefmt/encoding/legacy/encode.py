"""Encode Arrow arrays into legacy (v0.1) pages, byte for byte as pylance's legacy writer does.

One call of :meth:`PageEncoder.encode` writes one field's pages for one batch (children after
their parent, pre-order) and records ``(position, length)`` per field id in the page table:

* fixed-width values (and booleans, bit-packed, nulls as false) written plain, fixed-size
  lists and binaries flattened; the value buffer's null slots are written as they are;
* strings/binaries: the value bytes, then ``n + 1`` int64 absolute file offsets (the page
  points at those);
* lists: ``n + 1`` int32 (large: int64) positions from 0 into the child's page of this batch,
  then the child; structs write only their children; nulls write nothing (length = rows);
* dictionaries: the keys, plain; the values go once into the file's schema at close.

The legacy format stores no validity for these types, so what pylance reads back loses the
nulls the same way (see :mod:`.decode`).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError, UnsupportedFeatureError
from ._kernels import absolute_positions
from .decode import fixed_bit_width, is_binary_like


def _value_bytes(arr: pa.Array, width: int) -> memoryview:
    """The ``len(arr)`` values of a fixed-width array's value buffer (slice offset applied)."""
    buf = arr.buffers()[1]
    start = arr.offset * width
    return memoryview(buf)[start:start + len(arr) * width] if buf is not None else \
        memoryview(bytes(len(arr) * width))


def _offsets(arr: pa.Array, large: bool) -> np.ndarray:
    """``n + 1`` offsets of a string/binary/list array as int64 (slice offset applied)."""
    dt = np.int64 if large else np.int32
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(len(arr) + 1, dtype=np.int64)
    raw = np.frombuffer(buf, dtype=dt)[arr.offset:arr.offset + len(arr) + 1]
    return raw.astype(np.int64)


class PageEncoder:
    """Writes pages through ``write(bytes) -> position`` and fills ``pages``
    (``{(field_id, batch): (position, length)}``) and ``dictionaries`` (field id -> values)."""

    def __init__(self, write, tell):
        self.write = write
        self.tell = tell
        self.pages: dict[tuple[int, int], tuple[int, int]] = {}
        self.dictionaries: dict[int, pa.Array] = {}

    def encode(self, node, arr: pa.Array, batch: int) -> None:
        dtype = arr.type
        fid = node.id
        n = len(arr)
        if pa.types.is_struct(dtype):
            for i, child in enumerate(node.children):
                self.encode(child, arr.field(i), batch)
            return
        if pa.types.is_null(dtype):
            self.pages[(fid, batch)] = (self.tell(), n)
            return
        if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            large = pa.types.is_large_list(dtype)
            offs = _offsets(arr, large)
            positions = absolute_positions(offs, 0)
            pos = self.write(positions.astype(np.int64 if large else np.int32).tobytes())
            self.pages[(fid, batch)] = (pos, n + 1)
            values = arr.values.slice(int(offs[0]), int(offs[-1] - offs[0]))
            self.encode(node.children[0], values, batch)
            return
        if is_binary_like(dtype):
            large = pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)
            pos = self._binary(arr, large)
            self.pages[(fid, batch)] = (pos, n)
            return
        if pa.types.is_dictionary(dtype):
            self._remember_dictionary(node, arr.dictionary)
            keys = arr.indices
            pos = self.write(bytes(_value_bytes(keys, keys.type.bit_width // 8)))
            self.pages[(fid, batch)] = (pos, n)
            return
        if fixed_bit_width(dtype) is None:
            raise UnsupportedFeatureError(f"field {node.name!r}: type {dtype} cannot be stored "
                                          f"in a legacy Lance file")
        self.pages[(fid, batch)] = (self.write(self.plain_bytes(arr)), n)

    def _binary(self, arr: pa.Array, large: bool) -> int:
        """Value bytes, then their absolute positions; returns where the positions start."""
        offs = _offsets(arr, large)
        data = arr.buffers()[2]
        start, end = int(offs[0]), int(offs[-1])
        data_pos = self.tell()
        if end > start:
            self.write(memoryview(data)[start:end])
        return self.write(absolute_positions(offs, data_pos).tobytes())

    def plain_bytes(self, arr: pa.Array) -> bytes:
        """The plain encoding of a fixed-width array (booleans bit-packed, nulls as false)."""
        dtype = arr.type
        if pa.types.is_boolean(dtype):
            bits = arr.fill_null(False).to_numpy(zero_copy_only=False)
            return np.packbits(bits.astype(np.uint8), bitorder="little").tobytes()
        if pa.types.is_fixed_size_list(dtype):
            size = dtype.list_size
            values = arr.values.slice(arr.offset * size, len(arr) * size)
            return self.plain_bytes(values)
        width = fixed_bit_width(dtype) // 8
        return bytes(_value_bytes(arr, width))

    def _remember_dictionary(self, node, values: pa.Array) -> None:
        """One dictionary per field and file (the format keeps one, in the schema)."""
        have = self.dictionaries.get(node.id)
        if have is None:
            if not (is_binary_like(values.type) or pa.types.is_integer(values.type)):
                raise UnsupportedFeatureError(f"field {node.name!r}: dictionary values of type "
                                              f"{values.type} in a legacy Lance file")
            self.dictionaries[node.id] = values
        elif not have.equals(values):
            raise InvalidArgumentError(f"field {node.name!r}: every batch of a legacy file must "
                                       f"share one dictionary (as pylance requires)")

    def write_dictionary(self, values: pa.Array) -> int:
        """Dictionary values as pylance stores them in a schema: plain numbers, or binary
        (returns the position a ``Field.dictionary.offset`` names)."""
        if is_binary_like(values.type):
            large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
            return self._binary(values, large)
        return self.write(self.plain_bytes(values))
