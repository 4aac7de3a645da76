"""Mini-block pages: values cut into chunks of 2^k values (the last any count), each chunk
``u16 levels | u16 rep bytes | u16 def bytes | value sizes (u16 in 2.1, u32 in 2.2) | 0xFE pad``
then the rep, def and value buffers, each padded to 8 bytes. Buffer 0 of the page holds one
metadata word per chunk (``(bytes/8 - 1) << 4 | log2(count)``; u16 in 2.1, u32 in 2.2), buffer
1 the chunks, then the repetition index (rows ending per chunk, leftover levels) with lists.

Levels are bit-packed as pylance packs them (:mod:`.level_encoder`). Value encodings come from :mod:`.value_encoders`.
"""
from __future__ import annotations

import numpy as np

from ..._proto import encodings_v2_1_pb2 as pb
from .encoder_choice import choose_value_encoder
from .level_encoder import LevelPacker
from .encoded_page import EncodedPage, PageInput

TARGET_CHUNK_BYTES = 4096
MAX_CHUNK_VALUES = 4096
PAD_HEADER = 0xFE


def _pow2_floor(x: int) -> int:
    return 1 << (max(int(x), 1).bit_length() - 1)


def encode(inp: PageInput, version, options) -> EncodedPage | None:
    large = tuple(version) >= (2, 2)
    enc = choose_value_encoder(inp.block, version, options)
    n = inp.block.n
    has_levels = inp.rep is not None or inp.defs is not None
    entries = len(inp.rep) if inp.rep is not None else (
        len(inp.defs) if inp.defs is not None else n)
    if inp.visible is not None:
        vis_pos = np.flatnonzero(inp.visible)
    else:
        vis_pos = None
    max_chunk_total = (1 << 32) * 8 if large else 32768
    max_value_buf = (1 << 32) - 1 if large else 65535
    rep_pack = LevelPacker(inp.rep) if inp.rep is not None else None
    def_pack = LevelPacker(inp.defs) if inp.defs is not None else None
    level_width = sum(p.width for p in (rep_pack, def_pack) if p is not None)

    whole = getattr(enc, "page_chunks", None)
    whole = whole(large) if whole is not None and not has_levels and n else None
    if whole is not None:  # the encoder writes the finished chunks itself (bit-packing)
        chunk_data, meta = whole
        return _page(inp, enc, n, large, meta, chunk_data, None, entries)
    slices = getattr(enc, "page_slices", None)
    slices = slices() if slices is not None and not has_levels and n else None
    if slices is not None:
        from ._chunk_writer import assemble_single_buffer

        data, starts, counts = slices
        chunk_data, meta = assemble_single_buffer(np.ascontiguousarray(data, dtype=np.uint8),
                                                  starts, counts, large)
        return _page(inp, enc, n, large, meta, chunk_data, None, entries)

    def level_start(s):
        if s == 0:
            return 0
        if s >= n:
            return entries
        return int(vis_pos[s]) if vis_pos is not None else s

    chunks = []   # (value start, value end, level start, level end)
    s = 0
    while s < n:
        c = enc.chunk_count(s)
        last = s + c >= n
        if last:
            c = n - s
        while True:
            e = s + c
            ls, le = level_start(s), (entries if e >= n else level_start(e))
            nlev = le - ls if has_levels else 0
            vbytes = enc.chunk_value_bytes(s, e)
            level_bytes = -(-nlev // 1024) * 128 * level_width  # bit-packed, padded
            total = 16 + 4 * len(vbytes) + sum(v + 8 for v in vbytes) + level_bytes + 16
            if nlev <= 32767 and total <= max_chunk_total and max(vbytes, default=0) <= max_value_buf:
                break
            if c == 1 or getattr(enc, "fixed_count", None):
                return None
            c = _pow2_floor(c - 1)  # a smaller power of two, never the last chunk
        chunks.append((s, s + c, ls, le))
        s += c
    if n == 0 and entries:
        chunks.append((0, 0, 0, entries))

    meta = np.empty(len(chunks), dtype=np.uint32)
    parts = []
    for k, (s, e, ls, le) in enumerate(chunks):
        vbufs = [b if isinstance(b, bytes) else np.ascontiguousarray(b).view(np.uint8).tobytes()
                 for b in enc.chunk_buffers(s, e)]
        header = bytearray()
        header += (le - ls if has_levels else 0).to_bytes(2, "little")
        rep_b = rep_pack.chunk(ls, le) if inp.rep is not None else None
        def_b = def_pack.chunk(ls, le) if inp.defs is not None else None
        if rep_b is not None:
            header += len(rep_b).to_bytes(2, "little")
        if def_b is not None:
            header += len(def_b).to_bytes(2, "little")
        for v in vbufs:
            header += len(v).to_bytes(4 if large else 2, "little")
        chunk = [bytes(header), _pad8(len(header))]
        for b in (rep_b, def_b, *vbufs):
            if b is None:
                continue
            chunk.append(b if isinstance(b, bytes) else b.tobytes())
            chunk.append(_pad8(len(b)))
        data = b"".join(chunk)
        last = k == len(chunks) - 1
        log = 0 if last else (e - s).bit_length() - 1
        meta[k] = ((len(data) // 8 - 1) << 4) | log
        parts.append(data)

    return _page(inp, enc, n, large, meta, b"".join(parts), chunks, entries)


def _page(inp, enc, n, large, meta, chunk_data, chunks, entries) -> EncodedPage:
    mb = pb.MiniBlockLayout()
    mb.layers.extend(inp.layers)
    mb.value_compression.CopyFrom(enc.description())
    if inp.rep is not None:
        LevelPacker(inp.rep).describe(mb.rep_compression)
    if inp.defs is not None:
        LevelPacker(inp.defs).describe(mb.def_compression)
    mb.num_buffers = enc.num_buffers
    mb.num_items = n
    if large:
        mb.has_large_chunk = True
    buffers = [meta.astype("<u4" if large else "<u2").tobytes(), chunk_data]
    if enc.dictionary is not None:
        items_enc, items_buf, num_items = enc.dictionary
        mb.dictionary.CopyFrom(items_enc)
        mb.num_dictionary_items = num_items
        buffers.append(items_buf)
    if inp.rep is not None:
        mb.repetition_index_depth = 1
        buffers.append(_repetition_index(inp.rep, inp.max_rep, chunks, entries))
    return EncodedPage(pb.PageLayout(mini_block_layout=mb), buffers, inp.num_rows)


def _pad8(size: int) -> bytes:
    return bytes([PAD_HEADER]) * ((-size) % 8)


def _repetition_index(rep, max_rep, chunks, entries) -> bytes:
    starts = np.flatnonzero(rep == max_rep)
    out = np.zeros((len(chunks), 2), dtype=np.uint64)
    for k, (_, _, ls, le) in enumerate(chunks):
        lo = np.searchsorted(starts, ls + 1)
        hi = np.searchsorted(starts, le)
        ended = int(hi - lo)
        last = k == len(chunks) - 1
        next_starts_row = last or le >= entries or rep[le] == max_rep
        if next_starts_row:
            ended += 1
            leftover = 0
        else:
            in_chunk = starts[np.searchsorted(starts, ls):hi]
            last_start = int(in_chunk[-1]) if len(in_chunk) else ls
            leftover = le - last_start
        out[k] = (ended, leftover)
    return out.astype("<u8").tobytes()
