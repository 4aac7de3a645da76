"""Random access into 2.1 / 2.2 pages: ``take`` reads only what holds the requested rows.

* mini-block: the chunk table (buffer 0), the dictionary and the repetition index are read and
  parsed once per page (kept on the page description); a row maps to its chunks through the
  value counts (no lists) or the repetition index (rows ending in each chunk, and whether the
  last row spills into the next chunk); only those chunks' bytes are fetched;
* full-zip: fixed-width rows without lists sit at ``row * entry_size``; otherwise the
  repetition index (``rows + 1`` byte offsets of width ``size / (rows + 1)``) gives each row's
  bytes, and only those are fetched and walked;
* constant, blob and pages already decoded in this read are decoded whole.

From a memory-mapped local file nothing is fetched: plain mini-block pages (no levels, one
bit-packed or flat value buffer) have each row's value read where it lies, by one Cython pass
(``take_miniblock_rows``); other mini-block pages decode the wanted chunks in place.

All I/O of one take goes out in two coalesced rounds (page metadata, then row bytes).
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError
from ..take import take_chunks
from . import assemble, blocks, pages
from ._fastlanes import take_miniblock_rows
from ._repdef import row_starts, zip_walk_fixed, zip_walk_variable
from .layout import Layers, parse_layout
from . import compressive
from .pages import MiniBlockPage, PageData
from .values import FixedValues, VariableValues

# A take reading more than this fraction of a page's rows decodes the whole page instead.
WHOLE_PAGE_FRACTION = 0.5
# Chunks of one page closer than this are requested as one range (0: only neighbours, so a
# take asks for exactly the chunks it needs; the byte source still coalesces nearby reads).
CHUNK_GAP = 0


def miniblock(page, buffers, path) -> MiniBlockPage:
    """The mini-block page of ``page`` over its full buffers (whole-page decodes)."""
    mb = page.parsed.mini_block_layout
    return MiniBlockPage.from_buffers(mb, buffers, page.describe(), path)


def meta_ranges(page, roles):
    out = []
    for r in roles:
        if r is not None:
            if r >= len(page.buffer_offsets):
                return None
            out.append((int(page.buffer_offsets[r]), int(page.buffer_sizes[r])))
    return out


def take_rows(leaf, source, rows: np.ndarray) -> list[pa.Array]:
    col = leaf.column
    if source.mapped is not None and rows.size:
        plain = _plain_pages(leaf, source, rows)
        if plain is not None:
            return plain
    page_of = np.searchsorted(col.page_starts, rows, side="right") - 1
    groups = np.split(np.arange(rows.size), np.flatnonzero(np.diff(page_of)) + 1)
    plans = []
    for g in groups:
        page = col.pages[int(page_of[g[0]])]
        local = rows[g] - page.row_start
        plans.append([page, local, _plan_kind(leaf, source, page, local)])
    load_meta(leaf, source, [p for p in plans if p[2] in ("mini", "zipidx")])
    if source.mapped is not None:
        for plan in plans:
            if plan[2] == "mini" and direct_values(plan[0].v21_meta) is not None:
                plan[2] = "direct"  # values read row by row where they lie in the map
    for plan in plans:
        if plan[2] == "mini" and _touches_most_chunks(plan[0].v21_meta.row_ends, plan[1]) \
                and not _gatherable(plan[0].v21_meta, plan[1]):
            plan[2] = "whole"  # every chunk is decoded anyway: the page decoder is faster
    ranges, pending = [], []
    for plan in plans:
        page, local, kind = plan
        if kind in ("whole", "blob", "direct"):
            continue
        need = _row_ranges(leaf, page, local, kind, source.mapped)
        plan.append(need)
        plan.append(len(ranges))
        ranges.extend(need["ranges"])
        pending.append(plan)
    fetched = source.fetch(ranges)
    source.prefetch([p[0] for p in plans if p[2] in ("whole", "blob")])
    out = []
    for plan in plans:
        page, local, kind = plan[:3]
        if kind == "blob":  # descriptions of the page, bytes of the wanted rows only
            where = page.describe()
            pd = pages.decode_blob(page.parsed.blob_layout, source.buffers(page), source.fetch,
                                   source.data_end, where, leaf.path, rows=local)
            out.append(assemble.page_array(pd, leaf.path_types, where, leaf.path))
            continue
        if kind == "direct":
            out.append(_take_direct(leaf, page, local, source.mapped))
            continue
        if kind == "whole":
            arr = source.decoded(page, lambda pg, bufs: leaf.decode_page(source, pg, bufs))
            if local.size == len(arr):
                out.append(arr)
            else:
                out.extend(take_chunks([arr], leaf.dtype, pa.array(local)).chunks)
            continue
        need, first = plan[3], plan[4]
        pieces = fetched[first:first + len(need["ranges"])]
        out.extend(_decode_rows(leaf, page, local, kind, need, pieces))
    return out


def _plain_pages(leaf, source, rows: np.ndarray):
    """The common take from a mapped file (index pages, a look-up's rows): ascending
    ``rows`` lying in plain mini-block pages whose chunk tables are known, each read where it
    lies, with none of the per-page planning below; one array per page touched (None: some
    page needs that planning)."""
    col = leaf.column
    starts = col._starts
    first, last = int(rows[0]), int(rows[-1])
    if last < first or (rows.size > 1 and not (rows[1:] >= rows[:-1]).all()):
        return None
    p = bisect_right(starts, first) - 1
    q = bisect_right(starts, last) - 1
    if p < 0 or q >= len(col.pages):
        return None
    if p == q:
        cuts = [(p, 0, rows.size)]
    else:  # the rows of each page, by a binary search of the page starts among the rows
        at = np.searchsorted(rows, col.page_starts[p:q + 2]).tolist()
        cuts = [(p + i, a, b) for i, (a, b) in enumerate(zip(at[:-1], at[1:])) if b > a]
    out = []
    for k, a, b in cuts:
        page = col.pages[k]
        meta = getattr(page, "v21_meta", None)
        if not isinstance(meta, MiniBlockPage) or direct_values(meta) is None or \
                b - a > WHOLE_PAGE_FRACTION * page.num_rows or source.is_decoded(page):
            return None
        out.append((page, a, b))
    return [_take_direct(leaf, page, rows[a:b] - page.row_start, source.mapped)
            for page, a, b in out]


def _touches_most_chunks(row_ends: np.ndarray, local: np.ndarray) -> bool:
    """True when the rows fall in more than WHOLE_PAGE_FRACTION of the page's chunks."""
    if row_ends.size == 0 or local.size <= WHOLE_PAGE_FRACTION * row_ends.size:
        return False
    chunk = np.searchsorted(row_ends, local, side="right")
    return np.count_nonzero(np.diff(chunk)) + 1 > WHOLE_PAGE_FRACTION * row_ends.size


def _plan_kind(leaf, source, page, local) -> str:
    if source.is_decoded(page) or local.size > WHOLE_PAGE_FRACTION * page.num_rows:
        return "whole"
    layout = parse_layout(page, leaf.version, leaf.path)
    kind = layout.WhichOneof("layout")
    if kind == "mini_block_layout":
        mb = layout.mini_block_layout
        roles = MiniBlockPage.buffer_roles(mb)
        if meta_ranges(page, roles) is None or mb.repetition_index_depth not in (0, 1) or (
                mb.HasField("rep_compression") and not mb.repetition_index_depth):
            return "whole"
        return "mini"
    if kind == "blob_layout":
        return "blob"
    if kind == "full_zip_layout":
        fz = layout.full_zip_layout
        if len(page.buffer_offsets) >= 2:
            return "zipidx"
        if fz.WhichOneof("details") == "bits_per_value" and not fz.bits_rep:
            return "zipfixed"
    return "whole"


def load_meta(leaf, source, plans) -> None:
    """Fetch and parse the page-level metadata of the pages a take reads in part."""
    todo = [p for p in plans if getattr(p[0], "v21_meta", None) is None]
    ranges, spans_ = [], []
    for page, _local, kind in todo:
        layout = page.parsed
        if kind == "mini":
            mb = layout.mini_block_layout
            m, _d, d, r = MiniBlockPage.buffer_roles(mb)
            rs = meta_ranges(page, (m, d, r))
        else:
            rs = [(int(page.buffer_offsets[1]), int(page.buffer_sizes[1]))]
        spans_.append((len(ranges), len(rs)))
        ranges.extend(rs)
    fetched = source.fetch(ranges)
    for (page, _local, kind), (a, n) in zip(todo, spans_):
        bufs = fetched[a:a + n]
        where = page.describe()
        if kind == "mini":
            mb = page.parsed.mini_block_layout
            _m, _dt, d, r = MiniBlockPage.buffer_roles(mb)
            it = iter(bufs[1:])
            dict_buf = next(it) if d is not None else None
            rep_buf = next(it) if r is not None else None
            meta = MiniBlockPage(mb, bufs[0], int(page.buffer_sizes[1]), dict_buf, rep_buf, where,
                                 leaf.path)
            meta.row_ends = _chunk_row_ends(meta, page, leaf.path)
        else:
            raw = np.frombuffer(bufs[0], dtype=np.uint8)
            rows = page.num_rows
            width, rem = divmod(raw.size, rows + 1)
            if rem or width not in (1, 2, 4, 8):
                raise CorruptFileError(f"{where}: repetition index of {raw.size} bytes for "
                                       f"{rows} rows", leaf.path)
            idx = raw.view({1: np.uint8, 2: "<u2", 4: "<u4", 8: "<u8"}[width]).astype(np.int64)
            if np.any(np.diff(idx) < 0) or int(idx[-1]) > int(page.buffer_sizes[0]) or idx[0] < 0:
                raise CorruptFileError(f"{where}: bad full-zip repetition index", leaf.path)
            meta = idx
        page.v21_meta = meta


def direct_values(meta: MiniBlockPage, dictionary: bool = False):
    """``(bitpacked, bits)`` when each row of the mini-block page is one value found without
    decoding its chunk (no levels, dictionary or repetition index; one value buffer of inline
    bit-packed words or flat whole-byte values, uncompressed), else None. Once per page.
    With ``dictionary``: the same of a dictionary page's indices (None for other pages)."""
    key = "direct_indices" if dictionary else "direct"
    got = getattr(meta, key, False)
    if got is not False:
        return got
    mb = meta.mb
    enc = mb.value_compression
    kind = enc.WhichOneof("compression")
    got = None
    if not (mb.HasField("rep_compression") or mb.HasField("def_compression") or
            mb.HasField("dictionary") != dictionary or mb.repetition_index_depth or
            mb.num_buffers != 1):
        if kind == "inline_bitpacking" and not enc.inline_bitpacking.HasField("values") and \
                enc.inline_bitpacking.uncompressed_bits_per_value in (8, 16, 32, 64):
            got = (True, int(enc.inline_bitpacking.uncompressed_bits_per_value))
        elif kind == "flat" and not enc.flat.HasField("data") and enc.flat.bits_per_value and \
                enc.flat.bits_per_value % 8 == 0:
            got = (False, int(enc.flat.bits_per_value))
    setattr(meta, key, got)
    return got


def _take_direct(leaf, page, local, mapped) -> pa.Array:
    """The ``local`` rows of a plain mini-block page, each read where it lies in the mapped
    file (one Cython pass; no chunk is decoded)."""
    meta = page.v21_meta
    bitpacked, bits = meta.direct
    data = mapped_buffer(mapped, page, 1, leaf.path)
    chunks = meta.chunks
    where = page.describe()
    try:
        raw = take_miniblock_rows(data, chunks.offsets[:-1], chunks.sizes, chunks.value_starts,
                                  np.ascontiguousarray(local, dtype=np.int64),
                                  4 if chunks.wide else 2, bitpacked, bits)
    except ValueError as e:
        raise CorruptFileError(f"{where}: {e}", leaf.path) from None
    pd = PageData(meta.layers, None, None, FixedValues(bits, local.size, raw), local.size)
    return assemble.page_array(pd, leaf.path_types, where, leaf.path)


def _gatherable(meta: MiniBlockPage, local: np.ndarray) -> bool:
    """Whether the ``local`` rows (ascending) of this page can be read straight out of their
    chunks' bytes: a plain page (:func:`direct_values`)."""
    return direct_values(meta) is not None and (local.size < 2 or bool(
        (local[1:] >= local[:-1]).all()))


def _gather_fetched(leaf, page, local, need, data) -> pa.Array:
    """:func:`_take_direct` over the fetched bytes of the wanted chunks (an object store's take):
    each row's value is read where it lies in its chunk, no chunk is decoded. ``data`` holds
    the wanted chunks only, chunk ``need["chunks"][i]`` at ``need["starts"][i]``; the rows all
    lie in those chunks (they chose them), and each is still checked against its chunk."""
    meta = page.v21_meta
    bitpacked, bits = meta.direct
    chunks, ids = meta.chunks, need["chunks"]
    rows_from = np.append(chunks.value_starts[ids], chunks.value_starts[ids[-1] + 1])
    where = page.describe()
    try:
        raw = take_miniblock_rows(np.ascontiguousarray(data, dtype=np.uint8),
                                  np.ascontiguousarray(need["starts"], dtype=np.int64),
                                  np.ascontiguousarray(chunks.sizes[ids], dtype=np.int64),
                                  np.ascontiguousarray(rows_from, dtype=np.int64),
                                  np.ascontiguousarray(local, dtype=np.int64),
                                  4 if chunks.wide else 2, bitpacked, bits)
    except ValueError as e:
        raise CorruptFileError(f"{where}: {e}", leaf.path) from None
    pd = PageData(meta.layers, None, None, FixedValues(bits, local.size, raw), local.size)
    return assemble.page_array(pd, leaf.path_types, where, leaf.path)


def _chunk_row_ends(meta: MiniBlockPage, page, path) -> np.ndarray:
    """Rows ended by the end of each chunk (cumulative)."""
    if meta.rep_index is None:
        ends = np.cumsum(meta.chunks.counts)
    else:
        ends = np.cumsum(meta.rep_index[:, 0].astype(np.int64))
    if ends.size and int(ends[-1]) != page.num_rows:
        raise CorruptFileError(f"{page.describe()}: chunks hold {int(ends[-1])} rows, the page "
                               f"{page.num_rows}", path)
    return ends


def _row_ranges(leaf, page, local, kind, mapped=None) -> dict:
    """The byte ranges of buffer 0/1 a take of ``local`` rows of ``page`` needs. With a
    memory-mapped file (``mapped``) mini-block chunks are decoded in place: no ranges."""
    base = int(page.buffer_offsets[0])
    if kind == "mini" and mapped is not None:
        chunk_ids, clusters = _chunks_of(page.v21_meta, local)
        return {"ranges": [], "chunks": chunk_ids, "clusters": clusters, "mapped": mapped}
    if kind == "mini":
        meta = page.v21_meta
        chunk_ids, clusters = _chunks_of(meta, local)
        offs, sizes = meta.chunks.offsets[chunk_ids], meta.chunks.sizes[chunk_ids]
        ends_ = offs + sizes
        # neighbouring chunks are requested as one span; when the wanted chunks are dense
        # (the byte source would coalesce their reads anyway) the whole stretch is one span
        dense = int(sizes.sum()) * 3 >= int(ends_[-1] - offs[0])
        gap = int(ends_[-1] - offs[0]) if dense else CHUNK_GAP
        breaks = np.flatnonzero(offs[1:] - ends_[:-1] > gap) + 1
        first = np.concatenate([[0], breaks]).astype(np.int64)
        last = np.concatenate([breaks - 1, [chunk_ids.size - 1]]).astype(np.int64)
        span_start, span_end = offs[first], ends_[last]
        span_len = span_end - span_start
        span_of = np.repeat(np.arange(first.size), last - first + 1)
        base_in_buf = np.concatenate([[0], np.cumsum(span_len)[:-1]]).astype(np.int64)
        starts_in_buf = base_in_buf[span_of] + (offs - span_start[span_of])
        dbase = int(page.buffer_offsets[1])
        ranges = list(zip((span_start + dbase).tolist(), span_len.tolist()))
        return {"ranges": ranges, "chunks": chunk_ids, "clusters": clusters,
                "starts": starts_in_buf}
    if kind == "zipfixed":
        fz = page.parsed.full_zip_layout
        total = fz.bits_def
        ctrl = 0 if total == 0 else 1 if total <= 8 else 2 if total <= 16 else 4
        es = ctrl + int(fz.bits_per_value) // 8
        if es * page.num_rows > int(page.buffer_sizes[0]):
            raise CorruptFileError(f"{page.describe()}: full-zip page shorter than its rows",
                                   leaf.path)
        runs = _runs(local)
        return {"ranges": [(base + a * es, (b - a) * es) for a, b in runs]}
    idx = page.v21_meta
    runs = _runs(local)
    return {"ranges": [(base + int(idx[a]), int(idx[b] - idx[a])) for a, b in runs]}


def _chunks_of(meta, local):
    """The chunks holding the sorted rows ``local`` of a mini-block page, ascending, and their
    clusters ``[[first, last], ...]`` (runs of rows whose chunk ranges touch or overlap)."""
    ends = meta.row_ends
    e = np.searchsorted(ends, local, side="right")
    prev = local - 1
    has_prev = local > 0
    c = np.searchsorted(ends, np.maximum(prev, 0), side="right")
    left = meta.rep_index[:, 1] if meta.rep_index is not None else np.zeros(ends.size, np.uint64)
    c_safe = np.minimum(c, ends.size - 1)
    spill = (ends[c_safe] == local) & (left[c_safe] == 0)
    s = np.where(has_prev, c + spill.astype(np.int64), 0)
    s = np.minimum(s, e)
    # clusters of chunks [S, E]: runs of rows whose chunk ranges touch or overlap
    hi = np.maximum.accumulate(e)
    new_cluster = np.ones(s.size, dtype=bool)
    new_cluster[1:] = s[1:] > hi[:-1] + 1
    heads = np.flatnonzero(new_cluster)
    tails = np.append(heads[1:], s.size) - 1
    clusters = np.stack([s[heads], hi[tails]], axis=1)
    lengths = clusters[:, 1] - clusters[:, 0] + 1
    cum = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    chunk_ids = (np.repeat(clusters[:, 0] - cum, lengths) +
                 np.arange(int(lengths.sum()), dtype=np.int64))
    return chunk_ids, clusters


def _runs(local: np.ndarray):
    breaks = np.flatnonzero(np.diff(local) != 1) + 1
    starts = local[np.concatenate([[0], breaks])]
    stops = local[np.concatenate([breaks - 1, [local.size - 1]])] + 1
    return list(zip(starts.tolist(), stops.tolist()))


def _decode_rows(leaf, page, local, kind, need, pieces) -> list[pa.Array]:
    where = page.describe()
    if kind == "mini":
        meta = page.v21_meta
        if "mapped" in need:  # the chunks are decoded where they lie in the mapped file
            data = mapped_buffer(need["mapped"], page, 1, leaf.path)
            pd = meta.decode(need["chunks"], data, meta.chunks.offsets[need["chunks"]])
        else:
            data = np.concatenate([np.frombuffer(b, dtype=np.uint8) for b in pieces]) \
                if len(pieces) != 1 else np.frombuffer(pieces[0], dtype=np.uint8)
            if _gatherable(meta, local):
                return [_gather_fetched(leaf, page, local, need, data)]
            pd = meta.decode(need["chunks"], data, need["starts"])
        begin, end = _row_entries(meta, pd, need, local, where, leaf)
        arr = assemble.page_array(_select(pd, begin, end), leaf.path_types, where, leaf.path)
        if len(arr) != local.size:
            raise CorruptFileError(f"{where}: {len(arr)} rows decoded for {local.size} "
                                   f"requested", leaf.path)
        return [arr]
    fz = page.parsed.full_zip_layout
    buf = np.concatenate([np.frombuffer(p, dtype=np.uint8) for p in pieces]) if pieces else \
        np.zeros(0, np.uint8)
    layers = Layers.of(fz.layers, where, leaf.path)
    total = fz.bits_rep + fz.bits_def
    ctrl = 0 if total == 0 else 1 if total <= 8 else 2 if total <= 16 else 4
    n = -1 if ctrl else local.size
    try:
        if fz.WhichOneof("details") == "bits_per_value":
            bits = int(fz.bits_per_value)
            rep, defs, vals, vis = zip_walk_fixed(buf, n, ctrl, fz.bits_def,
                                                  layers.max_visible_def, bits // 8)
            raw = FixedValues(bits, vis, vals)
        else:
            rep, defs, offs, vals, vis = zip_walk_variable(buf, n, ctrl, fz.bits_def,
                                                           layers.max_visible_def,
                                                           int(fz.bits_per_offset))
            raw = VariableValues(vis, offs, vals, int(fz.bits_per_offset))
    except ValueError as e:
        raise CorruptFileError(f"{where}: {e}", leaf.path) from None
    values = compressive.FullZipValues(fz.value_compression, path=leaf.path).decode(raw)
    pd = PageData(layers, rep if fz.bits_rep else None, defs if fz.bits_def else None, values, vis)
    arr = assemble.page_array(pd, leaf.path_types, where, leaf.path)
    if len(arr) != local.size:
        raise CorruptFileError(f"{where}: {len(arr)} rows decoded for {local.size} requested",
                               leaf.path)
    return [arr]


def mapped_buffer(mapped: pa.Buffer, page, index: int, path) -> np.ndarray:
    """Page buffer ``index`` as a zero-copy view of the memory-mapped file (bounds checked)."""
    start, size = int(page.buffer_offsets[index]), int(page.buffer_sizes[index])
    if start < 0 or size < 0 or start + size > mapped.size:
        raise CorruptFileError(f"{page.describe()}: buffer {index} ({size} bytes at {start}) "
                               f"runs past the end of the {mapped.size}-byte file", path)
    return np.frombuffer(mapped, dtype=np.uint8, count=size, offset=start)


def _row_entries(meta: MiniBlockPage, pd: PageData, need, local, where, leaf):
    """[begin, end) level entries of each of ``local`` rows in the decoded chunks ``need``."""
    ids = np.asarray(need["chunks"], dtype=np.int64)
    entries = np.asarray(pd.chunk_entries, dtype=np.int64)
    chunk_start = np.zeros(ids.size + 1, dtype=np.int64)
    np.cumsum(entries, out=chunk_start[1:])
    if meta.rep_index is None:  # one entry per row
        c = np.searchsorted(meta.chunks.value_starts, local, side="right") - 1
        k = np.searchsorted(ids, c)
        if np.any(k >= ids.size) or np.any(ids[np.minimum(k, ids.size - 1)] != c):
            raise CorruptFileError(f"{where}: a requested row's chunk was not read", leaf.path)
        begin = chunk_start[k] + (local - meta.chunks.value_starts[c])
        return begin, begin + 1
    pos_of = {int(c): k for k, c in enumerate(ids.tolist())}
    ends = meta.row_ends
    starts_all = row_starts(np.ascontiguousarray(pd.rep), pd.layers.num_lists)
    row_ids, row_begin, row_end = [], [], []
    for a, b in need["clusters"].tolist():
        e0, e1 = int(chunk_start[pos_of[a]]), int(chunk_start[pos_of[b] + 1])
        before = int(ends[a - 1]) if a else 0
        spill_in = a > 0 and int(meta.rep_index[a - 1, 1]) != 0
        first = before + 1 if spill_in else before
        nrows = int(ends[b]) - first
        lo, hi = np.searchsorted(starts_all, [e0, e1])
        cs = starts_all[lo:hi]
        if cs.size < nrows or (not spill_in and (cs.size == 0 or cs[0] != e0)):
            raise CorruptFileError(f"{where}: chunks {a}..{b} do not hold the rows the "
                                   f"repetition index says", leaf.path)
        stop = np.append(cs[1:], e1)[:nrows]
        row_ids.append(np.arange(first, first + nrows, dtype=np.int64))
        row_begin.append(cs[:nrows])
        row_end.append(stop)
    row_ids = np.concatenate(row_ids)
    at = np.searchsorted(row_ids, local)
    if np.any(at >= row_ids.size) or np.any(row_ids[np.minimum(at, row_ids.size - 1)] != local):
        raise CorruptFileError(f"{where}: requested rows missing from their chunks", leaf.path)
    return np.concatenate(row_begin)[at], np.concatenate(row_end)[at]


def _select(pd: PageData, begin: np.ndarray, end: np.ndarray) -> PageData:
    """The level entries ``[begin[i], end[i])`` of ``pd`` (and their values), in order."""
    lengths = end - begin
    total = int(lengths.sum())
    cum = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=cum[1:])
    idx = np.repeat(begin - cum[:-1], lengths) + np.arange(total, dtype=np.int64)
    maxvis = pd.layers.max_visible_def
    if pd.defs is not None:
        visible = pd.defs <= maxvis
        vis_pos = np.cumsum(visible) - 1
        vidx = vis_pos[idx[visible[idx]]]
    else:
        vidx = idx
    values = pd.values
    if values is not None and not hasattr(values, "buffers"):
        values = blocks.take(values, vidx)
    return PageData(pd.layers, None if pd.rep is None else pd.rep[idx],
                    None if pd.defs is None else pd.defs[idx], values, int(vidx.size))
