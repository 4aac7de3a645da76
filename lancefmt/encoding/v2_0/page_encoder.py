"""Encoding one Arrow array as a Lance 2.0 page: an ``ArrayEncoding`` tree plus buffers.

The choices mirror what pylance's 2.0 writer emits (lance_facts.md §3.4), so files we write
look like files Lance writes:

* fixed width (numbers, temporals, decimals, fixed-size binary, bool at 1 bit):
  ``nullable{no_nulls|some_nulls|all_nulls}`` around ``flat`` (validity buffer first);
* fixed-size lists: the same ``nullable`` around ``fixed_size_list{dimension, items}``;
* strings / binary: ``binary{indices: flat u64 end offsets, bytes, null_adjustment}`` with
  the bytes optionally zstd/lz4 compressed (field metadata ``lance-encoding:compression``);
  ``utf8`` pages of >= 100 rows with < 100 distinct values become a u8 ``dictionary``
  (0 = null);
* Arrow dictionaries: ``dictionary{indices, items}`` with null rows pointing at a null item;
* packed structs: ``packed_struct`` with the children's bytes interleaved row by row.

Buffers are handed back zero-copy where Arrow already has them in Lance's layout (fixed-width
values, string bytes, byte-aligned bitmaps).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._proto import encodings_v2_0_pb2 as pb
from ...errors import InvalidArgumentError, UnsupportedFeatureError
from .. import compression
from .._offsets import encode_adjusted_offsets
from .._validity import copy_bitmap
from .page_decoder import is_binary_like, value_bits

DICT_THRESHOLD = 100          # Lance's LANCE_DICT_ENCODING_THRESHOLD default
_DICT_SAMPLE = 4096           # distinct values of a prefix this long reject dictionary early


@dataclass
class PageOptions:
    """Per-field choices that come from field metadata."""

    compression: str | None = None
    compression_level: int | None = None
    dictionary: bool = True   # allow the low-cardinality string dictionary

    @classmethod
    def from_metadata(cls, metadata) -> "PageOptions":
        md = {}
        for k, v in (metadata or {}).items():
            md[k.decode() if isinstance(k, bytes) else k] = v.decode() if isinstance(v, bytes) else v
        scheme = md.get(compression.COMPRESSION_META_KEY)
        if scheme not in compression.supported_schemes():
            scheme = None  # Lance ignores unknown schemes; fsst is a 2.1+ feature
        level = md.get(compression.COMPRESSION_LEVEL_META_KEY)
        try:
            level = int(level) if level is not None else None
        except ValueError:
            level = None
        return cls(compression=scheme, compression_level=level)


@dataclass
class EncodedPage:
    encoding: pb.ArrayEncoding
    buffers: list = field(default_factory=list)
    num_rows: int = 0


class _Buffers:
    """Collects a page's buffers; ``add`` returns the Buffer reference to put in the tree."""

    def __init__(self):
        self.items = []

    def add(self, data) -> pb.Buffer:
        self.items.append(data)
        return pb.Buffer(buffer_index=len(self.items) - 1)


def encode_page(arr: pa.Array, options: PageOptions | None = None) -> EncodedPage:
    """The page that stores ``arr`` (a storage-typed array, any offset)."""
    options = options or PageOptions()
    bufs = _Buffers()
    enc = _encode(arr, bufs, options, top=True)
    return EncodedPage(enc, bufs.items, len(arr))


def _encode(arr: pa.Array, bufs: _Buffers, options: PageOptions, top: bool = False):
    t = arr.type
    if pa.types.is_dictionary(t):
        return _arrow_dictionary(arr, bufs, options)
    if is_binary_like(t):
        if (top and options.dictionary and pa.types.is_string(t)):
            enc = _maybe_string_dictionary(arr, bufs)
            if enc is not None:
                return enc
        return _binary(arr, bufs, options)
    if pa.types.is_struct(t):
        return _packed_struct(arr, bufs)
    if pa.types.is_null(t):
        return pb.ArrayEncoding(nullable=pb.Nullable(all_nulls=pb.Nullable.AllNull()))
    if pa.types.is_fixed_size_list(t) or value_bits(t) is not None:
        return _nullable(arr, bufs, lambda: _values(arr, bufs, options))
    raise UnsupportedFeatureError(f"no 2.0 page encoding for Arrow type {t}")


def _validity_buffer(arr: pa.Array):
    """The validity bitmap of ``arr`` starting at bit 0 (zero-copy when byte aligned)."""
    buf = arr.buffers()[0]
    n = len(arr)
    if arr.offset % 8 == 0:
        return buf.slice(arr.offset // 8, (n + 7) // 8)
    return copy_bitmap(buf, arr.offset, n)


def _nullable(arr: pa.Array, bufs: _Buffers, values) -> pb.ArrayEncoding:
    n = len(arr)
    nulls = arr.null_count
    if nulls == n:  # including empty pages, as Lance writes them
        return pb.ArrayEncoding(nullable=pb.Nullable(all_nulls=pb.Nullable.AllNull()))
    if nulls == 0:
        return pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=values())))
    validity = pb.ArrayEncoding(flat=pb.Flat(bits_per_value=1, buffer=bufs.add(_validity_buffer(arr))))
    return pb.ArrayEncoding(nullable=pb.Nullable(
        some_nulls=pb.Nullable.SomeNull(validity=validity, values=values())))


def _values(arr: pa.Array, bufs: _Buffers, options: PageOptions) -> pb.ArrayEncoding:
    """The values node (no validity) of a fixed-width or fixed-size-list array."""
    t = arr.type
    n = len(arr)
    if pa.types.is_fixed_size_list(t):
        dim = t.list_size
        child = arr.values.slice(arr.offset * dim, n * dim)
        if value_bits(t.value_type) is None and not pa.types.is_fixed_size_list(t.value_type):
            raise InvalidArgumentError(
                f"2.0 fixed-size lists hold fixed-width values, not {t.value_type}")
        items = _encode(child, bufs, options)
        return pb.ArrayEncoding(fixed_size_list=pb.FixedSizeList(dimension=dim, items=items))
    bits = value_bits(t)
    if bits == 1:
        data = arr.buffers()[1]
        buf = data.slice(arr.offset // 8, (n + 7) // 8) if arr.offset % 8 == 0 else \
            copy_bitmap(data, arr.offset, n)
    else:
        width = bits // 8
        buf = arr.buffers()[1].slice(arr.offset * width, n * width)
    return pb.ArrayEncoding(flat=pb.Flat(bits_per_value=bits, buffer=bufs.add(buf)))


def offsets_view(arr: pa.Array) -> np.ndarray:
    """The ``n + 1`` Arrow offsets of a (large) binary/string/list array, as numpy."""
    dtype = np.int64 if (pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
                         or pa.types.is_large_list(arr.type)) else np.int32
    n = len(arr)
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=arr.offset + n + 1)[arr.offset:]


def _binary(arr: pa.Array, bufs: _Buffers, options: PageOptions) -> pb.ArrayEncoding:
    n = len(arr)
    offsets = offsets_view(arr)
    validity = arr.buffers()[0] if arr.null_count else None
    ends, adjustment = encode_adjusted_offsets(offsets, validity, arr.offset)
    data = arr.buffers()[2]
    start, stop = int(offsets[0]), int(offsets[n])
    payload = data.slice(start, stop - start) if data is not None else pa.py_buffer(b"")
    flat = pb.Flat(bits_per_value=8)
    indices = pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(
        values=pb.ArrayEncoding(flat=pb.Flat(bits_per_value=64, buffer=bufs.add(ends))))))
    if options.compression:
        payload = compression.compress(options.compression, payload, options.compression_level)
        flat.compression.scheme = options.compression
        if options.compression_level is not None:
            flat.compression.level = options.compression_level
    flat.buffer.CopyFrom(bufs.add(payload))
    return pb.ArrayEncoding(binary=pb.Binary(indices=indices, bytes=pb.ArrayEncoding(flat=flat),
                                             null_adjustment=adjustment))


def _maybe_string_dictionary(arr: pa.Array, bufs: _Buffers):
    """The u8 low-cardinality dictionary page Lance writes for ``utf8`` pages of >= 100 rows
    with < 100 distinct values; ``None`` when the page does not qualify."""
    n = len(arr)
    if n < DICT_THRESHOLD:
        return None
    if n > _DICT_SAMPLE and pc.count_distinct(arr.slice(0, _DICT_SAMPLE)).as_py() >= DICT_THRESHOLD:
        return None
    if pc.count_distinct(arr).as_py() >= DICT_THRESHOLD:
        return None
    encoded = pc.dictionary_encode(arr)
    items = encoded.dictionary
    if len(items) == 0:
        items = pa.nulls(1, pa.string())  # an all-null page: one null item, as Lance writes
    shifted = pc.add(encoded.indices, 1)
    idx = np.asarray(pc.fill_null(shifted, 0).cast(pa.uint8()))
    indices = pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(
        values=pb.ArrayEncoding(flat=pb.Flat(bits_per_value=8, buffer=bufs.add(idx))))))
    items_enc = _binary(items, bufs, PageOptions())
    return pb.ArrayEncoding(dictionary=pb.Dictionary(
        indices=indices, items=items_enc, num_dictionary_items=len(items)))


def _arrow_dictionary(arr: pa.DictionaryArray, bufs: _Buffers, options: PageOptions):
    """An Arrow dictionary column: null rows point at a null dictionary item."""
    items = arr.dictionary
    indices = arr.indices
    if indices.null_count:
        null_items = np.flatnonzero(np.asarray(items.is_null(), dtype=bool)) if items.null_count \
            else np.zeros(0, dtype=np.int64)
        if null_items.size:
            null_pos = int(null_items[0])
        else:
            null_pos = len(items)
            items = pa.concat_arrays([items, pa.nulls(1, items.type)])
        try:
            indices = pc.fill_null(indices, pa.scalar(null_pos, indices.type))
        except (pa.ArrowInvalid, OverflowError):
            raise InvalidArgumentError(
                f"dictionary of {len(items) - 1} items has no room for a null item in "
                f"{indices.type} indices") from None
    idx_enc = _nullable(indices, bufs, lambda: _values(indices, bufs, options))
    item_enc = _encode(items, bufs, PageOptions())
    return pb.ArrayEncoding(dictionary=pb.Dictionary(
        indices=idx_enc, items=item_enc, num_dictionary_items=len(items)))


def _packed_struct(arr: pa.StructArray, bufs: _Buffers) -> pb.ArrayEncoding:
    """Children's fixed-width bytes interleaved row by row (no nulls can be stored)."""
    t = arr.type
    n = len(arr)
    if arr.null_count:
        raise InvalidArgumentError("a packed struct cannot store null rows in file version 2.0")
    children = arr.flatten()
    inner, cols = [], []
    for i, child in enumerate(children):
        ct = child.type
        if child.null_count:
            raise InvalidArgumentError(
                f"packed struct child {t.field(i).name!r} has nulls (2.0 cannot store them)")
        width, node = _packed_child(child)
        inner.append(node)
        cols.append(_fixed_bytes(child, width))
    row = sum(c.shape[1] for c in cols)
    out = np.empty((n, row), dtype=np.uint8)
    pos = 0
    for c in cols:
        out[:, pos:pos + c.shape[1]] = c
        pos += c.shape[1]
    return pb.ArrayEncoding(packed_struct=pb.PackedStruct(inner=inner, buffer=bufs.add(out)))


def _packed_child(child: pa.Array):
    t = child.type
    if pa.types.is_fixed_size_list(t):
        w, node = _packed_child(child.values)
        items = node
        enc = pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(
            values=pb.ArrayEncoding(fixed_size_list=pb.FixedSizeList(
                dimension=t.list_size, items=items)))))
        return w * t.list_size, enc
    bits = value_bits(t)
    if bits is None or bits % 8:
        raise InvalidArgumentError(f"packed struct child of type {t} (fixed-width bytes only)")
    enc = pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(
        values=pb.ArrayEncoding(flat=pb.Flat(bits_per_value=bits, buffer=pb.Buffer())))))
    return bits // 8, enc


def _fixed_bytes(child: pa.Array, width: int) -> np.ndarray:
    """``(n, width)`` uint8 view of a fixed-width (or FSL of fixed-width) array's values."""
    n = len(child)
    t = child.type
    if pa.types.is_fixed_size_list(t):
        inner = child.values.slice(child.offset * t.list_size, n * t.list_size)
        return _fixed_bytes(inner, width // t.list_size).reshape(n, width)
    raw = np.frombuffer(child.buffers()[1], dtype=np.uint8,
                        count=(child.offset + n) * width)[child.offset * width:]
    return raw.reshape(n, width)


def encode_list_offsets(offsets: np.ndarray, validity, num_items: int):
    """The page of a 2.0 list offsets column from ``n + 1`` int64 offsets (starting at 0) and
    an optional validity bitmap: ``list{offsets: flat u64, null_offset_adjustment, num_items}``."""
    adjustment = num_items + 1
    ends, _ = encode_adjusted_offsets(offsets, validity, 0, adjustment)
    bufs = _Buffers()
    values = pb.ArrayEncoding(flat=pb.Flat(bits_per_value=64, buffer=bufs.add(ends)))
    enc = pb.ArrayEncoding(list=pb.List(
        offsets=pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=values))),
        null_offset_adjustment=adjustment, num_items=num_items))
    return EncodedPage(enc, bufs.items, len(offsets) - 1)


def struct_header_page(num_rows: int) -> EncodedPage:
    """The single page of a 2.0 struct header column: ``struct{}``, no buffers."""
    return EncodedPage(pb.ArrayEncoding(struct=pb.SimpleStruct()), [], num_rows)
