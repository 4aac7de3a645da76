# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Columnar scan of a Manifest protobuf: one nogil walk over the wire bytes fills numpy columns
for every fragment and data file, with no Python object per fragment.

A cheap first pass over the top-level fields only counts the fragments (to size the per-fragment
columns); the full walk then validates and fills everything, growing the per-data-file buffers
as it goes. Every length is checked against the end of its enclosing message by the
``_wire.pxd`` cursor; a malformed message raises ``CorruptFileError`` naming the file.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int32_t, int64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy, memset

import numpy as np

from lancefmt._wire cimport (
    WireCursor, wire_init, wire_done, wire_varint, wire_tag, wire_len, wire_skip,
)
from lancefmt.errors import CorruptFileError

cdef enum:
    OK = 0
    ERR_WIRE = 1
    ERR_TYPE = 2
    ERR_UTF8 = 3
    ERR_NOMEM = 4

cdef struct Out:
    Py_ssize_t n_frags
    Py_ssize_t n_files
    Py_ssize_t file_cap
    Py_ssize_t n_spans
    Py_ssize_t err_pos
    uint32_t err_field
    # per fragment
    uint64_t* frag_id
    uint64_t* physical_rows
    uint64_t* num_deleted
    uint8_t* has_deletion
    int32_t* deletion_type
    uint64_t* deletion_read_version
    uint64_t* deletion_id
    int64_t* deletion_base
    int64_t* file_start
    int64_t* first_base
    uint8_t* has_row_ids
    uint32_t* num_overlays
    int64_t* frag_offset
    int64_t* frag_length
    # per data file (malloc'd, grown by _grow_files)
    int64_t* file_base
    uint64_t* file_size
    uint32_t* file_major
    uint32_t* file_minor
    int64_t* path_offset
    int64_t* path_length
    # spans of top-level fields other than `fragments`, [start, end) pairs
    int64_t* spans


cdef inline bint _utf8_ok(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """Strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF), as protobuf demands of strings."""
    cdef Py_ssize_t i = 0
    cdef uint8_t b, b1
    cdef int need, k
    cdef uint64_t w
    while i < n:
        if i + 8 <= n:
            memcpy(&w, s + i, 8)
            if (w & <uint64_t>0x8080808080808080) == 0:
                i += 8
                continue
        b = s[i]
        if b < 0x80:
            i += 1
            continue
        if b >= 0xC2 and b <= 0xDF:
            need = 1
        elif b >= 0xE0 and b <= 0xEF:
            need = 2
        elif b >= 0xF0 and b <= 0xF4:
            need = 3
        else:
            return False
        if i + need >= n:
            return False
        b1 = s[i + 1]
        if b == 0xE0 and b1 < 0xA0:
            return False
        if b == 0xED and b1 > 0x9F:
            return False
        if b == 0xF0 and b1 < 0x90:
            return False
        if b == 0xF4 and b1 > 0x8F:
            return False
        for k in range(1, need + 1):
            if (s[i + k] & 0xC0) != 0x80:
                return False
        i += need + 1
    return True


cdef inline int _skip_varints(WireCursor* c) noexcept nogil:
    """Validate a packed run of varints that fills the cursor."""
    cdef uint64_t v
    while not wire_done(c):
        if wire_varint(c, &v) < 0:
            return -1
    return 0


cdef int _repeated_varint(WireCursor* c, int wt) noexcept nogil:
    cdef uint64_t v
    cdef Py_ssize_t s, n
    cdef WireCursor sub
    if wt == 0:
        return OK if wire_varint(c, &v) == 0 else ERR_WIRE
    if wt == 2:
        if wire_len(c, &s, &n) < 0:
            return ERR_WIRE
        wire_init(&sub, c.data, s, s + n)
        return OK if _skip_varints(&sub) == 0 else ERR_WIRE
    return ERR_TYPE


cdef int _grow_files(Out* o) noexcept nogil:
    cdef Py_ssize_t cap = o.file_cap * 2 if o.file_cap else 1024
    cdef void* p
    p = realloc(o.file_base, cap * sizeof(int64_t))
    if p == NULL:
        return -1
    o.file_base = <int64_t*>p
    p = realloc(o.file_size, cap * sizeof(uint64_t))
    if p == NULL:
        return -1
    o.file_size = <uint64_t*>p
    p = realloc(o.file_major, cap * sizeof(uint32_t))
    if p == NULL:
        return -1
    o.file_major = <uint32_t*>p
    p = realloc(o.file_minor, cap * sizeof(uint32_t))
    if p == NULL:
        return -1
    o.file_minor = <uint32_t*>p
    p = realloc(o.path_offset, cap * sizeof(int64_t))
    if p == NULL:
        return -1
    o.path_offset = <int64_t*>p
    p = realloc(o.path_length, cap * sizeof(int64_t))
    if p == NULL:
        return -1
    o.path_length = <int64_t*>p
    o.file_cap = cap
    return 0


cdef void _free_files(Out* o) noexcept nogil:
    free(o.file_base)
    free(o.file_size)
    free(o.file_major)
    free(o.file_minor)
    free(o.path_offset)
    free(o.path_length)


cdef int _scan_data_file(WireCursor* c, Out* o, Py_ssize_t k) noexcept nogil:
    cdef uint32_t field
    cdef int wt, rc
    cdef uint64_t v
    cdef Py_ssize_t s, n
    o.file_base[k] = -1
    o.file_size[k] = 0
    o.file_major[k] = 0
    o.file_minor[k] = 0
    o.path_offset[k] = 0
    o.path_length[k] = 0
    while not wire_done(c):
        if wire_tag(c, &field, &wt) < 0:
            return ERR_WIRE
        o.err_field = field
        if field == 1:
            if wt != 2:
                return ERR_TYPE
            if wire_len(c, &s, &n) < 0:
                return ERR_WIRE
            if not _utf8_ok(c.data + s, n):
                return ERR_UTF8
            o.path_offset[k] = s
            o.path_length[k] = n
        elif field == 2 or field == 3:
            rc = _repeated_varint(c, wt)
            if rc != OK:
                return rc
        elif field >= 4 and field <= 7:
            if wt != 0:
                return ERR_TYPE
            if wire_varint(c, &v) < 0:
                return ERR_WIRE
            if field == 4:
                o.file_major[k] = <uint32_t>v
            elif field == 5:
                o.file_minor[k] = <uint32_t>v
            elif field == 6:
                o.file_size[k] = v
            else:
                o.file_base[k] = <int64_t>(<uint32_t>v)
        elif wire_skip(c, wt) < 0:
            return ERR_WIRE
    return OK


cdef int _scan_deletion_file(WireCursor* c, Out* o, Py_ssize_t i) noexcept nogil:
    cdef uint32_t field
    cdef int wt
    cdef uint64_t v
    while not wire_done(c):
        if wire_tag(c, &field, &wt) < 0:
            return ERR_WIRE
        o.err_field = field
        if (field >= 1 and field <= 4) or field == 7:
            if wt != 0:
                return ERR_TYPE
            if wire_varint(c, &v) < 0:
                return ERR_WIRE
            if field == 1:
                o.deletion_type[i] = <int32_t>v
            elif field == 2:
                o.deletion_read_version[i] = v
            elif field == 3:
                o.deletion_id[i] = v
            elif field == 4:
                o.num_deleted[i] = v
            else:
                o.deletion_base[i] = <int64_t>(<uint32_t>v)
        elif wire_skip(c, wt) < 0:
            return ERR_WIRE
    return OK


cdef int _scan_fragment(WireCursor* c, Out* o, Py_ssize_t i) noexcept nogil:
    """One DataFragment. A repeated singular message (deletion_file) merges, as protobuf does."""
    cdef uint32_t field
    cdef int wt, rc
    cdef uint64_t v
    cdef Py_ssize_t s, n
    cdef WireCursor sub
    cdef bint first_file = True
    o.frag_id[i] = 0
    o.physical_rows[i] = 0
    o.num_deleted[i] = 0
    o.has_deletion[i] = 0
    o.deletion_type[i] = -1
    o.deletion_read_version[i] = 0
    o.deletion_id[i] = 0
    o.deletion_base[i] = -1
    o.file_start[i] = o.n_files
    o.first_base[i] = -1
    o.has_row_ids[i] = 0
    o.num_overlays[i] = 0
    while not wire_done(c):
        if wire_tag(c, &field, &wt) < 0:
            return ERR_WIRE
        o.err_field = field
        if field == 1 or field == 4:
            if wt != 0:
                return ERR_TYPE
            if wire_varint(c, &v) < 0:
                return ERR_WIRE
            if field == 1:
                o.frag_id[i] = v
            else:
                o.physical_rows[i] = v
        elif field == 2 or field == 3 or (field >= 5 and field <= 11):
            if wt != 2:
                return ERR_TYPE
            if wire_len(c, &s, &n) < 0:
                return ERR_WIRE
            wire_init(&sub, c.data, s, s + n)
            if field == 2:
                if o.n_files >= o.file_cap and _grow_files(o) < 0:
                    return ERR_NOMEM
                rc = _scan_data_file(&sub, o, o.n_files)
                if rc != OK:
                    return rc
                if first_file:
                    o.first_base[i] = o.file_base[o.n_files]
                first_file = False
                o.n_files += 1
            elif field == 3:
                if not o.has_deletion[i]:
                    o.deletion_type[i] = 0
                    o.has_deletion[i] = 1
                rc = _scan_deletion_file(&sub, o, i)
                if rc != OK:
                    return rc
            elif field == 5 or field == 6:
                o.has_row_ids[i] = 1
            elif field == 11:
                o.num_overlays[i] += 1
        elif wire_skip(c, wt) < 0:
            return ERR_WIRE
    return OK


cdef int _count(const uint8_t* data, Py_ssize_t start, Py_ssize_t end, Out* o) noexcept nogil:
    """First pass, top level only: count fragments and the runs of other fields."""
    cdef WireCursor c
    cdef uint32_t field
    cdef int wt
    cdef bint in_span = False
    o.n_frags = 0
    o.n_spans = 0
    wire_init(&c, data, start, end)
    while not wire_done(&c):
        o.err_pos = c.pos
        o.err_field = 0
        if wire_tag(&c, &field, &wt) < 0:
            return ERR_WIRE
        o.err_field = field
        if field == 2:
            if wt != 2:
                return ERR_TYPE
            o.n_frags += 1
            in_span = False
        elif not in_span:
            o.n_spans += 1
            in_span = True
        if wire_skip(&c, wt) < 0:
            return ERR_WIRE
    return OK


cdef int _scan(const uint8_t* data, Py_ssize_t start, Py_ssize_t end, Out* o) noexcept nogil:
    """Second pass: the full walk, filling every column."""
    cdef WireCursor c, sub
    cdef uint32_t field
    cdef int wt, rc
    cdef Py_ssize_t s, n, field_start
    cdef Py_ssize_t span_start = -1
    o.n_frags = 0
    o.n_files = 0
    o.n_spans = 0
    wire_init(&c, data, start, end)
    while not wire_done(&c):
        field_start = c.pos
        o.err_pos = c.pos
        o.err_field = 0
        if wire_tag(&c, &field, &wt) < 0:
            return ERR_WIRE
        if field == 2:
            if wire_len(&c, &s, &n) < 0:
                o.err_field = 2
                return ERR_WIRE
            if span_start >= 0:
                o.spans[2 * o.n_spans] = span_start - start
                o.spans[2 * o.n_spans + 1] = field_start - start
                o.n_spans += 1
                span_start = -1
            o.frag_offset[o.n_frags] = s - start
            o.frag_length[o.n_frags] = n
            wire_init(&sub, data, s, s + n)
            o.err_pos = s
            rc = _scan_fragment(&sub, o, o.n_frags)
            if rc != OK:
                o.err_pos = sub.pos
                return rc
            o.n_frags += 1
        else:
            if span_start < 0:
                span_start = field_start
            if wire_skip(&c, wt) < 0:
                o.err_field = field
                return ERR_WIRE
    if span_start >= 0:
        o.spans[2 * o.n_spans] = span_start - start
        o.spans[2 * o.n_spans + 1] = end - start
        o.n_spans += 1
    return OK


_MESSAGES = {
    ERR_WIRE: "malformed protobuf (truncated or invalid wire data)",
    ERR_TYPE: "protobuf field has the wrong wire type",
    ERR_UTF8: "data file path is not valid UTF-8",
    ERR_NOMEM: "out of memory",
}


cdef _copy_out(void* src, Py_ssize_t n, dtype):
    arr = np.empty(n, dtype)
    cdef uint8_t[::1] dst
    if n:
        dst = arr.view(np.uint8)
        memcpy(&dst[0], src, n * arr.itemsize)
    return arr


def scan_manifest(const uint8_t[::1] buf, Py_ssize_t start, Py_ssize_t end, path=None):
    """Scan the Manifest message ``buf[start:end]``.

    Returns a dict of numpy columns: per fragment ``id``, ``physical_rows``,
    ``num_deleted_rows``, ``has_deletion_file``, ``deletion_file_type`` (-1 = none),
    ``deletion_read_version``, ``deletion_id``, ``deletion_base_id`` (-1 = absent),
    ``file_offsets`` (n+1 cumulative data-file offsets), ``base_id`` (first data file's base,
    -1 = absent), ``has_row_ids``, ``num_overlays``, ``offset``/``length`` (the fragment's bytes,
    relative to ``start``); per data file ``file_base_id``, ``file_size_bytes``,
    ``file_major_version``, ``file_minor_version``, ``path_offset``/``path_length`` (relative to
    ``start``); and ``spans``, the [start, end) ranges (relative to ``start``) of every other
    top-level field, in order, for decoding the rest of the manifest without its fragments.
    """
    cdef Out o
    cdef int rc
    if start < 0 or end < start or end > buf.shape[0]:
        raise CorruptFileError("manifest message range is outside the file", path)
    memset(&o, 0, sizeof(Out))
    cdef const uint8_t* data = &buf[0] if buf.shape[0] else NULL
    with nogil:
        rc = _count(data, start, end, &o)
    if rc != OK:
        raise CorruptFileError(
            f"{_MESSAGES[rc]} in the manifest at byte {o.err_pos - start} of the message "
            f"(field {o.err_field})", path)
    cdef Py_ssize_t nf = o.n_frags, ns = o.n_spans, nd, i
    cols = {
        "id": np.empty(nf, np.uint64),
        "physical_rows": np.empty(nf, np.uint64),
        "num_deleted_rows": np.empty(nf, np.uint64),
        "has_deletion_file": np.empty(nf, np.bool_),
        "deletion_file_type": np.empty(nf, np.int32),
        "deletion_read_version": np.empty(nf, np.uint64),
        "deletion_id": np.empty(nf, np.uint64),
        "deletion_base_id": np.empty(nf, np.int64),
        "file_offsets": np.empty(nf + 1, np.int64),
        "base_id": np.empty(nf, np.int64),
        "has_row_ids": np.empty(nf, np.bool_),
        "num_overlays": np.empty(nf, np.uint32),
        "offset": np.empty(nf, np.int64),
        "length": np.empty(nf, np.int64),
        "spans": np.empty(2 * ns, np.int64),
    }
    cdef uint64_t[::1] frag_id = cols["id"], physical_rows = cols["physical_rows"]
    cdef uint64_t[::1] num_deleted = cols["num_deleted_rows"]
    cdef uint8_t[::1] has_deletion = cols["has_deletion_file"].view(np.uint8)
    cdef int32_t[::1] deletion_type = cols["deletion_file_type"]
    cdef uint64_t[::1] del_rv = cols["deletion_read_version"], del_id = cols["deletion_id"]
    cdef int64_t[::1] del_base = cols["deletion_base_id"], file_start = cols["file_offsets"]
    cdef int64_t[::1] first_base = cols["base_id"]
    cdef uint8_t[::1] has_row_ids = cols["has_row_ids"].view(np.uint8)
    cdef uint32_t[::1] num_overlays = cols["num_overlays"]
    cdef int64_t[::1] frag_offset = cols["offset"], frag_length = cols["length"]
    cdef int64_t[::1] spans = cols["spans"]
    # Zero-length columns have no element 0; the walk never writes them then (no fragment, no
    # span), so a dummy slot stands in.
    cdef int64_t dummy_i64[1]
    cdef uint64_t dummy_u64[1]
    cdef uint32_t dummy_u32[1]
    cdef int32_t dummy_i32[1]
    cdef uint8_t dummy_u8[1]
    if nf:
        o.frag_id = &frag_id[0]
        o.physical_rows = &physical_rows[0]
        o.num_deleted = &num_deleted[0]
        o.has_deletion = &has_deletion[0]
        o.deletion_type = &deletion_type[0]
        o.deletion_read_version = &del_rv[0]
        o.deletion_id = &del_id[0]
        o.deletion_base = &del_base[0]
        o.first_base = &first_base[0]
        o.has_row_ids = &has_row_ids[0]
        o.num_overlays = &num_overlays[0]
        o.frag_offset = &frag_offset[0]
        o.frag_length = &frag_length[0]
    else:
        o.frag_id = o.physical_rows = o.num_deleted = o.deletion_read_version = dummy_u64
        o.deletion_id = dummy_u64
        o.has_deletion = o.has_row_ids = dummy_u8
        o.deletion_type = dummy_i32
        o.deletion_base = o.first_base = o.frag_offset = o.frag_length = dummy_i64
        o.num_overlays = dummy_u32
    o.file_start = &file_start[0]
    o.spans = &spans[0] if ns else dummy_i64
    try:
        with nogil:
            rc = _scan(data, start, end, &o)
        if rc != OK:
            raise CorruptFileError(
                f"{_MESSAGES[rc]} in the manifest at byte {o.err_pos - start} of the message "
                f"(field {o.err_field})", path)
        if o.n_frags != nf or o.n_spans != ns:
            raise CorruptFileError("manifest changed between scan passes", path)
        nd = o.n_files
        file_start[nf] = nd
        for i in range(nd):
            o.path_offset[i] -= start
        cols["file_base_id"] = _copy_out(o.file_base, nd, np.int64)
        cols["file_size_bytes"] = _copy_out(o.file_size, nd, np.uint64)
        cols["file_major_version"] = _copy_out(o.file_major, nd, np.uint32)
        cols["file_minor_version"] = _copy_out(o.file_minor, nd, np.uint32)
        cols["path_offset"] = _copy_out(o.path_offset, nd, np.int64)
        cols["path_length"] = _copy_out(o.path_length, nd, np.int64)
    finally:
        _free_files(&o)
    return cols


def gather_strings(const uint8_t[::1] buf, Py_ssize_t base, const int64_t[::1] offsets,
                   const int64_t[::1] lengths):
    """Concatenate ``buf[base + offsets[i] : ... + lengths[i]]`` into one value buffer and an
    Arrow offsets array (int32 when it fits, else int64). Ranges were bounds-checked by the scan;
    they are checked again here against ``buf``."""
    cdef Py_ssize_t n = offsets.shape[0], i
    cdef int64_t total = 0, o, ln
    if lengths.shape[0] != n:
        raise ValueError("offsets and lengths differ in length")
    for i in range(n):
        o = base + offsets[i]
        ln = lengths[i]
        if o < 0 or ln < 0 or o + ln > buf.shape[0]:
            raise ValueError("string range outside the buffer")
        total += ln
    values = np.empty(total, np.uint8)
    wide = total > 0x7FFFFFFF
    offs = np.empty(n + 1, np.int64 if wide else np.int32)
    cdef uint8_t[::1] v = values
    cdef int64_t[::1] o64
    cdef int32_t[::1] o32
    cdef int64_t pos = 0
    if wide:
        o64 = offs
        o64[0] = 0
    else:
        o32 = offs
        o32[0] = 0
    for i in range(n):
        ln = lengths[i]
        if ln:
            memcpy(&v[pos], &buf[base + offsets[i]], ln)
        pos += ln
        if wide:
            o64[i + 1] = pos
        else:
            o32[i + 1] = <int32_t>pos
    return values, offs
