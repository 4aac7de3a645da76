"""LanceScanner: pylance's scanner (``Dataset.scanner(...)``) over lancefmt's fragment scan.

A scanner is a plan (fragments, projection, filter, limit/offset, metadata columns) that can be
run any number of times: ``to_batches`` / ``to_reader`` / ``to_table`` / ``count_rows``. It is
a ``pyarrow.dataset.Scanner`` (as pylance's is), so engines that accept Arrow scanners
(DuckDB, Polars, Arrow's own dataset API) take it, and it exports the Arrow PyCapsule stream
(``__arrow_c_stream__``) so ``pa.table(scanner)`` works.
"""
from __future__ import annotations

import os
import time
from dataclasses import replace
from itertools import chain
from typing import Iterator

import pyarrow as pa
import pyarrow.dataset as pads

from ...errors import InvalidArgumentError, NotSupportedError
from ...io.io_stats import totals as io_totals
from ...jsonb.arrow import batch_decoder, user_schema
from ...sql.sargable_shapes import note_translated, translates_like_its_shape
from ...sql.translate import filter_is_parsed
from .fts_scan import SCORE, FtsPlan
from .index_scan import SelectedScan, direct_index_table, index_selection, scan_maker, selected_count
from .nearest import NearestRequest, nearest_table
from .nearest import plan_lines as nearest_plan_lines
from .nearest import output_schema as nearest_output_schema
from .vector_query import parse_nearest
from .vector_search import DISTANCE
from .projection import Projection, build_projection
from .row_offsets import ROW_OFFSET, RowOffsets
from .scan_stats import measured
from .scan import ROW_ADDRESS, ROW_ID, ScanSpec, count_matching, live_counts, scan_windows

_UNSET = object()

_IGNORED = ("nearest", "batch_size_bytes", "batch_readahead", "fragment_readahead",
            "index_segments", "full_text_query", "prefilter", "use_stats", "fast_search",
            "io_buffer_size", "late_materialization", "blob_handling", "use_scalar_index",
            "scan_stats_callback", "disable_scoring_autoprojection",
            "use_threads", "cache_metadata", "memory_pool", "fragment_scan_options",
            "batch_readahead", "row_addr_allowlist", "row_addr_blocklist")


def rebatch(batches, size: int) -> Iterator[pa.RecordBatch]:
    """``strict_batch_size``: batches of exactly ``size`` rows across fragment boundaries;
    only the last one is shorter."""
    pending, rows = [], 0
    for b in batches:
        while b.num_rows:
            take = min(size - rows, b.num_rows)
            pending.append(b.slice(0, take))
            rows += take
            b = b.slice(take)
            if rows == size:
                yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]
                pending, rows = [], 0
    if rows:
        yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]


def _nearest_order(cols: list, row_id_flag: bool, row_address_flag: bool, no_distance: bool) -> list:
    """pylance's column order of a nearest search whose ``columns`` name ``_rowid`` or
    ``_rowaddr``: they keep their places, ``_distance`` follows unless named, and what the
    legacy ``with_row_id``/``with_row_address`` flags ask for goes last (even if named)."""
    order = [c for c in cols if not (c == ROW_ID and row_id_flag)
             and not (c == ROW_ADDRESS and row_address_flag)]
    if DISTANCE not in order and not no_distance:
        order.append(DISTANCE)
    return order + [ROW_ID] * row_id_flag + [ROW_ADDRESS] * row_address_flag


def _ordered(names: list, order: list) -> list:
    """``names`` in ``order`` (names it does not list keep their places after)."""
    first = [n for n in order if n in names]
    return first + [n for n in names if n not in first]


class LanceScanner(pads.Scanner):
    """A scan plan of one dataset version (see module docstring). ``source`` is a
    :class:`~lancefmt.dataset.core.snapshot.Snapshot` or a
    :class:`~.fragment_source.FragmentSource`."""

    def __init__(self, source, *, columns=None, filter=None, limit=None, offset=None,
                 with_row_id=None, with_row_address=None, batch_size=None, fragments=None,
                 scan_in_order=None, include_deleted_rows=None, order_by=None, threads=None,
                 strict_batch_size: bool = False, **options):
        for key, value in options.items():
            if key not in _IGNORED:
                raise InvalidArgumentError(f"scanner() got an unexpected argument {key!r}")
            if key == "index_segments" and value is not None:
                raise InvalidArgumentError(f"{key} needs an index; lancefmt does not implement indices")
        if isinstance(columns, (list, tuple)) and len(set(map(str, columns))) != len(columns):
            dup = next(c for i, c in enumerate(columns) if c in columns[:i])
            raise InvalidArgumentError(f"Invalid user input: Duplicate column name: {dup}")
        fts_query = options.get("full_text_query")
        if include_deleted_rows and fts_query is not None:
            raise InvalidArgumentError("Cannot include deleted rows in a full text search")
        if include_deleted_rows:
            if options.get("nearest") is not None:
                raise InvalidArgumentError("Cannot include deleted rows in a nearest neighbor search")
            if not (with_row_id or isinstance(columns, (list, tuple)) and ROW_ID in columns):
                raise InvalidArgumentError("Invalid user input: include_deleted_rows is set but "
                                           "with_row_id is false")
        self._fts_order = None
        if fts_query is not None and isinstance(columns, (list, tuple)) and \
                any(c in (SCORE, ROW_ID, ROW_ADDRESS) for c in columns):
            # pylance lets a search name its _score (and _rowid) among the columns
            self._fts_order = list(columns)
            with_row_id = with_row_id or ROW_ID in columns
            with_row_address = with_row_address or ROW_ADDRESS in columns
            columns = [c for c in columns if c not in (SCORE, ROW_ID, ROW_ADDRESS)]
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
        if batch_size is None and os.environ.get("LANCE_DEFAULT_BATCH_SIZE"):
            batch_size = int(os.environ["LANCE_DEFAULT_BATCH_SIZE"])  # as pylance reads it
        self._strict = bool(strict_batch_size) and batch_size is not None
        self._batch_size = batch_size
        # _rowoffset (a row's position among the live rows) comes from its row address
        self._offset_at = None
        self._drop_address = False
        if isinstance(columns, (list, tuple)) and ROW_OFFSET in columns:
            self._offset_at = list(columns).index(ROW_OFFSET)
            columns = [c for c in columns if c != ROW_OFFSET]
            if ROW_ADDRESS not in columns and not with_row_address:
                with_row_address, self._drop_address = True, True
        self._source = source
        schema = source.schema
        self._nearest = None
        nearest = options.get("nearest")
        if nearest is not None and options.get("full_text_query") is not None:
            # pylance 14 has no hybrid scan: its scanner refuses the pair, with or without filters
            raise InvalidArgumentError("Cannot have both nearest and full text search")
        if nearest is not None:
            if fragments is not None and not options.get("prefilter"):
                raise InvalidArgumentError("This operation is not supported for fragment scan: "
                                           "a nearest search over chosen fragments needs "
                                           "prefilter=True")
            if isinstance(nearest, dict) and nearest.get("k") is None and limit is not None:
                nearest = {**nearest, "k": int(limit)}   # pylance: the limit is the k
            columns, with_row_id, with_row_address = self._plan_nearest(
                source, schema, nearest, columns, with_row_id, with_row_address, options)
        self._projection: Projection = build_projection(schema, columns)
        extras = []
        if with_row_id:
            extras.append(ROW_ID)
        if with_row_address:
            extras.append(ROW_ADDRESS)
        self._extras = tuple(x for x in extras if x not in (self._projection.schema.names
                                                             if self._projection.computed else ()))
        use_index = options.get("use_scalar_index")
        self._use_index = True if use_index is None else bool(use_index)
        spec_args = (schema, list(self._projection.read_columns), filter, bool(with_row_id),
                     bool(with_row_address), batch_size)
        self._spec_value = self._plain_spec = None
        fresh = isinstance(filter, str) and not filter_is_parsed(filter, schema)
        if fresh and self._deferrable(filter, schema, include_deleted_rows, fts_query):
            # a new look-up key of a filter shape already translated: the filter's pyarrow
            # expression is built only if a fragment must be scanned (an exact index answer
            # over every fragment never needs it); columns are checked now
            self._spec_args = spec_args
            self._plain_spec = ScanSpec.build(*spec_args[:2], None, *spec_args[3:])
        else:
            self._spec_value = ScanSpec.build(*spec_args)
            if fresh:
                note_translated(filter, schema)
        if include_deleted_rows:   # deleted rows of live fragments, _rowid/_rowaddr null
            self._spec_value = replace(self._spec_value, include_deleted=True)
        self._filter_text = filter if isinstance(filter, str) else None
        self._fragments = source.select_fragments(fragments)
        self._limit = None if limit is None else int(limit)
        self._offset = None if offset is None else int(offset)
        self._threads = threads
        self._stats_callback = options.get("scan_stats_callback")
        self._selection = _UNSET
        self._fts = None
        if options.get("full_text_query") is not None:
            snapshot = source.index_snapshot()
            if snapshot is None:
                raise InvalidArgumentError("full_text_query needs the dataset version's indices")
            self._fts = FtsPlan(snapshot, options["full_text_query"], self._fragments,
                                filter=filter, prefilter=bool(options.get("prefilter")),
                                limit=self._limit, offset=self._offset, with_row_id=bool(with_row_id),
                                with_row_address=bool(with_row_address),
                                fast_search=bool(options.get("fast_search")),
                                score=not options.get("disable_scoring_autoprojection")
                                or self._fts_order is not None and SCORE in self._fts_order)

    def _deferrable(self, filter, schema, include_deleted, fts_query) -> bool:
        return self._use_index and self._nearest is None and fts_query is None and \
            not include_deleted and translates_like_its_shape(filter, schema)

    @property
    def _spec(self) -> ScanSpec:
        """The scan's spec, the filter translated (on first use when it was deferred)."""
        spec = self._spec_value
        if spec is None:
            spec = self._spec_value = ScanSpec.build(*self._spec_args)
        return spec

    @property
    def _output_spec(self) -> ScanSpec:
        """A spec with the scan's output columns and flags (the filter maybe untranslated)."""
        return self._plain_spec if self._spec_value is None else self._spec_value

    # -- nearest ------------------------------------------------------------------------------
    def _plan_nearest(self, source, schema, nearest, columns, with_row_id, with_row_address, options):
        """Parse ``nearest`` and take ``_distance``/``_rowid``/``_rowaddr`` out of ``columns``
        (the search adds them); returns the remaining columns and metadata flags."""
        if not hasattr(source, "memo"):
            raise NotSupportedError("nearest searches a dataset, not a single fragment")
        self._nearest = parse_nearest(schema, nearest)
        self._distance_at = None
        self._no_distance = False
        self._nearest_order = None
        if isinstance(columns, (list, tuple)):
            cols = list(columns)
            if DISTANCE in cols:
                self._distance_at = [c for c in cols if c not in (ROW_ID, ROW_ADDRESS)].index(DISTANCE)
            elif options.get("disable_scoring_autoprojection"):
                self._no_distance = True
            if ROW_ID in cols or ROW_ADDRESS in cols:
                self._nearest_order = _nearest_order(cols, bool(with_row_id), bool(with_row_address),
                                                     self._no_distance)
            with_row_id = with_row_id or ROW_ID in cols
            with_row_address = with_row_address or ROW_ADDRESS in cols
            columns = [c for c in cols if c not in (DISTANCE, ROW_ID, ROW_ADDRESS)]
        self._prefilter = bool(options.get("prefilter"))
        self._fast_search = bool(options.get("fast_search"))
        return columns, with_row_id, with_row_address

    def _nearest_request(self) -> NearestRequest:
        filt = self._spec.filter
        filter_spec = None
        if filt is not None:
            filter_spec = ScanSpec.build(self._source.schema, [], filt)
        return NearestRequest(
            self._nearest, self._projection, self._distance_at, bool(self._spec.with_row_id),
            bool(self._spec.with_row_address), filter_spec, self._filter_text, self._prefilter,
            self._fragments, self._use_index, self._fast_search, self._threads)

    def _nearest_stored(self) -> pa.Table:
        table = nearest_table(self._source, self._nearest_request())
        if self._no_distance:
            table = table.drop_columns([DISTANCE])
        if self._nearest_order is not None:
            table = table.select(_ordered(table.column_names, self._nearest_order))
        start = self._offset or 0
        stop = table.num_rows if self._limit is None else min(table.num_rows, start + self._limit)
        return table.slice(start, max(0, stop - start))

    # -- indices ------------------------------------------------------------------------------
    def index_selection(self):
        """What the version's scalar indices answer for the filter (None: scan everything);
        worked out once per scanner."""
        if self._nearest is not None:
            return None
        if self._selection is _UNSET:
            self._selection = None
            snapshot = self._source.index_snapshot() if self._use_index and \
                self._filter_text is not None else None
            if snapshot is not None:
                self._selection = index_selection(snapshot, self._filter_text)
        return self._selection

    def _make_scan(self):
        sel = self.index_selection()
        return None if sel is None else scan_maker(sel)

    def _scanned_fragments(self) -> list:
        """The fragments a run reads: those an index answered with no row are skipped."""
        sel = self.index_selection()
        if sel is None:
            return self._fragments
        return [f for f in self._fragments if not sel.empty_for(int(f.id))]

    # -- schemas ------------------------------------------------------------------------------
    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of what the scan returns (JSON columns as ``arrow.json``, as pylance)."""
        if self._fts is not None:
            return user_schema(self._fts_schema())
        return user_schema(self._stored_schema())

    # -- full-text search ---------------------------------------------------------------------
    def _fts_schema(self) -> pa.Schema:
        base = self._projection.output_schema(()) if self._projection.computed else \
            ScanSpec.build(self._source.schema, list(self._projection.read_columns)) \
            .output_schema(self._source.schema)
        schema = self._fts.schema(base)
        if self._fts_order is not None:
            schema = pa.schema([schema.field(c) for c in self._fts_order], metadata=schema.metadata)
        return schema

    def _fts_batches(self) -> Iterator[pa.RecordBatch]:
        """The ranked rows (see :mod:`.fts_scan`), projected."""
        cols = list(self._projection.read_columns)
        table = self._fts.table(ScanSpec.build(self._source.schema, cols)
                                .output_schema(self._source.schema), cols)
        if self._projection.computed:
            extras = [n for n in table.column_names if n not in cols]
            batches = [self._projection.apply(b.select(cols), ()) for b in table.to_batches()]
            projected = pa.Table.from_batches(batches, schema=self._projection.output_schema(())) \
                if batches else self._projection.output_schema(()).empty_table()
            for n in extras:
                projected = projected.append_column(table.schema.field(n), table.column(n))
            table = projected
        if self._fts_order is not None:
            table = table.select(self._fts_order)
        table = table.cast(self._fts_schema())
        decode = batch_decoder(self._fts_schema())
        out = iter(table.to_batches(self._batch_size))
        out = out if decode is None else map(decode, out)
        return rebatch(out, self._batch_size) if self._strict else out

    def _stored_schema(self) -> pa.Schema:
        if self._nearest is not None:
            schema = nearest_output_schema(self._nearest_request(), self._source.schema)
            if self._no_distance:
                schema = schema.remove(schema.get_field_index(DISTANCE))
            if self._nearest_order is not None:
                names = _ordered(schema.names, self._nearest_order)
                schema = pa.schema([schema.field(n) for n in names], metadata=schema.metadata)
            return schema
        return self._with_offsets_schema(self._read_schema())

    def _read_schema(self) -> pa.Schema:
        if self._projection.computed:
            return self._projection.output_schema(self._extras)
        return self._output_spec.output_schema(self._source.schema)

    def _with_offsets_schema(self, schema: pa.Schema) -> pa.Schema:
        if self._offset_at is None:
            return schema
        if self._drop_address:
            schema = schema.remove(schema.get_field_index(ROW_ADDRESS))
        return schema.insert(self._offset_at, pa.field(ROW_OFFSET, pa.uint64()))

    def _add_offsets(self, batches):
        offsets = RowOffsets(self._source.ctx, self._source.fragment_pbs())
        for b in batches:
            values = offsets.of(b.column(ROW_ADDRESS).to_numpy())
            if self._drop_address:
                b = b.drop_columns([ROW_ADDRESS])
            yield b.add_column(self._offset_at, ROW_OFFSET, values)

    @property
    def dataset_schema(self) -> pa.Schema:
        return user_schema(self._source.schema)

    # -- running ------------------------------------------------------------------------------
    def _direct(self):
        """An exact, small index answer gathered in one direct take (or None)."""
        sel = self.index_selection()
        if sel is None or not sel.exact or self._projection.computed or \
                self._offset_at is not None or self._output_spec.include_deleted:
            return None
        if not hasattr(self._source, "manifest_file"):
            return None
        # exact: the index answered every part of the filter (no _rowid/_rowaddr in it)
        table = direct_index_table(self._source, sel, self._scanned_fragments(), self._output_spec)
        if table is None:
            return None
        start = self._offset or 0
        stop = table.num_rows if self._limit is None else min(table.num_rows, start + self._limit)
        return table.slice(start, max(0, stop - start))

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        if self._stats_callback is not None:
            return measured(self._run, self._stats_callback)
        return self._run()

    def _run(self) -> Iterator[pa.RecordBatch]:
        if self._nearest is not None:
            decode = batch_decoder(self._stored_schema())
            out = self._nearest_stored().to_batches(self._spec.batch_size)
            out = iter(out) if decode is None else map(decode, out)
            return rebatch(out, self._batch_size) if self._strict else out
        if self._fts is not None:
            return self._fts_batches()
        direct = self._direct()
        if direct is not None:
            decode = batch_decoder(self._stored_schema())
            out = direct.to_batches(self._output_spec.batch_size)
            out = iter(out) if decode is None else map(decode, out)
            return rebatch(out, self._batch_size) if self._strict else out
        return self._batches(self._limit)

    def _batches(self, limit) -> Iterator[pa.RecordBatch]:
        # batches of a plain scan cross no Python frame: windows are flattened by chain, and
        # whether a column needs converting (JSON) is decided once here
        windows = scan_windows(self._source.ctx, self._scanned_fragments(), self._spec,
                               limit=limit, offset=self._offset, threads=self._threads,
                               make_scan=self._make_scan())
        if self._projection.computed:  # evaluated a window at a time
            windows = (self._projection.apply_window(w, self._extras) for w in windows)
        batches = chain.from_iterable(windows)
        if self._offset_at is not None:
            batches = self._add_offsets(batches)
        decode = batch_decoder(self._stored_schema())
        out = batches if decode is None else map(decode, batches)
        return rebatch(out, self._batch_size) if self._strict else out

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
        if self._nearest is not None:
            return self._nearest_stored().num_rows
        if self._fts is not None:
            return len(self._fts.hits())
        if self._limit is None and not self._offset and not self._spec.include_deleted:
            if self._spec.filter is None:
                return int(live_counts(self._source.ctx, self._fragments).sum())
            count_spec = ScanSpec.build(self._source.schema, [], self._spec.filter)
            sel = self.index_selection()
            frags, counted = self._scanned_fragments(), 0
            if sel is not None and sel.exact:  # answered fragments are counted, not read
                ctx = self._source.ctx
                counted = sum(SelectedScan(ctx, f, count_spec, sel.rows.get(int(f.id)),
                                           True, True).count() if sel.negated else
                              selected_count(ctx, f, sel.rows.get(int(f.id)))
                              for f in frags if sel.covers(int(f.id)))
                frags = [f for f in frags if not sel.covers(int(f.id))]
            return counted + count_matching(self._source.ctx, frags, count_spec,
                                            make_scan=self._make_scan())
        return sum(b.num_rows for b in self.to_batches())

    def head(self, num_rows: int) -> pa.Table:
        if self._nearest is not None or self._fts is not None:
            return self.to_table().slice(0, num_rows)
        limit = num_rows if self._limit is None else min(num_rows, self._limit)
        return pa.Table.from_batches(list(self._batches(limit)), schema=self.projected_schema)

    def take(self, indices) -> pa.Table:
        return self.to_table().take(indices)

    def to_pandas(self, **kwargs):
        return self.to_table().to_pandas(**kwargs)

    # -- plans --------------------------------------------------------------------------------
    def explain_plan(self, verbose: bool = False) -> str:
        """Plain text of what the scan will read and compute, with pylance's node and key
        names (``LanceRead: ... projection=[...]``) so tools reading plans find them."""
        return "\n".join(self._plan_lines(verbose, None)) + "\n"

    def _plan_lines(self, verbose: bool, metrics) -> list:
        spec = self._spec
        ds = self._source
        lines = []
        if self._fts is not None:
            lines.append(f"Projection: {', '.join(self.projected_schema.names)}")
            if self._limit is not None or self._offset:
                lines.append(f"  Limit: offset={self._offset or 0}, limit={self._limit}")
            lines += ["    " + x for x in self._fts.explain(metrics)]
            return lines
        if self._projection.computed:
            exprs = ", ".join(f"{n}={e}" for n, e in self._projection.outputs)
            lines.append(f"Projection: {exprs}")
        else:
            lines.append(f"Projection: {', '.join(self.projected_schema.names)}")
        if self._limit is not None or self._offset:
            lines.append(f"  Limit: offset={self._offset or 0}, limit={self._limit}")
        if self._nearest is not None:
            cols = [c for c in self._projection.read_columns]
            lines.append(f"  LanceRead: uri={ds.uri}, version={ds.version}, "
                         f"projection=[{', '.join(cols)}], source=stream(_rowid)")
            lines.extend(nearest_plan_lines(ds, self._nearest_request(), 4))
            return lines
        filt = self._filter_text if self._filter_text is not None else spec.filter
        read = f"  LanceRead: uri={ds.uri}, version={ds.version}, " \
            f"projection=[{', '.join(spec.read_columns)}], num_fragments={len(self._fragments)}, " \
            f"full_filter={filt if filt is not None else '--'}, " \
            f"refine_filter={self._refine_text(filt)}, " \
            f"row_id={str(spec.need_row_id).lower()}, " \
            f"row_addr={str(spec.need_row_address).lower()}, batch_size={spec.batch_size}"
        if metrics is not None:
            read += ", metrics=[" + ", ".join(f"{k}={v}" for k, v in metrics.items()) + "]"
        lines.append(read)
        sel = self.index_selection()
        if sel is not None:
            lines.append(f"    ScalarIndexQuery: query={sel.text()}")
        if verbose:
            lines.append(f"    pyarrow filter: {spec.filter}")
            lines.append(f"    fragment ids: {[f.id for f in self._fragments]}")
        return lines

    def _refine_text(self, filt) -> str:
        """What is re-checked on the rows: nothing when there is no filter or an exact index
        answer, else the filter."""
        if filt is None:
            return "--"
        sel = self.index_selection()
        return "--" if sel is not None and sel.exact else str(filt)

    def analyze_plan(self, count_rows: bool = False) -> str:
        """Run the scan and describe it with what it did: rows out, rows of the fragments it
        scanned, bytes read and read requests (process-wide counters, so concurrent reads
        elsewhere are included)."""
        if self._fts is not None:
            started = time.perf_counter()
            metrics = self._fts.metrics()
            metrics["elapsed"] = f"{(time.perf_counter() - started) * 1000:.3f}ms"
            return "\n".join(self._plan_lines(True, metrics)) + "\n"
        requests0, bytes0 = io_totals()
        started = time.perf_counter()
        output = sum(b.num_rows for b in self.to_batches())
        elapsed = time.perf_counter() - started
        requests1, bytes1 = io_totals()
        scanned = int(live_counts(self._source.ctx, self._fragments).sum())
        metrics = {"output_rows": output, "rows_scanned": scanned,
                   "bytes_read": bytes1 - bytes0, "iops": requests1 - requests0,
                   "requests": requests1 - requests0, "elapsed": f"{elapsed * 1000:.3f}ms"}
        return "\n".join(self._plan_lines(True, metrics)) + "\n"

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
