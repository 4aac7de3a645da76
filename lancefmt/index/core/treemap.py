"""Lance's ``RowIdTreeMap`` bytes <-> sorted uint64 row ids.

BITMAP and LABEL_LIST index files store one such map per key. The layout (little-endian)::

    u32 entries
    per entry, fragments ascending:  u32 fragment id (the id's high 32 bits)
                                     u32 size (0 = the whole fragment)
                                     size bytes: a portable 32-bit roaring bitmap of the low bits

"The whole fragment" cannot be turned into row ids without the fragment's length, so such a
map is refused here (Lance itself writes them only for in-memory masks, never to index files).
Every length is checked against the bytes present before anything is allocated.
"""
from __future__ import annotations

import struct

import numpy as np
from pyroaring import BitMap

from ...errors import CorruptFileError, UnsupportedFeatureError

_U32 = struct.Struct("<I")
_ENTRY = struct.Struct("<II")


def encode_treemap(row_ids: np.ndarray) -> bytes:
    """Bytes of the map holding ``row_ids`` (sorted unique uint64)."""
    ids = np.asarray(row_ids, dtype=np.uint64)
    if not ids.size:
        return _U32.pack(0)
    high = (ids >> np.uint64(32)).astype(np.uint32)
    low = (ids & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    cuts = np.flatnonzero(high[1:] != high[:-1]) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [ids.size]))
    parts = [_U32.pack(len(starts))]
    for s, e in zip(starts.tolist(), ends.tolist()):
        body = BitMap(low[s:e]).serialize()
        parts.append(_ENTRY.pack(int(high[s]), len(body)))
        parts.append(body)
    return b"".join(parts)


def decode_treemap(data, path: str | None = None) -> np.ndarray:
    """Sorted uint64 row ids of a serialized map (``data``: bytes-like)."""
    view = memoryview(data).cast("B")
    size = len(view)
    if size < 4:
        raise CorruptFileError(f"row-id map of {size} bytes is shorter than its header", path)
    (entries,) = _U32.unpack_from(view, 0)
    if entries > (size - 4) // 8:
        raise CorruptFileError(f"row-id map declares {entries} fragments in {size} bytes", path)
    pos = 4
    parts = []
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
            bm = BitMap.deserialize(bytes(view[pos:pos + n]))
        except (ValueError, OverflowError, MemoryError) as e:
            raise CorruptFileError(f"bad roaring bitmap in row-id map ({e})", path) from None
        pos += n
        low = np.asarray(bm.to_array(), dtype=np.uint64) if len(bm) else np.empty(0, np.uint64)
        parts.append(low | (np.uint64(frag) << np.uint64(32)))
    if pos != size:
        raise CorruptFileError(f"row-id map has {size - pos} bytes after its last entry", path)
    if not parts:
        return np.empty(0, dtype=np.uint64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
