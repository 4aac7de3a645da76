"""The direct take's Cython kernels against a pure-Python twin: gathering rows out of flat and
FastLanes bit-packed segments, and cutting mini-block chunks into segments (with corrupt
chunks refused)."""
import struct

import numpy as np
import pytest

from lancefmt.dataset.read._direct_take import (GatherJob, SegmentTable, gather, group_rows,
                                           miniblock_segments)
from lancefmt.encoding.v2_1._fastlanes import pack

FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]
DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def twin_unpack(block: bytes, t: int, w: int) -> list:
    """The 1024 values of a FastLanes block, bit by bit (row r of lane l is the logical value
    ``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + l``; each lane an LSB-first stream of T-bit
    words ``k * lanes + l``)."""
    lanes = 1024 // t
    words = [int.from_bytes(block[i * (t // 8):(i + 1) * (t // 8)], "little")
             for i in range(len(block) // (t // 8))]
    out = [0] * 1024
    for lane in range(lanes):
        stream = sum(words[k * lanes + lane] << (k * t) for k in range(w))
        for r in range(t):
            out[FL_ORDER[r // 8] * 16 + (r % 8) * 128 + lane] = (stream >> (r * w)) & ((1 << w) - 1)
    return out


class Segments:
    """A column of flat and bit-packed segments in one numpy buffer, and its twin values."""

    def __init__(self, t, plan, seed=0):
        rng = np.random.default_rng(seed)
        dtype = DTYPES[t]
        parts, starts, offsets, widths, values = [], [0], [], [], []
        pos = 0
        for kind, n in plan:
            if kind == "flat":
                vals = rng.integers(0, np.iinfo(dtype).max, n, dtype=dtype, endpoint=True)
                raw = vals.tobytes()
                width = -1
                values.extend(int(v) for v in vals)
            else:
                w = kind
                vals = rng.integers(0, 1 << w, 1024, dtype=np.uint64) if w < 64 else \
                    rng.integers(0, np.iinfo(np.uint64).max, 1024, dtype=np.uint64, endpoint=True)
                raw = pack(vals.astype(dtype), t, w).tobytes()
                width = w
                values.extend(twin_unpack(raw, t, w)[:n])
            raw = b"\x00" * 3 + raw  # misaligned on purpose
            offsets.append(pos + 3)
            parts.append(raw)
            pos += len(raw)
            starts.append(starts[-1] + n)
            widths.append(width)
        self.buf = np.frombuffer(b"".join(parts) + b"\x00" * 8, dtype=np.uint8).copy()
        self.starts = np.array(starts, np.int64)
        self.ptrs = np.array(offsets, np.uint64) + np.uint64(self.buf.ctypes.data)
        self.widths = np.array(widths, np.int16)
        self.values = np.array(values, dtype=np.uint64).astype(dtype)
        self.t = t

    def gather(self, rows, lo=0, hi=-1):
        rows = np.ascontiguousarray(rows, np.int64)
        out = np.zeros(rows.size * (self.t // 8), np.uint8)
        gather(self.starts, self.ptrs, self.widths, self.t // 8, rows, out, lo, hi)
        return out.view(DTYPES[self.t])


@pytest.mark.parametrize("t", [8, 16, 32, 64])
def test_gather_matches_the_twin(t):
    plan = [("flat", 700), (0, 1024), (t, 1024), (3, 1024), ("flat", 1), (t // 2 + 1, 300),
            (t - 2, 1024), ("flat", 40), (t - 1, 1024)]  # t - 2, t - 1: most values straddle
    seg = Segments(t, plan, seed=t)
    n = seg.values.size
    rng = np.random.default_rng(t)
    for rows in (np.arange(n), np.sort(rng.choice(n, 500, replace=False)),
                 rng.integers(0, n, 2000), np.sort(rng.integers(0, n, 3000)),
                 np.array([n - 1, 0, 0, n - 1, 1723])):
        assert np.array_equal(seg.gather(rows), seg.values[rows])
    rows = rng.integers(0, n, 100)
    part = seg.gather(rows, 10, 60)
    assert np.array_equal(part[10:60], seg.values[rows[10:60]]) and not part[:10].any()


@pytest.mark.parametrize("t", [8, 64])
def test_gather_of_flat_only_columns_matches_the_twin(t):
    """Ascending rows of a column with flat segments only take the plain copy loop; any other
    order takes the ring loop: both agree with the twin."""
    seg = Segments(t, [("flat", 700), ("flat", 1), ("flat", 2000), ("flat", 40)], seed=t)
    n = seg.values.size
    rng = np.random.default_rng(t)
    for rows in (np.arange(n), np.sort(rng.choice(n, 500, replace=False)),
                 np.sort(rng.integers(0, n, 3000)), rng.integers(0, n, 2000), np.arange(n)[::-1]):
        assert np.array_equal(seg.gather(rows), seg.values[rows])


def test_gather_refuses_bad_rows_and_tables():
    seg = Segments(32, [("flat", 10), (5, 1024)])
    for bad in ([1034], [-1], [3, 1034]):
        with pytest.raises(ValueError, match="outside"):
            seg.gather(bad)
    out = np.zeros(8, np.uint8)
    with pytest.raises(ValueError, match="malformed"):  # a width wider than the word
        gather(seg.starts, seg.ptrs, np.array([-1, 33], np.int16), 4, np.zeros(1, np.int64), out)
    with pytest.raises(ValueError, match="malformed"):  # a block of more than 1024 rows
        gather(np.array([0, 1, 1100], np.int64), seg.ptrs, seg.widths, 4,
               np.zeros(1, np.int64), out)
    with pytest.raises(ValueError, match="malformed"):  # starts going backwards
        gather(np.array([0, 10, 5], np.int64), seg.ptrs, seg.widths, 4, np.zeros(1, np.int64), out)
    with pytest.raises(ValueError, match="disagree"):
        gather(seg.starts[:-1], seg.ptrs, seg.widths, 4, np.zeros(1, np.int64), out)
    with pytest.raises(ValueError, match="too small"):
        gather(seg.starts, seg.ptrs, seg.widths, 4, np.zeros(3, np.int64), out)
    with pytest.raises(ValueError, match="byte values"):
        gather(seg.starts, seg.ptrs, seg.widths, 3, np.zeros(1, np.int64), out)


def _job_columns():
    """Three columns over the same 3,000 rows: flat only, mixed, bit-packed only."""
    cols = [Segments(64, [("flat", 1000), ("flat", 2000)], seed=1),
            Segments(32, [("flat", 700), (5, 1024), (31, 1024), ("flat", 252)], seed=2),
            Segments(16, [(3, 1024), (16, 1024), (9, 952)], seed=3)]
    assert all(c.values.size == 3000 for c in cols)
    return cols


def _job(cols, rows, regroup=False):
    rows = np.ascontiguousarray(rows, np.int64)
    outs = [np.zeros(rows.size * (c.t // 8), np.uint8) for c in cols]
    job = GatherJob([SegmentTable(c.starts, c.ptrs, c.widths, c.t // 8) for c in cols], rows,
                    outs, regroup)
    return job, outs


@pytest.mark.parametrize("regroup", [False, True], ids=["in_order", "regrouped"])
@pytest.mark.parametrize("threads", [1, 4])
def test_a_gather_job_shared_by_threads_writes_every_row_of_every_column(threads, regroup):
    """Units (column x run of rows) go to whichever thread claims them; together the threads
    write what the twin reads, for sorted, unsorted and repeated rows."""
    import threading

    cols = _job_columns()
    rng = np.random.default_rng(3)
    for rows in (np.arange(3000), np.sort(rng.choice(3000, 900, replace=False)),
                 rng.integers(0, 3000, 20_000), np.sort(rng.integers(0, 3000, 9000))):
        job, outs = _job(cols, rows, regroup)
        assert not job.finished()
        workers = [threading.Thread(target=job.run) for _ in range(threads - 1)]
        for w in workers:
            w.start()
        job.run()
        assert job.finished(5.0)
        for w in workers:
            w.join()
        for c, out in zip(cols, outs):
            assert np.array_equal(out.view(DTYPES[c.t]), c.values[rows])


def test_a_gather_job_run_by_one_thread_leaves_nothing_to_late_helpers():
    """The calling thread alone finishes the job; a helper that starts afterwards finds no
    unit left and writes nothing."""
    cols = _job_columns()
    rows = np.random.default_rng(4).integers(0, 3000, 10_000)
    job, outs = _job(cols, rows)
    job.run()
    assert job.finished()
    before = [o.copy() for o in outs]
    for o in outs:
        o[:] = 0
    job.run()  # the late helper
    assert all(not o.any() for o in outs) and any(b.any() for b in before)


def twin_group(rows, first, total, shift=9):
    """What ``group_rows`` computes: a stable sort on the group (``(row - first) >> shift``,
    rows outside clamped to the first or last group)."""
    last = (max(total - first, 1) >> shift)
    groups = np.clip((rows - first) >> shift, 0, last)
    order = np.argsort(groups, kind="stable")
    return rows[order], order


@pytest.mark.parametrize("total", [1, 3000, 1 << 20, 1 << 40])
def test_group_rows_is_a_stable_sort_by_group(total):
    rng = np.random.default_rng(total % 97)
    rows = rng.integers(0, total, 5000)
    rows[:3] = [-5, total, total + 10 ** 6]  # outside: the first and last groups
    grouped = np.empty_like(rows)
    positions = np.empty_like(rows)
    group_rows(rows, 0, total, grouped, positions)
    assert np.array_equal(grouped, rows[positions])
    assert np.array_equal(np.sort(positions), np.arange(rows.size))
    shift = 9
    while (max(total, 1) >> shift) >= 65536:  # at most 65,536 groups
        shift += 1
    want_rows, want_pos = twin_group(rows, 0, total, shift)
    assert np.array_equal(grouped, want_rows) and np.array_equal(positions, want_pos)
    with pytest.raises(ValueError, match="another length"):
        group_rows(rows, 0, total, grouped[:-1], positions)


def test_a_gather_job_reports_rows_outside_the_columns_once_it_is_done():
    """Each run of rows is checked by its first unit; a run holding a row outside the
    columns is not read, and :meth:`check` names the first such row."""
    cols = _job_columns()
    rng = np.random.default_rng(5)
    for bad, at in ((3000, 0), (-1, 5000), (2 ** 62, 9999)):
        rows = rng.integers(0, 3000, 10_000)
        rows[at] = bad
        job, outs = _job(cols, rows)
        job.run()
        assert job.finished()
        with pytest.raises(ValueError, match=f"row {bad} outside"):
            job.check()
        run = slice(at // 4096 * 4096, at // 4096 * 4096 + 4096)
        for c, out in zip(cols, outs):  # the other runs were read, the bad one was not
            got = out.view(DTYPES[c.t])
            assert not got[run].any()
            keep = np.ones(rows.size, bool)
            keep[run] = False
            assert np.array_equal(got[keep], c.values[rows[keep]])
    job, _ = _job(cols, rng.integers(0, 3000, 100))
    job.run()
    job.check()
    rows = rng.integers(0, 3000, 10_000)
    rows[1234] = 3000
    job, _ = _job(cols, rows, regroup=True)
    job.run()
    with pytest.raises(ValueError, match="row 3000 outside"):
        job.check()


def test_gather_jobs_and_tables_refuse_bad_arguments():
    cols = _job_columns()
    rows = np.arange(10, dtype=np.int64)
    c = cols[1]
    good = SegmentTable(c.starts, c.ptrs, c.widths, 4)
    assert (good.first, good.total, good.segments, good.flat) == (0, 3000, 4, False)
    with pytest.raises(ValueError, match="too small"):
        GatherJob([good], rows, [np.zeros(39, np.uint8)])
    with pytest.raises(ValueError, match="one output per column"):
        GatherJob([good, good], rows, [np.zeros(40, np.uint8)])
    with pytest.raises(ValueError, match="malformed"):
        SegmentTable(c.starts, c.ptrs, np.array([-1, 33, 5, -1], np.int16), 4)
    short = Segments(32, [("flat", 10)])  # a column of fewer rows than the others
    with pytest.raises(ValueError, match="different rows"):
        GatherJob([good, SegmentTable(short.starts, short.ptrs, short.widths, 4)], rows,
                  [np.zeros(40, np.uint8)] * 2)
    with pytest.raises(TypeError):
        GatherJob([(c.starts, c.ptrs, c.widths, 4)], rows, [np.zeros(40, np.uint8)])
    empty, outs = _job(cols, np.zeros(0, np.int64))
    empty.run()
    assert empty.finished()
    empty.check()


def chunk(values_bytes: bytes, size_width: int = 4, pad_to=None) -> bytes:
    """A mini-block chunk without levels: u16 0, the value-buffer size, padding, values."""
    head = struct.pack("<H", 0) + (struct.pack("<I", len(values_bytes)) if size_width == 4
                                   else struct.pack("<H", len(values_bytes)))
    head += b"\x00" * (-len(head) % 8)
    body = head + values_bytes
    return body + b"\x00" * ((pad_to or 0) - len(body) if pad_to else -len(body) % 8)


def bitpacked_values(t, widths, rng):
    out = b""
    vals = []
    for w in widths:
        v = rng.integers(0, 1 << min(w, 63), 1024, dtype=np.uint64).astype(DTYPES[t])
        raw = pack(v, t, w).tobytes()
        out += int(w).to_bytes(t // 8, "little") + raw
        vals.extend(twin_unpack(raw, t, w))
    return out, vals


@pytest.mark.parametrize("size_width", [2, 4])
def test_miniblock_segments_and_gather_read_each_row(size_width):
    rng = np.random.default_rng(7)
    t = 16
    v0, vals0 = bitpacked_values(t, [3, 16], rng)  # 2048 rows
    v1, vals1 = bitpacked_values(t, [0], rng)      # 700 rows in a padded block
    c0, c1 = chunk(v0, size_width), chunk(v1, size_width)
    data = np.frombuffer(c0 + c1, np.uint8)
    offsets = np.array([0, len(c0)], np.int64)
    sizes = np.array([len(c0), len(c1)], np.int64)
    value_starts = np.array([0, 2048, 2748], np.int64)
    rs, offs, ws = miniblock_segments(data, offsets, sizes, value_starts, size_width, True, t)
    assert rs.tolist() == [0, 1024, 2048] and ws.tolist() == [3, 16, 0]
    starts = np.append(rs, 2748)
    ptrs = offs.astype(np.uint64) + np.uint64(data.ctypes.data)
    rows = np.random.default_rng(1).integers(0, 2748, 3000)
    out = np.zeros(rows.size * 2, np.uint8)
    gather(starts, ptrs, ws, 2, rows, out)
    expect = np.array(vals0 + vals1[:700], np.uint16)[rows]
    assert np.array_equal(out.view(np.uint16), expect)
    # flat chunks: one segment each
    flat = np.arange(10, dtype=np.uint16).tobytes()
    cf = chunk(flat, size_width)
    rs, offs, ws = miniblock_segments(np.frombuffer(cf, np.uint8), np.array([0], np.int64),
                                      np.array([len(cf)], np.int64), np.array([0, 10], np.int64),
                                      size_width, False, 16)
    assert rs.tolist() == [0] and ws.tolist() == [-1] and offs.tolist() == [8]


def test_miniblock_segments_refuse_corrupt_chunks():
    rng = np.random.default_rng(2)
    v, _ = bitpacked_values(32, [5], rng)
    good = chunk(v)
    data = np.frombuffer(good, np.uint8)
    args = (np.array([0], np.int64), np.array([len(good)], np.int64), np.array([0, 1024], np.int64))

    def seg(buf, offsets=args[0], sizes=args[1], starts=args[2], bits=32, bitpacked=True):
        return miniblock_segments(np.frombuffer(buf, np.uint8), offsets, sizes, starts, 4,
                                  bitpacked, bits)

    assert seg(good)[2].tolist() == [5]
    with pytest.raises(ValueError, match="outside the page data"):
        seg(good, sizes=np.array([len(good) + 8], np.int64))
    with pytest.raises(ValueError, match="outside the page data"):
        seg(good, offsets=np.array([-8], np.int64))
    lying = bytearray(good)
    lying[2:6] = struct.pack("<I", len(good))  # value buffer bigger than the chunk
    with pytest.raises(ValueError, match="run past the chunk"):
        seg(bytes(lying))
    wide = bytearray(good)
    wide[8:12] = struct.pack("<I", 33)  # a 33-bit width in 32-bit words
    with pytest.raises(ValueError, match="exceeds"):
        seg(bytes(wide))
    short = bytearray(good)
    short[8:12] = struct.pack("<I", 31)  # a block longer than the value buffer
    with pytest.raises(ValueError, match="run past the chunk"):
        seg(bytes(short))
    with pytest.raises(ValueError, match="run past the chunk"):  # more flat rows than bytes
        seg(good, starts=np.array([0, 100_000], np.int64), bitpacked=False)
    with pytest.raises(ValueError, match="negative"):
        seg(good, starts=np.array([5, 0], np.int64))
    with pytest.raises(ValueError, match="bits"):
        seg(good, bits=12)
    assert data.size == len(good)
