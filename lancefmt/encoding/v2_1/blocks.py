"""Joining value blocks: a mini-block page decodes chunk by chunk, and a take gathers the chunks
that hold its rows; both hand the structural layer one block per page (or per set of chunks).

Fixed data is joined by bytes (bitmaps bit by bit), variable data by rebasing offsets.
"""
from __future__ import annotations

import numpy as np

from .values import (DictionaryValues, FixedSizeListValues, FixedValues, StructValues,
                     VariableValues)


def fixed_bytes(block: FixedValues) -> np.ndarray:
    """The used bytes of a (byte-aligned) fixed block."""
    return block.data[:block.num_values * block.bits_per_value // 8]


def concat_bitmaps(parts) -> np.ndarray:
    """``(bitmap, n_bits)`` pairs, each starting at bit 0, as one bitmap."""
    total = sum(n for _, n in parts)
    if all(n % 8 == 0 for _, n in parts[:-1]):
        return np.concatenate([np.asarray(b, dtype=np.uint8)[:(n + 7) // 8] for b, n in parts])
    bits = np.concatenate([np.unpackbits(np.asarray(b, dtype=np.uint8), count=n,
                                         bitorder="little") for b, n in parts])
    return np.packbits(bits[:total], bitorder="little")


def concat(blocks: list):
    """One block holding the values of ``blocks`` in order (all of one kind)."""
    if len(blocks) == 1:
        return blocks[0]
    first = blocks[0]
    n = sum(b.num_values for b in blocks)
    if isinstance(first, FixedValues):
        if first.bits_per_value == 1:
            return FixedValues(1, n, concat_bitmaps([(b.data, b.num_values) for b in blocks]))
        return FixedValues(first.bits_per_value, n, np.concatenate([fixed_bytes(b) for b in blocks]))
    if isinstance(first, VariableValues):
        datas, offs, base = [], [np.zeros(1, dtype=np.int64)], 0
        for b in blocks:
            o = np.asarray(b.offsets, dtype=np.int64)
            datas.append(b.data[o[0]:o[-1]])
            offs.append(o[1:] - o[0] + base)
            base += int(o[-1] - o[0])
        return VariableValues(n, np.concatenate(offs), np.concatenate(datas), first.offset_bits)
    if isinstance(first, FixedSizeListValues):
        child = concat([b.child for b in blocks])
        validity = None
        if any(b.validity is not None for b in blocks):
            validity = np.concatenate([
                b.validity if b.validity is not None else np.ones(b.num_values * b.dim, np.bool_)
                for b in blocks])
        return FixedSizeListValues(first.dim, n, child, validity)
    if isinstance(first, StructValues):
        children = [concat([b.children[i] for b in blocks]) for i in range(len(first.children))]
        return StructValues(n, children)
    if isinstance(first, DictionaryValues):
        return DictionaryValues(n, np.concatenate([b.indices for b in blocks]), first.dictionary)
    raise TypeError(f"unknown value block {type(first).__name__}")


def take(block, idx: np.ndarray):
    """The values at positions ``idx`` (int64) of ``block``."""
    if isinstance(block, FixedValues):
        if block.bits_per_value == 1:
            bits = np.unpackbits(block.data, count=block.num_values, bitorder="little")[idx]
            return FixedValues(1, idx.size, np.packbits(bits, bitorder="little"))
        w = block.bits_per_value // 8
        rows = fixed_bytes(block).reshape(-1, w) if w else np.zeros((block.num_values, 0), np.uint8)
        return FixedValues(block.bits_per_value, idx.size, rows[idx].reshape(-1))
    if isinstance(block, VariableValues):
        o = np.asarray(block.offsets, dtype=np.int64)
        starts, stops = o[idx], o[idx + 1]
        lengths = stops - starts
        offs = np.zeros(idx.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offs[1:])
        if idx.size and int(offs[-1]):
            gather = np.repeat(starts - offs[:-1], lengths) + np.arange(int(offs[-1]))
            data = block.data[gather]
        else:
            data = np.zeros(0, dtype=np.uint8)
        return VariableValues(idx.size, offs, data, block.offset_bits)
    if isinstance(block, FixedSizeListValues):
        items = (idx[:, None] * block.dim + np.arange(block.dim)).reshape(-1)
        validity = None if block.validity is None else block.validity[items]
        return FixedSizeListValues(block.dim, idx.size, take(block.child, items), validity)
    if isinstance(block, StructValues):
        return StructValues(idx.size, [take(c, idx) for c in block.children])
    if isinstance(block, DictionaryValues):
        return DictionaryValues(idx.size, block.indices[idx], block.dictionary)
    raise TypeError(f"unknown value block {type(block).__name__}")


def bitmap_bools(data, n: int) -> np.ndarray:
    return np.unpackbits(np.asarray(data, dtype=np.uint8), count=n, bitorder="little").view(np.bool_)


__all__ = ["concat", "take", "concat_bitmaps", "fixed_bytes", "bitmap_bools"]
