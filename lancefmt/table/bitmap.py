"""Bitmap: a mutable set of uint32 (fragment ids), pylance's ``lance.bitmap.Bitmap``.

Index segments report the fragments they cover as one (``fragment_ids``). It is a
``collections.abc.MutableSet`` over a pyroaring ``BitMap``, compares equal to any set with the
same members and prints as pylance prints it (``Bitmap({0, 1})``).
"""
from __future__ import annotations

from collections.abc import MutableSet

from pyroaring import BitMap


class Bitmap(MutableSet):
    __slots__ = ("_bm",)

    def __init__(self, values=()):
        self._bm = values.copy()._bm if isinstance(values, Bitmap) else BitMap(int(v) for v in values)

    @classmethod
    def from_roaring(cls, bm: BitMap) -> "Bitmap":
        out = cls()
        out._bm = BitMap(bm)
        return out

    @classmethod
    def _from_bytes(cls, data: bytes) -> "Bitmap":
        return cls.from_roaring(BitMap.deserialize(data))

    def serialize(self) -> bytes:
        return self._bm.serialize()

    def roaring(self) -> BitMap:
        return self._bm

    # -- MutableSet ----------------------------------------------------------------------------
    def __contains__(self, value) -> bool:
        try:
            return int(value) in self._bm
        except (TypeError, ValueError, OverflowError):
            return False

    def __iter__(self):
        return iter(self._bm)

    def __len__(self) -> int:
        return len(self._bm)

    def add(self, value) -> None:
        self._bm.add(int(value))

    def discard(self, value) -> None:
        self._bm.discard(int(value))

    def copy(self) -> "Bitmap":
        return Bitmap.from_roaring(self._bm)

    def update(self, *others) -> None:
        for o in others:
            self._bm.update(int(v) for v in o)

    def union(self, *others) -> "Bitmap":
        out = self.copy()
        out.update(*others)
        return out

    def intersection(self, *others) -> "Bitmap":
        out = self.copy()
        for o in others:
            out._bm &= BitMap(int(v) for v in o)
        return out

    def difference(self, *others) -> "Bitmap":
        out = self.copy()
        for o in others:
            out._bm -= BitMap(int(v) for v in o)
        return out

    def symmetric_difference(self, other) -> "Bitmap":
        return Bitmap.from_roaring(self._bm ^ BitMap(int(v) for v in other))

    def issubset(self, other) -> bool:
        return set(self) <= set(other)

    def issuperset(self, other) -> bool:
        return set(self) >= set(other)

    def __eq__(self, other) -> bool:
        if isinstance(other, Bitmap):
            return self._bm == other._bm
        if isinstance(other, (set, frozenset, MutableSet)):
            return set(self._bm) == set(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return "Bitmap({" + ", ".join(str(v) for v in self._bm) + "})"

    def __reduce__(self):
        return (Bitmap._from_bytes, (self.serialize(),))
