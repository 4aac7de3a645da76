"""The compaction fast path: the live rows of many small fragments, read file by file.

Compaction typically reads thousands of tiny fragments (Spark streaming output, 20% deleted).
The general scan pays ~2 ms of Python per fragment (reader objects, projections, page
objects, Arrow take); here each fragment costs a few dozen calls: its data file and deletion
file are read whole (one request each), the footer and offset tables are unpacked with
``struct``, each column's ColumnMetadata is parsed once, page layouts are parsed once per
distinct encoding, and every page is decoded by one Cython call that also drops the deleted
rows, appending straight into per-column output buffers (:mod:`._compact_pages`).

Handled: data files of version 2.1/2.2 holding the wanted columns in one file, top-level
fixed-width (flat whole bytes, or inline bit-packed) and string/binary (variable with flat
offsets, optionally under FSST) columns written as mini-block pages without rep/def levels (no nulls); Arrow-IPC deletion files (roaring ones
go through the general loader). Any other fragment -- and any fragment whose bytes do not
check out -- is read by the general scan (:class:`.scan.FragmentScan`), which stays the
authority on errors (CorruptFileError naming the file).
"""
from __future__ import annotations

import os
import struct
import threading

import numpy as np
import pyarrow as pa
import zstandard
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError

from ..._proto import encodings_v2_1_pb2 as enc21, file2_pb2, file_pb2
from ...file.format import FOOTER_SIZE, MAGIC, PAGE_LAYOUT_URL
from ...errors import LanceError
from ...io.store import LocalStore
from ...table.deletion import deletion_file_kind
from ...table.naming import deletion_file_name
from ...encoding.v2_1.kernels import decode_inline_chunks, decode_variable_chunks, fsst_decode
from ...encoding.v2_1.compressive import FsstTable
from . import _compact_pages as kernels
from ..read.scan import ROW_ID, FragmentScan, load_deletions, scan_batches

# Files read whole on the fast path are at most this large (bigger ones are not "small").
MAX_FILE_BYTES = 16 << 20
_FOOTER = struct.Struct("<QQQIIHH4s")
_ALL_VALID = enc21.REPDEF_ALL_VALID_ITEM
_INT32_MAX = (1 << 31) - 1
_U64 = struct.Struct("<Q")


class _Unsupported(Exception):
    """This fragment is not for the fast path (read it with the general scan)."""


def _fixed_width(t: pa.DataType) -> int:
    """Bytes per value of a plain fixed-width type (0 if not one)."""
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t):
        bits = t.bit_width
        return bits // 8 if bits % 8 == 0 else 0
    return 0


def _variable_offsets(t: pa.DataType) -> int:
    """Offset width (4 or 8) of a string/binary type (0 if not one)."""
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return 4
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return 8
    return 0


# -- page layouts: parsed once per distinct encoding --------------------------------------------
_LAYOUTS: dict = {}


def _layout(any_bytes: bytes):
    """``(kind, wide, bits, num_items)`` for the page encodings decoded here: kind "fixed"
    (flat, ``bits`` per value), "bitpack" (inline bit-packing of ``bits``-bit words) or "var"
    (variable width, ``bits``-bit offsets); None for anything else."""
    hit = _LAYOUTS.get(any_bytes, _LAYOUTS)
    if hit is not _LAYOUTS:
        return hit
    out = None
    try:
        a = any_pb2.Any()
        a.ParseFromString(any_bytes)
        if a.type_url == PAGE_LAYOUT_URL:
            pl = enc21.PageLayout()
            pl.ParseFromString(a.value)
            out = _miniblock_kind(pl)
    except (DecodeError, RuntimeError, ValueError, LanceError):
        out = None
    if len(_LAYOUTS) > 4096:
        _LAYOUTS.clear()
    _LAYOUTS[any_bytes] = out
    return out


def _miniblock_kind(pl):
    if pl.WhichOneof("layout") != "mini_block_layout":
        return None
    mb = pl.mini_block_layout
    if mb.HasField("rep_compression") or mb.HasField("def_compression") or \
            mb.HasField("dictionary") or mb.num_buffers != 1 or mb.repetition_index_depth or \
            list(mb.layers) != [_ALL_VALID]:
        return None
    vc = mb.value_compression
    kind = vc.WhichOneof("compression")
    if kind == "inline_bitpacking" and not vc.inline_bitpacking.HasField("values") and \
            vc.inline_bitpacking.uncompressed_bits_per_value in (8, 16, 32, 64):
        return ("bitpack", bool(mb.has_large_chunk),
                int(vc.inline_bitpacking.uncompressed_bits_per_value), int(mb.num_items), None)
    if kind == "flat" and not vc.flat.HasField("data"):
        bits = int(vc.flat.bits_per_value)
        return ("fixed", bool(mb.has_large_chunk), bits, int(mb.num_items), None) \
            if bits and bits % 8 == 0 else None
    table = None
    if kind == "fsst":  # FSST over variable-width values: the symbol table parsed here once
        table = FsstTable(bytes(vc.fsst.symbol_table), None)
        vc = vc.fsst.values
        kind = vc.WhichOneof("compression")
    if kind == "variable" and not vc.variable.HasField("values"):
        offs = vc.variable.offsets
        if offs.WhichOneof("compression") == "flat" and not offs.flat.HasField("data") and \
                offs.flat.bits_per_value in (32, 64):
            return ("var" if table is None else "fsst", bool(mb.has_large_chunk),
                    int(offs.flat.bits_per_value), int(mb.num_items), table)
    return None


_COLUMNS: dict = {}


def _column_pages(cm_bytes: bytes, data_end: int) -> tuple:
    """The pages of one ColumnMetadata as ``(meta_pos, meta_len, data_pos, data_len,
    num_items, wide, bits, kind, extra)``. Files written alike repeat the same column metadata byte for
    byte (fixed-width columns of equal row counts), so it is parsed once per spelling and
    data region end."""
    key = (cm_bytes, data_end)
    hit = _COLUMNS.get(key)
    if hit is not None:
        return hit
    cm = file2_pb2.ColumnMetadata()
    try:
        cm.ParseFromString(cm_bytes)
    except (DecodeError, RuntimeError):
        raise ValueError("undecodable column metadata") from None
    if len(cm.buffer_offsets) or len(cm.buffer_sizes):
        raise _Unsupported
    pages = []
    for pg in cm.pages:
        offs, sizes = pg.buffer_offsets, pg.buffer_sizes
        if len(offs) != 2 or len(sizes) != 2 or pg.encoding.WhichOneof("location") != "direct":
            raise _Unsupported
        lay = _layout(pg.encoding.direct.encoding)
        if lay is None:
            raise _Unsupported
        kind, wide, bits, items, extra = lay
        n = pg.length
        if items != n:
            raise ValueError("page item count differs from its length")
        mpos, mlen, dpos, dlen = offs[0], sizes[0], offs[1], sizes[1]
        if mpos > data_end or mlen > data_end - mpos or dpos > data_end or dlen > data_end - dpos:
            raise ValueError("page buffer outside the data region")
        pages.append((mpos, mlen, dpos, dlen, n, wide, bits, kind, extra))
    out = tuple(pages)
    if len(_COLUMNS) > 4096:
        _COLUMNS.clear()
    _COLUMNS[key] = out
    return out


def _read_local(path: str, size: int) -> bytes:
    """A local file's bytes with plain ``os`` calls (no file object: most of the cost of
    reading a 3 KB file); ``size`` is the expected size (0: unknown). A file larger than
    ``size`` comes back with at least ``size + 1`` bytes (callers compare lengths)."""
    try:
        fd = os.open(path, _O_RDONLY)
    except OSError:
        raise ValueError(f"cannot open {path}") from None
    try:
        if size:
            return os.read(fd, size + 1)
        parts = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            parts.append(chunk)
            if sum(len(p) for p in parts) > MAX_FILE_BYTES:
                raise ValueError("file too large for the fast path")
        return b"".join(parts)
    except OSError:
        raise ValueError(f"cannot read {path}") from None
    finally:
        os.close(fd)


_O_RDONLY = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)


def _plain_name(name: str) -> bool:
    """A bare file name (no directory part, nothing special): safe to join by hand."""
    return bool(name) and "/" not in name and "\\" not in name and "\x00" not in name and \
        name not in (".", "..") and ":" not in name


_FD_ROWS: dict = {}


def _descriptor_rows(fd_bytes: bytes) -> int:
    """``FileDescriptor.length`` (parsed once per distinct descriptor)."""
    rows = _FD_ROWS.get(fd_bytes)
    if rows is None:
        fd = file_pb2.FileDescriptor()
        try:
            fd.ParseFromString(fd_bytes)
        except (DecodeError, RuntimeError, ValueError):
            raise _Unsupported from None
        rows = int(fd.length)
        if len(_FD_ROWS) > 4096:
            _FD_ROWS.clear()
        _FD_ROWS[fd_bytes] = rows
    return rows


# -- output buffers ------------------------------------------------------------------------------
class _FixedOut:
    def __init__(self, type_: pa.DataType, width: int, capacity: int):
        self.type, self.width = type_, width
        self.buf = np.empty(max(capacity, 1) * width, dtype=np.uint8)
        self.n = 0

    def reserve(self, items: int, _bytes: int) -> None:
        need = (self.n + items) * self.width
        if need > self.buf.size:
            grown = np.empty(max(need, 2 * self.buf.size), dtype=np.uint8)
            grown[:self.n * self.width] = self.buf[:self.n * self.width]
            self.buf = grown

    def fits(self, _bytes: int) -> bool:
        return True

    def decode(self, data, page, live, live_off):
        meta_pos, meta_len, data_pos, data_len, num_items, wide, bits, kind, _ = page
        if bits != self.width * 8:
            raise _Unsupported
        if kind == "fixed":
            self.n = kernels.miniblock_fixed(data, meta_pos, meta_len, data_pos, data_len,
                                             num_items, wide, self.width, live, live_off,
                                             self.buf, self.n)
            return
        if kind != "bitpack":
            raise _Unsupported
        starts, sizes, counts = kernels.chunk_values(data, meta_pos, meta_len, data_pos,
                                                     data_len, num_items, wide)
        words = decode_inline_chunks(np.frombuffer(data, dtype=np.uint8), starts,
                                                sizes, counts, bits)
        if words.size != num_items:
            raise ValueError("bit-packed chunks hold the wrong number of values")
        if live.size:
            words = words[live[live_off:live_off + num_items].view(bool)]
        raw = words.view(np.uint8)
        at = self.n * self.width
        self.buf[at:at + raw.size] = raw
        self.n += words.size

    def finish(self) -> pa.Array:
        values = pa.py_buffer(self.buf[:self.n * self.width].copy())
        out = pa.Array.from_buffers(self.type, self.n, [None, values])
        self.n = 0
        return out


class _VariableOut:
    def __init__(self, type_: pa.DataType, offset_width: int, capacity: int):
        self.type, self.small = type_, offset_width == 4
        self.offsets = np.zeros(max(capacity, 1) + 1, dtype=np.int64)
        self.data = np.empty(1 << 16, dtype=np.uint8)
        self.n = 0

    def fits(self, nbytes: int) -> bool:
        """Whether ``nbytes`` more bytes keep 32-bit offsets valid."""
        return not self.small or int(self.offsets[self.n]) + nbytes <= _INT32_MAX

    def reserve(self, items: int, nbytes: int) -> None:
        if self.n + items + 1 > self.offsets.size:
            grown = np.zeros(max(self.n + items + 1, 2 * self.offsets.size), dtype=np.int64)
            grown[:self.n + 1] = self.offsets[:self.n + 1]
            self.offsets = grown
        used = int(self.offsets[self.n])
        if used + nbytes > self.data.size:
            grown = np.empty(max(used + nbytes, 2 * self.data.size), dtype=np.uint8)
            grown[:used] = self.data[:used]
            self.data = grown

    def decode(self, data, page, live, live_off):
        meta_pos, meta_len, data_pos, data_len, num_items, wide, bits, kind, table = page
        if kind == "fsst":
            self._decode_fsst(data, page, live, live_off)
            return
        if kind != "var":
            raise _Unsupported
        self.n = kernels.miniblock_variable(data, meta_pos, meta_len, data_pos, data_len,
                                            num_items, wide, bits, live, live_off,
                                            self.offsets, self.n, self.data)

    def _decode_fsst(self, data, page, live, live_off):
        meta_pos, meta_len, data_pos, data_len, num_items, wide, bits, _, table = page
        starts, sizes, counts = kernels.chunk_values(data, meta_pos, meta_len, data_pos,
                                                     data_len, num_items, wide)
        offs, values = decode_variable_chunks(np.frombuffer(data, dtype=np.uint8),
                                                      starts, sizes, counts, bits)
        if table.compressed:
            offs, values, bad = fsst_decode(values, offs, table.symbols, table.lens)
            if bad != -1:
                raise ValueError(f"FSST string {bad} holds an unknown code")
        if offs.size != num_items + 1:
            raise ValueError("FSST chunks hold the wrong number of values")
        if not self.fits(int(offs[-1])):
            raise _Unsupported
        self.reserve(num_items, int(offs[-1]))
        self.n = kernels.append_variable(offs, values, live, live_off, self.offsets, self.n,
                                         self.data)

    def finish(self) -> pa.Array:
        offs = self.offsets[:self.n + 1]
        offs = offs.astype(np.int32) if self.small else offs.copy()
        used = int(self.offsets[self.n])
        out = pa.Array.from_buffers(self.type, self.n,
                                    [None, pa.py_buffer(offs), pa.py_buffer(self.data[:used].copy())])
        self.n = 0
        self.offsets[0] = 0
        return out


# -- the reader -------------------------------------------------------------------------------------
class CompactionReader:
    """Live rows of fragments (in order) for the columns ``names`` of dataset context ``ctx``,
    plus ``_rowid`` when ``with_row_id``; see the module docstring."""

    def __init__(self, ctx, names, spec, with_row_id: bool, capacity: int):
        self.ctx, self.spec, self.with_row_id = ctx, spec, with_row_id
        self.names = list(names)
        schema = ctx.schema
        self.out_schema = spec.output_schema(schema)
        self.outs = []
        self.fast = True
        for n in self.names:
            t = schema.field(n).type
            w, v = _fixed_width(t), _variable_offsets(t)
            if len(ctx.root_ids[n]) != 1 or not (w or v):
                self.fast = False
                break
            self.outs.append(_FixedOut(t, w, capacity) if w else _VariableOut(t, v, capacity))
        self.leaf_ids = [ctx.root_ids[n][0] for n in self.names] if self.fast else []
        self.row_ids: list = []
        self.chunks: list = []
        self.dirs: dict = {}
        self.fast_fragments = 0

    # -- public ---------------------------------------------------------------------------
    def add(self, pb) -> None:
        """Append the live rows of fragment ``pb``."""
        if self.fast:
            state = self._mark()
            try:
                if self._add_fast(pb):
                    self.fast_fragments += 1
                    return
            except (_Unsupported, ValueError, OSError, LanceError):
                pass  # the general scan reads it (and names whatever is wrong)
            self._rollback(state)
        self.flush()
        scan = FragmentScan(self.ctx, pb, self.spec)
        batches = list(scan.batches())
        if batches:
            self.chunks.append(pa.Table.from_batches(batches, schema=self.out_schema))

    def table(self) -> pa.Table:
        """Everything added, as one table (chunked where the general path took over)."""
        self.flush()
        if not self.chunks:
            return self.out_schema.empty_table()
        return pa.concat_tables(self.chunks) if len(self.chunks) > 1 else self.chunks[0]

    # -- accumulation ---------------------------------------------------------------------------
    def _mark(self):
        return [o.n for o in self.outs], len(self.row_ids)

    def _rollback(self, state) -> None:
        counts, nids = state
        for o, n in zip(self.outs, counts):
            o.n = n
        del self.row_ids[nids:]

    def flush(self) -> None:
        if not self.outs or not self.outs[0].n and not self.row_ids:
            return
        arrays = [o.finish() for o in self.outs]
        if self.with_row_id:
            arrays.append(pa.array(np.concatenate(self.row_ids), type=pa.uint64()))
            self.row_ids = []
        self.chunks.append(pa.Table.from_arrays(arrays, schema=self.out_schema))

    # -- one fragment ---------------------------------------------------------------------------
    def _read(self, directory: str, name: str, make_uri, size: int = 0) -> bytes:
        """The whole file ``name`` of ``directory`` (a resolved data or deletion directory):
        a plain read for a local directory and a simple file name, else through the store."""
        d = self.dirs.get(directory)
        if d is None:
            uri = make_uri()
            store = self.ctx.store_for(uri)
            local = None
            if isinstance(store, LocalStore):
                local = store._path(directory).rstrip("/") + "/"
            d = self.dirs[directory] = (store, local)
        store, local = d
        if local is not None and _plain_name(name):
            return _read_local(local + name, size)
        uri = make_uri()
        return store.read(uri)

    def _add_fast(self, pb) -> bool:
        files = pb.files
        if len(files) != 1:
            return False
        df = files[0]
        if (df.file_major_version, df.file_minor_version) not in ((2, 1), (2, 2)) or \
                not 0 < df.file_size_bytes <= MAX_FILE_BYTES:
            return False
        fields, cols = list(df.fields), list(df.column_indices)
        if len(cols) != len(fields):
            return False
        try:
            columns = [cols[fields.index(fid)] for fid in self.leaf_ids]
        except ValueError:
            return False
        base = df.base_id if df.HasField("base_id") else None
        resolver = self.ctx.resolver
        data = self._read(resolver.data_dir(base), df.path,
                          lambda: resolver.data_file_uri(df.path, base), df.file_size_bytes)
        rows = pb.physical_rows
        pages = self._pages(data, df.file_size_bytes, columns, rows)
        live = self._live(pb)
        for out, col_pages in zip(self.outs, pages):
            need = sum(p[3] for p in col_pages)
            if not out.fits(need):
                raise _Unsupported
        for out, col_pages in zip(self.outs, pages):
            out.reserve(rows, sum(p[3] for p in col_pages))
            start = 0
            for page in col_pages:
                out.decode(data, page, live, start)
                start += page[4]
        if self.with_row_id:
            scan = FragmentScan(self.ctx, pb, self.spec)
            positions = None if not live.size else np.flatnonzero(live)
            self.row_ids.append(scan.row_ids_at(0, rows, positions))
        return True

    def _pages(self, data: bytes, size: int, columns, rows: int):
        """Per wanted column, its pages as ``(meta_pos, meta_len, data_pos, data_len,
        num_items, wide, bits)``; _Unsupported / ValueError when anything is off."""
        if len(data) != size or size < FOOTER_SIZE:
            raise ValueError("file size differs from the manifest")
        cms, cmo, gbo, ngb, ncol, major, minor, magic = _FOOTER.unpack_from(data, size - FOOTER_SIZE)
        if magic != MAGIC or (major, minor) not in ((2, 1), (2, 2)) or ngb < 1 or \
                gbo + 16 * ngb != size - FOOTER_SIZE or cmo + 16 * ncol != gbo or cms > cmo:
            raise ValueError("bad footer")
        fd_pos, fd_len = struct.unpack_from("<QQ", data, gbo)
        if fd_pos > cms or fd_len > cms - fd_pos:
            raise ValueError("FileDescriptor outside the metadata")
        if _descriptor_rows(data[fd_pos:fd_pos + fd_len]) != rows:
            raise ValueError("row count differs from the fragment")
        out = []
        for ci in columns:
            if not 0 <= ci < ncol:
                raise ValueError("column index outside the file")
            p, s = struct.unpack_from("<QQ", data, cmo + 16 * ci)
            if p < cms or s > cmo - p:
                raise ValueError("column metadata outside its region")
            col_pages = _column_pages(data[p:p + s], cms)
            if sum(pg[4] for pg in col_pages) != rows:
                raise ValueError("pages do not cover the file's rows")
            out.append(col_pages)
        return out

    def _live(self, pb) -> np.ndarray:
        """Keep mask of the fragment's rows (empty: no deletions)."""
        if not pb.HasField("deletion_file"):
            return _EMPTY
        d = pb.deletion_file
        kind = deletion_file_kind(d)
        rows = pb.physical_rows
        if kind != "arrow":
            dv = load_deletions(self.ctx, pb)
            if dv is None or not len(dv):
                return _EMPTY
            mask = np.ones(rows, dtype=np.uint8)
            mask[dv.offsets] = 0
            return mask
        name = deletion_file_name(pb.id, d.read_version, d.id, kind)
        base = d.base_id if d.HasField("base_id") else None
        resolver = self.ctx.resolver
        raw = self._read(resolver.deletion_dir(base), name,
                         lambda: resolver.deletion_file_uri(name, base))
        count, codec, vpos, vlen = kernels.ipc_batch(raw, rows)
        if d.num_deleted_rows and count != d.num_deleted_rows:
            raise ValueError("deletion count differs from the manifest")
        values = memoryview(raw)[vpos:vpos + vlen]
        if codec >= 0:
            values = _decompress(values, codec, count * 4)
        return kernels.live_mask(values, count, rows)


_EMPTY = np.empty(0, dtype=np.uint8)
_ZSTD = threading.local()  # a ZstdDecompressor is not thread-safe: one per thread


def _decompress(buf, codec: int, size: int):
    """An IPC body buffer: i64 uncompressed length (-1: stored as is), then the frame
    (LZ4 frame or zstd), which must decompress to exactly ``size`` bytes."""
    if len(buf) < 8:
        if len(buf) == 0 and size == 0:
            return buf
        raise ValueError("compressed IPC buffer too short")
    claimed = _U64.unpack_from(buf)[0]
    if claimed == (1 << 64) - 1:
        return buf[8:]
    if claimed != size:
        raise ValueError(f"compressed IPC buffer claims {claimed} bytes, expected {size}")
    frame = buf[8:]
    if codec == 1:
        # pyarrow's zstd codec builds a context per call (~50 us on a 100-byte frame)
        declared = zstandard.frame_content_size(frame)
        if declared not in (-1, size):
            raise ValueError(f"zstd frame declares {declared} bytes, expected {size}")
        d = getattr(_ZSTD, "d", None)
        if d is None:
            d = _ZSTD.d = zstandard.ZstdDecompressor()
        try:
            out = d.decompress(frame, max_output_size=size)
        except zstandard.ZstdError as e:
            raise ValueError(f"undecodable zstd frame: {e}") from None
    else:
        out = pa.Codec("lz4").decompress(frame, decompressed_size=size)
    if len(out) != size:
        raise ValueError("decompressed deletion offsets have the wrong size")
    return np.frombuffer(out, dtype=np.uint8)


def _small(pb) -> bool:
    """Worth the fast path: one data file of a version it reads, small enough to read whole."""
    if len(pb.files) != 1:
        return False
    df = pb.files[0]
    return (df.file_major_version, df.file_minor_version) in ((2, 1), (2, 2)) and \
        0 < df.file_size_bytes <= MAX_FILE_BYTES


COALESCE_ROWS = 1 << 16


def _coalesced(batches, schema) -> list:
    """Tables of about ``COALESCE_ROWS`` rows, each one chunk: the writer then encodes a few
    large batches, not one per tiny fragment (its per-batch work dominated compacting
    thousands of them); joining run by run bounds the extra copy (and string offsets)."""
    out, run, rows = [], [], 0
    for b in batches:
        run.append(b)
        rows += b.num_rows
        if rows >= COALESCE_ROWS:
            out.append(pa.Table.from_batches(run, schema=schema).combine_chunks())
            run, rows = [], 0
    if run:
        out.append(pa.Table.from_batches(run, schema=schema).combine_chunks())
    return out


def read_live_rows(ctx, pbs, spec, with_row_id: bool, threads=None) -> pa.Table:
    """The live rows of fragments ``pbs`` in order (``_rowid`` last when ``with_row_id``):
    runs of small fragments through :class:`CompactionReader`, runs of others through the
    threaded general scan."""
    capacity = sum(pb.physical_rows for pb in pbs if _small(pb))
    reader = CompactionReader(ctx, spec.read_columns, spec, with_row_id, capacity)
    run: list = []

    def scan_run():
        reader.flush()
        reader.chunks.extend(_coalesced(scan_batches(ctx, run, spec, threads=threads),
                                        reader.out_schema))
        run.clear()

    for pb in pbs:
        if reader.fast and _small(pb):
            if run:
                scan_run()
            reader.add(pb)
        else:
            run.append(pb)
    if run:
        scan_run()
    return reader.table()
