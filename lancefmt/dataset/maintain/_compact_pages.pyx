# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Kernels of the compaction fast path (:mod:`lancefmt.dataset.compact_reader`).

Compacting thousands of small fragments is dominated by per-file overhead, so each kernel does
a whole page (or a whole deletion file) in one call, with the GIL released:

* ``miniblock_fixed`` / ``miniblock_variable``: every chunk of a mini-block page without
  rep/def levels whose values are flat whole bytes or variable-width (flat offsets), appended
  to an output buffer while dropping deleted rows (``live`` mask);
* ``ipc_batch``: the single record batch of an Arrow IPC file (a deletion file) located by
  reading its footer and message flatbuffers, after checking the footer's schema;
* ``live_mask``: deleted row offsets (u32, any order) -> keep mask, refusing duplicates and
  offsets past the fragment.

Every position read from the file is checked against the buffer it lies in; a bad one raises
ValueError (the caller turns it into CorruptFileError naming the file).
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

cnp.import_array()


cdef inline uint32_t _u16(const uint8_t* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8)


cdef inline uint32_t _u32(const uint8_t* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline int64_t _i64(const uint8_t* p) noexcept nogil:
    return <int64_t>(_u32(p) | (<uint64_t>_u32(p + 4) << 32))


cdef inline uint64_t _u64(const uint8_t* p) noexcept nogil:
    return _u32(p) | (<uint64_t>_u32(p + 4) << 32)


cdef int _check_range(int64_t pos, int64_t length, int64_t size) except -1:
    if pos < 0 or length < 0 or pos > size or length > size - pos:
        raise ValueError(f"buffer at {pos} of {length} bytes lies outside the file")
    return 0


# -- mini-block pages ----------------------------------------------------------------------------
# Chunk metadata word (u16 in 2.1, u32 with has_large_chunk): low 4 bits log2(value count),
# the rest (chunk bytes / 8) - 1; the last chunk holds what is left of the page's items.
# Chunk: u16 num_levels, value-buffer size (u16, or u32 with has_large_chunk), padding to 8,
# then the value buffer.

cdef int _chunk(const uint8_t* meta, int64_t c, int64_t nchunks, bint wide, int64_t num_items,
                int64_t* done, int64_t* pos, int64_t* count, int64_t* size) noexcept nogil:
    """Chunk ``c``'s value count and byte size; -1 when the table is inconsistent."""
    cdef uint32_t w = _u32(meta + 4 * c) if wide else _u16(meta + 2 * c)
    size[0] = ((<int64_t>(w >> 4)) + 1) * 8
    if c + 1 < nchunks:
        count[0] = (<int64_t>1) << (w & 0xF)
    else:
        count[0] = num_items - done[0]
    if count[0] < 0 or done[0] + count[0] > num_items:
        return -1
    return 0


cdef int64_t _chunk_count(int64_t buf_len, int64_t meta_pos, int64_t meta_len, int64_t data_pos,
                          int64_t data_len, int64_t num_items, bint wide) except -1:
    """How many chunks a mini-block page's chunk table lists, after checking that the table and
    the chunks lie inside the file and that they can hold ``num_items``."""
    cdef int mw = 4 if wide else 2
    _check_range(meta_pos, meta_len, buf_len)
    _check_range(data_pos, data_len, buf_len)
    if meta_len % mw or num_items < 0:
        raise ValueError("bad mini-block chunk table")
    if meta_len == 0 and num_items:
        raise ValueError(f"{num_items} items but no chunks")
    return meta_len // mw


def miniblock_fixed(const uint8_t[::1] buf, int64_t meta_pos, int64_t meta_len,
                    int64_t data_pos, int64_t data_len, int64_t num_items, bint wide, int width,
                    const uint8_t[::1] live, int64_t live_off, uint8_t[::1] out, int64_t out_n):
    """Append the live values of a flat mini-block page (``width`` bytes each) to ``out``
    after its first ``out_n`` values; ``live`` (empty: every row) is indexed from
    ``live_off``. Returns the new value count of ``out``."""
    if width <= 0:
        raise ValueError("bad mini-block chunk table")
    cdef int64_t nchunks = _chunk_count(buf.shape[0], meta_pos, meta_len, data_pos, data_len,
                                        num_items, wide)
    cdef bint all_live = live.shape[0] == 0
    if not all_live and (live_off < 0 or live_off + num_items > live.shape[0]):
        raise ValueError("deletion mask does not cover the page")
    if out_n < 0 or (out.shape[0] // width) - out_n < num_items:
        raise ValueError("output buffer too small")
    cdef const uint8_t* base = &buf[0]
    cdef const uint8_t* meta = base + meta_pos
    cdef const uint8_t* data = base + data_pos
    cdef uint8_t* dst = &out[0] if out.shape[0] else NULL
    cdef const uint8_t* lv = &live[0] if not all_live else NULL
    cdef int64_t c, i, done = 0, pos = 0, count = 0, size = 0, vsize, o = out_n * width
    cdef int bad = 0
    with nogil:
        for c in range(nchunks):
            if _chunk(meta, c, nchunks, wide, num_items, &done, &pos, &count, &size) < 0 \
                    or size > data_len - pos:
                bad = 1
                break
            vsize = _u32(data + pos + 2) if wide else _u16(data + pos + 2)
            if vsize > size - 8 or count > vsize // width:
                bad = 2
                break
            if all_live:
                memcpy(dst + o, data + pos + 8, count * width)
                o += count * width
            else:
                for i in range(count):
                    if lv[live_off + done + i]:
                        memcpy(dst + o, data + pos + 8 + i * width, width)
                        o += width
            done += count
            pos += size
    if bad == 1:
        raise ValueError(f"chunk {c}: chunk table inconsistent with the page's "
                         f"{num_items} items / {data_len} bytes")
    if bad == 2:
        raise ValueError(f"chunk {c}: flat values run past their buffer")
    if done != num_items:
        raise ValueError(f"chunks hold {done} items, the page {num_items}")
    return o // width


def chunk_values(const uint8_t[::1] buf, int64_t meta_pos, int64_t meta_len, int64_t data_pos,
                 int64_t data_len, int64_t num_items, bint wide):
    """Per chunk of a mini-block page without rep/def levels: (value-buffer start absolute in
    ``buf``, its size, value count), each buffer checked to lie inside its chunk; for codecs
    decoded by the batch kernels of :mod:`lancefmt.encoding.v2_1._fastlanes`."""
    cdef int64_t nchunks = _chunk_count(buf.shape[0], meta_pos, meta_len, data_pos, data_len,
                                        num_items, wide)
    starts = np.empty(nchunks, dtype=np.int64)
    sizes = np.empty(nchunks, dtype=np.int64)
    counts = np.empty(nchunks, dtype=np.int64)
    cdef int64_t[::1] st = starts, sz = sizes, ct = counts
    cdef const uint8_t* meta = &buf[0] + meta_pos
    cdef const uint8_t* data = &buf[0] + data_pos
    cdef int64_t c, done = 0, pos = 0, count = 0, size = 0, vsize
    cdef int bad = 0
    with nogil:
        for c in range(nchunks):
            if _chunk(meta, c, nchunks, wide, num_items, &done, &pos, &count, &size) < 0 \
                    or size > data_len - pos:
                bad = 1
                break
            vsize = _u32(data + pos + 2) if wide else _u16(data + pos + 2)
            if vsize > size - 8:
                bad = 1
                break
            st[c] = data_pos + pos + 8
            sz[c] = vsize
            ct[c] = count
            done += count
            pos += size
    if bad or done != num_items:
        raise ValueError(f"chunk table inconsistent with the page's {num_items} items / "
                         f"{data_len} bytes")
    return starts, sizes, counts


def miniblock_variable(const uint8_t[::1] buf, int64_t meta_pos, int64_t meta_len,
                       int64_t data_pos, int64_t data_len, int64_t num_items, bint wide,
                       int offset_bits, const uint8_t[::1] live, int64_t live_off,
                       int64_t[::1] offsets, int64_t out_n, uint8_t[::1] out):
    """Append the live values of a variable-width mini-block page (per chunk: ``count + 1``
    offsets of ``offset_bits`` bits from the value buffer's start, then the bytes) after the
    first ``out_n`` values: ``offsets[out_n]`` is where the bytes continue in ``out``.
    Returns the new value count."""
    cdef int ow = offset_bits // 8
    if offset_bits not in (32, 64):
        raise ValueError("bad mini-block chunk table")
    cdef int64_t nchunks = _chunk_count(buf.shape[0], meta_pos, meta_len, data_pos, data_len,
                                        num_items, wide)
    cdef bint all_live = live.shape[0] == 0
    if not all_live and (live_off < 0 or live_off + num_items > live.shape[0]):
        raise ValueError("deletion mask does not cover the page")
    if out_n < 0 or offsets.shape[0] - 1 - out_n < num_items:
        raise ValueError("offset buffer too small")
    cdef int64_t bpos = offsets[out_n]
    # the bytes of the page's values cannot exceed its data buffer
    if bpos < 0 or out.shape[0] - bpos < data_len:
        raise ValueError("byte buffer too small")
    cdef const uint8_t* base = &buf[0]
    cdef const uint8_t* meta = base + meta_pos
    cdef const uint8_t* data = base + data_pos
    cdef uint8_t* dst = &out[0] if out.shape[0] else NULL
    cdef const uint8_t* lv = &live[0] if not all_live else NULL
    cdef int64_t c, i, done = 0, pos = 0, count = 0, size = 0, vsize, k = out_n
    cdef int64_t o0, prev, cur
    cdef const uint8_t* vb
    cdef int bad = 0
    with nogil:
        for c in range(nchunks):
            if _chunk(meta, c, nchunks, wide, num_items, &done, &pos, &count, &size) < 0 \
                    or size > data_len - pos:
                bad = 1
                break
            vsize = _u32(data + pos + 2) if wide else _u16(data + pos + 2)
            if vsize > size - 8 or (count + 1) * ow > vsize:
                bad = 2
                break
            vb = data + pos + 8
            o0 = _u32(vb) if ow == 4 else _i64(vb)
            if o0 < (count + 1) * ow or o0 > vsize:
                bad = 3
                break
            prev = o0
            for i in range(1, count + 1):
                cur = _u32(vb + 4 * i) if ow == 4 else _i64(vb + 8 * i)
                if cur < prev or cur > vsize:
                    bad = 3
                    break
                if all_live or lv[live_off + done + i - 1]:
                    memcpy(dst + bpos, vb + prev, cur - prev)
                    bpos += cur - prev
                    k += 1
                    offsets[k] = bpos
                prev = cur
            if bad:
                break
            done += count
            pos += size
    if bad == 1:
        raise ValueError(f"chunk {c}: chunk table inconsistent with the page's "
                         f"{num_items} items / {data_len} bytes")
    if bad == 2:
        raise ValueError(f"chunk {c}: variable-width offsets run past their buffer")
    if bad == 3:
        raise ValueError(f"chunk {c}: variable-width offsets out of order or past the buffer")
    if done != num_items:
        raise ValueError(f"chunks hold {done} items, the page {num_items}")
    return k


def append_variable(const int64_t[::1] offsets, const uint8_t[::1] values,
                    const uint8_t[::1] live, int64_t live_off, int64_t[::1] out_offsets,
                    int64_t out_n, uint8_t[::1] out):
    """Append the live items of decoded variable-width values (``offsets`` into ``values``)
    after the first ``out_n`` items of (``out_offsets``, ``out``); returns the new count."""
    cdef int64_t n = offsets.shape[0] - 1, i, k = out_n, a, b
    if n < 0:
        raise ValueError("no offsets")
    cdef bint all_live = live.shape[0] == 0
    if not all_live and (live_off < 0 or live_off + n > live.shape[0]):
        raise ValueError("deletion mask does not cover the page")
    if out_n < 0 or out_offsets.shape[0] - 1 - out_n < n:
        raise ValueError("offset buffer too small")
    cdef int64_t bpos = out_offsets[out_n]
    if offsets[0] < 0 or offsets[n] > values.shape[0] or bpos < 0 or \
            out.shape[0] - bpos < offsets[n] - offsets[0]:
        raise ValueError("values outside their buffers")
    cdef const uint8_t* src = &values[0] if values.shape[0] else NULL
    cdef uint8_t* dst = &out[0] if out.shape[0] else NULL
    cdef const uint8_t* lv = &live[0] if not all_live else NULL
    cdef int bad = 0
    with nogil:
        for i in range(n):
            a = offsets[i]
            b = offsets[i + 1]
            if b < a or b > offsets[n]:
                bad = 1
                break
            if all_live or lv[live_off + i]:
                if b > a:
                    memcpy(dst + bpos, src + a, b - a)
                bpos += b - a
                k += 1
                out_offsets[k] = bpos
    if bad:
        raise ValueError(f"value {i}: offsets out of order")
    return k


# -- Arrow IPC deletion files ------------------------------------------------------------------------
cdef class _Flat:
    """Bounds-checked reads of one flatbuffer lying at ``[start, end)`` of ``buf``."""
    cdef const uint8_t* p
    cdef int64_t start, end

    cdef int64_t u32(self, int64_t pos) except -2:
        if pos < self.start or pos + 4 > self.end:
            raise ValueError("flatbuffer reference outside its message")
        return _u32(self.p + pos)

    cdef int64_t field(self, int64_t table, int index) except -2:
        """Absolute position of field ``index`` of the table at ``table``; -1 if absent."""
        cdef int64_t vt = table - <int32_t>self.u32(table)
        if vt < self.start or vt + 4 > self.end:
            raise ValueError("flatbuffer vtable outside its message")
        cdef int64_t vsize = _u16(self.p + vt)
        cdef int64_t slot = 4 + 2 * index
        if slot + 2 > vsize or vt + slot + 2 > self.end:
            return -1
        cdef int64_t off = _u16(self.p + vt + slot)
        return -1 if off == 0 else table + off

    cdef int64_t ref(self, int64_t table, int index) except -2:
        cdef int64_t pos = self.field(table, index)
        return -1 if pos < 0 else pos + self.u32(pos)

    cdef int64_t scalar(self, int64_t table, int index, int nbytes) except? -2:
        cdef int64_t pos = self.field(table, index)
        if pos < 0:
            return 0
        if pos + nbytes > self.end:
            raise ValueError("flatbuffer scalar outside its message")
        if nbytes == 1:
            return self.p[pos]
        if nbytes == 2:
            return _u16(self.p + pos)
        if nbytes == 4:
            return <int32_t>_u32(self.p + pos)
        return _i64(self.p + pos)

    cdef int64_t vector(self, int64_t table, int index, int64_t item, int64_t* count) except -2:
        """Start of the items of a vector of ``item``-byte structs (count in ``count``)."""
        cdef int64_t v = self.ref(table, index)
        if v < 0:
            count[0] = 0
            return 0
        count[0] = self.u32(v)
        if v + 4 + count[0] * item > self.end:
            raise ValueError("flatbuffer vector runs past its message")
        return v + 4


cdef _Flat _flat(const uint8_t* p, int64_t start, int64_t end):
    cdef _Flat f = _Flat.__new__(_Flat)
    f.p, f.start, f.end = p, start, end
    return f


def ipc_batch(const uint8_t[::1] buf, int64_t max_rows, bytes name=b"row_id"):
    """The single record batch of an Arrow IPC file whose schema (in its footer) is one
    non-null uint32 column ``name``: ``(rows, codec, values_pos, values_len)`` (position
    absolute in ``buf``; codec -1 = uncompressed, 0 = LZ4 frame, 1 = zstd). ValueError when
    anything is off."""
    cdef int64_t n = buf.shape[0]
    if n < 18 or bytes(buf[:6]) != b"ARROW1" or bytes(buf[n - 6:]) != b"ARROW1":
        raise ValueError("no ARROW1 magic at both ends")
    cdef const uint8_t* p = &buf[0]
    cdef int64_t flen = <int32_t>_u32(p + n - 10)
    cdef int64_t fstart = n - 10 - flen
    if flen <= 0 or fstart < 8:
        raise ValueError("bad IPC footer length")
    cdef _Flat foot = _flat(p, fstart, n - 10)
    cdef int64_t root = fstart + foot.u32(fstart)
    cdef int64_t nb, nd, blocks, dicts
    dicts = foot.vector(root, 2, 24, &nd)
    blocks = foot.vector(root, 3, 24, &nb)
    if nd != 0 or nb != 1:
        raise ValueError(f"{nb} record batches and {nd} dictionaries, expected one batch")
    cdef int64_t off = _i64(p + blocks), mlen = <int32_t>_u32(p + blocks + 8)
    cdef int64_t blen = _i64(p + blocks + 16)
    if off < 8 or mlen < 8 or blen < 0 or off + mlen > fstart or blen > fstart - off - mlen:
        raise ValueError("record batch block outside the file")
    # message: 0xFFFFFFFF continuation, i32 flatbuffer size, flatbuffer, body
    cdef int64_t ms = off + 8, me = off + mlen
    if _u32(p + off) != 0xFFFFFFFF:
        ms, me = off + 4, off + mlen  # pre-1.0 format without the continuation marker
    cdef _Flat msg = _flat(p, ms, me)
    cdef int64_t mroot = ms + msg.u32(ms)
    if msg.scalar(mroot, 1, 1) != 3:
        raise ValueError("the batch block is not a record batch message")
    cdef int64_t rb = msg.ref(mroot, 2)
    if rb < 0:
        raise ValueError("record batch message without a header")
    cdef int64_t rows = msg.scalar(rb, 0, 8)
    if rows < 0 or rows > max_rows:
        raise ValueError(f"record batch declares {rows} rows, at most {max_rows} are possible")
    cdef int64_t nn, nbuf, nodes, bufs, codec = -1, comp
    nodes = msg.vector(rb, 1, 16, &nn)
    bufs = msg.vector(rb, 2, 16, &nbuf)
    if nn != 1 or nbuf != 2:
        raise ValueError(f"{nn} columns / {nbuf} buffers, expected one column of 2 buffers")
    if _i64(p + nodes) != rows or _i64(p + nodes + 8) != 0:
        raise ValueError("the column's length differs from the batch or it holds nulls")
    comp = msg.ref(rb, 3)
    if comp >= 0:
        codec = msg.scalar(comp, 0, 1)
        if codec not in (0, 1) or msg.scalar(comp, 1, 1) != 0:
            raise ValueError("unknown IPC body compression")
    cdef int64_t vpos = _i64(p + bufs + 16), vlen = _i64(p + bufs + 24)
    if vpos < 0 or vlen < 0 or vpos > blen or vlen > blen - vpos:
        raise ValueError("IPC buffer outside its message body")
    _check_schema(foot, foot.ref(root, 1), name)
    return rows, codec, me + vpos, vlen


cdef int _check_schema(_Flat f, int64_t schema, bytes name) except -1:
    """The footer's schema is exactly one non-null ``uint32`` field called ``name``, without
    children, dictionary or metadata (Lance's deletion file schema)."""
    cdef int64_t n, fields, field, s, ln, t
    if schema < 0:
        raise ValueError("IPC footer without a schema")
    if f.ref(schema, 2) >= 0:
        raise ValueError("deletion file schema carries metadata")
    fields = f.vector(schema, 1, 4, &n)
    if n != 1:
        raise ValueError(f"deletion file schema has {n} fields, expected 1")
    field = fields + f.u32(fields)
    s = f.ref(field, 0)
    if s < 0:
        raise ValueError("unnamed deletion file column")
    ln = f.u32(s)
    if ln != len(name) or s + 4 + ln > f.end or bytes(f.p[s + 4:s + 4 + ln]) != name:
        raise ValueError("the deletion file column is not row_id")
    if f.scalar(field, 1, 1) != 0:
        raise ValueError("the deletion file column is nullable")
    if f.scalar(field, 2, 1) != 2:  # Type union: Int
        raise ValueError("the deletion file column is not an integer")
    t = f.ref(field, 3)
    if t < 0 or f.scalar(t, 0, 4) != 32 or f.scalar(t, 1, 1) != 0:
        raise ValueError("the deletion file column is not uint32")
    cdef int64_t nc
    f.vector(field, 5, 4, &nc)
    if nc or f.ref(field, 4) >= 0 or f.ref(field, 6) >= 0:
        raise ValueError("the deletion file column has children, a dictionary or metadata")
    return 0


def live_mask(const uint8_t[::1] offsets_le, int64_t count, int64_t num_rows):
    """Keep mask (uint8, 1 = live) of a fragment of ``num_rows`` rows from ``count`` deleted
    offsets (u32 little endian, any order); ValueError on an offset past the fragment or a
    repeated offset."""
    if count < 0 or offsets_le.shape[0] < count * 4 or num_rows < 0:
        raise ValueError("deletion offsets shorter than declared")
    mask = np.ones(num_rows, dtype=np.uint8)
    cdef uint8_t[::1] m = mask
    cdef const uint8_t* src = &offsets_le[0] if count else NULL
    cdef int64_t i, v
    cdef int bad = 0
    with nogil:
        for i in range(count):
            v = _u32(src + 4 * i)
            if v >= num_rows:
                bad = 1
                break
            if m[v] == 0:
                bad = 2
                break
            m[v] = 0
    if bad == 1:
        raise ValueError(f"deleted offset {v} past the fragment's {num_rows} rows")
    if bad == 2:
        raise ValueError(f"deleted offset {v} listed twice")
    return mask
