"""LegacyFileReader: read a legacy (v0.1) Lance data file behind LanceFileReader's interface.

``LanceFileReader(path)`` hands out one of these when the footer says the file is legacy, so
the dataset layer scans, takes, deletes and counts rows of legacy fragments with no code of its
own: ``projection(names, fields=, field_ids=, column_indices=)`` (legacy DataFiles have no
column indices: pages are found by field id), ``read_batches``, ``read_range``, ``take``.

Opening reads the footer, the Metadata, the file's own schema and the page table (all
checked, :mod:`.format`); reads fetch only the pages of the wanted fields in the batches that
hold the wanted rows, and decode them (:mod:`lancefmt.encoding.legacy`).
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from ...encoding.legacy.decode import PageDecoder, fixed_bit_width, read_dictionary_values
from ...errors import CorruptFileError, InvalidArgumentError, LanceError
from ..batches import combine_batch, output_table
from ..projection import Projection, make_projection, select_roots
from ..schema import arrow_type, field_tree
from .format import read_legacy_metadata

DEFAULT_BATCH_SIZE = 8192


class LegacyFileReader:
    """A legacy Lance data file opened for reading (see the module docstring)."""

    def __init__(self, source, tail: bytes, size: int):
        self._source = source
        self.path = source.path
        self._meta = read_legacy_metadata(source.read_range, size, tail, self.path)
        try:
            self._roots = field_tree(self._meta.fields)
        except CorruptFileError as e:
            raise CorruptFileError(f"bad schema: {e.reason}", self.path) from None
        self._own = {f.id: f for f in self._meta.fields}
        self._dictionaries: dict[int, pa.Array] = {}
        self._file_projection = None
        self._decoder = PageDecoder(self._fetch, self._page, self._dictionary,
                                    self._meta.data_end, self.path)

    # -- identity --------------------------------------------------------------------------
    @property
    def metadata_nbytes(self) -> int:
        """Bytes of the file's metadata held parsed (Metadata, schema and page table)."""
        m = self._meta
        starts = [p for p in (m.page_table_position, m.manifest_position, m.metadata_position) if p > 0]
        return int(m.file_size - min(starts, default=m.metadata_position))

    @property
    def num_rows(self) -> int:
        return self._meta.num_rows

    @property
    def version(self) -> tuple[int, int]:
        """The footer version, (0, 1) or (0, 2) (``DataFile.file_major/minor_version``)."""
        return self._meta.version

    @property
    def fields(self) -> list:
        return list(self._meta.fields)

    @property
    def schema_metadata(self) -> dict:
        return dict(self._meta.schema_metadata)

    @property
    def schema(self) -> pa.Schema:
        return self.projection().schema

    @property
    def metadata(self):
        return self._meta

    @property
    def file_size(self) -> int:
        return self._meta.file_size

    @property
    def num_columns(self) -> int:
        return 0

    @property
    def batch_offsets(self) -> np.ndarray:
        return self._meta.batch_offsets

    # -- bytes -------------------------------------------------------------------------------
    def _fetch(self, start: int, length: int) -> pa.Buffer:
        if length == 0:
            return pa.py_buffer(b"")
        mapped = self._source.mapped()
        if mapped is not None:
            if start + length > mapped.size:
                raise CorruptFileError(f"{length} bytes at {start} pass the end of the file",
                                       self.path)
            return mapped.slice(start, length)
        return self._source.fetch([(start, length)])[0]

    def _page(self, field_id: int, batch: int):
        return self._meta.page(field_id, batch, self.path)

    def _dictionary(self, node) -> pa.Array:
        return self.dictionary_values(node.id)

    def dictionary_values(self, field_id: int) -> pa.Array:
        """The values of dictionary field ``field_id``, from the file's own schema."""
        got = self._dictionaries.get(field_id)
        if got is None:
            own = self._own.get(field_id)
            if own is None or not own.HasField("dictionary"):
                raise CorruptFileError(f"dictionary field id {field_id} has no dictionary in "
                                       f"the file's schema", self.path)
            value_type = arrow_type(own.logical_type).value_type
            got = read_dictionary_values(self._fetch, own, value_type, self._meta.data_end,
                                         self.path)
            self._dictionaries[field_id] = got
        return got

    # -- projections -----------------------------------------------------------------------
    def projection(self, columns: Sequence[str] | None = None, *, fields=None, field_ids=None,
                   column_indices=None) -> Projection:
        """Top-level ``columns`` of the file's schema, or the dataset's ``fields`` (then every
        field id must be one the file stores; ``column_indices`` are empty for legacy files)."""
        if fields is None:
            if columns is None:
                if self._file_projection is None:
                    self._file_projection = self._make(self._roots)
                return self._file_projection
            return self._make(select_roots(self._roots, columns))
        if field_ids is None:
            raise InvalidArgumentError("fields= needs field_ids=")
        roots = field_tree(fields)
        if columns is not None:
            roots = select_roots(roots, columns)
        stored = set(int(i) for i in field_ids)
        for r in roots:
            for n in r.walk():
                own = self._own.get(n.id)
                if n.id not in stored or own is None:
                    raise InvalidArgumentError(f"field id {n.id} is not stored in {self.path}")
                if own.logical_type != n.field.logical_type:
                    raise CorruptFileError(
                        f"field {n.name!r} (id {n.id}) is {own.logical_type} in the file but "
                        f"{n.field.logical_type} in the dataset", self.path)
        return self._make(roots)

    def _make(self, roots) -> Projection:
        try:
            return make_projection(roots, {n.id: n.id for r in roots for n in r.walk()},
                                   self._meta.schema_metadata)
        except LanceError as e:
            if getattr(e, "path", None) is None:
                raise CorruptFileError(f"schema: {e}", self.path) from None
            raise

    def _resolve(self, columns) -> Projection:
        return columns if isinstance(columns, Projection) else self.projection(columns)

    def _readers(self, proj: Projection):
        """Per-column readers (the direct-take path of the dataset layer finds none it knows
        here and reads through :meth:`take`)."""
        return [self._decoder for _ in proj.roots]

    # -- reads -----------------------------------------------------------------------------
    def _batches_of(self, start: int, stop: int):
        """(batch, first row in batch, last row in batch) covering rows [start, stop)."""
        offs = self._meta.batch_offsets
        b = int(np.searchsorted(offs, start, side="right")) - 1
        out = []
        while start < stop and b < len(offs) - 1:
            lo, hi = int(offs[b]), int(offs[b + 1])
            if hi > start:
                out.append((b, start - lo, min(stop, hi) - lo))
                start = min(stop, hi)
            b += 1
        return out

    def _guard(self, fn, *args):
        try:
            return fn(*args)
        except LanceError:
            raise
        except (pa.ArrowException, ValueError, TypeError, IndexError, OverflowError,
                MemoryError) as e:
            raise CorruptFileError(f"undecodable data ({type(e).__name__}: {e})",
                                   self.path) from None

    def _columns(self, proj: Projection, pieces) -> list[pa.ChunkedArray]:
        """Each projected column over ``pieces`` [(batch, lo, hi)] (one chunk per piece)."""
        out = []
        for root, field in zip(proj.roots, proj.storage_schema):
            chunks = [self._guard(self._decoder.read, root, field.type, b, lo, hi)
                      for b, lo, hi in pieces]
            for (b, lo, hi), c in zip(pieces, chunks):
                if len(c) != hi - lo:
                    raise CorruptFileError(f"field {root.name!r} batch {b}: {len(c)} rows "
                                           f"decoded, {hi - lo} expected", self.path)
            out.append(pa.chunked_array(chunks, type=field.type))
        return out

    def read_all(self, columns=None) -> pa.Table:
        return self.read_range(0, self.num_rows, columns)

    def read_range(self, start: int, stop: int, columns=None) -> pa.Table:
        proj = self._resolve(columns)
        start, stop = int(start), int(stop)
        if not 0 <= start <= stop <= self.num_rows:
            raise InvalidArgumentError(
                f"row range [{start}, {stop}) outside the file's {self.num_rows} rows")
        arrays = self._columns(proj, self._batches_of(start, stop))
        return self._guard(output_table, arrays, proj, stop - start)

    def read_batches(self, batch_size: int = DEFAULT_BATCH_SIZE, columns=None, *,
                     start: int = 0, stop: int | None = None) -> Iterator[pa.RecordBatch]:
        return map(combine_batch, self.read_windows(batch_size, columns, start=start, stop=stop))

    def read_windows(self, window: int, columns=None, *, start: int = 0,
                     stop: int | None = None) -> Iterator[pa.Table]:
        """Rows ``[start, stop)`` as tables of ``window`` rows (see LanceFileReader)."""
        if window <= 0:
            raise InvalidArgumentError("batch_size must be positive")
        proj = self._resolve(columns)
        stop = self.num_rows if stop is None else int(stop)
        if not 0 <= start <= stop <= self.num_rows:
            raise InvalidArgumentError(f"row range [{start}, {stop}) outside the file")
        pos = start
        while pos < stop:
            end = min(pos + window, stop)
            yield self.read_range(pos, end, proj)
            pos = end

    def take(self, indices, columns=None) -> pa.Table:
        """Rows at ``indices`` (any order, repeats allowed). Fixed-width columns of a local
        (memory-mapped) file gather just the rows' bytes in one vectorized step; other
        columns read each batch holding wanted rows from its first to its last wanted row."""
        proj = self._resolve(columns)
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_rows):
            raise InvalidArgumentError(f"row index out of range for {self.num_rows} rows")
        if idx.size == 0:
            return self.read_range(0, 0, proj)
        uniq, inverse = np.unique(idx, return_inverse=True)
        offs = self._meta.batch_offsets
        batch_of = np.searchsorted(offs, uniq, side="right") - 1
        order = pa.array(inverse.reshape(-1))
        mapped = self._source.mapped()
        plan = None
        arrays = []
        for root, field in zip(proj.roots, proj.storage_schema):
            col = self._gather_fixed(mapped, root, field.type, uniq, batch_of) \
                if mapped is not None else None
            if col is None:
                if plan is None:
                    plan = self._take_plan(uniq, batch_of)
                pieces, picks = plan
                col = self._columns(_one(proj, root, field), pieces)[0]
                col = self._guard(lambda c: c.take(picks), col)
            arrays.append(self._guard(lambda c: c.take(order), col))
        return self._guard(output_table, arrays, proj, len(idx))

    def _take_plan(self, uniq, batch_of):
        """[(batch, lo, hi)] spanning the wanted rows of each batch, and where each wanted
        row lands in the concatenation of those spans."""
        offs = self._meta.batch_offsets
        pieces, picks, base = [], [], 0
        for b in np.unique(batch_of):
            rows = uniq[batch_of == b] - offs[b]
            lo, hi = int(rows[0]), int(rows[-1]) + 1
            pieces.append((int(b), lo, hi))
            picks.append(rows - lo + base)
            base += hi - lo
        return pieces, pa.array(np.concatenate(picks))

    def _gather_fixed(self, mapped: pa.Buffer, root, dtype, rows, batch_of):
        """The rows of a plain fixed-width column (numbers, temporal, decimals, fixed-size
        binaries and one-level fixed-size lists of those), or None for other columns."""
        value_type = dtype.value_type if pa.types.is_fixed_size_list(dtype) else dtype
        if root.children or pa.types.is_dictionary(dtype) or pa.types.is_boolean(value_type) \
                or pa.types.is_fixed_size_list(value_type):
            return None
        bits = fixed_bit_width(dtype)
        if bits is None or bits % 8 or not bits:
            return None
        width = bits // 8
        meta = self._meta
        i = root.id - meta.min_field_id
        if not 0 <= i < meta.page_positions.shape[0]:
            self._page(root.id, 0)  # raises, naming the field
        local = rows - meta.batch_offsets[batch_of]
        if np.any(local >= meta.page_lengths[i][batch_of]):
            raise CorruptFileError(f"field {root.name!r}: a page holds fewer rows than its batch",
                                   self.path)
        starts = meta.page_positions[i][batch_of] + local * width
        if int(starts.max()) + width > meta.data_end:
            raise CorruptFileError(f"field {root.name!r}: a page runs past the page data",
                                   self.path)
        whole = np.frombuffer(mapped, dtype=np.uint8)
        data = whole[(starts[:, None] + np.arange(width)).reshape(-1)]
        n = len(rows)
        if pa.types.is_fixed_size_list(dtype):
            items = pa.Array.from_buffers(value_type, n * dtype.list_size,
                                          [None, pa.py_buffer(data)])
            return pa.FixedSizeListArray.from_arrays(items, type=dtype)
        return pa.Array.from_buffers(dtype, n, [None, pa.py_buffer(data)])
    def __repr__(self):
        return (f"LegacyFileReader({self.path!r}, version={self.version[0]}.{self.version[1]}, "
                f"rows={self.num_rows}, batches={self._meta.num_batches})")


def _one(proj: Projection, root, field) -> Projection:
    """A projection of one of ``proj``'s columns (for column-by-column reads)."""
    return Projection((root,), pa.schema([field]), pa.schema([field]), proj.column_of)
