"""Decoded value blocks: the contract between the structural layer (mini-block, full-zip,
constant, blob pages; rep/def levels) and the compressive layer (flat, variable, bit-packing,
FSST, RLE, byte-stream-split, general, fixed-size-list, packed structs, dictionaries).

A compressive decoder turns a chunk's (or a block's, or a full-zip page's) buffers into one of
these; the structural layer concatenates them per page and turns them, with the levels, into
Arrow arrays. Every block holds only *visible* items (null leaves included, null or empty lists
excluded), in order. Arrays are numpy arrays owned by the block (or read-only views of page
bytes that the block keeps alive).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class FixedValues:
    """``num_values`` fixed-width values of ``bits_per_value`` bits each.

    ``bits_per_value == 1``: ``data`` is an LSB-first bitmap starting at bit 0 (booleans).
    Otherwise ``bits_per_value`` is a multiple of 8 and ``data`` holds the values back to back,
    little-endian, ``num_values * bits_per_value // 8`` bytes (it may be longer; the tail is
    padding). ``data`` is ``np.uint8``.
    """

    bits_per_value: int
    num_values: int
    data: np.ndarray


@dataclass
class VariableValues:
    """``num_values`` variable-width values: value i is ``data[offsets[i]:offsets[i+1]]``.

    ``offsets`` is ``np.int64`` of length ``num_values + 1`` with ``offsets[0] == 0`` (a decoder
    rebases chunk-relative offsets); ``data`` is ``np.uint8``. ``offset_bits`` (32 or 64) records
    what the file used, so a writer or a large_* type can keep it.
    """

    num_values: int
    offsets: np.ndarray
    data: np.ndarray
    offset_bits: int = 32


@dataclass
class FixedSizeListValues:
    """``num_values`` rows of ``dim`` child items each.

    ``validity``: the item validity of this FSL layer (``np.bool_`` of ``num_values * dim``
    items, True = valid) when the file stored one (``has_validity``), else None. ``child`` holds
    ``num_values * dim`` items (a ``FixedValues`` or a nested ``FixedSizeListValues``).
    """

    dim: int
    num_values: int
    child: "FixedValues | FixedSizeListValues"
    validity: np.ndarray | None = None


@dataclass
class StructValues:
    """``num_values`` rows of a packed struct (PackedStruct / VariablePackedStruct): one block
    per child field, each of ``num_values`` items, in the struct's field order."""

    num_values: int
    children: list = field(default_factory=list)


@dataclass
class DictionaryValues:
    """``num_values`` indices (``np.uint32`` or wider) into ``dictionary`` (a decoded block).
    Null rows still hold an index; validity comes from the def levels only."""

    num_values: int
    indices: np.ndarray
    dictionary: "FixedValues | VariableValues"


ValueBlock = FixedValues | VariableValues | FixedSizeListValues | StructValues | DictionaryValues
