"""Per-leaf encoding choices from ``lance-encoding:*`` field metadata, as pylance 14 honours
them when writing 2.1 / 2.2 files (rust/lance-encoding/src/constants.rs):

* ``compression`` none | fsst | zstd | lz4 and ``compression-level``;
* ``rle-threshold``: run-length encode when runs < values * threshold (pylance: 0.5);
* ``bss`` off | on | auto: byte-stream-split 32/64-bit values (only under zstd / lz4);
* ``dict-size-ratio`` in (0, 1]: dictionary when its estimated size / plain size is below;
* ``structural-encoding`` miniblock | fullzip;
* ``packed`` and ``blob`` are read from the schema by the field writer.

``dict-divisor`` is declared by Lance but read by no 2.1+ writer, so it is ignored here too.
Values pylance rejects (unknown schemes, a ratio outside (0, 1], an unknown structural
encoding) are refused before anything is written.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import compression
from ...errors import InvalidArgumentError

COMPRESSION_KEY = compression.COMPRESSION_META_KEY
LEVEL_KEY = compression.COMPRESSION_LEVEL_META_KEY
RLE_THRESHOLD_KEY = "lance-encoding:rle-threshold"
BSS_KEY = "lance-encoding:bss"
DICT_SIZE_RATIO_KEY = "lance-encoding:dict-size-ratio"
STRUCTURAL_KEY = "lance-encoding:structural-encoding"

SCHEMES = ("none", "fsst", "zstd", "lz4")


def _float(md, key):
    v = md.get(key)
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None   # pylance ignores what does not parse


@dataclass(frozen=True)
class LeafOptions:
    compression: str | None = None   # "zstd" | "lz4" | "none" | "fsst" | None (automatic)
    compression_level: int | None = None
    rle_threshold: float | None = None
    bss: str | None = None            # "off" | "on" | "auto" | None (auto)
    dict_size_ratio: float | None = None
    structural: str | None = None     # "miniblock" | "fullzip" | None (by value width)

    @classmethod
    def from_metadata(cls, metadata, name="") -> "LeafOptions":
        md = {}
        for k, v in (metadata or {}).items():
            md[k.decode() if isinstance(k, bytes) else k] = v.decode() if isinstance(v, bytes) else v
        scheme = md.get(COMPRESSION_KEY)
        if scheme is not None and scheme not in SCHEMES:
            raise InvalidArgumentError(
                f"field {name!r}: unknown compression scheme {scheme!r} "
                f"({COMPRESSION_KEY} takes {', '.join(SCHEMES)})")
        level = md.get(LEVEL_KEY)
        try:
            level = int(level) if level is not None else None
        except ValueError:
            level = None
        bss = md.get(BSS_KEY)
        bss = bss.lower() if bss is not None and bss.lower() in ("off", "on", "auto") else None
        ratio = _float(md, DICT_SIZE_RATIO_KEY)
        if ratio is not None and not 0.0 < ratio <= 1.0:
            raise InvalidArgumentError(
                f"field {name!r}: {DICT_SIZE_RATIO_KEY} is {ratio}, not in (0, 1]")
        structural = md.get(STRUCTURAL_KEY)
        if structural is not None:
            structural = structural.lower()
            if structural not in ("miniblock", "fullzip"):
                raise InvalidArgumentError(
                    f"field {name!r}: {STRUCTURAL_KEY} is {structural!r}, not miniblock or "
                    f"fullzip")
        return cls(compression=scheme, compression_level=level,
                   rle_threshold=_float(md, RLE_THRESHOLD_KEY), bss=bss,
                   dict_size_ratio=ratio, structural=structural)
