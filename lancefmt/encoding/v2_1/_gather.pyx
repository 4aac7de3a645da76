# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Per-value kernels of the 2.1/2.2 compressive layer: run-length expansion and dictionary
gathers. Each entry point checks its whole input range once, then loops without the GIL."""
import numpy as np

from lancefmt.encoding.pool_memory import pool_empty

cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

cnp.import_array()


def rle_expand(const uint8_t[::1] values, Py_ssize_t width, const uint8_t[::1] run_lengths,
               Py_ssize_t num_values):
    """Expand runs: value j (``width`` bytes in ``values``) repeated ``run_lengths[j]`` times,
    exactly ``num_values`` values in all. Raises ValueError when the runs do not cover exactly
    ``num_values`` values or ``values`` is too short for the runs."""
    cdef Py_ssize_t nruns = run_lengths.shape[0]
    cdef Py_ssize_t j, k, pos = 0
    cdef int64_t total = 0
    if width <= 0:
        raise ValueError("RLE value width must be positive")
    if values.shape[0] < nruns * width:
        raise ValueError(f"{nruns} RLE runs of {width}-byte values need {nruns * width} bytes, "
                         f"got {values.shape[0]}")
    with nogil:
        for j in range(nruns):
            total += run_lengths[j]
    if total != num_values:
        raise ValueError(f"RLE runs cover {total} values, expected {num_values}")
    cdef cnp.ndarray out = pool_empty(num_values * width, dtype=np.uint8)
    if num_values == 0:
        return out
    cdef uint8_t[::1] o = out
    cdef uint8_t* dst = &o[0]
    cdef const uint8_t* src = &values[0]
    cdef uint8_t run
    with nogil:
        if width == 8:
            for j in range(nruns):
                for k in range(run_lengths[j]):
                    memcpy(dst + pos * 8, src + j * 8, 8)
                    pos += 1
        elif width == 4:
            for j in range(nruns):
                for k in range(run_lengths[j]):
                    memcpy(dst + pos * 4, src + j * 4, 4)
                    pos += 1
        else:
            for j in range(nruns):
                run = run_lengths[j]
                for k in range(run):
                    memcpy(dst + pos * width, src + j * width, width)
                    pos += 1
    return out


def gather_variable(const int64_t[::1] offsets, const uint8_t[::1] data, indices):
    """Strings ``data[offsets[i]:offsets[i+1]]`` for each ``i`` in ``indices`` (any integer
    array). Returns ``(out_offsets int64[n+1], out_data uint8)``. The dictionary offsets must
    already be checked (monotonic, within ``data``); indices are checked here."""
    cdef Py_ssize_t nitems = offsets.shape[0] - 1
    if nitems < 0:
        raise ValueError("dictionary needs at least one offset")
    idx_arr = np.ascontiguousarray(indices, dtype=np.int64)
    cdef const int64_t[::1] idx = idx_arr
    cdef Py_ssize_t n = idx.shape[0]
    cdef Py_ssize_t i, bad = -1
    cdef int64_t total = 0, j
    cdef cnp.ndarray out_off = pool_empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] oo = out_off
    with nogil:
        oo[0] = 0
        for i in range(n):
            j = idx[i]
            if j < 0 or j >= nitems:
                bad = i
                break
            total += offsets[j + 1] - offsets[j]
            oo[i + 1] = total
    if bad != -1:
        raise ValueError(f"dictionary index {idx[bad]} out of range 0..{nitems}")
    cdef cnp.ndarray out = pool_empty(total, dtype=np.uint8)
    if total == 0:
        return out_off, out
    cdef uint8_t[::1] ov = out
    cdef const uint8_t* src = &data[0]
    with nogil:
        for i in range(n):
            j = idx[i]
            memcpy(&ov[0] + oo[i], src + offsets[j], offsets[j + 1] - offsets[j])
    return out_off, out


cdef inline int64_t _load_offset(const uint8_t* p, int ob) noexcept nogil:
    cdef uint32_t v32
    cdef uint64_t v64
    if ob == 4:
        memcpy(&v32, p, 4)
        return <int64_t>v32
    memcpy(&v64, p, 8)
    if v64 > <uint64_t>0x7FFFFFFFFFFFFFFF:
        return -1
    return <int64_t>v64


def decode_variable_chunks(const uint8_t[::1] data, const int64_t[::1] starts,
                           const int64_t[::1] sizes, const int64_t[::1] counts, int offset_bits):
    """Variable-width mini-block values of many chunks at once: chunk i's buffer
    ``data[starts[i]:starts[i]+sizes[i]]`` holds ``counts[i] + 1`` offsets (32 or 64 bits,
    counted from the buffer start) then the bytes. Returns ``(offsets int64[total+1], bytes)``
    with the chunks joined. Every offset is checked (ascending, inside its buffer) first;
    ValueError names the first bad chunk."""
    if offset_bits not in (32, 64):
        raise ValueError(f"{offset_bits}-bit offsets")
    cdef int ob = offset_bits // 8
    cdef Py_ssize_t nchunks = starts.shape[0]
    if sizes.shape[0] != nchunks or counts.shape[0] != nchunks:
        raise ValueError("starts, sizes and counts must have the same length")
    cdef Py_ssize_t size = data.shape[0]
    cdef const uint8_t* src = &data[0] if size else NULL
    cdef Py_ssize_t i, j, n, bad = -1
    cdef int64_t total_vals = 0, total_bytes = 0, prev, cur, head
    cdef const uint8_t* base
    with nogil:
        for i in range(nchunks):
            n = counts[i]
            if starts[i] < 0 or sizes[i] < 0 or n < 0 or starts[i] > size \
                    or sizes[i] > size - starts[i] or (n + 1) > sizes[i] // ob:
                bad = i
                break
            base = src + starts[i]
            head = (n + 1) * ob
            prev = _load_offset(base, ob)
            if prev < head or prev > sizes[i]:
                bad = i
                break
            cur = prev
            for j in range(1, n + 1):
                cur = _load_offset(base + j * ob, ob)
                if cur < prev or cur > sizes[i]:
                    bad = i
                    break
                prev = cur
            if bad != -1:
                break
            total_bytes += cur - _load_offset(base, ob)
            total_vals += n
    if bad != -1:
        raise ValueError(f"chunk {bad}: variable-width offsets are not ascending inside the "
                         f"chunk's value buffer")
    cdef cnp.ndarray out_off = pool_empty(total_vals + 1, dtype=np.int64)
    cdef cnp.ndarray out = pool_empty(total_bytes, dtype=np.uint8)
    cdef int64_t[::1] oo = out_off
    cdef uint8_t* dst = <uint8_t*>cnp.PyArray_DATA(out)
    cdef int64_t vpos = 0, bpos = 0, first, last
    with nogil:
        oo[0] = 0
        for i in range(nchunks):
            n = counts[i]
            base = src + starts[i]
            first = _load_offset(base, ob)
            for j in range(1, n + 1):
                oo[vpos + j] = bpos + _load_offset(base + j * ob, ob) - first
            last = _load_offset(base + n * ob, ob)
            memcpy(dst + bpos, base + first, last - first)
            vpos += n
            bpos += last - first
    return out_off, out


from libc.stdlib cimport free, malloc


cdef Py_ssize_t _walk_rows(const int64_t* offs, Py_ssize_t n, const uint8_t* data,
                           Py_ssize_t nf, const int64_t* widths, const uint8_t* is_var,
                           int64_t* var_total, uint8_t** fixed_out, int64_t** var_offs,
                           uint8_t** var_out, bint copy) noexcept nogil:
    """One pass over the packed rows (sizing when ``copy`` is false, copying when true);
    -1 on success, else the first bad row."""
    cdef Py_ssize_t i, f
    cdef int64_t p, end, ln, w
    cdef uint32_t l32
    cdef uint64_t l64
    for i in range(n):
        p = offs[i]
        end = offs[i + 1]
        if p == end:   # a null row carries no payload
            if copy:
                for f in range(nf):
                    if is_var[f]:
                        var_offs[f][i + 1] = var_offs[f][i]
            continue
        for f in range(nf):
            w = widths[f]
            if not is_var[f]:
                if w > end - p:
                    return i
                if copy:
                    memcpy(fixed_out[f] + i * w, data + p, w)
                p += w
            else:
                if w > end - p:
                    return i
                if w == 4:
                    memcpy(&l32, data + p, 4)
                    ln = l32
                else:
                    memcpy(&l64, data + p, 8)
                    if l64 > <uint64_t>(end - p):
                        return i
                    ln = <int64_t>l64
                p += w
                if ln > end - p:
                    return i
                if copy:
                    memcpy(var_out[f] + var_offs[f][i], data + p, ln)
                    var_offs[f][i + 1] = var_offs[f][i] + ln
                else:
                    var_total[f] += ln
                p += ln
        if p != end:
            return i
    return -1


def split_packed_rows(const int64_t[::1] offsets, const uint8_t[::1] data,
                      const int64_t[::1] widths, const uint8_t[::1] is_var):
    """Variable packed struct rows -> per-field columns. Row i is
    ``data[offsets[i]:offsets[i+1]]``: per field either ``widths[f]`` fixed bytes or (when
    ``is_var[f]``) a ``widths[f]``-byte (4/8) length then that many bytes; an empty row is a
    null row (fixed fields zero, variable fields empty). Returns a list with, per field, the
    fixed bytes (n * width) or ``(offsets int64[n+1], bytes)``; ValueError names the first
    row that does not parse. Offsets must be ascending and inside ``data`` (checked here)."""
    cdef Py_ssize_t n = offsets.shape[0] - 1
    cdef Py_ssize_t nf = widths.shape[0]
    cdef Py_ssize_t i, f, bad = -1
    if n < 0 or is_var.shape[0] != nf:
        raise ValueError("bad packed-row description")
    for f in range(nf):
        if widths[f] <= 0 or (is_var[f] and widths[f] not in (4, 8)):
            raise ValueError(f"field {f} of width {widths[f]}")
    with nogil:
        if offsets[0] < 0 or offsets[n] > data.shape[0]:
            bad = 0
        else:
            for i in range(n):
                if offsets[i + 1] < offsets[i]:
                    bad = i
                    break
    if bad != -1:
        raise ValueError(f"packed row offsets are not ascending inside the data (row {bad})")
    cdef int64_t* var_total = <int64_t*>malloc(sizeof(int64_t) * (nf + 1))
    cdef uint8_t** fixed_out = <uint8_t**>malloc(sizeof(uint8_t*) * (nf + 1))
    cdef int64_t** var_offs = <int64_t**>malloc(sizeof(int64_t*) * (nf + 1))
    cdef uint8_t** var_out = <uint8_t**>malloc(sizeof(uint8_t*) * (nf + 1))
    cdef const uint8_t* src = &data[0] if data.shape[0] else NULL
    cdef cnp.ndarray arr
    results = []
    try:
        if not (var_total and fixed_out and var_offs and var_out):
            raise MemoryError()
        for f in range(nf):
            var_total[f] = 0
        with nogil:
            bad = _walk_rows(&offsets[0], n, src, nf, &widths[0], &is_var[0], var_total,
                             fixed_out, var_offs, var_out, False)
        if bad != -1:
            raise ValueError(f"packed struct row {bad} does not parse (cut off, a length past "
                             f"the row, or trailing bytes)")
        for f in range(nf):
            if is_var[f]:
                offs_arr = np.zeros(n + 1, dtype=np.int64)
                arr = pool_empty(var_total[f], dtype=np.uint8)
                var_offs[f] = <int64_t*>cnp.PyArray_DATA(offs_arr)
                var_out[f] = <uint8_t*>cnp.PyArray_DATA(arr)
                results.append((offs_arr, arr))
            else:
                arr = np.zeros(n * widths[f], dtype=np.uint8)
                fixed_out[f] = <uint8_t*>cnp.PyArray_DATA(arr)
                results.append(arr)
        with nogil:
            _walk_rows(&offsets[0], n, src, nf, &widths[0], &is_var[0], var_total,
                       fixed_out, var_offs, var_out, True)
    finally:
        free(var_total)
        free(fixed_out)
        free(var_offs)
        free(var_out)
    return results
