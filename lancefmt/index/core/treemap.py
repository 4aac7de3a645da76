"""Lance's ``RowIdTreeMap`` bytes <-> row ids (sorted uint64, or one roaring bitmap per fragment).

BITMAP and LABEL_LIST index files store one such map per key. The layout (little-endian)::

    u32 entries
    per entry, fragments ascending:  u32 fragment id (the id's high 32 bits)
                                     u32 size (0 = the whole fragment)
                                     size bytes: a portable 32-bit roaring bitmap of the low bits

"The whole fragment" cannot be turned into row ids without the fragment's length, so such a
map is refused here (Lance itself writes them only for in-memory masks, never to index files).
Every length is checked against the bytes present before anything is allocated.

A parsed map is a :data:`TreeMap`: ``{fragment id: FrozenBitMap}``; set operations over many
keys stay in CRoaring (:func:`union_maps`, :func:`intersect_maps`) and only the result becomes
a numpy array (:func:`map_rows`).
"""
from __future__ import annotations

import array
import struct

import numpy as np
from pyroaring import BitMap, FrozenBitMap

from ...errors import CorruptFileError, UnsupportedFeatureError

_U32 = struct.Struct("<I")
_ENTRY = struct.Struct("<II")

TreeMap = dict  # {fragment id (int): FrozenBitMap of the ids' low 32 bits}


def _bitmap(low: np.ndarray) -> BitMap:
    # pyroaring reads an array.array('I') in one call (a numpy array goes value by value);
    # no run-container optimisation, so the bytes match what Lance (roaring-rs) writes.
    return BitMap(array.array("I", np.ascontiguousarray(low, dtype=np.uint32).tobytes()),
                  optimize=False)


def encode_treemap(row_ids: np.ndarray) -> bytes:
    """Bytes of the map holding ``row_ids`` (sorted uint64; repeats are kept once)."""
    ids = np.asarray(row_ids, dtype=np.uint64)
    if not ids.size:
        return _U32.pack(0)
    high = (ids >> np.uint64(32)).astype(np.uint32)
    low = (ids & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    if high[0] == high[-1]:  # one fragment: the common case, no split
        body = _bitmap(low).serialize()
        return b"".join((_U32.pack(1), _ENTRY.pack(int(high[0]), len(body)), body))
    cuts = np.flatnonzero(high[1:] != high[:-1]) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [ids.size]))
    parts = [_U32.pack(len(starts))]
    for s, e in zip(starts.tolist(), ends.tolist()):
        body = _bitmap(low[s:e]).serialize()
        parts.append(_ENTRY.pack(int(high[s]), len(body)))
        parts.append(body)
    return b"".join(parts)


def parse_treemap(data, path: str | None = None) -> TreeMap:
    """``{fragment id: FrozenBitMap}`` of a serialized map (``data``: bytes-like)."""
    view = memoryview(data).cast("B")
    size = len(view)
    if size < 4:
        raise CorruptFileError(f"row-id map of {size} bytes is shorter than its header", path)
    (entries,) = _U32.unpack_from(view, 0)
    if entries > (size - 4) // 8:
        raise CorruptFileError(f"row-id map declares {entries} fragments in {size} bytes", path)
    pos = 4
    out: TreeMap = {}
    last = -1
    for _ in range(entries):
        if pos + 8 > size:
            raise CorruptFileError("row-id map is truncated", path)
        frag, n = _ENTRY.unpack_from(view, pos)
        pos += 8
        if frag <= last:
            raise CorruptFileError("row-id map fragments are not ascending", path)
        last = frag
        if n == 0:
            raise UnsupportedFeatureError("row-id map selects a whole fragment", path)
        if n > size - pos:
            raise CorruptFileError(f"row-id map bitmap of {n} bytes overruns the map", path)
        try:
            bm = FrozenBitMap.deserialize(bytes(view[pos:pos + n]))
        except (ValueError, OverflowError, MemoryError) as e:
            raise CorruptFileError(f"bad roaring bitmap in row-id map ({e})", path) from None
        pos += n
        if len(bm):
            out[frag] = bm
    if pos != size:
        raise CorruptFileError(f"row-id map has {size - pos} bytes after its last entry", path)
    return out


def map_rows(tree: TreeMap) -> np.ndarray:
    """Sorted uint64 row ids of a parsed map (a read-only array)."""
    frags = sorted(tree)
    out = np.empty(sum(len(tree[f]) for f in frags), dtype=np.uint64)
    pos = 0
    for frag in frags:
        low = np.frombuffer(tree[frag].to_array(), dtype=np.uint32)
        part = out[pos:pos + low.size]
        part[:] = low
        if frag:
            part |= np.uint64(frag) << np.uint64(32)
        pos += low.size
    out.flags.writeable = False
    return out


def map_size(tree: TreeMap) -> int:
    return sum(len(b) for b in tree.values())


def union_maps(trees) -> TreeMap:
    """The union of parsed maps (a map given alone is returned as it is)."""
    trees = [t for t in trees if t]
    if not trees:
        return {}
    if len(trees) == 1:
        return trees[0]
    by_frag: dict = {}
    for t in trees:
        for frag, bm in t.items():
            by_frag.setdefault(frag, []).append(bm)
    return {f: (bms[0] if len(bms) == 1 else FrozenBitMap.union(*bms)) for f, bms in by_frag.items()}


def intersect_maps(trees) -> TreeMap:
    """The intersection of parsed maps (empty when none are given)."""
    trees = list(trees)
    if not trees or any(not t for t in trees):
        return {}
    common = set(trees[0])
    for t in trees[1:]:
        common &= set(t)
    out = {}
    for frag in common:
        bm = FrozenBitMap.intersection(*(t[frag] for t in trees)) if len(trees) > 1 else trees[0][frag]
        if len(bm):
            out[frag] = bm
    return out


def decode_treemap(data, path: str | None = None) -> np.ndarray:
    """Sorted uint64 row ids of a serialized map (``data``: bytes-like)."""
    return map_rows(parse_treemap(data, path))
