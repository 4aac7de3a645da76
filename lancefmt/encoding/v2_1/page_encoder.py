"""Encode one page of a 2.1 / 2.2 leaf column: levels + visible values -> ``PageLayout``.

Layout choice, in the spirit of Lance's default strategy: pages without a single valid value
are ConstantLayout all-null pages; values of 256 bytes or more (long strings, wide vectors)
go full-zip; everything else is mini-block, with chunks of a power-of-two count of values and
about 4 KiB of data (:mod:`.miniblock_encoder`).
"""
from __future__ import annotations

import numpy as np

from ..._proto import encodings_v2_1_pb2 as pb
from . import fullzip_encoder, miniblock_encoder
from .encoded_page import EncodedPage, PageInput
from .value_block import DictBlock, FixedBlock, VariableBlock

FULL_ZIP_MIN_VALUE_BYTES = 256


def encode_page(inp: PageInput, version, options) -> EncodedPage:
    if _all_null(inp):
        return constant_all_null(inp)
    if tuple(version) >= (2, 2):
        page = constant_value(inp)
        if page is not None:
            return page
    structural = getattr(options, "structural", None)  # lance-encoding:structural-encoding
    if structural == "fullzip" and fullzip_encoder.can_encode(inp.block) or \
            structural is None and _value_bytes_max(inp.block) >= FULL_ZIP_MIN_VALUE_BYTES:
        return fullzip_encoder.encode(inp, version, options)
    page = miniblock_encoder.encode(inp, version, options)
    if page is None:  # levels too dense for mini-block chunks
        return fullzip_encoder.encode(inp, version, options)
    return page


def _all_null(inp: PageInput) -> bool:
    if inp.defs is None:
        return inp.block.n == 0
    return not np.any(inp.defs == 0)


def _value_bytes_max(block) -> int:
    if isinstance(block, DictBlock):
        return 0
    if isinstance(block, VariableBlock):
        return block.max_len
    if block.bits == 1 and not block.fsl_dims:
        return 0
    return block.value_bytes


def constant_all_null(inp: PageInput) -> EncodedPage:
    """All-null page: no buffers without lists or nested nullability, else raw u16 levels."""
    c = pb.ConstantLayout()
    c.layers.extend(inp.layers)
    buffers = []
    if inp.rep is not None or len(inp.layers) > 1:
        rep = inp.rep if inp.rep is not None else np.zeros(0, np.uint16)
        buffers = [rep.astype("<u2").tobytes(), inp.defs.astype("<u2").tobytes()]
    return EncodedPage(pb.PageLayout(constant_layout=c), buffers, inp.num_rows)


def constant_value(inp: PageInput) -> EncodedPage | None:
    """2.2: a page without nulls or lists whose values are all equal is a ConstantLayout with
    the value inline (the single Arrow value buffer of one value, <= 32 bytes; bool 1 byte)."""
    block = inp.block
    if inp.rep is not None or inp.defs is not None or not isinstance(block, FixedBlock) or \
            block.fsl_dims or block.n < 2:
        return None
    if block.bits == 1:
        bits = np.unpackbits(block.data, count=block.n, bitorder="little")
        if not (bits == bits[0]).all():
            return None
        value = bytes([int(bits[0])])
    else:
        w = block.bits // 8
        if w > 32 or block.bits % 8:
            return None
        mat = block.data.reshape(block.n, w)
        # cheap early-out on a sample before the full comparison
        probe = mat[::max(1, block.n // 64)]
        if not (probe == mat[0]).all():
            return None
        if w in (1, 2, 4, 8):
            words = block.data.view(f"<u{w}")
            if not (words == words[0]).all():
                return None
        elif not (mat == mat[0]).all():
            return None
        value = mat[0].tobytes()
    c = pb.ConstantLayout(inline_value=value)
    c.layers.extend(inp.layers)
    return EncodedPage(pb.PageLayout(constant_layout=c), [], inp.num_rows)
