"""Rep/def levels + a value block -> the Arrow array of one leaf column's path.

A leaf column of a 2.1 / 2.2 file stores one leaf field together with every struct and list
above it, as rep/def ``layers`` (innermost first). :func:`page_array` unravels them layer by
layer (``_repdef.unravel_list`` for lists, numpy for item layers) and builds the Arrow array of
the leaf's *path type*: the field's type cut down to the structs and lists leading to this leaf.
:func:`merge` joins the path arrays of a struct's leaves into the field's full type.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import CorruptFileError, UnsupportedFeatureError
from . import blocks
from ._repdef import unravel_list
from .pages import ConstantValue, PageData
from .values import (DictionaryValues, FixedSizeListValues, FixedValues, StructValues,
                     VariableValues)

_INT32_MAX = 2**31 - 1


def is_list_type(t) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def _vbuf(validity):
    if validity is None or bool(validity.all()):
        return None
    return pa.py_buffer(np.packbits(validity, bitorder="little"))


def page_array(page: PageData, path_types: list, where: str, path) -> pa.Array:
    """The page as an array of ``path_types[0]`` (``path_types``: the structs/lists from the
    field down to the leaf type, top first)."""
    layers = page.layers
    if len(layers.kinds) != len(path_types):
        raise UnsupportedFeatureError(
            f"{where}: {len(layers.kinds)} rep/def layers for a field path of "
            f"{len(path_types)} levels ({path_types[0]})", path)
    rep, defs = page.rep, page.defs
    n_entries = defs.size if defs is not None else rep.size if rep is not None else page.num_visible
    if rep is not None and rep.size != n_entries:
        raise CorruptFileError(f"{where}: {rep.size} rep levels but {n_entries} def levels", path)
    if layers.num_lists and rep is None:
        raise CorruptFileError(f"{where}: list layers without repetition levels", path)
    if defs is None:
        if rep is not None:  # lists without def levels: every list valid and non-empty
            defs = np.zeros(n_entries, dtype=np.uint16)
    elif int(defs.max(initial=0)) > layers.max_def:
        raise CorruptFileError(f"{where}: def level {int(defs.max())} above the layers' "
                               f"{layers.max_def}", path)
    if rep is not None and int(rep.max(initial=0)) > layers.num_lists:
        raise CorruptFileError(f"{where}: rep level {int(rep.max())} above the "
                               f"{layers.num_lists} list layers", path)
    cur_rep, cur_def = rep, defs
    built = None
    for i, kind in enumerate(layers.kinds):
        dtype = path_types[len(path_types) - 1 - i]
        top = layers.run_top(i)
        if not layers.is_list(i):
            d = cur_def
            if d is None:  # no levels at all: every element valid
                count, validity = n_entries, None
            else:
                if d.size and int(d.max()) > top:
                    d = d[d <= top]
                null = layers.null_code[i]
                count, validity = d.size, ((d < null) if null else None)
            if i == 0:
                built = leaf_array(page, dtype, validity, count, where, path)
            else:
                if not pa.types.is_struct(dtype) or len(built) != count:
                    raise CorruptFileError(f"{where}: struct layer {i} does not match the "
                                           f"field ({dtype})", path)
                built = pa.Array.from_buffers(dtype, count, [_vbuf(validity)],
                                              children=[built])
        else:
            if not is_list_type(dtype):
                raise CorruptFileError(f"{where}: list layer {i} for a {dtype} field", path)
            lo = layers.cum[i - 1] if i else 0
            offsets, validity, cur_rep, cur_def = unravel_list(
                np.ascontiguousarray(cur_rep), np.ascontiguousarray(cur_def), lo,
                layers.null_code[i], layers.empty_code[i], top)
            if int(offsets[-1]) != len(built):
                raise CorruptFileError(f"{where}: lists hold {int(offsets[-1])} items, the "
                                       f"layer below has {len(built)}", path)
            if pa.types.is_list(dtype):
                if offsets[-1] > _INT32_MAX:
                    raise UnsupportedFeatureError(f"{where}: a list page of more than 2^31 "
                                                  f"items (read as large_list)", path)
                offsets = offsets.astype(np.int32)
            built = pa.Array.from_buffers(dtype, validity.size,
                                          [_vbuf(validity), pa.py_buffer(offsets)],
                                          children=[built])
    return built


def leaf_array(page: PageData, dtype, validity, n: int, where, path) -> pa.Array:
    """The leaf items (``n`` of them; ``validity`` bool or None) of a page."""
    values = page.values
    if pa.types.is_null(dtype):
        return pa.nulls(n)
    if values is None:  # all null
        return pa.nulls(n, type=dtype)
    if isinstance(values, ConstantValue):
        one = _constant_array(values, dtype, where, path)
        arr = one.take(pa.array(np.zeros(n, dtype=np.int64)))
        return _with_validity(arr, validity)
    if values.num_values != n:
        raise CorruptFileError(f"{where}: {values.num_values} values for {n} visible items", path)
    return to_arrow(values, dtype, validity, where, path)


def _constant_array(value: ConstantValue, dtype, where, path) -> pa.Array:
    bufs = [pa.py_buffer(b) for b in value.buffers]
    if pa.types.is_boolean(dtype) and len(bufs) == 1 and len(value.buffers[0]) >= 1:
        bufs = [pa.py_buffer(bytes([value.buffers[0][0] & 1]))]
    try:
        arr = pa.Array.from_buffers(dtype, 1, [None] + bufs)
        arr.validate(full=True)
    except (pa.ArrowException, ValueError, TypeError) as e:
        raise CorruptFileError(f"{where}: constant value does not fit {dtype} ({e})", path) from None
    return arr


def _with_validity(arr: pa.Array, validity) -> pa.Array:
    vb = _vbuf(validity)
    if vb is None:
        return arr
    if arr.null_count:
        return pc.if_else(pa.array(validity), arr, pa.nulls(len(arr), arr.type))
    if pa.types.is_struct(arr.type) or pa.types.is_fixed_size_list(arr.type) or \
            is_list_type(arr.type):
        return pc.if_else(pa.array(validity), arr, pa.nulls(len(arr), arr.type))
    return pa.Array.from_buffers(arr.type, len(arr), [vb] + arr.buffers()[1:], offset=arr.offset)


def _width_bits(dtype) -> int | None:
    if pa.types.is_fixed_size_binary(dtype):
        return dtype.byte_width * 8
    try:
        return dtype.bit_width
    except ValueError:
        return None


def to_arrow(block, dtype, validity, where, path) -> pa.Array:
    """A value block as an Arrow array of ``dtype`` with ``validity`` (bool array or None)."""
    n = block.num_values
    if isinstance(block, DictionaryValues):
        return _dictionary(block, dtype, validity, where, path)
    if isinstance(block, FixedValues):
        bits = _width_bits(dtype)
        if bits != block.bits_per_value or pa.types.is_nested(dtype) or \
                pa.types.is_dictionary(dtype):
            raise CorruptFileError(f"{where}: {block.bits_per_value}-bit values for a {dtype} "
                                   f"field", path)
        need = (n * bits + 7) // 8
        if block.data.size < need:
            raise CorruptFileError(f"{where}: {block.data.size} value bytes for {n} values", path)
        return pa.Array.from_buffers(dtype, n, [_vbuf(validity), pa.py_buffer(block.data)])
    if isinstance(block, VariableValues):
        if not (pa.types.is_string(dtype) or pa.types.is_binary(dtype) or
                pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)):
            raise CorruptFileError(f"{where}: variable-width values for a {dtype} field", path)
        offsets = np.asarray(block.offsets, dtype=np.int64)
        data = block.data
        if offsets.size != n + 1:
            raise CorruptFileError(f"{where}: {offsets.size} offsets for {n} values", path)
        if n and (offsets[0] < 0 or offsets[-1] > data.size or np.any(np.diff(offsets) < 0)):
            raise CorruptFileError(f"{where}: bad value offsets", path)
        if offsets[0]:
            data = data[offsets[0]:]
            offsets = offsets - offsets[0]
        if not (pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)):
            if offsets[-1] > _INT32_MAX:
                raise UnsupportedFeatureError(f"{where}: more than 2 GiB in a 32-bit string "
                                              f"page", path)
            offsets = offsets.astype(np.int32)
        arr = pa.Array.from_buffers(dtype, n, [_vbuf(validity), pa.py_buffer(offsets),
                                               pa.py_buffer(data)])
        if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
            try:
                arr.validate(full=True)
            except pa.ArrowInvalid as e:
                raise CorruptFileError(f"{where}: {e}", path) from None
        return arr
    if isinstance(block, FixedSizeListValues):
        if not pa.types.is_fixed_size_list(dtype) or dtype.list_size != block.dim:
            raise CorruptFileError(f"{where}: fixed-size lists of {block.dim} for a {dtype} "
                                   f"field", path)
        child = to_arrow(block.child, dtype.value_type, block.validity, where, path)
        return pa.Array.from_buffers(dtype, n, [_vbuf(validity)], children=[child])
    if isinstance(block, StructValues):
        if not pa.types.is_struct(dtype) or dtype.num_fields != len(block.children):
            raise CorruptFileError(f"{where}: a packed struct of {len(block.children)} fields "
                                   f"for a {dtype} field", path)
        children = [to_arrow(c, dtype.field(i).type, None, where, path)
                    for i, c in enumerate(block.children)]
        return pa.Array.from_buffers(dtype, n, [_vbuf(validity)], children=children)
    raise CorruptFileError(f"{where}: unknown value block {type(block).__name__}", path)


def _dictionary(block: DictionaryValues, dtype, validity, where, path) -> pa.Array:
    d = block.dictionary
    m = d.num_values
    idx = np.asarray(block.indices)
    if idx.size and int(idx.max()) >= m:
        raise CorruptFileError(f"{where}: dictionary index {int(idx.max())} of {m} items", path)
    if pa.types.is_dictionary(dtype):
        items = to_arrow(d, dtype.value_type, None, where, path)
        mask = None if validity is None or validity.all() else ~validity
        indices = pa.array(idx.astype(dtype.index_type.to_pandas_dtype()), type=dtype.index_type,
                           mask=mask)   # from_arrays takes no mask with Arrow inputs
        return pa.DictionaryArray.from_arrays(indices, items)
    items = to_arrow(d, dtype, None, where, path)
    arr = items.take(pa.array(idx.astype(np.int64)))
    return _with_validity(arr, validity)


# -- several leaves of one field -------------------------------------------------------------

def merge(dtype, items: list) -> pa.Array:
    """Join ``(leaf path, array)`` items -- path arrays of one field's leaves over the same rows,
    each of the field's type cut down to one leaf -- into one array of ``dtype``."""
    if len(items) == 1 and items[0][1].type.equals(dtype):
        return items[0][1]
    if pa.types.is_struct(dtype):
        first = items[0][1]
        children = []
        for i in range(dtype.num_fields):
            sub = [(p[1:], a.field(0)) for p, a in items if p and p[0] == i]
            if not sub:
                raise CorruptFileError(f"struct field {dtype.field(i).name!r} has no column")
            children.append(merge(dtype.field(i).type, sub))
        mask = first.is_null() if first.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(dtype), mask=mask)
    if is_list_type(dtype):
        first = items[0][1]
        sub = []
        for p, a in items:
            o = a.offsets.to_numpy()
            sub.append((p, a.values.slice(int(o[0]), int(o[-1] - o[0]))))
        child = merge(dtype.value_type, sub)
        o = first.offsets.to_numpy()
        offsets = (o - o[0]).astype(o.dtype)
        vb = None
        if first.null_count:
            vb = pa.py_buffer(np.packbits(first.is_valid().to_numpy(zero_copy_only=False),
                                          bitorder="little"))
        return pa.Array.from_buffers(dtype, len(first), [vb, pa.py_buffer(offsets)],
                                     children=[child])
    if len(items) != 1:
        raise CorruptFileError(f"{len(items)} columns for one leaf of type {dtype}")
    return items[0][1]


__all__ = ["page_array", "merge", "to_arrow", "blocks"]
