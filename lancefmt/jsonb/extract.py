"""The value at a JSONPath in every document of a JSONB column, as pylance's JSON index reads it.

Each row gets a *kind* (missing, JSON null, false, true, string, integer, float, array,
object) and, for scalars, its value. A path of member names and array indices (``x``,
``$.a.b``, ``a[0]``) is walked in the JSONB bytes by a Cython kernel without decoding the
documents; any other path (wildcards, ranges, filters, ``last``) goes through the general
:func:`~lancefmt.jsonb.path.select` one document at a time. A path selecting several values
yields an array, as in pylance. Integers that do not fit an i64 are floats (pylance's
``Float64``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError
from ._extract import extract, gather
from .codec import loads
from .path import Elements, Member, parse_path, select

MISSING, NULL, FALSE, TRUE, STRING, INT, FLOAT, ARRAY, OBJECT = range(9)
#: the JSON type pylance names for each kind
KIND_NAMES = {NULL: "Null", FALSE: "Boolean", TRUE: "Boolean", STRING: "String", INT: "Int64",
              FLOAT: "Float64", ARRAY: "Array", OBJECT: "Object"}
_I64 = (-(1 << 63), (1 << 63) - 1)


@dataclass
class Extracted:
    """Per-row kinds and values (``ints``/``floats`` where the kind says so; strings either as
    byte ranges of ``data`` or, on the general path, a list)."""
    kinds: np.ndarray
    ints: np.ndarray
    floats: np.ndarray
    starts: np.ndarray | None = None
    lengths: np.ndarray | None = None
    data: np.ndarray | None = None
    strings: list | None = None

    def __len__(self) -> int:
        return len(self.kinds)

    def string_array(self, mask: np.ndarray) -> pa.Array:
        """The strings of rows ``mask`` (others null) as a ``string`` array."""
        if self.strings is not None:
            return pa.array([s if m else None for s, m in zip(self.strings, mask)], pa.string())
        body, offsets = gather(self.data, self.starts, self.lengths, mask.astype(np.uint8))
        validity = pa.array(mask).buffers()[1] if not mask.all() else None
        return pa.Array.from_buffers(pa.string(), len(mask), [validity, pa.py_buffer(offsets),
                                                               pa.py_buffer(body)],
                                     int((~mask).sum()))


def simple_steps(path: str):
    """The path as (is_index, member name bytes, index) steps when it has only member names
    and single array indices, else None."""
    out = []
    for step in parse_path(path):
        if isinstance(step, Member) and step.name is not None:
            out.append((0, step.name.encode("utf-8", "backslashreplace"), 0))
        elif isinstance(step, Elements) and step.selectors is not None and len(step.selectors) == 1:
            lo, hi = step.selectors[0]
            if lo != hi or lo.from_last:
                return None
            out.append((1, b"", lo.value))
        else:
            return None
    return out


def _buffers(docs: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes, int64 offsets, validity as uint8) of a binary / large binary array."""
    n, off = len(docs), docs.offset
    wide = pa.types.is_large_binary(docs.type)
    bufs = docs.buffers()
    offs = np.frombuffer(bufs[1], np.int64 if wide else np.int32, n + 1, off * (8 if wide else 4))
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    valid = np.ones(n, np.uint8) if not docs.null_count else \
        np.asarray(docs.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8)
    return data, offs.astype(np.int64), valid


def _classify(v) -> tuple[int, object]:
    if v is None:
        return NULL, None
    if v is True:
        return TRUE, None
    if v is False:
        return FALSE, None
    if isinstance(v, str):
        return STRING, v
    if isinstance(v, int):
        return (INT, v) if _I64[0] <= v <= _I64[1] else (FLOAT, float(v))
    if isinstance(v, float):
        return FLOAT, v
    return (ARRAY if isinstance(v, list) else OBJECT), None


def _general(docs: pa.Array, steps: tuple) -> Extracted:
    n = len(docs)
    kinds = np.zeros(n, np.int8)
    ints = np.zeros(n, np.int64)
    floats = np.zeros(n, np.float64)
    strings = [None] * n
    for i, doc in enumerate(docs.to_pylist()):
        if doc is None:
            continue
        found = select(steps, loads(doc))
        if not found:
            continue
        kind, value = (ARRAY, None) if len(found) > 1 else _classify(found[0])
        kinds[i] = kind
        if kind == INT:
            ints[i] = value
        elif kind == FLOAT:
            floats[i] = value
        elif kind == STRING:
            strings[i] = value
    return Extracted(kinds, ints, floats, strings=strings)


def extract_path(docs: pa.Array, path: str, where: str | None = None) -> Extracted:
    """The value at ``path`` of every JSONB document of ``docs`` (binary or large binary; a
    chunked array is combined). A malformed document is a CorruptFileError naming ``where``."""
    if isinstance(docs, pa.ChunkedArray):
        docs = docs.combine_chunks() if docs.num_chunks else pa.array([], pa.large_binary())
    if isinstance(docs, pa.ExtensionArray):
        docs = docs.storage
    steps = simple_steps(path)
    if steps is None:
        return _general(docs, parse_path(path))
    data, offsets, valid = _buffers(docs)
    kinds, ints, floats, starts, lengths, bad = extract(
        data, offsets, valid, np.array([s[0] for s in steps], np.int8), [s[1] for s in steps],
        np.array([s[2] for s in steps], np.int64))
    if bad >= 0:
        raise CorruptFileError(f"invalid JSONB value in row {bad}", where)
    return Extracted(kinds, ints, floats, starts, lengths, data)
