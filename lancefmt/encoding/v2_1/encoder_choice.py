"""Which value encoder a mini-block page gets (Lance's default strategy, plus what the field's
``lance-encoding:*`` metadata asks for)."""
from __future__ import annotations

from .fsst_encoder import FsstMiniBlockEncoder
from .requested_encoders import ByteStreamSplitEncoder, rle_by_threshold
from .value_block import DictBlock, VariableBlock
from .value_encoders import (
    BitpackEncoder, DictionaryEncoder, FlatEncoder, GeneralEncoder, RleEncoder, VariableEncoder,
)


def choose_value_encoder(block, version, options):
    """The value encoder of a mini-block page: dictionary indices / integers bit-packed when
    that is smaller, FSST for strings (as pylance: asked for, or pages of 32 KiB+), General
    zstd/lz4 when the field asks (``lance-encoding:compression``), byte-stream-split and RLE
    as ``lance-encoding:bss`` / ``rle-threshold`` ask (:mod:`.requested_encoders`)."""
    scheme = options.compression if options is not None else None
    if isinstance(block, DictBlock):
        return DictionaryEncoder(block, choose_value_encoder(block.indices, version, options))
    if isinstance(block, VariableBlock):
        enc = FsstMiniBlockEncoder.maybe(block, scheme) or VariableEncoder(block)
    else:
        enc = ByteStreamSplitEncoder.maybe(block, options)
        threshold = options.rle_threshold if options is not None else None
        if enc is None and threshold is not None and scheme != "none":
            enc = rle_by_threshold(block, threshold)
        if enc is None and scheme not in ("none", "zstd", "lz4"):
            enc = BitpackEncoder.maybe(block)
            best = enc.packed_bytes if enc is not None else len(block.data)
            if threshold is None:
                enc = RleEncoder.maybe(block, best) or enc
        if enc is None:
            enc = FlatEncoder(block)
    if scheme in ("zstd", "lz4"):
        enc = GeneralEncoder(enc, scheme, options.compression_level)
    return enc
