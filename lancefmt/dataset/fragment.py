"""Fragment: pylance's ``LanceFragment``, one fragment of one dataset version, scannable on
its own.

A Fragment is a :class:`~lancefmt.dataset.core.context.ScanContext` plus the fragment's
``DataFragment`` protobuf, so it pickles small and a Spark executor can scan it without the
manifest.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._proto import table_pb2
from ..jsonb.arrow import batch_decoder, decode_batch, user_schema
from ..table.fragment import FragmentMetadata
from ..table.lance_schema import LanceSchema
from .core.context import ScanContext
from .core.files import deletion_file_uri
from .core.snapshot import Snapshot
from .mutate.fragment_columns import (fragment_merge, fragment_merge_columns,
                                      fragment_update_columns)
from .read.fragment_source import FragmentSource
from .read.projection import needs_projection, projected
from .read.scan import ROW_ADDRESS, FragmentScan, ScanSpec, live_counts, load_deletions
from .read.scanner import LanceScanner
from .read.take import take_from_fragment
from .mutate.delete import delete_in_fragment
from .write.adopt_file import fragment_from_file
from .write.fragments import create_fragment


class Fragment:
    def __init__(self, ctx: ScanContext, pb, snapshot=None):
        self._ctx = ctx
        self._pb = pb
        # the version it came from, whose indices its filtered scans may use (never pickled:
        # a fragment on an executor travels alone)
        self._from = snapshot

    def __reduce__(self):
        return (_rebuild_fragment, (self._ctx, self._pb.SerializeToString()))

    def __repr__(self):
        return f"Fragment(id={self.id}, physical_rows={self.physical_rows}, version={self._ctx.version})"

    # -- metadata --------------------------------------------------------------------------
    @property
    def scan_context(self) -> ScanContext:
        """What scanning this fragment needs besides its protobuf (small; pickles)."""
        return self._ctx

    @property
    def pb(self):
        """The fragment's ``DataFragment`` protobuf (as the manifest holds it)."""
        return self._pb

    @property
    def id(self) -> int:
        return self._pb.id

    fragment_id = id

    @property
    def physical_rows(self) -> int:
        return self._pb.physical_rows

    @property
    def num_deletions(self) -> int:
        return self.physical_rows - int(live_counts(self._ctx, [self._pb])[0])

    @property
    def metadata(self) -> FragmentMetadata:
        return FragmentMetadata.from_bytes(self._pb.SerializeToString())

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema as pylance shows it (JSON columns as ``arrow.json``)."""
        return user_schema(self._ctx.schema)

    @property
    def version(self) -> int:
        return self._ctx.version

    def data_files(self) -> list[str]:
        """Resolved URIs of the fragment's data files (``str`` s carrying pylance's
        ``DataFile`` attributes: ``path``, ``fields``, ``column_indices``...)."""
        r = self._ctx.resolver
        return [DataFileUri(r.data_file_uri(df.path, df.base_id if df.HasField("base_id") else None), df)
                for df in self._pb.files]

    def deletion_file(self) -> str | None:
        """Resolved URI of the deletion file, or None."""
        return deletion_file_uri(self._ctx.resolver, self._pb)

    def deletion_mask(self) -> np.ndarray | None:
        """Boolean array over physical rows, True = live; None without a deletion file."""
        dv = load_deletions(self._ctx, self._pb)
        return None if dv is None else dv.live_mask(self.physical_rows)

    def row_ids(self) -> np.ndarray:
        """Row ids (uint64) of the live rows, in row order."""
        scan = FragmentScan(self._ctx, self._pb, ScanSpec((), (), None))
        ids = scan.row_ids()
        dv = scan.deletions
        if dv is not None and len(dv):
            ids = ids[dv.live_mask(self.physical_rows)]
        return ids

    # -- reading ---------------------------------------------------------------------------
    def _spec(self, columns=None, filter=None, with_row_id=False, with_row_address=False,
              batch_size=None) -> ScanSpec:
        return ScanSpec.build(self._ctx.schema, columns, filter, with_row_id, with_row_address,
                              batch_size)

    def count_rows(self, filter=None) -> int:
        if filter is not None and self._from is not None:
            return self.scanner(columns=[], filter=filter).count_rows()
        spec = self._spec(columns=[], filter=filter)
        return FragmentScan(self._ctx, self._pb, spec).count()

    def to_batches(self, columns=None, batch_size=None, filter=None, limit=None, offset=None,
                   with_row_id=False, with_row_address=False, *, start: int = 0,
                   stop: int | None = None, **kwargs):
        """Batches of this fragment (pylance's signature); ``start``/``stop`` (lancefmt) select
        a range of physical rows."""
        if start == 0 and stop is None:
            return self.scanner(columns=columns, batch_size=batch_size, filter=filter, limit=limit,
                                offset=offset, with_row_id=with_row_id,
                                with_row_address=with_row_address, **kwargs).to_batches()
        spec = self._spec(columns, filter, with_row_id, with_row_address, batch_size)
        batches = FragmentScan(self._ctx, self._pb, spec).batches(start, stop)
        decode = batch_decoder(self._ctx.schema)  # JSON columns: decided once, not per batch
        return batches if decode is None else map(decode, batches)

    def scanner(self, columns=None, batch_size=None, filter=None, limit=None, offset=None,
                with_row_id=False, with_row_address=False, **kwargs):
        """A LanceScanner over this fragment alone."""
        return LanceScanner(FragmentSource(self._ctx, self._pb, self._from), columns=columns,
                            batch_size=batch_size, filter=filter, limit=limit, offset=offset,
                            with_row_id=with_row_id, with_row_address=with_row_address, **kwargs)

    def head(self, num_rows: int) -> pa.Table:
        return self.scanner(limit=num_rows).to_table()

    def to_pandas(self, columns=None, filter=None, **kwargs):
        return self.to_table(columns=columns, filter=filter, **kwargs).to_pandas()

    @staticmethod
    def create(dataset_uri, data, fragment_id=None, schema=None, max_rows_per_group=1024,
               progress=None, mode="append", **kwargs) -> FragmentMetadata:
        """Write ``data`` as one uncommitted fragment of ``dataset_uri`` (pylance's
        ``LanceFragment.create``)."""
        return create_fragment(dataset_uri, data, fragment_id, schema, max_rows_per_group,
                               progress, mode, **kwargs)

    @staticmethod
    def create_from_file(filename: str, dataset, fragment_id: int = 0) -> FragmentMetadata:
        """A fragment for a Lance file already in the dataset's ``data/`` directory (written
        with the file API); commit it with ``Operation.Append``."""
        return fragment_from_file(dataset.snapshot, str(filename), fragment_id)

    def delete(self, predicate: str) -> FragmentMetadata | None:
        """This fragment with the rows matching ``predicate`` deleted as well (a new deletion
        file, not committed: pass it to ``Operation.Delete``); None when no row is left."""
        return delete_in_fragment(self._snapshot(), self._pb, predicate)

    def to_table(self, columns=None, filter=None, limit=None, offset=None, with_row_id=False,
                 with_row_address=False, *, start: int = 0, stop: int | None = None,
                 **kwargs) -> pa.Table:
        """This fragment's rows (pylance's signature); ``start``/``stop`` (lancefmt) select a
        range of physical rows."""
        if start == 0 and stop is None:
            return self.scanner(columns=columns, filter=filter, limit=limit, offset=offset,
                                with_row_id=with_row_id, with_row_address=with_row_address,
                                **kwargs).to_table()
        spec = self._spec(columns, filter, with_row_id, with_row_address)
        tables = list(FragmentScan(self._ctx, self._pb, spec).windows(start, stop))
        if not tables:
            return user_schema(spec.output_schema(self._ctx.schema)).empty_table()
        return decode_batch(pa.concat_tables(tables) if len(tables) > 1 else tables[0],
                            self._ctx.schema)

    def take(self, indices, columns=None) -> pa.Table:
        """Rows by offset among this fragment's live rows; ``columns`` as in ``scanner()``."""
        idx = np.asarray(indices, dtype=np.int64)
        schema = self._ctx.schema
        if needs_projection(schema, columns):
            return decode_batch(projected(schema, columns,
                                          lambda plain: take_from_fragment(self._ctx, self._pb,
                                                                           idx, plain)), schema)
        return decode_batch(take_from_fragment(self._ctx, self._pb, idx, columns), schema)

    def open_session(self, columns=None, with_row_address=None) -> "FragmentSession":
        """pylance's ``open_session``: repeated takes of the same ``columns`` (names; all
        when None) of this fragment, with ``_rowaddr`` last if ``with_row_address``."""
        if isinstance(columns, dict):
            raise TypeError("argument 'columns': 'dict' object is not an instance of 'Sequence'")
        return FragmentSession(self, None if columns is None else list(columns),
                               bool(with_row_address))

    # -- distributed schema evolution (nothing committed) -----------------------------------
    def _snapshot(self) -> Snapshot:
        ctx = self._ctx
        return Snapshot.open(ctx.uri, ctx.version, storage_options=ctx.storage_options,
                             base_store_params=ctx.base_store_params)

    def merge_columns(self, value_func, columns=None, batch_size=None, reader_schema=None):
        """New columns for this fragment only (pylance's ``Fragment.merge_columns``): returns
        (FragmentMetadata, LanceSchema) to commit with ``Operation.Merge`` (or ``Overwrite``
        with ``schema.to_pyarrow()``)."""
        meta, fields = fragment_merge_columns(self._snapshot(), self._pb, value_func, columns,
                                              batch_size, reader_schema)
        return meta, LanceSchema(fields)

    def merge(self, data_obj, left_on: str, right_on: str | None = None, schema=None):
        """New columns for this fragment joined from ``data_obj`` on ``left_on`` (a column,
        ``_rowid`` or ``_rowaddr``) == ``right_on``: (FragmentMetadata, LanceSchema) for
        ``Operation.Merge``; nothing committed."""
        meta, fields = fragment_merge(self._snapshot(), self._pb, data_obj, left_on, right_on,
                                      schema)
        return meta, LanceSchema(fields)

    def update_columns(self, data_obj, left_on: str = "_rowid", right_on=None, schema=None):
        """Rewrite columns of this fragment from joined data (pylance's ``update_columns``):
        returns (FragmentMetadata, modified field ids) for ``Operation.Update``."""
        return fragment_update_columns(self._snapshot(), self._pb, data_obj, left_on, right_on,
                                       schema)


def _rebuild_fragment(ctx, data: bytes) -> Fragment:
    pb = table_pb2.DataFragment()
    pb.ParseFromString(data)
    return Fragment(ctx, pb)


class DataFileUri(str):
    """A data file's resolved URI (a ``str``, as lancefmt always returned) that also carries
    pylance's ``DataFile`` attributes (``path``, ``fields``, ``column_indices``, versions...)."""

    def __new__(cls, uri: str, pb):
        obj = super().__new__(cls, uri)
        obj.path = pb.path
        obj.fields = list(pb.fields)
        obj.column_indices = list(pb.column_indices)
        obj.file_major_version = pb.file_major_version
        obj.file_minor_version = pb.file_minor_version
        obj.file_size_bytes = pb.file_size_bytes or None
        obj.base_id = pb.base_id if pb.HasField("base_id") else None
        return obj


class FragmentSession:
    """Takes of one fragment's chosen columns (pylance's ``FragmentSession``)."""

    def __init__(self, fragment: Fragment, columns, with_row_address: bool):
        names = fragment.schema.names if columns is None else columns
        self._fragment = fragment
        self._columns = list(names) + ([ROW_ADDRESS] if with_row_address else [])

    def take(self, indices) -> pa.Table:
        """Rows by offset among the fragment's live rows."""
        return self._fragment.take(indices, columns=self._columns)
