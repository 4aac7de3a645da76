"""LanceScanner: pylance's scanner (``Dataset.scanner(...)``) over lancefmt's fragment scan.

A scanner is a plan (fragments, projection, filter, limit/offset, metadata columns) that can be
run any number of times: ``to_batches`` / ``to_reader`` / ``to_table`` / ``count_rows``. It is
a ``pyarrow.dataset.Scanner`` (as pylance's is), so engines that accept Arrow scanners
(DuckDB, Polars, Arrow's own dataset API) take it, and it exports the Arrow PyCapsule stream
(``__arrow_c_stream__``) so ``pa.table(scanner)`` works.
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pyarrow.dataset as pads

from ...errors import InvalidArgumentError, NotSupportedError
from ...jsonb.arrow import decode_batch, user_schema
from .projection import Projection, build_projection
from .scan import ROW_ADDRESS, ROW_ID, ScanSpec, live_counts, scan_batches

_IGNORED = ("nearest", "batch_size_bytes", "batch_readahead", "fragment_readahead",
            "index_segments", "full_text_query", "prefilter", "use_stats", "fast_search",
            "io_buffer_size", "late_materialization", "blob_handling", "use_scalar_index",
            "scan_stats_callback", "strict_batch_size", "disable_scoring_autoprojection",
            "use_threads", "cache_metadata", "memory_pool", "fragment_scan_options",
            "batch_readahead", "row_addr_allowlist", "row_addr_blocklist")


class LanceScanner(pads.Scanner):
    """A scan plan of one dataset version (see module docstring). ``source`` is a
    :class:`~lancefmt.dataset.core.snapshot.Snapshot` or a
    :class:`~.fragment_source.FragmentSource`."""

    def __init__(self, source, *, columns=None, filter=None, limit=None, offset=None,
                 with_row_id=None, with_row_address=None, batch_size=None, fragments=None,
                 scan_in_order=None, include_deleted_rows=None, order_by=None, threads=None,
                 **options):
        for key, value in options.items():
            if key not in _IGNORED:
                raise InvalidArgumentError(f"scanner() got an unexpected argument {key!r}")
            if key in ("nearest", "full_text_query", "index_segments") and value is not None:
                raise InvalidArgumentError(f"{key} needs an index; lancefmt does not implement indices")
        if include_deleted_rows:
            raise InvalidArgumentError("include_deleted_rows is not supported by lancefmt")
        if order_by:
            raise InvalidArgumentError("order_by is not supported by lancefmt scans")
        if isinstance(filter, dict):
            if filter.get("search_filter") is not None:
                raise InvalidArgumentError("search filters need an index; lancefmt has none")
            filter = filter.get("expr_filter")
        if limit is not None and int(limit) < 0:
            raise InvalidArgumentError("Limit must be non-negative")
        if offset is not None and int(offset) < 0:
            raise InvalidArgumentError("Offset must be non-negative")
        self._source = source
        schema = source.schema
        self._projection: Projection = build_projection(schema, columns)
        extras = []
        if with_row_id:
            extras.append(ROW_ID)
        if with_row_address:
            extras.append(ROW_ADDRESS)
        self._extras = tuple(x for x in extras if x not in (self._projection.schema.names
                                                             if self._projection.computed else ()))
        self._spec = ScanSpec.build(schema, list(self._projection.read_columns), filter,
                                    bool(with_row_id), bool(with_row_address), batch_size)
        self._filter_text = filter if isinstance(filter, str) else None
        self._fragments = source.select_fragments(fragments)
        self._limit = None if limit is None else int(limit)
        self._offset = None if offset is None else int(offset)
        self._threads = threads

    # -- schemas ------------------------------------------------------------------------------
    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of what the scan returns (JSON columns as ``arrow.json``, as pylance)."""
        return user_schema(self._stored_schema())

    def _stored_schema(self) -> pa.Schema:
        if self._projection.computed:
            return self._projection.output_schema(self._extras)
        return self._spec.output_schema(self._source.schema)

    @property
    def dataset_schema(self) -> pa.Schema:
        return user_schema(self._source.schema)

    # -- running ------------------------------------------------------------------------------
    def to_batches(self) -> Iterator[pa.RecordBatch]:
        batches = scan_batches(self._source.ctx, self._fragments, self._spec,
                               limit=self._limit, offset=self._offset, threads=self._threads)
        if self._projection.computed:
            batches = (self._projection.apply(b, self._extras) for b in batches)
        stored = self._stored_schema()
        return (decode_batch(b, stored) for b in batches)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)

    def scan_batches(self):
        return iter(pads.TaggedRecordBatch(b, None) for b in self.to_batches()) \
            if hasattr(pads, "TaggedRecordBatch") else self.to_batches()

    def __arrow_c_stream__(self, requested_schema=None):
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def count_rows(self) -> int:
        if self._limit is None and not self._offset:
            if self._spec.filter is None:
                return int(live_counts(self._source.ctx, self._fragments).sum())
            count_spec = ScanSpec.build(self._source.schema, [], self._spec.filter)
            return sum(b.num_rows for b in scan_batches(self._source.ctx, self._fragments, count_spec))
        return sum(b.num_rows for b in self.to_batches())

    def head(self, num_rows: int) -> pa.Table:
        limit = num_rows if self._limit is None else min(num_rows, self._limit)
        batches = scan_batches(self._source.ctx, self._fragments, self._spec, limit=limit,
                               offset=self._offset)
        if self._projection.computed:
            batches = (self._projection.apply(b, self._extras) for b in batches)
        stored = self._stored_schema()
        return pa.Table.from_batches([decode_batch(b, stored) for b in batches],
                                     schema=self.projected_schema)

    def take(self, indices) -> pa.Table:
        return self.to_table().take(indices)

    def to_pandas(self, **kwargs):
        return self.to_table().to_pandas(**kwargs)

    # -- plans --------------------------------------------------------------------------------
    def explain_plan(self, verbose: bool = False) -> str:
        """Plain text of what the scan will read and compute."""
        spec = self._spec
        ds = self._source
        lines = []
        if self._projection.computed:
            exprs = ", ".join(f"{n}={e}" for n, e in self._projection.outputs)
            lines.append(f"Projection: {exprs}")
        else:
            lines.append(f"Projection: {', '.join(self.projected_schema.names)}")
        if self._limit is not None or self._offset:
            lines.append(f"  Limit: offset={self._offset or 0}, limit={self._limit}")
        filt = self._filter_text if self._filter_text is not None else spec.filter
        lines.append(f"  LanceScan: uri={ds.uri}, version={ds.version}, "
                     f"fragments={len(self._fragments)}, columns=[{', '.join(spec.read_columns)}], "
                     f"filter={filt}, row_id={spec.need_row_id}, row_addr={spec.need_row_address}, "
                     f"batch_size={spec.batch_size}")
        if verbose:
            lines.append(f"    pyarrow filter: {spec.filter}")
            lines.append(f"    fragment ids: {[f.id for f in self._fragments]}")
        return "\n".join(lines) + "\n"

    def analyze_plan(self, count_rows: bool = False) -> str:
        n = self.count_rows()
        return self.explain_plan(True) + f"  rows returned: {n}\n"

    def __repr__(self):
        return f"LanceScanner({self._source!r}, columns={self.projected_schema.names})"

    # pyarrow's Scanner constructors build Arrow C++ scanners, not Lance ones
    @staticmethod
    def from_dataset(*args, **kwargs):
        raise NotSupportedError("LanceScanner.from_dataset: use Dataset.scanner()")

    @staticmethod
    def from_fragment(*args, **kwargs):
        raise NotSupportedError("LanceScanner.from_fragment: use Fragment.scanner()")

    @staticmethod
    def from_batches(*args, **kwargs):
        return pads.Scanner.from_batches(*args, **kwargs)
