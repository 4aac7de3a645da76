"""The ``nearest`` argument of a scan, checked as pylance checks it.

``nearest={"column": "vec", "q": q, "k": 10, ...}`` becomes a :class:`VectorQuery`: the
column (found case-insensitively), its vector type, the query vectors and the search options.
``q`` is one vector; for a fixed-size-list column a 2-D array (or a list of vectors) is a batch
of queries, each answered on its own and told apart by a leading ``query_index`` column; for a
multivector column (a list of fixed-size lists) a list of vectors is one multivector query.
Bad values raise pylance's error types with its messages.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError, LanceError
from ...index.vector.distance import as_query, check_metric, parse_metric
from .index_training import column_field

DEFAULT_K = 10
QUERY_INDEX = "query_index"
_KEYS = ("column", "q", "k", "metric", "nprobes", "minimum_nprobes", "maximum_nprobes",
         "refine_factor", "use_index", "ef", "query_parallelism", "approx_mode",
         "distance_range", "search_effort", "distance_type")


class QueryTypeError(LanceError, TypeError):
    """A nearest query of the wrong shape or type (pylance raises TypeError)."""


@dataclass
class VectorQuery:
    column: str                   # as the schema spells it
    field: pa.Field
    value_type: pa.DataType       # the vectors' element type
    dim: int
    multivector: bool             # a list<fixed_size_list> column
    queries: list                 # numpy vectors; several = a batch (or one multivector query)
    batch: bool                   # answer each query alone (query_index column)
    k: int
    metric: str | None            # None: the index's, else the vectors' default
    minimum_nprobes: int = 1
    maximum_nprobes: int | None = None
    refine_factor: int | None = None
    ef: int | None = None
    use_index: bool = True
    distance_range: tuple | None = None

    def query_sets(self) -> list:
        """What is searched, one entry per answer: a list of vectors (one, or a multivector
        query's)."""
        if self.batch:
            return [[q] for q in self.queries]
        return [self.queries]


def _coerce(q):
    """(list of 1-D float arrays, nested): pylance's ``_coerce_query_vector``."""
    if isinstance(q, np.ndarray) and q.ndim == 2:
        return [np.asarray(r, dtype=np.float64) for r in q], True
    if hasattr(q, "__getitem__") and not isinstance(q, (str, bytes, pa.Scalar)) and len(q) and \
            isinstance(q[0], (list, tuple, np.ndarray, pa.Array)):
        rows = [_coerce(r)[0][0] for r in q]
        if len({len(r) for r in rows}) > 1:
            raise InvalidArgumentError(f"All query vectors must have the same length, but got "
                                       f"{len(rows[0])} and {next(len(r) for r in rows if len(r) != len(rows[0]))}")
        return rows, True
    if isinstance(q, pa.Scalar):
        if isinstance(q, pa.ExtensionScalar):
            q = q.value
        if isinstance(q.type, (pa.FixedSizeListType, pa.ListType)):
            q = q.values
    if isinstance(q, (pa.Array, pa.ChunkedArray)):
        t = q.type
        if not (pa.types.is_floating(t) or pa.types.is_integer(t)):
            raise QueryTypeError(f"query vector must be list-like or pa.FloatingPointArray but "
                                 f"received {t}")
        return [q.to_numpy(zero_copy_only=False).astype(np.float64)], False
    try:
        a = np.asarray(q, dtype=np.float64)
    except ValueError as e:  # numpy's own ValueError, as in pylance
        raise InvalidArgumentError(str(e)) from None
    except TypeError:
        raise QueryTypeError(f"Query vectors should be an array of floats, got {type(q)} which "
                             f"we cannot coerce to a float array") from None
    return [a.ravel()], False


def _int(value, name):
    try:
        return int(value)
    except (TypeError, ValueError):
        raise QueryTypeError(f"{name} must be an integer, got {value!r}") from None


def parse_nearest(schema: pa.Schema, nearest: dict) -> VectorQuery:
    """A :class:`VectorQuery` for ``nearest`` over a dataset of ``schema`` (see module
    docstring)."""
    if not isinstance(nearest, dict):
        raise QueryTypeError(f"nearest must be a dict, got {type(nearest).__name__}")
    for key in nearest:
        if key not in _KEYS:
            raise QueryTypeError(f"ScannerBuilder.nearest() got an unexpected keyword argument {key!r}")
    if "column" not in nearest or "q" not in nearest:
        raise QueryTypeError("nearest needs 'column' and 'q'")
    column = nearest["column"]
    try:
        field, path = column_field(schema, str(column))
    except KeyError:
        raise InvalidArgumentError(f"Embedding column {column} is not in the dataset") from None
    if ".".join(path) != str(column):  # pylance finds it, then its search does not
        raise InvalidArgumentError(f"column {column} does not exist in schema")
    t = field.type
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    if pa.types.is_fixed_size_list(t):
        dim, value_type, multivector = t.list_size, t.value_type, False
    elif (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_fixed_size_list(t.value_type):
        dim, value_type, multivector = t.value_type.list_size, t.value_type.value_type, True
    else:
        raise QueryTypeError(f"Query column {column} must be a vector. Got {field.type}.")
    vectors, nested = _coerce(nearest["q"])
    for v in vectors:
        if v.size != dim:
            raise InvalidArgumentError(f"Query vector size {v.size} does not match index column "
                                       f"size {dim}")
    batch = nested and not multivector
    if batch and schema.get_field_index(QUERY_INDEX) >= 0:
        raise InvalidArgumentError(f"batch search needs the output column {QUERY_INDEX!r}, which "
                                   f"the dataset already has")
    k = nearest.get("k")
    k = DEFAULT_K if k is None else _int(k, "k")
    if k <= 0:
        raise InvalidArgumentError(f"Nearest-K must be > 0 but got {k}")
    metric = nearest.get("metric", nearest.get("distance_type"))
    if metric is not None:
        metric = parse_metric(metric)
        check_metric(metric, value_type)
    nprobes = nearest.get("nprobes")
    lo, hi = nearest.get("minimum_nprobes"), nearest.get("maximum_nprobes")
    if nprobes is not None and nearest.get("search_effort") is None:
        nprobes = _int(nprobes, "nprobes")
        if nprobes <= 0:
            raise InvalidArgumentError(f"Nprobes must be > 0 but got {nprobes}")
        lo, hi = nprobes, nprobes
    if lo is not None and _int(lo, "minimum_nprobes") < 0:
        raise InvalidArgumentError(f"Minimum nprobes must be >= 0 but got {lo}")
    if hi is not None and _int(hi, "maximum_nprobes") < 0:
        raise InvalidArgumentError(f"Maximum nprobes must be >= 0 but got {hi}")
    if lo is not None and hi is not None and int(lo) > int(hi):
        raise InvalidArgumentError("minimum_nprobes must be <= maximum_nprobes")
    refine = nearest.get("refine_factor")
    if refine is not None and _int(refine, "refine_factor") < 1:
        raise InvalidArgumentError(f"Refine factor must be 1 or more got {refine}")
    ef = nearest.get("ef")
    if ef is not None and _int(ef, "ef") <= 0:
        raise InvalidArgumentError(f"ef must be > 0 but got {ef}")
    rng = nearest.get("distance_range")
    if rng is not None:
        if len(rng) != 2:
            raise InvalidArgumentError("distance_range must be a tuple of (lower_bound, upper_bound)")
        rng = (None if rng[0] is None else float(rng[0]), None if rng[1] is None else float(rng[1]))
    mode = nearest.get("approx_mode", "normal")
    if mode not in ("fast", "normal", "accurate"):
        raise InvalidArgumentError(f"approx_mode must be one of 'fast', 'normal', or 'accurate', "
                                   f"got {mode!r}")
    return VectorQuery(
        column=".".join(path), field=field, value_type=value_type, dim=dim,
        multivector=multivector, queries=[as_query(v, value_type) for v in vectors], batch=batch,
        k=k, metric=metric, minimum_nprobes=1 if lo is None else int(lo),
        maximum_nprobes=None if hi is None else int(hi),
        refine_factor=None if refine is None else int(refine), ef=None if ef is None else int(ef),
        use_index=bool(nearest.get("use_index", True)), distance_range=rng)
