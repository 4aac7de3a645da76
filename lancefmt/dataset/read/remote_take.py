"""The remote take: fixed-width columns of datasets in object stores, planned in one pass.

The general take runs a read unit per fragment, data file and column (about 70 for 1,000
rows of three columns in ten files), each planning its pages in Python and waiting on the
others to send a round of requests together. Here a view's plan lists, once per column set,
every *piece* of every wanted column: a plain 2.0 page (values at a file offset) or a plain
2.1/2.2 mini-block chunk (offset, size, rows). A take then, with no Python work per file,
column or page:

1. finds every wanted row's piece in every column with one ``searchsorted`` over the
   columns' pieces laid end to end (column ``c`` keys its rows ``c * rows + row``);
2. asks for the bytes: a 2.0 row's value, or a whole 2.1/2.2 chunk (the unit a mini-block
   page is read in), nearby ranges of a file coalesced, every file's requests in one round
   (:func:`lancefmt.file.source.fetch_many`);
3. cuts the fetched chunks into segments (``_direct_take.chunk_segments``, each header and
   block checked against its chunk), points the 2.0 rows into the fetched bytes, and gathers
   all columns in one :class:`~._direct_take.GatherJob`, as the direct take does from mapped
   files.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, RowOutOfRangeError
from ...file.fetch_batch import FetchBatch
from ...file.source import COALESCE_GAP, fetch_many
from ._direct_take import SegmentTable, chunk_segments
from .take_plan import Ineligible, TakePlan, leaf_column, v20_page_offset, v21_chunks

# Keys of byte ranges: file index * SPAN + offset (files larger than this take the general path).
SPAN = 1 << 40


class RemoteTakePlan(TakePlan):
    """Per column every piece (2.0 page or 2.1/2.2 chunk) of every fragment, as arrays."""

    kind = "remote take"

    def walk(self, units) -> list:
        # opening the files and loading the chunk tables of 2.1/2.2 pages go out in rounds
        return FetchBatch().run(units)

    def file_pieces(self, reader, proj, columns, first):
        if reader.file_size >= SPAN:
            raise Ineligible("file too large")
        out = []
        for c, fr, field in zip(columns, reader.field_readers(proj), proj.storage_schema):
            if not field.type.equals(self.types[c]):
                raise Ineligible("stored as another type")
            vb = self.value_bytes[c]
            for page in leaf_column(fr).pages:
                if page.num_rows == 0:
                    continue
                row0 = first + page.row_start
                if reader.version == (2, 0):
                    off = v20_page_offset(page, vb, reader.file_size, reader.path)
                    out.append((c, np.array([row0]), np.array([off]),
                                np.array([page.num_rows * vb]), np.array([page.num_rows]),
                                False, 0, 0))
                    continue
                chunks, (bitpacked, bits) = v21_chunks(page, vb, reader)
                data_at, data_size = int(page.buffer_offsets[1]), int(page.buffer_sizes[1])
                if data_at < 0 or data_at + data_size > reader.file_size:
                    raise CorruptFileError(f"{page.describe()}: chunk buffer past the end of "
                                           f"the {reader.file_size}-byte file", reader.path)
                starts = np.asarray(chunks.value_starts, np.int64)
                counts = np.diff(starts)
                keep = counts > 0
                out.append((c, row0 + starts[:-1][keep],
                            data_at + np.asarray(chunks.offsets[:-1], np.int64)[keep],
                            np.asarray(chunks.sizes, np.int64)[keep], counts[keep],
                            True, 4 if chunks.wide else 2, (int(bitpacked), bits)))
        return reader.source, out

    def finish(self, pieces) -> None:
        sources, index = [], {}
        cols: list = [[] for _ in self.types]
        for source, found in pieces:
            f = index.setdefault(id(source), len(sources))
            if f == len(sources):
                sources.append(source)
            for c, *rest in found:
                cols[c].append((f, *rest))
        self.sources = sources
        P = self.physical_rows
        parts = []
        for c, found in enumerate(cols):
            if not found:
                raise ValueError(f"column {self.names[c]!r} has no pages")
            for f, rows, offs, sizes, counts, chunk, sw, packing in found:
                n = rows.size
                bp, bits = packing if chunk else (0, 0)
                parts.append((np.asarray(rows, np.int64) + c * P, np.full(n, f, np.int64),
                              np.asarray(offs, np.int64), np.asarray(sizes, np.int64),
                              np.asarray(counts, np.int64), np.full(n, chunk),
                              np.full(n, sw, np.int8), np.full(n, bp, np.uint8),
                              np.full(n, bits, np.int8), np.full(n, self.value_bytes[c])))
        (self.key, self.file, self.off, self.size, self.count, self.chunk, self.size_width,
         self.bitpacked, self.bits, self.vb) = (np.concatenate(a) for a in zip(*parts))
        ends = self.key + self.count
        column_ends = (np.arange(len(self.types), dtype=np.int64) + 1) * P
        # the pieces run without gap or overlap from each column's first row to its last
        if self.key[0] != 0 or np.any(ends[:-1] != self.key[1:]) or \
                not np.isin(column_ends, ends).all():
            raise ValueError("the pages do not hold each column's rows in order")
        self.key = np.append(self.key, column_ends[-1])

    def take_physical(self, rows: np.ndarray) -> pa.Table:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        if rows.size == 0:
            return self.schema.empty_table()
        P = self.physical_rows
        if int(rows.min()) < 0 or int(rows.max()) >= P:
            raise RowOutOfRangeError(f"row out of range for {P} physical rows")
        ascending = rows.size == 1 or bool(np.all(rows[1:] > rows[:-1]))
        u = rows if ascending else np.unique(rows)
        ncol = len(self.types)
        keys = (np.arange(ncol, dtype=np.int64)[:, None] * P + u).ravel()
        k = np.searchsorted(self.key, keys, side="right") - 1
        in_chunk = self.chunk[k]
        fk, fkeys = k[~in_chunk], keys[~in_chunk]
        fpos = self.off[fk] + (fkeys - self.key[fk]) * self.vb[fk]
        ck = np.unique(k[in_chunk])
        files = np.concatenate([self.file[fk], self.file[ck]])
        starts = np.concatenate([fpos, self.off[ck]])
        lengths = np.concatenate([self.vb[fk], self.size[ck]])
        bufs, base = self._fetch(files, starts, lengths)
        segs = [(fkeys, fkeys + 1, (base[:fk.size] + fpos).astype(np.uint64),
                 np.full(fk.size, -1, np.int16))]
        if ck.size:
            segs.append(self._chunk_segments(ck, (base[fk.size:] + self.off[ck]).astype(np.uint64)))
        tables = _tables(segs, ncol, P, self.value_bytes)
        out = self.gather(tables, rows)
        del bufs  # the gather is done with the fetched bytes
        return out

    def _chunk_segments(self, ck, addresses):
        """The segments of the fetched chunks ``ck`` (at ``addresses``); a chunk whose header
        or blocks do not fit it is a CorruptFileError naming its file."""
        args = (self.size[ck], self.key[ck], self.count[ck], self.size_width[ck],
                self.bitpacked[ck], self.bits[ck])
        try:
            return chunk_segments(addresses, *args)
        except ValueError:
            for i in range(ck.size):  # which chunk: only on this error path
                try:
                    chunk_segments(addresses[i:i + 1], *(a[i:i + 1] for a in args))
                except ValueError as e:
                    source = self.sources[int(self.file[ck[i]])]
                    raise CorruptFileError(f"chunk at byte {int(self.off[ck[i]])}: "
                                           f"{str(e).split(': ', 1)[-1]}", source.path) from None
            raise

    def _fetch(self, files, starts, lengths):
        """The ranges' bytes, nearby ranges of a file read as one: the buffers (to keep
        alive) and, per range, the address its offsets are relative to."""
        order = np.lexsort((starts, files))
        lo = files[order] * SPAN + starts[order]
        hi = lo + lengths[order]
        reach = np.maximum.accumulate(hi)
        new = np.ones(lo.size, bool)
        new[1:] = lo[1:] > reach[:-1] + COALESCE_GAP
        first = np.flatnonzero(new)
        req_lo, req_hi = lo[first], np.maximum.reduceat(hi, first)
        req_file = req_lo // SPAN
        bufs = fetch_many([(self.sources[f], s, n) for f, s, n in
                           zip(req_file.tolist(), (req_lo % SPAN).tolist(),
                               (req_hi - req_lo).tolist())])
        address = np.array([b.address for b in bufs], np.int64) - req_lo % SPAN
        which = np.empty(lo.size, np.int64)
        which[order] = np.cumsum(new) - 1
        return bufs, address[which]


def _tables(segs, ncol: int, P: int, value_bytes) -> list:
    """A SegmentTable per column from the take's segments ``(starts, ends, ptrs, widths)``
    (keys ``column * P + row``): rows no segment holds are covered by empty flat segments
    that nothing reads (every wanted row is in a segment of its own piece)."""
    starts, ends, ptrs, widths = (np.concatenate(a) for a in zip(*segs))
    # a bit-packed block ends where its rows do; the rows up to the next segment, and each
    # column's rows before its first segment, are a gap
    column_starts = np.arange(ncol, dtype=np.int64) * P
    order = np.argsort(starts, kind="stable")
    starts, ends, ptrs, widths = starts[order], ends[order], ptrs[order], widths[order]
    nxt = np.append(starts[1:], ncol * P)
    nxt = np.minimum(nxt, (starts // P + 1) * P)
    gap = (widths >= 0) & (ends < nxt)
    g_starts = np.concatenate([column_starts, ends[gap]])
    all_starts = np.concatenate([g_starts, starts])
    all_ptrs = np.concatenate([np.zeros(g_starts.size, np.uint64), ptrs])
    all_widths = np.concatenate([np.full(g_starts.size, -1, np.int16), widths])
    order = np.argsort(all_starts, kind="stable")  # a gap sorts before a segment at its row
    all_starts, all_ptrs, all_widths = all_starts[order], all_ptrs[order], all_widths[order]
    real = np.append(all_starts[1:] != all_starts[:-1], True)  # drop empty gaps
    all_starts, all_ptrs, all_widths = all_starts[real], all_ptrs[real], all_widths[real]
    cuts = np.searchsorted(all_starts, np.append(column_starts, ncol * P))
    tables = []
    for c in range(ncol):
        a, b = cuts[c], cuts[c + 1]
        st = np.append(all_starts[a:b] - c * P, P)
        tables.append(SegmentTable(st, np.ascontiguousarray(all_ptrs[a:b]),
                                   np.ascontiguousarray(all_widths[a:b]), value_bytes[c]))
    return tables
