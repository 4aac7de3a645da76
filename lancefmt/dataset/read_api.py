"""pylance's read API on :class:`~lancefmt.dataset.Dataset`: ``scanner``, Arrow stream export,
introspection (``stats``, transactions, ``lance_schema``...) and conveniences.

:class:`DatasetReadAPI` is the Dataset's base class. It derives from
``pyarrow.dataset.Dataset`` exactly as pylance's ``LanceDataset`` does: engines that accept
Arrow datasets (DuckDB's replacement scans, ``polars.scan_pyarrow_dataset``, Arrow's own
dataset API) recognise it by that type and call ``scanner(columns=..., filter=<pyarrow
Expression>)`` on it, so their projections and filters run inside lancefmt's scan. None of
the Arrow C++ dataset's own state is used; every method an engine may call is overridden here.
"""
from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.dataset as pads

from ..errors import InvalidArgumentError, NotSupportedError
from ..file.schema import max_field_id
from ..jsonb.arrow import decode_batch
from ..table.commit import read_transaction_of
from ..table.versions import load_manifest
from .fragment import Fragment
from .read.projection import needs_projection, projected
from .read.row_lookup import take_row_ids
from .read.scanner import LanceScanner
from .read.shuffle import shuffled_batches
from ..table.lance_schema import LanceSchema
from .read.stats import LanceStats


_POSITIONAL = ("nearest", "batch_size", "batch_size_bytes", "batch_readahead", "fragment_readahead",
               "scan_in_order")


def _positional(args, kwargs) -> dict:
    """pylance's to_table/to_batches positional arguments after ``offset``, as keywords."""
    if len(args) > len(_POSITIONAL):
        raise InvalidArgumentError("too many positional arguments")
    out = dict(zip(_POSITIONAL, args))
    for k, v in kwargs.items():
        if k in out:
            raise InvalidArgumentError(f"got multiple values for argument {k!r}")
        out[k] = v
    return out


class DatasetReadAPI(pads.Dataset):
    """Read-side methods of pylance's ``LanceDataset`` (see module docstring)."""

    # -- scanning ---------------------------------------------------------------------------
    def scanner(self, columns=None, filter=None, limit=None, offset=None, nearest=None,
                batch_size=None, batch_size_bytes=None, batch_readahead=None,
                fragment_readahead=None, scan_in_order=None, fragments=None, index_segments=None,
                full_text_query=None, *, with_row_id=None, with_row_address=None, **kwargs):
        """A :class:`~lancefmt.dataset.read.scanner.LanceScanner` (pylance's signature; index
        and search options are refused, tuning options accepted and ignored); unset
        arguments take ``default_scan_options``."""
        given = {"columns": columns, "filter": filter, "limit": limit, "offset": offset,
                 "batch_size": batch_size, "with_row_id": with_row_id,
                 "with_row_address": with_row_address}
        for k, v in getattr(self, "scan_defaults", {}).items():
            if given.get(k) is None and k not in kwargs:
                if k in given:
                    given[k] = v
                else:
                    kwargs[k] = v
        columns, filter, limit, offset = (given["columns"], given["filter"], given["limit"],
                                          given["offset"])
        batch_size, with_row_id, with_row_address = (given["batch_size"], given["with_row_id"],
                                                     given["with_row_address"])
        return LanceScanner(self.snapshot, columns=columns, filter=filter, limit=limit, offset=offset,
                            nearest=nearest, batch_size=batch_size,
                            batch_size_bytes=batch_size_bytes, batch_readahead=batch_readahead,
                            fragment_readahead=fragment_readahead, scan_in_order=scan_in_order,
                            fragments=fragments, index_segments=index_segments,
                            full_text_query=full_text_query, with_row_id=with_row_id,
                            with_row_address=with_row_address, **kwargs)

    def _scan_table(self, columns=None, filter=None, limit=None, offset=None, *args, **kwargs) -> pa.Table:
        return self.scanner(columns=columns, filter=filter, limit=limit, offset=offset,
                            **_positional(args, kwargs)).to_table()

    def _scan_batches(self, columns=None, filter=None, limit=None, offset=None, *args, **kwargs):
        return self.scanner(columns=columns, filter=filter, limit=limit, offset=offset,
                            **_positional(args, kwargs)).to_batches()

    def __arrow_c_stream__(self, requested_schema=None):
        """Arrow PyCapsule stream of every row (``pa.table(ds)``, Polars, DuckDB...)."""
        return self.scanner().__arrow_c_stream__(requested_schema)

    def to_pandas(self, columns=None, filter=None, limit=None, offset=None, **kwargs):
        scan_args = {k: kwargs.pop(k) for k in list(kwargs)
                     if k in ("with_row_id", "with_row_address", "batch_size", "fragments",
                              "scan_in_order", "nearest", "prefilter", "use_stats",
                              "fast_search", "full_text_query", "io_buffer_size",
                              "late_materialization", "use_scalar_index",
                              "include_deleted_rows", "order_by", "batch_readahead",
                              "fragment_readahead", "disable_scoring_autoprojection")}
        kwargs.pop("blob_mode", None)
        return self.scanner(columns=columns, filter=filter, limit=limit, offset=offset,
                            **scan_args).to_table().to_pandas(**kwargs)

    def sample(self, num_rows: int, columns=None, randomize_order: bool = True, **kwargs) -> pa.Table:
        """``num_rows`` distinct random rows (``random.sample`` over row offsets, as pylance)."""
        total = self.count_rows()
        if num_rows > total:
            raise InvalidArgumentError(f"cannot sample {num_rows} rows from {total}")
        indices = random.sample(range(total), num_rows)
        if not randomize_order:
            indices.sort()
        return self.take(indices, columns=columns)

    def shuffled_batches(self, batch_size: int = 1024, *, seed=None, columns=None,
                         with_row_id: bool = False, with_row_address: bool = False,
                         drop_last: bool = False, readahead: int = 2):
        """Every live row once, as RecordBatches in a seeded random order (for training
        loops; an extension: pylance's samplers shuffle row ranges, not rows). Each batch is
        a ``take`` of its rows; the next ``readahead`` batches are read in the background."""
        return shuffled_batches(self.snapshot, batch_size, seed=seed, columns=columns,
                                with_row_id=with_row_id, with_row_address=with_row_address,
                                drop_last=drop_last, readahead=readahead)

    def _take_rows(self, row_ids, columns=None, *, ignore_deletions: bool = False, **kwargs) -> pa.Table:
        """pylance's (unstable) rows by row id, in the order given (``take_row_ids``);
        ``columns`` as in ``take``. Deleted or unknown ids are an error here."""
        if isinstance(row_ids, (pa.Array, pa.ChunkedArray)):
            row_ids = row_ids.to_numpy(zero_copy_only=False)
        schema = self.snapshot.schema
        if needs_projection(schema, columns):
            return decode_batch(projected(schema, columns,
                                          lambda plain: take_row_ids(self.snapshot, row_ids, plain)),
                                schema)
        return decode_batch(take_row_ids(self.snapshot, row_ids, columns), schema)

    def slice(self, start: int, end: int, columns=None) -> pa.Table:
        if start < 0:
            raise InvalidArgumentError(f"start must be non-negative, got {start}")
        if end < start:
            raise InvalidArgumentError(f"end ({end}) must be >= start ({start})")
        return self.scanner(offset=start, limit=end - start, columns=columns).to_table()

    def __len__(self) -> int:
        return self.count_rows()

    # -- introspection ------------------------------------------------------------------------
    @property
    def lance_schema(self):
        """The Lance schema: the manifest's Field messages (id, parent id, name, logical type)."""
        return LanceSchema(self.lance_fields, self.schema.metadata)

    @property
    def max_field_id(self) -> int:
        return max_field_id(self.lance_fields)

    @property
    def stats(self):
        return LanceStats(self.snapshot)

    def read_transaction(self, version: int):
        """The Transaction that produced ``version`` (None if it left none)."""
        snapshot = self.snapshot
        mf = snapshot.manifest_file if int(version) == snapshot.version else \
            load_manifest(snapshot.uri, int(version), store=snapshot.store)
        return read_transaction_of(mf, snapshot.uri, snapshot.store)

    def get_transactions(self, recent_transactions: int = 10) -> list:
        """Transactions of the latest ``recent_transactions`` versions, newest first (pylance)."""
        latest = self.latest_version
        out = []
        for v in range(latest, max(0, latest - int(recent_transactions)), -1):
            try:
                out.append(self.read_transaction(v))
            except (FileNotFoundError, LookupError):
                out.append(None)
        return out

    def get_fragments(self, filter=None) -> list:
        """Every fragment; with ``filter`` (an extension: pylance refuses one), only fragments
        holding at least one matching row."""
        snapshot = self.snapshot
        frags = [Fragment(snapshot.ctx, pb, snapshot) for pb in snapshot.fragment_pbs()]
        if filter is None:
            return frags
        return [f for f in frags if f.count_rows(filter) > 0]

    # -- pyarrow.dataset.Dataset methods with no Lance meaning ----------------------------------
    @property
    def partition_expression(self):
        raise NotSupportedError("Lance datasets are not partitioned (no partition expression)")

    def replace_schema(self, schema):
        raise NotSupportedError("replace_schema: evolve the schema with alter_columns/add_columns")

    def join(self, *args, **kwargs):
        raise NotSupportedError("join: read both sides with to_table() and join the tables")

    def join_asof(self, *args, **kwargs):
        raise NotSupportedError("join_asof: read both sides with to_table() and join the tables")

    def sort_by(self, sorting, **kwargs):
        keys = [(sorting, "ascending")] if isinstance(sorting, str) else sorting
        return self.to_table().sort_by(keys, **kwargs)

    def filter(self, expression):
        raise NotSupportedError("filter: use scanner(filter=...) or to_table(filter=...)")

    def _get_fragments(self, *args, **kwargs):
        raise NotSupportedError("_get_fragments: use get_fragments()")

    def _scanner_options(self, *args, **kwargs):
        raise NotSupportedError("pyarrow scanner options: use scanner(...)")

    def _scan_options(self, *args, **kwargs):
        raise NotSupportedError("pyarrow scan options: use scanner(...)")
