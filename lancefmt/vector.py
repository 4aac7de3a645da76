"""pylance's ``lance.vector.vec_to_table``: vectors as a table with a
``fixed_size_list<float32>`` column (what vector workloads write; lancefmt builds no vector
indexes)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .errors import InvalidArgumentError, NotSupportedError

__all__ = ["vec_to_table"]


def _vectors(values, ndim, check_ndim: bool) -> pa.FixedSizeListArray:
    rows = [np.asarray(v, dtype=np.float32).reshape(-1) for v in values]
    if ndim is None:
        ndim = len(rows[0]) if rows else 0
    if check_ndim and any(len(r) != ndim for r in rows):
        raise InvalidArgumentError(f"every vector must have {ndim} dimensions")
    flat = np.concatenate(rows) if rows else np.empty(0, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), int(ndim))


def vec_to_table(data, names=None, ndim: int | None = None, check_ndim: bool = True) -> pa.Table:
    """dict -> ``id`` (its keys) and ``vector`` columns; list / 2-d ndarray -> ``vector``."""
    if isinstance(data, dict):
        names = list(names) if names is not None else ["id", "vector"]
        if len(names) != 2:
            raise InvalidArgumentError("for a dict, names must be 2 strings")
        return pa.table([pa.array(list(data.keys())),
                         _vectors(list(data.values()), ndim, check_ndim)], names=names)
    if isinstance(data, (list, np.ndarray)):
        names = [names] if isinstance(names, str) else list(names or ["vector"])
        if len(names) != 1:
            raise InvalidArgumentError(f"names cannot be more than 1, got {len(names)}")
        return pa.table([_vectors(list(data), ndim, check_ndim)], names=names)
    raise NotSupportedError(f"data must be a dict, list or ndarray, got {type(data).__name__}")
