"""Spark reads: partitions of pickled fragment row ranges, scanned on the executors.

Planning (``partitions()``) runs in a short-lived Python process on the driver: it opens the
pinned version's manifest once and cuts its fragments into row ranges of at most
``rows_per_partition`` physical rows (a big fragment becomes several equal ranges; small
fragments are packed together up to that size), so the partitions are even. Each
:class:`LancePartition` carries pickled :class:`~lancefmt.Fragment` objects (the fragment's
metadata + a small scan context, never the manifest) and the ranges to read.

Executors (``read()``) scan their ranges with :meth:`Fragment.to_batches` and yield Arrow batches
cast exactly to the Arrow form of the Spark schema (:class:`~lancefmt.spark.schema.BatchCaster`).

Filter pushdown: :class:`LancePushdownReader` adds ``pushFilters``. Spark refuses a reader that
overrides ``pushFilters`` while ``spark.sql.python.filterPushdown.enabled`` is off (planning fails
with ``DATA_SOURCE_PUSHDOWN_DISABLED``), and that conf is not visible to Python code in the
planning process, so :func:`pushdown_enabled` reads the flag Spark's planner passed to its
worker; the data source then hands out the plain reader when pushdown is off.

Caveat (a Spark bug, 4.1-4.3): Spark stores the read plan made while pushing filters on the
DataFrame's *relation*, not on the query, and a later query on the same DataFrame object that
pushes no filter reuses it -- pushed filters included -- so ``df.filter(f).count()`` followed by
``df.count()`` (or ``df.write``) sees only the rows matching ``f``. Apache Spark master keeps the
plan per scan (``PythonScanBuilder``: "must NOT be stored on the provider-scoped
PythonDataSourceV2"). No data source can tell the two queries apart, so with pushdown on, call
``spark.read.format("lance").load(...)`` afresh for each query (the conf is off by default).
"""
from __future__ import annotations

import os
import sys

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..sql import to_expression
from .filters import filter_to_term, split_filters
from .options import TARGET_BATCH_BYTES, ReadOptions
from .schema import METADATA_COLUMNS, BatchCaster, arrow_schema
from .task_cores import task_cores

MIN_BATCH_ROWS = 8192
MAX_BATCH_ROWS = 1 << 17
# Width guesses for variable-size values (bytes); only used to size batches.
_VARIABLE_BYTES = 32
_LIST_ITEMS = 8


def row_width(t: pa.DataType) -> float:
    """Rough bytes per value of ``t`` (exact for fixed-width types)."""
    if isinstance(t, pa.ExtensionType):
        return row_width(t.storage_type)
    if pa.types.is_dictionary(t):
        return row_width(t.index_type)
    if pa.types.is_fixed_size_list(t):
        return t.list_size * row_width(t.value_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return 8 + _LIST_ITEMS * row_width(t.value_type if not pa.types.is_map(t) else t.item_type)
    if pa.types.is_struct(t):
        return sum(row_width(f.type) for f in t) or 1
    try:
        return max(t.bit_width, 8) / 8
    except ValueError:  # variable width: strings, binary
        return _VARIABLE_BYTES


def batch_rows(schema: pa.Schema, columns, target_bytes: int = TARGET_BATCH_BYTES) -> int:
    """Rows per batch so a batch of ``columns`` holds about ``target_bytes``."""
    width = sum(row_width(schema.field(c).type) for c in columns if schema.get_field_index(c) >= 0)
    width += 8  # metadata columns, validity, slack
    return int(min(MAX_BATCH_ROWS, max(MIN_BATCH_ROWS, target_bytes // width)))


# The planning worker that refuses pushFilters overrides, and its flag (pyspark 4.1-4.3).
_PLAN_WORKER = "plan_data_source_read.py"
_PLAN_FLAG = "enable_pushdown"


def pushdown_enabled() -> bool:
    """Whether a reader made now may override ``pushFilters``.

    Only Spark's ``plan_data_source_read`` worker rejects an override, and only when its
    ``enable_pushdown`` flag (the conf) is false; every other caller (the filter-pushdown worker,
    user code) may have it. Deterministic for a given conf, as Spark's replays require.
    """
    frame = sys._getframe(1)
    while frame is not None:
        if os.path.basename(frame.f_code.co_filename) == _PLAN_WORKER:
            return bool(frame.f_locals.get(_PLAN_FLAG, False))
        frame = frame.f_back
    return True


class LancePartition(InputPartition):
    """Row ranges ``(fragment, start, stop)`` of one or more fragments, read by one Spark task;
    ``selections``: per fragment id, the rows a scalar index selected (see
    :class:`IndexPruning`), read instead of scanning the range."""

    def __init__(self, pieces, selections=None):
        super().__init__(None)
        self.pieces = list(pieces)
        self.selections = dict(selections or {})

    @property
    def num_rows(self) -> int:
        return sum(stop - start for _, start, stop in self.pieces)

    def __repr__(self):
        parts = ", ".join(f"{f.id}[{a}:{b}]" for f, a, b in self.pieces)
        return f"LancePartition({parts})"


# Never cut a fragment below this many rows just to keep more cores busy (per-task set-up wins).
MIN_SPLIT_ROWS = 1 << 16


def plan_partitions(fragments, rows_per_partition: int, parallelism: int = 1,
                    whole_fragments: bool = False) -> list[LancePartition]:
    """Partitions of at most ``rows_per_partition`` physical rows, at least
    ``min(pieces, parallelism)`` of them (so every core gets work), in fragment order.

    A fragment is cut into equal row ranges when it exceeds ``rows_per_partition``, or when the
    dataset has fewer fragments than cores (not below :data:`MIN_SPLIT_ROWS` rows a range);
    consecutive small pieces are packed together up to an even share of the rows. With
    ``whole_fragments`` no fragment is cut (a partition then may exceed the size).
    """
    fragments = [f for f in fragments if f.physical_rows > 0]
    total = sum(f.physical_rows for f in fragments)
    parallelism = max(1, int(parallelism))
    split = rows_per_partition
    if len(fragments) < parallelism:
        split = min(split, max(MIN_SPLIT_ROWS, -(-total // parallelism)))
    if whole_fragments:
        split = max([split] + [f.physical_rows for f in fragments])
    pieces = []
    for frag in fragments:
        n = frag.physical_rows
        k = -(-n // split)  # ceil
        bounds = [n * i // k for i in range(k + 1)]
        pieces.extend((frag, bounds[i], bounds[i + 1]) for i in range(k))
    want = min(parallelism, len(pieces))
    cap = min(rows_per_partition, -(-total // want)) if want else rows_per_partition
    partitions, current, rows = [], [], 0
    for index, piece in enumerate(pieces):
        size = piece[2] - piece[1]
        remaining = len(pieces) - index  # this piece included
        if current and (rows + size > cap or remaining < want - len(partitions)):
            partitions.append(LancePartition(current))
            current, rows = [], 0
        current.append(piece)
        rows += size
    if current:
        partitions.append(LancePartition(current))
    return partitions


class LanceReader(DataSourceReader):
    """Reads one pinned version of a dataset; pickles small (options, version, schemas)."""

    def __init__(self, options: ReadOptions, version: int, schema: StructType,
                 dataset_schema: pa.Schema, parallelism: int = 1):
        self.options = options
        self.version = int(version)
        self.schema = schema                  # what Spark asked for
        self.dataset_schema = dataset_schema  # the pinned version's Arrow schema
        self.target = arrow_schema(schema)
        self.pushed = []  # Spark Filter objects applied in the scan (pushdown reader only)
        self.parallelism = int(parallelism)  # cores to keep busy (see plan_partitions)

    # -- planning (driver) --------------------------------------------------------------------
    def partitions(self):
        from ..dataset import dataset

        ds = dataset(self.options.uri, self.version, storage_options=self.options.storage_options,
                     manifest_store=self.options.manifest_store)
        fragments = ds.get_fragments()
        if self.options.fragment_ids is not None:
            wanted = set(self.options.fragment_ids)
            fragments = [f for f in fragments if f.fragment_id in wanted]
        pruning = IndexPruning.plan(ds.snapshot, self.options.filter, self.pushed)
        if pruning is not None:
            fragments = [f for f in fragments if not pruning.empty(f.fragment_id)]
        parts = plan_partitions(fragments, self.options.rows_per_partition, self.parallelism,
                                self.options.whole_fragments)
        if pruning is not None:
            for p in parts:
                p.selections = pruning.for_pieces(p.pieces)
        return parts

    # -- executors --------------------------------------------------------------------------
    def _scan_args(self):
        dataset_schema = self.dataset_schema
        names = self.schema.fieldNames()
        columns = [n for n in names if n not in METADATA_COLUMNS or dataset_schema.get_field_index(n) >= 0]
        with_row_id = "_rowid" in names and dataset_schema.get_field_index("_rowid") < 0
        with_row_address = "_rowaddr" in names and dataset_schema.get_field_index("_rowaddr") < 0
        expr = to_expression(self.options.filter, dataset_schema) if self.options.filter else None
        if self.pushed:
            pushed, rejected = split_filters(self.pushed, dataset_schema)
            if rejected:  # cannot happen: pushFilters kept only what translates
                raise RuntimeError(f"pushed filters no longer translate: {rejected}")
            expr = pushed if expr is None else (expr & pushed)
        size = self.options.batch_size or batch_rows(dataset_schema, columns)
        return dict(columns=columns, filter=expr, with_row_id=with_row_id,
                    with_row_address=with_row_address, batch_size=size)

    def read(self, partition: LancePartition):
        caster = BatchCaster(self.target)
        args = self._scan_args()
        limit = self.options.max_batch_bytes
        # Spark turns an empty partition list (a dataset without rows) into one InputPartition(None)
        selections = getattr(partition, "selections", {})
        with task_cores():  # the scan's threads: the task's cores, not the host's
            for fragment, start, stop in getattr(partition, "pieces", ()):
                chosen = selections.get(fragment.fragment_id)
                batches = fragment.to_batches(start=start, stop=stop, **args) if chosen is None \
                    else selected_batches(fragment, start, stop, chosen, args)
                for batch in batches:
                    if batch.num_rows:
                        yield from _split(caster(batch), limit)


# Rows a partition carries per fragment an index answered; above it the executor scans the
# range with the filter (a selection that large is read in windows anyway).
MAX_SHIPPED_ROWS = 1 << 20


class IndexPruning:
    """What the pinned version's scalar indices answer for the read's filter (the ``filter``
    option and the pushed filters): fragments with no matching row are not read at all, and
    the others carry their selected rows to the executor."""

    def __init__(self, selection):
        self.selection = selection

    @classmethod
    def plan(cls, snapshot, filter_text, pushed) -> "IndexPruning | None":
        from ..dataset.read.index_scan import filter_terms, selection_for_tree
        from ..sql.sargable import OTHER, All

        parts = []
        if isinstance(filter_text, str) and filter_text.strip():
            parts.append(filter_terms(filter_text, snapshot.schema))
        parts += [filter_to_term(f, snapshot.schema) for f in pushed]
        if all(p is OTHER for p in parts):
            return None  # (an OTHER part kept in the AND makes the answer re-checked)
        tree = parts[0] if len(parts) == 1 else All(tuple(parts))
        selection = selection_for_tree(snapshot, tree)
        return None if selection is None else cls(selection)

    def empty(self, fragment_id: int) -> bool:
        return self.selection.empty_for(int(fragment_id))

    def for_pieces(self, pieces) -> dict:
        """``{fragment id: (chosen offsets, negated, exact)}`` for the covered fragments of a
        partition whose selection is small enough to ship."""
        sel, out = self.selection, {}
        for frag, _, _ in pieces:
            fid = int(frag.fragment_id)
            if not sel.covers(fid):
                continue
            chosen = sel.rows.get(fid)
            if chosen is not None and chosen.size > MAX_SHIPPED_ROWS:
                continue
            out[fid] = (chosen, sel.negated, sel.exact)
        return out


def selected_batches(fragment, start: int, stop: int, chosen, args):
    """A fragment range's rows an index selected, on an executor."""
    from ..dataset.read.index_scan import selected_fragment_batches

    rows, negated, exact = chosen
    return selected_fragment_batches(fragment, start, stop, rows, negated, exact, args)


def _split(batch, max_bytes: int):
    """``batch`` in slices of at most ~``max_bytes`` (wide rows: vectors, blobs)."""
    size = batch.nbytes
    if size <= max_bytes or batch.num_rows <= 1:
        yield batch
        return
    pieces = min(batch.num_rows, -(-size // max_bytes))
    step = -(-batch.num_rows // pieces)
    for offset in range(0, batch.num_rows, step):
        yield batch.slice(offset, step)


class LancePushdownReader(LanceReader):
    """A :class:`LanceReader` that also evaluates Spark's pushed filters inside the scan."""

    def pushFilters(self, filters):
        _, rejected = split_filters(filters, self.dataset_schema)
        rejected_ids = {id(f) for f in rejected}
        self.pushed = [f for f in filters if id(f) not in rejected_ids]
        return rejected
