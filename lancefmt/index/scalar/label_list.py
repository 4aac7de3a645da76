"""LABEL_LIST: a BITMAP over the items of a list column, for ``array_has_any`` / ``array_has_all``.

Files (what pylance 14 writes, index_version 1): ``bitmap_page_lookup.lance`` as BITMAP's, its
keys the lists' distinct items (null items under the null key), plus one more global buffer
holding the RowIdTreeMap of the rows whose *list* is null; schema metadata
``lance:label_list_nulls`` names that buffer ("1").

A query matches the needles against the keys with the kernel the scan uses (``index_in``), so
an item matches a needle exactly when the scan's ``array_has*`` would count it: any needle's
rows unioned (LabelsAny), every needle's rows intersected (LabelsAll). Null and empty lists
hold no item, so neither ever matches, as in the scan (where a null list gives NULL).
``array_has_all(x, [])`` holds for every non-null list: that answer is "all but the null
lists", left for the scan to re-check.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._proto import index_details_pb2
from ...errors import CorruptFileError, InvalidArgumentError, UnsupportedColumnTypeError
from ...sql.sargable import LabelsAll, LabelsAny
from ..core.registry import ROW_ID, VALUE, IndexType, LoadedIndex, TrainingData, register
from ..core.rowset import EMPTY, SearchResult
from ..core.store import IndexStore
from ..core.treemap import encode_treemap, intersect_maps, map_rows, parse_treemap, union_maps
from .bitmap import comparable, value_set
from .bitmap_file import LOOKUP, Lookup, group_rows, kept, moved, regroup, write_lookup
from .btree import orderable

NULLS_KEY = "lance:label_list_nulls"


def is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def flatten(lists, ids: np.ndarray) -> tuple[pa.ChunkedArray, np.ndarray, np.ndarray]:
    """(items, the row id of each item, row ids of the null lists) of a list column."""
    if isinstance(lists, pa.Array):
        lists = pa.chunked_array([lists], type=lists.type)
    if len(lists) == 0:
        return pa.chunked_array([], lists.type.value_type), ids[:0], ids[:0]
    null = np.asarray(lists.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    items = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists)
    parents = np.concatenate([c.to_numpy(zero_copy_only=False) for c in parents.chunks]) \
        if parents.num_chunks else np.empty(0, np.int64)
    return items, ids[parents.astype(np.int64)], ids[null]


def write_label_list(store: IndexStore, item_type: pa.DataType, groups, list_nulls: np.ndarray) -> None:
    write_lookup(store, item_type, groups, {NULLS_KEY: "1"},
                 [encode_treemap(np.unique(np.asarray(list_nulls, dtype=np.uint64)))])


class LabelListType(IndexType):
    name = "LABEL_LIST"
    type_name = "LabelList"
    details_type_url = "/lance.table.LabelListIndexDetails"
    details_class = index_details_pb2.LabelListIndexDetails
    index_version = 1
    queries = (LabelsAny, LabelsAll)
    exact = True

    def check_field(self, field: pa.Field) -> None:
        if not is_list(field.type):
            raise UnsupportedColumnTypeError(
                f"LABEL_LIST index column {field.name} must be a list or large list")
        if not orderable(field.type.value_type):
            raise InvalidArgumentError(
                f"LabelList index item type must be non-nested. Column has type {field.type}")

    def train(self, data: TrainingData, store: IndexStore, params: dict):
        table = data.table()
        items, item_ids, nulls = flatten(table.column(VALUE), table.column(ROW_ID).to_numpy())
        item_type = data.field.type.value_type
        write_label_list(store, item_type, group_rows(items, item_ids), nulls)
        return self.details_class()

    def load(self, store: IndexStore, details) -> "LabelListIndex":
        return LabelListIndex(store)

    def merge(self, segments: list, dest: IndexStore):
        """Every segment's item rows and null lists under one lookup."""
        if not segments:
            raise InvalidArgumentError("nothing to merge")
        value_type = segments[0].lookup.value_type
        nulls = np.concatenate([map_rows(s.list_nulls) for s in segments])
        write_label_list(dest, value_type, regroup(value_type, [s.lookup.entries() for s in segments]),
                         np.sort(nulls))
        return self.details_class()


class LabelListIndex(LoadedIndex):
    def __init__(self, store: IndexStore):
        self.lookup = Lookup(store)
        meta = store.schema_metadata(LOOKUP)
        self.list_nulls = {}
        buf = meta.get(NULLS_KEY)
        if buf is not None:  # index_version 0 files have none
            reader = store.reader(LOOKUP)
            try:
                index = int(buf.decode("ascii") if isinstance(buf, bytes) else buf)
            except (ValueError, UnicodeDecodeError):
                raise CorruptFileError(f"bad {NULLS_KEY} {buf!r}", self.lookup.path) from None
            if not 0 < index < len(reader.metadata.global_buffers):
                raise CorruptFileError(f"{NULLS_KEY} names missing global buffer {index}", self.lookup.path)
            self.list_nulls = parse_treemap(reader.read_global_buffer(index), self.lookup.path)

    def search(self, query) -> SearchResult:
        if not isinstance(query, (LabelsAny, LabelsAll)):
            raise InvalidArgumentError(f"LABEL_LIST cannot answer {type(query).__name__}")
        lk = self.lookup
        if not query.values:
            if isinstance(query, LabelsAny):
                return SearchResult(EMPTY)
            # every non-null list holds all of no labels: re-checked by the scan
            return SearchResult(map_rows(self.list_nulls), exact=False, negated=True)
        return SearchResult(lk.answer(query, lambda: self._rows(query)))

    def _rows(self, query) -> np.ndarray:
        lk = self.lookup
        if not len(lk.keys):
            return EMPTY.copy()
        keys = comparable(lk.keys)
        try:
            needles = pc.unique(value_set(query.values, keys, query.type))
            which = pc.fill_null(pc.index_in(keys, value_set=needles), -1)
        except (pa.ArrowException, ValueError) as e:
            if isinstance(e, InvalidArgumentError):
                raise
            raise CorruptFileError(f"keys cannot be compared ({e})", lk.path) from None
        which = which.to_numpy(zero_copy_only=False).astype(np.int64)
        if isinstance(query, LabelsAny):
            chosen = np.flatnonzero(which >= 0)
            if not chosen.size:
                return EMPTY.copy()
            return map_rows(union_maps(lk.key_maps(chosen)))
        per_needle = []
        for j in range(len(needles)):
            chosen = np.flatnonzero(which == j)
            if not chosen.size:
                return EMPTY.copy()
            per_needle.append(union_maps(lk.key_maps(chosen)))
        return map_rows(intersect_maps(per_needle))

    def statistics(self) -> dict:
        return {"num_bitmaps": self.lookup.num_bitmaps()}

    def prewarm(self) -> None:
        self.lookup.prewarm()

    def update(self, new_data: TrainingData, dest: IndexStore, keep=None):
        lk = self.lookup
        list_nulls = map_rows(self.list_nulls)
        if keep is not None and list_nulls.size:
            list_nulls = list_nulls[np.asarray(keep(list_nulls), dtype=bool)]
        new = new_data.table()
        items, item_ids, new_nulls = flatten(new.column(VALUE), new.column(ROW_ID).to_numpy())
        groups = regroup(lk.value_type, [kept(lk.entries(), keep), (items, item_ids)])
        write_label_list(dest, lk.value_type, groups, np.concatenate([list_nulls, new_nulls]))
        return index_details_pb2.LabelListIndexDetails()

    def remap(self, mapping, dest: IndexStore):
        lk = self.lookup
        list_nulls = map_rows(self.list_nulls)
        if list_nulls.size:
            new, keep = mapping.apply(list_nulls)
            list_nulls = new[keep]
        write_label_list(dest, lk.value_type, regroup(lk.value_type, [moved(lk.entries(), mapping)]),
                         list_nulls)
        return index_details_pb2.LabelListIndexDetails()


LABEL_LIST = register(LabelListType())
