"""Test-only: write small Lance 2.1/2.2 files with pylance and cut their pages into the pieces
the compressive decoders take (mini-block chunk value buffers, level buffers, dictionary
blocks, full-zip values), following lance_v21_encodings.md §3.2, §3.3 and §5. Deliberately
independent of the structural reader so the compressive layer is checked on its own."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancefmt._proto import encodings_v2_1_pb2 as pb
from lancefmt.file.metadata import read_metadata


def write(tmp_path, name, table: pa.Table, version: str) -> str:
    import lance.file

    path = os.path.join(str(tmp_path), f"{name}_{version}.lance")
    with lance.file.LanceFileWriter(path, table.schema, version=version) as w:
        w.write_batch(table)
    return path


def pylance_encodings(path) -> str:
    """pylance's own description of every page encoding of the file (for assertions)."""
    import lance.file

    meta = lance.file.LanceFileReader(path).metadata()
    return "\n".join(str(p.encoding) for c in meta.columns for p in c.pages)


def field(name, typ, nullable=True, **meta):
    md = {f"lance-encoding:{k.replace('_', '-')}": str(v) for k, v in meta.items()}
    return pa.field(name, typ, nullable=nullable, metadata=md or None)


@dataclass
class Page:
    layout: pb.PageLayout
    buffers: list            # np.uint8 arrays
    num_rows: int


def pages(path, column: int = 0) -> list[Page]:
    data = open(path, "rb").read()
    meta = read_metadata(lambda s, n: data[s:s + n], len(data), path)
    out = []
    for p in meta.columns[column].pages:
        layout = pb.PageLayout()
        layout.ParseFromString(p.encoding)
        bufs = [np.frombuffer(data, np.uint8, s, o) for o, s in zip(p.buffer_offsets,
                                                                    p.buffer_sizes)]
        out.append(Page(layout, bufs, p.num_rows))
    return out


@dataclass
class Chunk:
    num_values: int
    num_levels: int
    rep: np.ndarray | None
    def_: np.ndarray | None
    values: list


def _pad8(n):
    return (n + 7) // 8 * 8


def chunks(page: Page) -> list[Chunk]:
    mb = page.layout.mini_block_layout
    large = mb.has_large_chunk
    meta = page.buffers[0]
    words = meta.view("<u4" if large else "<u2") if meta.size else np.zeros(0, np.uint32)
    data = page.buffers[1]
    out = []
    pos = 0
    seen = 0
    for i, w in enumerate(words):
        w = int(w)
        size = ((w >> 4) + 1) * 8
        nv = (1 << (w & 15)) if i + 1 < len(words) else mb.num_items - seen
        seen += nv
        c = data[pos:pos + size]
        p = 0
        num_levels = int(c[p:p + 2].view("<u2")[0]); p += 2
        rep_n = def_n = 0
        if mb.HasField("rep_compression"):
            rep_n = int(c[p:p + 2].view("<u2")[0]); p += 2
        if mb.HasField("def_compression"):
            def_n = int(c[p:p + 2].view("<u2")[0]); p += 2
        sizes = []
        for _ in range(mb.num_buffers):
            if large:
                sizes.append(int(np.frombuffer(c[p:p + 4].tobytes(), "<u4")[0])); p += 4
            else:
                sizes.append(int(np.frombuffer(c[p:p + 2].tobytes(), "<u2")[0])); p += 2
        p = _pad8(p)
        rep = def_ = None
        if mb.HasField("rep_compression"):
            rep = c[p:p + rep_n]; p = _pad8(p + rep_n)
        if mb.HasField("def_compression"):
            def_ = c[p:p + def_n]; p = _pad8(p + def_n)
        vals = []
        for s in sizes:
            vals.append(c[p:p + s]); p = _pad8(p + s)
        out.append(Chunk(nv, num_levels, rep, def_, vals))
        pos += size
    return out


def fullzip_values(page: Page):
    """Split a full-zip page without rep/def into raw per-value pieces: (fixed bytes, None)
    or (None, (offsets, data))."""
    fz = page.layout.full_zip_layout
    assert fz.bits_rep == 0
    buf = page.buffers[0].tobytes()
    cw = 0 if fz.bits_def == 0 else (1 if fz.bits_def <= 8 else 2 if fz.bits_def <= 16 else 4)
    n = fz.num_items
    if fz.WhichOneof("details") == "bits_per_value":
        w = fz.bits_per_value // 8
        rows, p = [], 0
        for _ in range(n):
            p += cw
            rows.append(buf[p:p + w]); p += w
        return b"".join(rows), None
    lb = fz.bits_per_offset // 8
    offs, pieces, p, total = [0], [], 0, 0
    for _ in range(n):
        d = int.from_bytes(buf[p:p + cw], "little") if cw else 0
        p += cw
        if d == 0:
            ln = int.from_bytes(buf[p:p + lb], "little"); p += lb
            pieces.append(buf[p:p + ln]); p += ln; total += ln
        offs.append(total)
    return None, (np.array(offs, np.int64), np.frombuffer(b"".join(pieces), np.uint8))
