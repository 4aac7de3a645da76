"""``json_extract``, ``json_exists``, ``json_get``, ``json_get_string/int/float/bool``,
``json_array_contains`` and ``json_array_length`` as pyarrow compute functions, so filters
and projections using them stay ``pc.Expression`` s evaluated inside the scan.

Each is a scalar UDF over a JSON column as stored (JSONB ``large_binary``) and string
arguments (a literal or a column); the per-document semantics are
:mod:`lancefmt.jsonb.functions`'. A path or key literal is parsed once per batch.
"""
from __future__ import annotations

import threading

import pyarrow as pa
import pyarrow.compute as pc

from ..jsonb.functions import FUNCTIONS

_REGISTERED: set = set()
_LOCK = threading.Lock()
_ARROW_TYPES = {"string": pa.string(), "bool": pa.bool_(), "large_binary": pa.large_binary(),
                "int64": pa.int64(), "float64": pa.float64()}


def _values(arg, n: int) -> list:
    if isinstance(arg, pa.Scalar):
        return [arg.as_py()] * n
    return arg.to_pylist()


def _make(impl, result_type: pa.DataType):
    def fn(ctx, docs, *args):
        n = len(docs)
        columns = [_values(a, n) for a in args]
        out = []
        for i, doc in enumerate(docs.to_pylist()):
            params = [c[i] for c in columns]
            out.append(None if doc is None or any(p is None for p in params)
                       else impl(doc, *params))
        return pa.array(out, type=result_type)
    return fn


def json_function(name: str) -> str:
    """The name of the registered compute function for SQL function ``name`` (one of
    ``FUNCTIONS``); its arguments are (large_binary, string[, string])."""
    impl, arity, result = FUNCTIONS[name]
    registered = f"lancefmt_{name}"
    with _LOCK:
        if registered not in _REGISTERED:
            in_types = {"doc": pa.large_binary()}
            for i in range(1, arity):
                in_types[f"arg{i}"] = pa.string()
            pc.register_scalar_function(
                _make(impl, _ARROW_TYPES[result]), registered,
                {"summary": name, "description": f"pylance's {name} (lancefmt SQL)"},
                in_types, _ARROW_TYPES[result])
            _REGISTERED.add(registered)
    return registered


def is_json_function(name: str) -> bool:
    return name in FUNCTIONS


def json_arity(name: str) -> int:
    return FUNCTIONS[name][1]
