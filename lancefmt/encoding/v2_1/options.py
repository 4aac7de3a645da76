"""Per-leaf encoding choices from ``lance-encoding:*`` field metadata."""
from __future__ import annotations

from dataclasses import dataclass

from .. import compression

COMPRESSION_KEY = compression.COMPRESSION_META_KEY
LEVEL_KEY = compression.COMPRESSION_LEVEL_META_KEY


@dataclass(frozen=True)
class LeafOptions:
    compression: str | None = None   # "zstd" | "lz4" | "none" | "fsst" | None (automatic)
    compression_level: int | None = None

    @classmethod
    def from_metadata(cls, metadata) -> "LeafOptions":
        md = {}
        for k, v in (metadata or {}).items():
            md[k.decode() if isinstance(k, bytes) else k] = v.decode() if isinstance(v, bytes) else v
        scheme = md.get(COMPRESSION_KEY)
        level = md.get(LEVEL_KEY)
        try:
            level = int(level) if level is not None else None
        except ValueError:
            level = None
        return cls(compression=scheme, compression_level=level)
