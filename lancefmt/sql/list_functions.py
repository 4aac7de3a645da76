"""``array_has`` / ``array_contains`` / ``array_has_any`` / ``array_has_all`` as pyarrow
compute functions, so filters using them stay ``pc.Expression`` s evaluated inside the scan.

pyarrow has no list-membership kernel; these register one scalar UDF per (list type, needle
type) signature. Each is vectorised: the lists' values are flattened once, compared with the
needle(s) with ``is_in``, and counted per list with ``bincount`` over the parent indices.
A NULL list gives NULL (as DataFusion), an empty list False.
"""
from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_REGISTERED: dict = {}
_LOCK = threading.Lock()


def _hits_per_list(lists: pa.Array, needles: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(distinct needles matched per list, validity) for a list array."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    n = len(lists)
    flat = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    valid = lists.is_valid().to_numpy(zero_copy_only=False)
    if len(flat) == 0 or len(needles) == 0:
        return np.zeros(n, dtype=np.int64), valid
    # which needle each element equals (-1 = none); count distinct needles per list
    which = pc.fill_null(pc.index_in(flat, value_set=needles), -1).to_numpy(
        zero_copy_only=False).astype(np.int64)
    hit = which >= 0
    if not hit.any():
        return np.zeros(n, dtype=np.int64), valid
    pairs = np.unique(parents[hit].astype(np.int64) * (len(needles) + 1) + which[hit])
    counts = np.bincount(pairs // (len(needles) + 1), minlength=n)
    return counts, valid


def _result(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    return pa.array(values, type=pa.bool_(), mask=~valid if not valid.all() else None)


def _needle_array(scalar) -> pa.Array:
    if isinstance(scalar, pa.ListScalar) or isinstance(scalar, pa.LargeListScalar):
        return scalar.values if scalar.values is not None else pa.array([])
    return pa.array([scalar.as_py()], type=scalar.type)


def _make(kind: str):
    def fn(ctx, lists, needles):
        if isinstance(needles, pa.Array):  # a per-row needle: evaluate row by row
            out = []
            for lst, nd in zip(lists.to_pylist(), needles.to_pylist()):
                if lst is None:
                    out.append(None)
                    continue
                want = nd if isinstance(nd, list) else [nd]
                s = set(lst)
                out.append(any(w in s for w in want) if kind != "all" else all(w in s for w in want))
            return pa.array(out, type=pa.bool_())
        wanted = _needle_array(needles)
        wanted = pc.unique(wanted.drop_null())
        counts, valid = _hits_per_list(lists, wanted)
        if kind == "all":
            return _result(counts >= len(wanted), valid)
        return _result(counts > 0, valid)
    return fn


def list_function(kind: str, list_type: pa.DataType, needle_type: pa.DataType) -> str:
    """The name of the registered function ``kind`` (``any``: some needle in the list, ``all``:
    every needle) for these argument types."""
    name = f"lancefmt_array_has_{kind}__{list_type}__{needle_type}"
    with _LOCK:
        if name not in _REGISTERED:
            pc.register_scalar_function(
                _make(kind), name,
                {"summary": f"array_has_{kind}", "description": "list membership (lancefmt SQL)"},
                {"lists": list_type, "needles": needle_type}, pa.bool_())
            _REGISTERED[name] = True
    return name
