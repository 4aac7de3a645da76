"""The registry of index types: each type is one class, found by name or by details type URL.

An index type (a subclass of :class:`IndexType`, registered with :func:`register`) says how to
train itself from a column's values, how to load what it wrote, which queries it serves and
whether its answers are exact. Nothing above this module names a concrete type: the read
planner asks a loaded index (:class:`LoadedIndex`) to ``search`` a query, maintenance asks it
to ``update`` or ``remap``. A new type is one module plus one :func:`register` call.

Training data (:class:`TrainingData`) is the indexed column of the fragments to cover, as
batches with the columns ``value`` (the column), ``_rowid`` (what the index records: stable row
ids, or row addresses without them) and ``_rowaddr`` (fragment id << 32 | offset, for types that
keep per-fragment zones), fragment by fragment in manifest order, deleted rows left out.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2

from ...errors import CorruptFileError, InvalidArgumentError
from .rowset import SearchResult
from .store import IndexStore

VALUE = "value"
ROW_ID = "_rowid"
ROW_ADDRESS = "_rowaddr"


class TrainingData:
    """The column to index, fragment by fragment (see module docstring). ``fragments`` is a
    list of ``(fragment_id, physical_rows)``; ``batches(fragment_id)`` yields that fragment's
    batches; ``field`` is the indexed column's Arrow field."""

    def __init__(self, field: pa.Field, fragments: list, batches: Callable[[int], Iterator],
                 stable_row_ids: bool = False, all_batches: Callable[[], Iterator] | None = None):
        self.field = field
        self.fragments = list(fragments)
        self._batches = batches
        self._all = all_batches
        self.stable_row_ids = stable_row_ids

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(VALUE, self.field.type), pa.field(ROW_ID, pa.uint64()),
                          pa.field(ROW_ADDRESS, pa.uint64())])

    def fragment_batches(self, fragment_id: int) -> Iterator[pa.RecordBatch]:
        return self._batches(fragment_id)

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Every fragment's batches in order (read in parallel when the source can)."""
        if self._all is not None:
            yield from self._all()
            return
        for fid, _ in self.fragments:
            yield from self._batches(fid)

    def recording_addresses(self) -> "TrainingData":
        """The same data with ``_rowid`` holding the row addresses (for segments that record
        addresses on a dataset with stable row ids)."""
        def swap(batches):
            for b in batches:
                addr = b.column(ROW_ADDRESS)
                yield pa.RecordBatch.from_arrays([b.column(VALUE), addr, addr], schema=b.schema)

        all_batches = (lambda: swap(self._all())) if self._all is not None else None
        return TrainingData(self.field, self.fragments, lambda fid: swap(self._batches(fid)),
                            self.stable_row_ids, all_batches)

    @classmethod
    def empty(cls, field: pa.Field, stable_row_ids: bool = False) -> "TrainingData":
        """No rows (``train=False``: an index covering no fragment yet)."""
        return cls(field, [], lambda fid: iter(()), stable_row_ids)

    def table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.batches()), schema=self.schema)

    @classmethod
    def from_table(cls, field: pa.Field, table: pa.Table, stable_row_ids: bool = False) -> "TrainingData":
        """Training data already in memory (``value``, ``_rowid``, ``_rowaddr`` columns):
        rows of one fragment grouped by the address's high bits."""
        addr = table.column(ROW_ADDRESS).to_numpy()
        frag = (addr >> np.uint64(32)).astype(np.int64)
        ids = [int(f) for f in dict.fromkeys(frag.tolist())]

        def batches(fid):
            yield from table.filter(pa.array(frag == fid)).to_batches()

        return cls(field, [(f, int((frag == f).sum())) for f in ids], batches, stable_row_ids)


class LoadedIndex:
    """One index segment, loaded (what :meth:`IndexType.load` returns)."""

    #: the Arrow type of the values it holds, when its files say (a JSON index's target
    #: tells by it which json_get function it can answer)
    value_type: pa.DataType | None = None

    def search(self, query) -> SearchResult:
        """Row ids matching ``query`` (one of :data:`lancefmt.sql.sargable.QUERY_TYPES` this
        type serves)."""
        raise NotImplementedError

    def statistics(self) -> dict:
        """What ``stats.index_stats(name)["indices"]`` shows for this segment."""
        return {}

    def prewarm(self) -> None:
        """Load everything a search could need (``prewarm_index``)."""

    def params(self) -> dict:
        """The build parameters this segment was made with, as ``train`` takes them (a rebuild
        by ``optimize_indices`` keeps them, as pylance's does); {} = the type's defaults."""
        return {}

    def update(self, new_data: TrainingData, dest: IndexStore, keep=None):
        """This index plus ``new_data`` written to ``dest`` (``optimize_indices``); ``keep``
        (a callable: row ids -> bool mask) drops old rows that are no longer valid. Returns
        the new details message."""
        raise NotImplementedError

    def remap(self, mapping, dest: IndexStore):
        """This index with its row ids moved by ``mapping`` (a :class:`RowIdMapping`), written
        to ``dest`` (after a compaction). Returns the new details message."""
        raise NotImplementedError


class RowIdMapping:
    """Old row address -> new row address (compaction): two parallel sorted arrays; old rows
    missing from ``old`` are kept as they are, rows in ``dropped`` are gone."""

    def __init__(self, old: np.ndarray, new: np.ndarray, dropped: np.ndarray):
        order = np.argsort(old, kind="stable")
        self.old = np.asarray(old, dtype=np.uint64)[order]
        self.new = np.asarray(new, dtype=np.uint64)[order]
        self.dropped = np.unique(np.asarray(dropped, dtype=np.uint64))

    def apply(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(new ids, keep mask) for ``ids``: dropped rows get keep=False."""
        ids = np.asarray(ids, dtype=np.uint64)
        out = ids.copy()
        if self.old.size:
            pos = np.searchsorted(self.old, ids)
            pos_c = np.minimum(pos, self.old.size - 1)
            hit = self.old[pos_c] == ids
            out[hit] = self.new[pos_c[hit]]
        keep = ~np.isin(ids, self.dropped) if self.dropped.size else np.ones(ids.size, bool)
        return out, keep


class IndexType:
    """One kind of index (subclass, then :func:`register` an instance)."""

    #: what users pass to ``create_scalar_index`` (upper case), and accepted aliases
    name: str = ""
    aliases: tuple = ()
    #: what ``describe_indices`` / ``index_stats`` call it ("BTree", "Bitmap", ...)
    type_name: str = ""
    #: the ``IndexMetadata.index_details`` type URL and message class
    details_type_url: str = ""
    details_class = None
    #: ``IndexMetadata.index_version`` pylance 14 writes
    index_version: int = 0
    #: query classes (``lancefmt.sql.sargable``) this type can answer
    queries: tuple = ()
    #: whether answers are exact (else AtMost: re-checked)
    exact: bool = True
    #: keys of ``LoadedIndex.params()`` that carry a trained model (vector centroids,
    #: codebooks): a rebuild keeps them, ``optimize_indices(retrain=True)`` drops them
    model_params: tuple = ()

    def type_name_for(self, details) -> str:
        """What ``list_indices`` calls a segment with ``details`` (one type may cover several
        kinds, as vector indices do)."""
        return self.type_name

    def supports(self, details) -> bool:
        """Whether lancefmt can load (and so search, remap, rebuild) a segment with
        ``details``; a type may cover kinds it cannot (pylance's IVF_RQ vector indices). Such
        segments are left alone: their rows are searched without them."""
        return True

    #: what ``stats.index_stats`` calls it, when not ``type_name`` (pylance's JSON index
    #: reports "BTree")
    stats_type_name: str | None = None

    def serves(self, query) -> bool:
        """Whether the planner should give this type ``query`` (a type may decline queries
        of a class it serves, e.g. patterns too short to look up)."""
        return type(query) in self.queries

    def serves_index(self, segments: list, query) -> bool:
        """Whether the index made of ``segments`` (catalog Segments) answers ``query``; most
        types decide by the query alone (:meth:`serves`), a JSON index by its path and values."""
        return self.serves(query)

    def exact_for(self, segments: list) -> bool:
        """Whether answers of the index made of ``segments`` are exact."""
        return self.exact

    def plan_type_name(self, segments: list) -> str:
        """The type pylance's plans name after ``@index`` (a JSON index: its target's)."""
        return self.type_name

    def check_field(self, field: pa.Field) -> None:
        """Refuse a column this type cannot index (pylance's error types)."""

    def index_version_for(self, stable_row_ids: bool, params: dict | None = None) -> int:
        """``index_version`` of a segment built now with ``params`` (pylance writes some types
        at a higher version on datasets with stable row ids, or for some parameters)."""
        return self.index_version

    def default_name(self, column: str, params: dict) -> str:
        """The name pylance gives an index of this type on ``column`` built with ``params``."""
        return f"{column}_idx"

    def records_addresses(self, index_version: int, stable_row_ids: bool) -> bool:
        """Whether a segment records row addresses (else stable row ids). Without stable row
        ids the two are the same; pylance 14 records addresses in some types even with them,
        and marks such segments by their ``index_version``. The framework hands training the
        right one as ``_rowid`` and tells the planner which it gets back."""
        return not stable_row_ids

    def default_params(self) -> dict:
        return {}

    def stage(self, data: TrainingData, store: IndexStore, params: dict) -> None:
        """Build ``data`` (some fragments) into ``store`` as a part that
        :meth:`merge_staged` later joins (pylance's distributed build of types that stage
        parts in one shared directory). NotImplementedError: the type builds whole
        segments instead."""
        raise NotImplementedError

    #: whether a build over ``fragment_ids`` stages a part whichever API asked for it (else
    #: only pylance's ``create_scalar_index(..., fragment_ids=)``: BTREE's older shape; a
    #: segment build and Spark get whole segments)
    stages_by_default: bool = True

    def staged_index_version(self, stable_row_ids: bool, params: dict | None = None) -> int:
        """The ``index_version`` a staged part records for (what its commit will say)."""
        return self.index_version_for(stable_row_ids, params)

    def merge_staged(self, store: IndexStore, field: pa.Field | None = None):
        """Join every staged part in ``store`` into the index (of column ``field``, when
        known); returns its details."""
        raise NotImplementedError

    def recognizes(self, store: IndexStore) -> bool:
        """Whether ``store`` holds an index of this type (for entries committed without
        index details, as pylance's distributed builds commit them)."""
        return False

    def train(self, data: TrainingData, store: IndexStore, params: dict):
        """Write the index of ``data`` to ``store``; returns its details message."""
        raise NotImplementedError

    def load(self, store: IndexStore, details) -> LoadedIndex:
        raise NotImplementedError

    def merge(self, segments: list, dest: IndexStore):
        """One segment holding every loaded segment's entries (disjoint fragments), written to
        ``dest`` without reading the dataset; returns its details. NotImplementedError: the
        caller rebuilds from the column's data instead."""
        raise NotImplementedError

    # -- details ------------------------------------------------------------------------------
    def pack_details(self, message) -> any_pb2.Any:
        out = any_pb2.Any()
        out.type_url = self.details_type_url
        out.value = message.SerializeToString() if message is not None else b""
        return out

    def unpack_details(self, details: any_pb2.Any, path: str | None = None):
        if self.details_class is None:
            return None
        msg = self.details_class()
        try:
            msg.ParseFromString(details.value)
        except Exception as e:  # noqa: BLE001 -- protobuf's DecodeError and friends
            raise CorruptFileError(f"bad {self.type_name} index details ({e})", path) from None
        return msg


_BY_NAME: dict = {}
_BY_URL: dict = {}


def register(index_type: IndexType) -> IndexType:
    for n in (index_type.name,) + tuple(index_type.aliases):
        _BY_NAME[n.upper()] = index_type
    _BY_URL[index_type.details_type_url] = index_type
    return index_type


def by_name(name: str) -> IndexType:
    """The type users call ``name`` (any case); InvalidArgumentError when unknown."""
    t = _BY_NAME.get(str(name).upper())
    if t is None:
        known = ", ".join(sorted({t.name for t in _BY_NAME.values()}))
        raise InvalidArgumentError(f"unknown index type {name!r} (known: {known})")
    return t


def by_details(details: any_pb2.Any) -> IndexType | None:
    """The type that wrote ``details`` (by its type URL), or None when lancefmt lacks it."""
    return _BY_URL.get(details.type_url)


def by_files(store: IndexStore) -> IndexType | None:
    """The type whose files ``store`` holds (entries without details), or None."""
    for itype in {id(t): t for t in _BY_NAME.values()}.values():
        if itype.recognizes(store):
            return itype
    return None


def known_types() -> list:
    return sorted({t.name for t in _BY_NAME.values()})
