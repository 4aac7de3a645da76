"""Structural page layouts of Lance 2.1 / 2.2 -> levels + one value block per page.

* mini-block: chunk metadata words (u16 in 2.1, u32 in 2.2), then per chunk a header, level
  buffers and value buffers (each 8-byte aligned); optional dictionary and repetition index;
* full-zip: a control word per level entry, each visible value in line (Cython walk);
* constant / all-null: levels only (raw or block-compressed), plus an optional constant value;
* blob (v1): a mini-block page of (position, size) descriptions, bytes out of line.

Every size comes from the page metadata and is checked against the bytes actually there
before anything is allocated from it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ...errors import CorruptFileError, UnsupportedFeatureError
from . import blocks
from . import compressive
from ._chunks import chunk_table, gather, gather_variable, parse_headers
from ._repdef import zip_walk_fixed, zip_walk_variable
from .layout import Layers
from .values import DictionaryValues, FixedValues, StructValues, VariableValues

_MAX_LEVELS = 1 << 40


@dataclass
class ConstantValue:
    """A constant page's one value: the Arrow buffers of a length-1 array (no validity)."""

    buffers: list


@dataclass
class PageData:
    """A decoded page: levels per entry (None: no levels of that kind) and the visible values
    (None: every visible item is null)."""

    layers: Layers
    rep: np.ndarray | None
    defs: np.ndarray | None
    values: object
    num_visible: int
    chunk_entries: object = None  # mini-block: level entries per decoded chunk


def _u8(buf) -> np.ndarray:
    return np.frombuffer(buf, dtype=np.uint8)


def _align8(n: int) -> int:
    return (n + 7) & ~7


class MiniBlockChunks:
    """The chunk table of a mini-block page: per chunk its value count, byte offset, size."""

    def __init__(self, mb, meta_buf, data_size: int, where: str, path):
        wide = mb.has_large_chunk
        try:
            self.counts, self.offsets, self.sizes, self.value_starts = chunk_table(
                _u8(meta_buf), wide, int(mb.num_items), int(data_size))  # one Cython pass
        except ValueError as e:
            raise CorruptFileError(f"{where}: {e}", path) from None
        self.wide = wide

    def __len__(self):
        return self.counts.size


class MiniBlockPage:
    """The page-level parts of a mini-block page (chunk table, dictionary, repetition index),
    parsed once; decodes any of its chunks given their bytes."""

    def __init__(self, mb, meta_buf, data_size: int, dict_buf, rep_index_buf, where: str, path,
                 layers_pb=None):
        self.mb = mb
        self.where = where
        self.path = path
        self.layers = Layers.of(layers_pb if layers_pb is not None else mb.layers, where, path)
        if not mb.HasField("value_compression"):
            raise CorruptFileError(f"{where}: mini-block page without a value encoding", path)
        if mb.num_buffers > 64:
            raise CorruptFileError(f"{where}: {mb.num_buffers} value buffers per chunk", path)
        self.chunks = MiniBlockChunks(mb, meta_buf, data_size, where, path)
        self.dictionary = None
        if mb.HasField("dictionary"):
            if dict_buf is None:
                raise CorruptFileError(f"{where}: dictionary page without a dictionary buffer",
                                       path)
            self.dictionary = compressive.decode_block(
                mb.dictionary, _u8(dict_buf), int(mb.num_dictionary_items), path=path)
        self.rep_index = None
        if mb.repetition_index_depth:
            depth = int(mb.repetition_index_depth)
            width = (depth + 1) * 8
            if rep_index_buf is None or len(rep_index_buf) < width * len(self.chunks):
                raise CorruptFileError(f"{where}: repetition index too short for "
                                       f"{len(self.chunks)} chunks", path)
            self.rep_index = np.frombuffer(rep_index_buf, dtype="<u8",
                                           count=(depth + 1) * len(self.chunks)
                                           ).reshape(len(self.chunks), depth + 1)

    @staticmethod
    def buffer_roles(mb) -> tuple:
        """Indices of (meta, data, dictionary | None, repetition index | None) page buffers."""
        d = 2 if mb.HasField("dictionary") else None
        r = (3 if d is not None else 2) if mb.repetition_index_depth else None
        return 0, 1, d, r

    @classmethod
    def from_buffers(cls, mb, buffers, where, path, layers_pb=None) -> "MiniBlockPage":
        m, dt, d, r = cls.buffer_roles(mb)
        need = 1 + max(x for x in (m, dt, d, r) if x is not None)
        if len(buffers) < need:
            raise CorruptFileError(f"{where}: mini-block page has {len(buffers)} buffers, "
                                   f"needs {need}", path)
        page = cls(mb, buffers[m], len(buffers[dt]), None if d is None else buffers[d],
                   None if r is None else buffers[r], where, path, layers_pb)
        page.data = _u8(buffers[dt])
        return page

    def chunk_bytes(self, i: int) -> np.ndarray:
        start, size = int(self.chunks.offsets[i]), int(self.chunks.sizes[i])
        return self.data[start:start + size]

    def decode(self, chunk_ids=None, chunk_data=None, chunk_starts=None) -> PageData:
        """Levels and values of the chunks ``chunk_ids`` (all by default), concatenated.
        Random access passes the bytes fetched apart from the page: ``chunk_data`` (one
        buffer) with ``chunk_starts`` (where each chunk of ``chunk_ids`` begins in it).

        Chunk headers are parsed in one Cython pass; levels and values of common encodings
        (flat, bit-packed, variable, FSST) are gathered page-wide and decoded in one call."""
        chunks = self.chunks
        ids = np.arange(len(chunks), dtype=np.int64) if chunk_ids is None else \
            np.asarray(list(chunk_ids), dtype=np.int64)
        if ids.size == 0:
            return PageData(self.layers, None, None, None, 0)
        sizes = np.ascontiguousarray(chunks.sizes[ids])
        if chunk_data is None:
            data = self.data
            starts = np.ascontiguousarray(chunks.offsets[ids])
        else:
            data = chunk_data
            starts = np.ascontiguousarray(chunk_starts, dtype=np.int64)
        mb = self.mb
        has_rep, has_def = mb.HasField("rep_compression"), mb.HasField("def_compression")
        nb = int(mb.num_buffers)
        try:
            nlev, bufs = parse_headers(data, starts, sizes, has_rep, has_def, nb,
                                       4 if chunks.wide else 2)
        except ValueError as e:
            raise CorruptFileError(f"{self.where}: {e}", self.path) from None
        counts = chunks.counts[ids]
        rep = self._levels(mb.rep_compression, data, bufs[:, 0], nlev) if has_rep else None
        defs = self._levels(mb.def_compression, data, bufs[:, 1], nlev) if has_def else None
        values = self._values(data, bufs[:, 2:], counts, ids)
        if self.dictionary is not None:
            values = DictionaryValues(values.num_values, _indices(values, self.where, self.path),
                                      self.dictionary)
        entries = nlev if (has_rep or has_def) else counts
        return PageData(self.layers, rep, defs, values, values.num_values, entries)

    def _levels(self, enc, data, ranges, nlev) -> np.ndarray:
        ranges = np.ascontiguousarray(ranges)
        kind = enc.WhichOneof("compression")
        if kind == "flat" and enc.flat.bits_per_value == 16 and not enc.flat.HasField("data"):
            if np.any(ranges[:, 1] < 2 * nlev):
                raise CorruptFileError(f"{self.where}: level buffer shorter than its levels",
                                       self.path)
            ranges = np.stack([ranges[:, 0], 2 * nlev], axis=1)
            return gather(data, np.ascontiguousarray(ranges)).view("<u2")
        comp = compressive
        batch = comp.decode_levels_batch(enc, data, ranges[:, 0], ranges[:, 1], nlev,
                                         path=self.path)   # bit-packed levels, one pass
        if batch is not None:
            return batch
        out = []
        for (o, ln), n in zip(ranges.tolist(), nlev.tolist()):
            lv = comp.decode_levels(enc, data[o:o + ln], int(n), path=self.path)
            if lv.size != n:
                raise CorruptFileError(f"{self.where}: decoded {lv.size} levels, header says "
                                       f"{n}", self.path)
            out.append(lv)
        return np.concatenate(out)

    def _values(self, data, vbufs, counts, ids):
        mb, where, path = self.mb, self.where, self.path
        comp = compressive
        enc = mb.value_compression
        kind = enc.WhichOneof("compression")
        total = int(counts.sum())
        nb = vbufs.shape[1]
        first = np.ascontiguousarray(vbufs[:, 0, :]) if nb else None
        values = None
        try:
            if nb == 1 and kind in ("inline_bitpacking", "flat"):
                # decoded where the chunks lie (no gather of the value buffers first)
                values = comp.decode_miniblock_batch(enc, data, first[:, 0], first[:, 1], counts,
                                                     path=path)
            if values is not None:
                pass
            elif nb == 1 and kind == "flat" and not enc.flat.HasField("data"):
                bits = int(enc.flat.bits_per_value)
                if bits % 8 == 0 or bits == 1 and not np.any(counts[:-1] % 8):
                    need = (counts * bits + 7) // 8
                    if np.any(first[:, 1] < need):
                        raise CorruptFileError(f"{where}: flat chunk shorter than its values",
                                               path)
                    buf = gather(data, np.ascontiguousarray(np.stack([first[:, 0], need], 1)))
                    values = comp.decode_miniblock(enc, [buf], total, path=path)
            elif nb == 1 and kind == "inline_bitpacking" and not np.any(counts[:-1] != 1024) \
                    and not enc.inline_bitpacking.HasField("values"):
                values = comp.decode_miniblock(enc, [gather(data, first)], total, path=path)
            elif nb == 1 and kind in ("variable", "fsst"):
                var = enc if kind == "variable" else enc.fsst.values
                if var.WhichOneof("compression") == "variable" and \
                        not var.variable.HasField("values") and \
                        var.variable.offsets.WhichOneof("compression") == "flat":
                    ob = int(var.variable.offsets.flat.bits_per_value)
                    offs, raw = gather_variable(data, first, np.ascontiguousarray(counts), ob)
                    values = VariableValues(total, offs, raw, ob)
                    if kind == "fsst":
                        values = comp.FullZipValues(enc, path=path).decode(values)
        except ValueError as e:
            raise CorruptFileError(f"{where}: {e}", path) from None
        if values is None:  # any other encoding: chunk by chunk
            parts = []
            for c, n in zip(range(vbufs.shape[0]), counts.tolist()):
                bufs = [data[o:o + ln] for o, ln in vbufs[c].tolist()]
                v = comp.decode_miniblock(enc, bufs, int(n), path=path)
                if v.num_values != n:
                    raise CorruptFileError(f"{where}: chunk {int(ids[c])} decoded "
                                           f"{v.num_values} values, expected {n}", path)
                parts.append(v)
            values = blocks.concat(parts)
        if values.num_values != total:
            raise CorruptFileError(f"{where}: decoded {values.num_values} values, expected "
                                   f"{total}", path)
        return values


def _indices(block, where, path) -> np.ndarray:
    if not isinstance(block, FixedValues) or block.bits_per_value not in (8, 16, 32, 64):
        raise CorruptFileError(f"{where}: dictionary indices are not fixed-width integers", path)
    dt = {8: np.uint8, 16: "<u2", 32: "<u4", 64: "<u8"}[block.bits_per_value]
    return blocks.fixed_bytes(block).view(dt)


def decode_full_zip(fz, buffers, where: str, path) -> PageData:
    """Walk a full-zip page's zipped buffer into levels and values."""
    layers = Layers.of(fz.layers, where, path)
    if not buffers:
        raise CorruptFileError(f"{where}: full-zip page without buffers", path)
    if fz.bits_rep > 16 or fz.bits_def > 16:
        raise CorruptFileError(f"{where}: {fz.bits_rep}/{fz.bits_def}-bit levels", path)
    total = fz.bits_rep + fz.bits_def
    ctrl = 0 if total == 0 else 1 if total <= 8 else 2 if total <= 16 else 4
    buf = _u8(buffers[0])
    entries = int(fz.num_items)
    max_visible = layers.max_visible_def
    comp = compressive
    try:
        kind = fz.WhichOneof("details")
        if kind == "bits_per_value":
            bits = int(fz.bits_per_value)
            if bits % 8 or bits == 0:
                raise UnsupportedFeatureError(f"{where}: full-zip values of {bits} bits", path)
            rep, defs, data, vis = zip_walk_fixed(buf, entries, ctrl, fz.bits_def, max_visible,
                                                  bits // 8)
            raw = FixedValues(bits, vis, data)
        elif kind == "bits_per_offset":
            rep, defs, offsets, data, vis = zip_walk_variable(
                buf, entries, ctrl, fz.bits_def, max_visible, int(fz.bits_per_offset))
            raw = VariableValues(vis, offsets, data, int(fz.bits_per_offset))
        else:
            raise CorruptFileError(f"{where}: full-zip page without a value width", path)
    except ValueError as e:
        raise CorruptFileError(f"{where}: {e}", path) from None
    if fz.num_visible_items and vis != fz.num_visible_items:
        raise CorruptFileError(f"{where}: {vis} visible items, page says "
                               f"{fz.num_visible_items}", path)
    values = comp.FullZipValues(fz.value_compression, path=path).decode(raw)
    if not fz.bits_rep:
        rep = None
    if not fz.bits_def:
        defs = None
    return PageData(layers, rep, defs, values, vis)


def _levels(enc_set, enc, buf, count, where, path):
    if buf is None or len(buf) == 0:
        return None
    if enc_set:
        if count > _MAX_LEVELS or count > 8 * 1024 * len(buf) + 65536:
            raise CorruptFileError(f"{where}: {count} levels in {len(buf)} bytes", path)
        out = compressive.decode_levels(enc, _u8(buf), int(count), path=path)
        if out.size != count:
            raise CorruptFileError(f"{where}: decoded {out.size} levels, expected {count}", path)
        return out
    if len(buf) % 2:
        raise CorruptFileError(f"{where}: odd-sized raw level buffer", path)
    return np.frombuffer(buf, dtype="<u2")


def decode_constant(c, buffers, num_rows: int, where: str, path) -> PageData:
    """A constant or all-null page: levels (if any) and the constant value (if any)."""
    layers = Layers.of(c.layers, where, path)
    n = len(buffers)
    value = None
    if c.HasField("inline_value"):
        if n not in (0, 2):
            raise CorruptFileError(f"{where}: constant page with {n} buffers", path)
        value = ConstantValue([bytes(c.inline_value)])
        lv = buffers if n == 2 else []
    elif n in (1, 3):
        value = ConstantValue(_scalar_buffers(bytes(buffers[0]), where, path))
        lv = buffers[1:]
    elif n in (0, 2):
        lv = buffers
    else:
        raise CorruptFileError(f"{where}: constant page with {n} buffers", path)
    rep = defs = None
    if lv:
        rep = _levels(c.HasField("rep_compression"), c.rep_compression, lv[0],
                      int(c.num_rep_values), where, path)
        defs = _levels(c.HasField("def_compression"), c.def_compression, lv[1],
                       int(c.num_def_values), where, path)
    if rep is not None and defs is not None and rep.size != defs.size:
        raise CorruptFileError(f"{where}: {rep.size} rep levels but {defs.size} def levels", path)
    if defs is not None:
        visible = int(np.count_nonzero(defs <= layers.max_visible_def))
    elif rep is not None:
        visible = rep.size
    else:
        visible = num_rows
    return PageData(layers, rep, defs, value, visible)


def _scalar_buffers(raw: bytes, where, path) -> list:
    """``u32 n, n x u32 length, buffers``: the Arrow buffers of a length-1 array."""
    if len(raw) < 4:
        raise CorruptFileError(f"{where}: short constant value buffer", path)
    n, = struct.unpack_from("<I", raw, 0)
    if n > 16 or 4 + 4 * n > len(raw):
        raise CorruptFileError(f"{where}: constant value with {n} buffers", path)
    lengths = struct.unpack_from(f"<{n}I", raw, 4)
    pos = 4 + 4 * n
    out = []
    for ln in lengths:
        if pos + ln > len(raw):
            raise CorruptFileError(f"{where}: constant value buffers run past the buffer", path)
        out.append(raw[pos:pos + ln])
        pos += ln
    return out


def decode_blob(blob, buffers, fetch, data_end, where: str, path, rows=None) -> PageData:
    """A blob (v1) page: (position, size) per entry from the inner mini-block page, the bytes
    fetched from where they lie in the file; null entries carry ``(def << 16) | rep``.
    ``rows`` (sorted page rows): fetch and return only those."""
    inner = blob.inner_layout.mini_block_layout
    page = MiniBlockPage.from_buffers(inner, buffers, where, path).decode()
    layers = Layers.of(blob.layers, where, path)
    desc = page.values
    if not isinstance(desc, StructValues) or len(desc.children) != 2 or any(
            not isinstance(c, FixedValues) or c.bits_per_value != 64 for c in desc.children):
        raise CorruptFileError(f"{where}: blob descriptions are not (u64, u64) pairs", path)
    positions = blocks.fixed_bytes(desc.children[0]).view("<u8")
    sizes = blocks.fixed_bytes(desc.children[1]).view("<u8")
    if rows is not None:
        if rows.size and int(rows[-1]) >= positions.size:
            raise CorruptFileError(f"{where}: blob page has {positions.size} rows", path)
        positions, sizes = positions[rows], sizes[rows]
    n = positions.size
    null = (sizes == 0) & (positions != 0)
    defs = np.where(null, positions >> 16, 0).astype(np.uint16)
    if layers.num_lists:
        raise UnsupportedFeatureError(f"{where}: blob values inside lists", path)
    stored = np.flatnonzero(sizes > 0)
    if stored.size and (np.any(positions[stored] > data_end) or
                        np.any(sizes[stored] > data_end - positions[stored])):
        raise CorruptFileError(f"{where}: a blob lies outside the data region", path)
    bufs = fetch([(int(positions[k]), int(sizes[k])) for k in stored])
    data = (np.concatenate([_u8(b) for b in bufs]) if bufs else np.zeros(0, dtype=np.uint8))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.where(null, 0, sizes).astype(np.int64), out=offsets[1:])
    values = VariableValues(n, offsets, data, 64)
    return PageData(layers, None, defs if defs.any() else None, values, n)
