"""``EncodedU64Array``: u64 values stored as u16/u32 offsets from a base, or as plain u64.

Lance picks the narrowest width that holds ``max - min`` and uses ``min`` as the base (values
keep their order). Decoded arrays keep the width they were read with, so re-encoding what
pylance wrote reproduces its bytes even where pylance did not use the narrowest width.
"""
from __future__ import annotations

import numpy as np

_DTYPES = {16: np.dtype("<u2"), 32: np.dtype("<u4"), 64: np.dtype("<u8")}
_U16_SPAN = 0xFFFF
_U32_SPAN = 0xFFFFFFFF


class EncodedU64Array:
    """Values = ``base + offsets`` (widths 16 and 32) or ``offsets`` themselves (width 64)."""

    __slots__ = ("width", "base", "offsets")

    def __init__(self, width: int, base: int, offsets: np.ndarray):
        if width not in _DTYPES:
            raise ValueError(f"width must be 16, 32 or 64, not {width}")
        if width == 64 and base:
            raise ValueError("a u64 array has no base")
        self.width = width
        self.base = int(base)
        self.offsets = np.asarray(offsets, dtype=_DTYPES[width])

    @classmethod
    def from_values(cls, values) -> "EncodedU64Array":
        """Lance's width choice (``From<Vec<u64>>``): u16 if max-min fits, else u32, else u64."""
        values = np.ascontiguousarray(values, dtype=np.uint64)
        if values.size == 0:
            return cls(64, 0, values)
        lo, hi = int(values.min()), int(values.max())
        if hi - lo <= _U16_SPAN:
            return cls(16, lo, (values - np.uint64(lo)).astype(np.uint16))
        if hi - lo <= _U32_SPAN:
            return cls(32, lo, (values - np.uint64(lo)).astype(np.uint32))
        return cls(64, 0, values)

    def __len__(self) -> int:
        return int(self.offsets.size)

    def to_numpy(self) -> np.ndarray:
        """The values as a fresh uint64 array."""
        if self.width == 64:
            return self.offsets.astype(np.uint64, copy=True)
        out = self.offsets.astype(np.uint64)
        if self.base:
            out += np.uint64(self.base)
        return out

    def payload(self) -> bytes:
        """The little-endian offsets (or values) exactly as stored on the wire."""
        return self.offsets.tobytes()

    def __eq__(self, other) -> bool:
        if not isinstance(other, EncodedU64Array):
            return NotImplemented
        return (self.width == other.width and self.base == other.base
                and np.array_equal(self.offsets, other.offsets))

    def __repr__(self) -> str:
        return f"EncodedU64Array(u{self.width}, base={self.base}, n={len(self)})"
