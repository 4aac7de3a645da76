"""Shred an Arrow array into one leaf column's repetition/definition levels and values.

2.1 stores structs and lists above a leaf as levels in the leaf's pages. Shredding walks the
path from the top-level field down to the leaf and keeps, per level entry, the index of the
element it stands for, the repetition level and a *kill marker* naming the layer (outer-first)
that made the entry null or empty. Markers become def codes only when a page is encoded,
because the codes depend on which layers of the page actually hold nulls or empties (pages
declare only the layers they need, as Lance does).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..._proto import encodings_v2_1_pb2 as pb

ITEM, LIST = "item", "list"


def is_list_type(t) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t)


def leaf_paths_of(dtype, prefix=()) -> list[tuple]:
    """Child-index paths (struct steps only) of every leaf of ``dtype``, in pre-order (an
    empty struct is a leaf)."""
    if pa.types.is_struct(dtype) and dtype.num_fields:
        out = []
        for i in range(dtype.num_fields):
            out.extend(leaf_paths_of(dtype.field(i).type, prefix + (i,)))
        return out
    if pa.types.is_map(dtype):
        return leaf_paths_of(pa.struct([dtype.key_field, dtype.item_field]), prefix)
    if is_list_type(dtype):
        return leaf_paths_of(dtype.value_type, prefix)
    return [prefix]


@dataclass
class Shredded:
    """A run of whole rows of one leaf column."""

    kinds: tuple        # ITEM / LIST per layer, outer first (the leaf is the last item layer)
    rep: np.ndarray | None   # uint16 per entry (None without lists)
    kill: np.ndarray    # uint16 per entry: 0 alive, 2*L+1 null at layer L, 2*L+2 empty list
    values: pa.Array    # the leaf's visible items (entries with idx >= 0), nulls included
    num_rows: int

    @property
    def num_entries(self) -> int:
        return len(self.kill)


def _validity(a: pa.Array) -> np.ndarray | None:
    if a.null_count == 0:
        return None
    return a.is_valid().to_numpy(zero_copy_only=False)


def shred(arr: pa.Array, path: tuple) -> Shredded:
    """The levels and values of the leaf at ``path`` under the top-level array ``arr``."""
    n = len(arr)
    if not path and not pa.types.is_struct(arr.type) and not is_list_type(arr.type):
        return _shred_flat(arr)
    kinds = []
    idx = np.arange(n, dtype=np.int64)
    kill = np.zeros(n, dtype=np.uint16)
    rep = None
    a = arr
    steps = list(path)
    # Number of list layers on the path (for the repetition levels).
    max_rep = 0
    t = arr.type
    walk = list(path)
    while True:
        if pa.types.is_struct(t):
            t = t.field(walk.pop(0)).type
        elif pa.types.is_map(t):
            max_rep += 1
            t = pa.struct([t.key_field, t.item_field])
        elif is_list_type(t):
            max_rep += 1
            t = t.value_type
        else:
            break
    if max_rep:
        rep = np.full(n, max_rep, dtype=np.uint16)
    depth = 0
    while True:
        t = a.type
        if pa.types.is_struct(t) or not is_list_type(t):
            layer = len(kinds)
            kinds.append(ITEM)
            valid = _validity(a)
            if valid is not None and len(idx):
                has = idx >= 0
                alive = (kill == 0) & has
                bad = np.zeros(len(idx), dtype=bool)
                bad[alive] = ~valid[idx[alive]]
                kill[bad] = 2 * layer + 1
            if not pa.types.is_struct(t):
                break
            a = a.field(steps.pop(0))
            continue
        # a list layer
        layer = len(kinds)
        kinds.append(LIST)
        offsets = a.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        valid = _validity(a)
        alive = (kill == 0) & (idx >= 0)
        if len(a) == 0:
            alive[:] = False
            offsets = np.zeros(2, dtype=np.int64)
            valid = None
        safe = np.where(alive, idx, 0)
        lens = np.where(alive, offsets[safe + 1] - offsets[safe], 0) if len(idx) else \
            np.zeros(0, np.int64)
        if valid is not None and len(idx):
            isnull = alive & ~valid[safe]
            kill[isnull] = 2 * layer + 1
            lens[isnull] = 0
        empty = alive & (lens == 0) & (kill == 0)
        kill[empty] = 2 * layer + 2
        counts = np.maximum(lens, 1)
        total = int(counts.sum())
        parent = np.repeat(np.arange(len(idx), dtype=np.int64), counts)
        starts = np.cumsum(counts) - counts
        pos = np.arange(total, dtype=np.int64) - starts[parent]
        has_child = lens[parent] > 0
        new_idx = np.where(has_child, offsets[safe[parent]] + pos, -1)
        rep = np.where(pos == 0, rep[parent], max_rep - 1 - depth).astype(np.uint16)
        kill = kill[parent]
        idx = new_idx
        depth += 1
        if pa.types.is_map(t):
            a = a.values if not isinstance(a, pa.MapArray) else pa.StructArray.from_arrays(
                [a.keys, a.items], fields=[t.key_field, t.item_field])
        else:
            a = a.values
    visible = idx >= 0
    if len(idx) == len(a) and visible.all() and (len(idx) == 0 or (
            idx[0] == 0 and np.all(np.diff(idx) == 1))):
        values = a
    else:
        values = a.take(pa.array(idx[visible]))
    return Shredded(tuple(kinds), rep, kill, values, n)


def _shred_flat(arr: pa.Array) -> Shredded:
    """A top-level leaf (no struct or list above it): one entry per row, the array itself."""
    kill = np.zeros(len(arr), dtype=np.uint16)
    valid = _validity(arr)
    if valid is not None:
        kill[~valid] = 1
    return Shredded((ITEM,), None, kill, arr, len(arr))


def layer_codes(kinds, kill: np.ndarray):
    """(RepDefLayer kinds innermost first, def levels uint16 or None) of a page's entries."""
    present = np.zeros(2 * len(kinds) + 3, dtype=bool)
    if len(kill) and kill.any():
        present[np.unique(kill)] = True
    lut = np.zeros(len(present), dtype=np.uint16)
    layers = []
    c = 0
    for layer in range(len(kinds) - 1, -1, -1):
        has_null = present[2 * layer + 1]
        has_empty = present[2 * layer + 2]
        if kinds[layer] == ITEM:
            if has_null:
                c += 1
                lut[2 * layer + 1] = c
            layers.append(pb.REPDEF_NULLABLE_ITEM if has_null else pb.REPDEF_ALL_VALID_ITEM)
        else:
            if has_null:
                c += 1
                lut[2 * layer + 1] = c
            if has_empty:
                c += 1
                lut[2 * layer + 2] = c
            layers.append(pb.REPDEF_NULL_AND_EMPTY_LIST if has_null and has_empty else
                          pb.REPDEF_NULLABLE_LIST if has_null else
                          pb.REPDEF_EMPTYABLE_LIST if has_empty else pb.REPDEF_ALL_VALID_LIST)
    defs = lut[kill] if c else None
    return layers, defs
