"""Full-zip pages (values of 256 bytes and more): per level entry a control word
``(rep << bits_def) | def`` of 0/1/2/4 bytes, then -- for visible entries -- the fixed value
(FSL: item-validity bytes first) or, for valid variable values, a u32 length and the bytes.
Buffer 1 is the repetition index: the byte offset of every row start plus the end, byte-packed
to the smallest of 1/2/4/8 bytes (present for variable values or with lists)."""
from __future__ import annotations

import numpy as np

from ..._proto import encodings_v2_1_pb2 as pb
from ...errors import UnsupportedFeatureError
from .encoded_page import EncodedPage, PageInput
from .value_block import VariableBlock


def can_encode(block) -> bool:
    """Full-zip takes plain variable and byte-aligned fixed values (not dictionaries or
    bitmaps: those stay mini-block, as in pylance where the dictionary decision comes first)."""
    from .value_block import FixedBlock

    return isinstance(block, VariableBlock) or isinstance(block, FixedBlock) and \
        block.bits % 8 == 0


def _ctrl_bytes(bits: int) -> int:
    return 0 if bits == 0 else 1 if bits <= 8 else 2 if bits <= 16 else 4


def encode(inp: PageInput, version, options) -> EncodedPage:
    block = inp.block
    n_entries = len(inp.rep) if inp.rep is not None else (
        len(inp.defs) if inp.defs is not None else block.n)
    rep = inp.rep if inp.rep is not None else np.zeros(n_entries, np.uint16)
    defs = inp.defs if inp.defs is not None else np.zeros(n_entries, np.uint16)
    bits_rep = int(rep.max()).bit_length() if n_entries else 0
    bits_def = int(defs.max()).bit_length() if n_entries else 0
    cw = _ctrl_bytes(bits_rep + bits_def)
    visible = inp.visible if inp.visible is not None else np.ones(n_entries, dtype=bool)
    vis_idx = np.flatnonzero(visible)
    fz = pb.FullZipLayout(bits_rep=bits_rep, bits_def=bits_def, num_items=n_entries,
                          num_visible_items=len(vis_idx))
    fz.layers.extend(inp.layers)
    table = None
    general = False
    if isinstance(block, VariableBlock):
        block, general = _maybe_per_value_general(block, options)
        if not general:
            block, table = _maybe_fsst(block, options)
        lens = np.diff(block.offsets)
        payload_len = np.zeros(n_entries, dtype=np.int64)
        valid_vis = defs[vis_idx] == 0
        lw = 8 if block.large else 4
        payload_len[vis_idx[valid_vis]] = lw + lens[valid_vis]
        fz.bits_per_offset = 8 * lw
        if table is not None:
            fz.value_compression.fsst.symbol_table = table
            fz.value_compression.fsst.values.variable.offsets.flat.bits_per_value = 8 * lw
        elif general:
            g = fz.value_compression.general
            g.compression.scheme = pb.COMPRESSION_ALGORITHM_ZSTD
            g.compression.level = 0
            g.values.variable.offsets.flat.bits_per_value = 8 * lw
        else:
            fz.value_compression.variable.offsets.flat.bits_per_value = 8 * lw
    else:
        if block.bits % 8:
            raise UnsupportedFeatureError(f"full-zip of {block.bits}-bit values")
        cum = int(np.prod(block.fsl_dims or (1,)))
        cums = [int(c) for c in np.cumprod(block.fsl_dims)]
        vbytes = [(c + 7) // 8 for v, c in zip(block.fsl_validity, cums) if v is not None]
        row = sum(vbytes) + block.bits * cum // 8
        payload_len = np.where(visible, row, 0).astype(np.int64)
        fz.bits_per_value = row * 8
        enc = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=block.bits))
        for d, v in zip(reversed(block.fsl_dims), reversed(block.fsl_validity)):
            enc = pb.CompressiveEncoding(fixed_size_list=pb.FixedSizeList(
                items_per_value=d, values=enc, has_validity=v is not None))
        fz.value_compression.CopyFrom(enc)
    sizes = payload_len + cw
    ends = np.cumsum(sizes)
    starts = ends - sizes
    total = int(ends[-1]) if n_entries else 0
    out = np.zeros(total, dtype=np.uint8)
    if cw:
        word = (rep.astype(np.uint32) << bits_def) | defs.astype(np.uint32)
        for k in range(cw):
            out[starts + k] = (word >> (8 * k)) & 0xFF
    pos = starts + cw
    if isinstance(block, VariableBlock):
        sel = vis_idx[valid_vis]
        vl = lens[valid_vis].astype(f"<u{lw}")
        lb = vl.view(np.uint8).reshape(-1, lw)
        out[pos[sel][:, None] + np.arange(lw)] = lb
        src_starts = block.offsets[:-1][valid_vis]
        dst_starts = pos[sel] + lw
        ln = lens[valid_vis]
        if ln.sum():
            scatter_values(out, block.data, src_starts, dst_starts, ln)
    else:
        p = pos[vis_idx]
        off = 0
        cum = int(np.prod(block.fsl_dims or (1,)))
        for v, c in zip(block.fsl_validity, np.cumprod(block.fsl_dims)):
            if v is None:
                continue
            c = int(c)
            nb = (c + 7) // 8
            bits = np.packbits(v.reshape(-1, c), axis=1, bitorder="little")
            out[(p + off)[:, None] + np.arange(nb)] = bits
            off += nb
        w = block.bits * cum // 8
        out[(p + off)[:, None] + np.arange(w)] = block.data.reshape(-1, w)
    buffers = [out]
    has_rep_index = isinstance(block, VariableBlock) or inp.rep is not None
    if has_rep_index:
        if inp.rep is not None:
            row_starts = starts[rep == inp.max_rep]
        else:
            row_starts = starts
        idx = np.concatenate([row_starts, [total]]).astype(np.uint64)
        width = 1 if total < 256 else 2 if total < 65536 else 4 if total < 1 << 32 else 8
        buffers.append(idx.astype(f"<u{width}").tobytes())
    return EncodedPage(pb.PageLayout(full_zip_layout=fz), buffers, inp.num_rows)


PER_VALUE_GENERAL_MIN_LEN = 32 * 1024


def _maybe_per_value_general(block: VariableBlock, options):
    """pylance's per-value compression: every value its own zstd frame (Lance framing, level
    0 recorded) when the field asks for zstd or lz4 (pylance writes zstd for both) or a value
    exceeds 32 KiB, on pages of 32 KiB+. Returns (block, whether it applied)."""
    from .. import compression
    from .fsst_encoder import MIN_PAGE_BYTES

    scheme = options.compression if options is not None else None
    size = int(block.offsets[-1] - block.offsets[0])
    asked = scheme in ("zstd", "lz4")
    if size < MIN_PAGE_BYTES or not (asked or scheme is None and
                                     block.max_len > PER_VALUE_GENERAL_MIN_LEN):
        return block, False
    data = np.ascontiguousarray(block.data)
    offs = block.offsets
    # one library call per value (values here are large: >= 256 bytes, usually far more)
    frames = [compression.compress("zstd", data[int(a):int(b)])
              for a, b in zip(offs[:-1], offs[1:])]
    lens = np.fromiter((len(f) for f in frames), dtype=np.int64, count=len(frames))
    new_offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    out = np.frombuffer(b"".join(frames), dtype=np.uint8)
    return VariableBlock(new_offs, out, block.n, block.large), True


def _maybe_fsst(block: VariableBlock, options):
    """Long strings FSST-compressed value by value, as pylance does by default (not under
    ``lance-encoding:compression=zstd|lz4|none``)."""
    from .fsst_encoder import compress_block, worth_trying

    scheme = options.compression if options is not None else None
    if scheme not in (None, "fsst") or not worth_trying(block, scheme):
        return block, None
    if scheme is None and block.max_len > PER_VALUE_GENERAL_MIN_LEN:
        return block, None   # pylance compresses such values one by one with zstd instead
    got = compress_block(block)
    return got if got is not None else (block, None)


SCATTER_CHUNK_BYTES = 1 << 23


def scatter_values(out, data, src_starts, dst_starts, lens) -> None:
    """``out[d:d + l] = data[s:s + l]`` for every value, a bounded number of bytes at a time:
    the byte-index arrays of a vectorised copy take 8 bytes per copied byte, so a page of
    large strings copied at once needed ~25x its size in memory."""
    ends = np.cumsum(lens)
    i, n = 0, len(lens)
    while i < n:
        base = int(ends[i - 1]) if i else 0
        j = max(i + 1, int(np.searchsorted(ends, base + SCATTER_CHUNK_BYTES, side="right")))
        s, d, ln = src_starts[i:j], dst_starts[i:j], lens[i:j]
        if j - i < 64 or int(ln.sum()) >= 1024 * (j - i):  # few or large values: slice copies
            for a, b, c in zip(s.tolist(), d.tolist(), ln.tolist()):
                out[b:b + c] = data[a:a + c]
        else:
            src = byte_ranges(s, ln)
            out[src + np.repeat(d - s, ln)] = data[src]
        i = j


def byte_ranges(starts, lens) -> np.ndarray:
    """Concatenated ``arange(s, s + l)`` for every (s, l)."""
    total = int(lens.sum())
    out = np.ones(total, dtype=np.int64)
    ends = np.cumsum(lens)
    first = ends - lens
    nz = lens > 0
    out[first[nz]] = starts[nz]
    out[first[nz][1:]] -= (starts[nz][:-1] + lens[nz][:-1] - 1)
    return np.cumsum(out)
