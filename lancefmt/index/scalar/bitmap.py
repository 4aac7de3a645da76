"""BITMAP: the rows of every distinct value of a column, one roaring row-id map per value.

One file, ``bitmap_page_lookup.lance`` (see :mod:`.bitmap_file`). A query picks the keys it
matches by running the scan's own Arrow kernel (``equal``, ``less``..., ``is_in``) over the
distinct keys -- so a key matches exactly when a row holding it would pass the filter,
floats' -0.0 and NaN included -- and unions their maps. Answers are exact.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._proto import index_details_pb2
from ...errors import CorruptFileError, InvalidArgumentError, UnsupportedColumnTypeError
from ...sql.float_order import array_keys, compare_keys, scalar_key
from ...sql.sargable import Equals, IsIn, IsNull, Range, normalized
from ..core.registry import ROW_ID, VALUE, IndexType, LoadedIndex, TrainingData, register
from ..core.rowset import EMPTY, SearchResult
from ..core.store import IndexStore
from ..core.treemap import map_rows, union_maps
from .bitmap_file import Lookup, bool_mask, group_rows, kept, moved, regroup, write_lookup
from .btree import orderable


def comparable(keys: pa.Array) -> pa.Array:
    """``keys`` in a type Arrow's comparison kernels take (half floats widen exactly)."""
    return keys.cast(pa.float32()) if pa.types.is_float16(keys.type) else keys


def literal(value, keys: pa.Array, value_type: pa.DataType) -> pa.Scalar:
    try:
        return pa.scalar(value, value_type).cast(keys.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as e:
        raise InvalidArgumentError(f"cannot compare {value!r} with keys of type {keys.type} ({e})") from None


def value_set(values, keys: pa.Array, value_type: pa.DataType) -> pa.Array:
    try:
        return pa.array(list(values), value_type).cast(keys.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as e:
        raise InvalidArgumentError(f"cannot compare {values!r} with keys of type {keys.type} ({e})") from None


def _float_matches(keys: pa.Array, query) -> np.ndarray:
    """``matching_keys`` for float keys, compared by order key (IEEE total order, as pylance)."""
    k = array_keys(keys)
    t = keys.type
    if isinstance(query, Equals):
        return np.flatnonzero(k == scalar_key(query.value, t))
    if isinstance(query, IsIn):
        return np.flatnonzero(np.isin(k, np.array([scalar_key(v, t) for v in query.values], k.dtype)))
    if isinstance(query, Range):
        mask = np.ones(len(k), dtype=bool)
        if query.lower is not None:
            mask &= compare_keys(k, "gte" if query.lower_inclusive else "gt", scalar_key(query.lower, t))
        if query.upper is not None:
            mask &= compare_keys(k, "lte" if query.upper_inclusive else "lt", scalar_key(query.upper, t))
        return np.flatnonzero(mask)
    raise InvalidArgumentError(f"BITMAP cannot answer {type(query).__name__}")


def matching_keys(keys: pa.Array, query) -> np.ndarray:
    """Indices of the non-null ``keys`` a row holding them would pass ``query`` with."""
    if not len(keys):
        return np.empty(0, dtype=np.int64)
    if pa.types.is_floating(keys.type):
        return _float_matches(keys, normalized(query))
    cmp_keys = comparable(keys)
    if isinstance(query, Equals):
        mask = bool_mask(pc.equal(cmp_keys, literal(query.value, cmp_keys, query.type)))
    elif isinstance(query, Range):
        mask = np.ones(len(keys), dtype=bool)
        if query.lower is not None:
            f = pc.greater_equal if query.lower_inclusive else pc.greater
            mask &= bool_mask(f(cmp_keys, literal(query.lower, cmp_keys, query.type)))
        if query.upper is not None:
            f = pc.less_equal if query.upper_inclusive else pc.less
            mask &= bool_mask(f(cmp_keys, literal(query.upper, cmp_keys, query.type)))
    elif isinstance(query, IsIn):
        if not query.values:
            return np.empty(0, dtype=np.int64)
        mask = bool_mask(pc.is_in(cmp_keys, value_set=value_set(query.values, cmp_keys, query.type)))
    else:
        raise InvalidArgumentError(f"BITMAP cannot answer {type(query).__name__}")
    return np.flatnonzero(mask)


class BitmapType(IndexType):
    name = "BITMAP"
    type_name = "Bitmap"
    details_type_url = "/lance.table.BitmapIndexDetails"
    details_class = index_details_pb2.BitmapIndexDetails
    index_version = 0
    queries = (Equals, Range, IsIn, IsNull)
    exact = True

    def check_field(self, field: pa.Field) -> None:
        if not orderable(field.type):
            raise UnsupportedColumnTypeError(
                f"BTREE/BITMAP index column {field.name} must be int, float, bool, str, "
                f"large_str, binary, large_binary, decimal, fixed-size-binary, or temporal")

    def train(self, data: TrainingData, store: IndexStore, params: dict):
        table = data.table()
        groups = group_rows(table.column(VALUE), table.column(ROW_ID).to_numpy())
        write_lookup(store, data.field.type, groups)
        return self.details_class()

    def load(self, store: IndexStore, details) -> "BitmapIndex":
        return BitmapIndex(store)

    def merge(self, segments: list, dest: IndexStore):
        """Every segment's rows under one lookup (their keys' row sets unioned)."""
        if not segments:
            raise InvalidArgumentError("nothing to merge")
        value_type = segments[0].lookup.value_type
        write_lookup(dest, value_type, regroup(value_type, [s.lookup.entries() for s in segments]))
        return self.details_class()


class BitmapIndex(LoadedIndex):
    def __init__(self, store: IndexStore):
        self.lookup = Lookup(store)

    @property
    def value_type(self) -> pa.DataType:
        return self.lookup.value_type

    def search(self, query) -> SearchResult:
        return SearchResult(self.lookup.answer(query, lambda: self._rows(query)))

    def _rows(self, query) -> np.ndarray:
        lk = self.lookup
        if isinstance(query, IsNull):
            return map_rows(lk.null_map())
        try:
            chosen = matching_keys(lk.keys, query)
        except (pa.ArrowException, ValueError) as e:
            if isinstance(e, InvalidArgumentError):
                raise
            raise CorruptFileError(f"keys cannot be compared ({e})", lk.path) from None
        if not chosen.size:
            return EMPTY.copy()
        return map_rows(union_maps(lk.key_maps(chosen)))

    def statistics(self) -> dict:
        return {"num_bitmaps": self.lookup.num_bitmaps()}

    def prewarm(self) -> None:
        self.lookup.prewarm()

    def update(self, new_data: TrainingData, dest: IndexStore, keep=None):
        new = new_data.table()
        lk = self.lookup
        write_lookup(dest, lk.value_type, regroup(lk.value_type, [
            kept(lk.entries(), keep), (new.column(VALUE), new.column(ROW_ID).to_numpy())]))
        return index_details_pb2.BitmapIndexDetails()

    def remap(self, mapping, dest: IndexStore):
        lk = self.lookup
        write_lookup(dest, lk.value_type, regroup(lk.value_type, [moved(lk.entries(), mapping)]))
        return index_details_pb2.BitmapIndexDetails()


BITMAP = register(BitmapType())
