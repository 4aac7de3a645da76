"""The ``json_*`` SQL functions pylance's filters and projections know, one JSONB document at
a time (``None`` in, ``None`` out). :mod:`lancefmt.sql.json_functions` maps them over Arrow
arrays.

Their answers are pylance 14's, including its coercions (``json_get_int`` rounds floats and
parses numeric strings, ``json_get_bool`` reads "true"/"yes"/"false"/"no" in any case) and
its errors: a value that cannot be converted fails the whole query, as in pylance.
"""
from __future__ import annotations

import math
import re

from ..errors import InvalidArgumentError
from .codec import dumps, format_float, loads, to_text
from .path import parse_path, select

_INDEX = re.compile(r"\+?[0-9]+")
_RUST_INT = re.compile(r"[+-]?[0-9]+")
_RUST_FLOAT = re.compile(r"[+-]?(?:inf|infinity|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)",
                         re.IGNORECASE)
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


class JsonCastError(InvalidArgumentError):
    """A ``json_get_*`` value that does not convert (pylance: "InvalidCast")."""


def _cast_error(what: str) -> JsonCastError:
    return JsonCastError(f"Failed to convert to {what}: InvalidCast")


# -- selection --------------------------------------------------------------------------------


def _member(value, key: str):
    """``json_get``'s lookup: a key of digits is an array index, anything else an object key."""
    if _INDEX.fullmatch(key):
        i = int(key)
        if isinstance(value, list) and i < len(value):
            return True, value[i]
        return False, None
    if isinstance(value, dict) and key in value:
        return True, value[key]
    return False, None


def json_extract(doc: bytes, path: str):
    """The JSON text of what ``path`` selects (several values: a JSON array of them)."""
    found = select(parse_path(path), loads(doc))
    if not found:
        return None
    return to_text(found[0] if len(found) == 1 else found)


def json_exists(doc: bytes, path: str) -> bool:
    return bool(select(parse_path(path), loads(doc)))


def json_get(doc: bytes, key: str):
    """The JSONB document of a member (by name) or element (by index), or None."""
    ok, value = _member(loads(doc), key)
    return dumps(value) if ok else None


def _got(doc: bytes, key: str):
    ok, value = _member(loads(doc), key)
    return value if ok else None


def json_get_string(doc: bytes, key: str):
    value = _got(doc, key)
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    raise _cast_error("string")


def _round_half_away(x: float) -> int:
    whole = math.floor(abs(x))
    if abs(x) - whole >= 0.5:
        whole += 1
    return int(math.copysign(whole, x)) if x < 0 else int(whole)


def _float_to_i64(x: float):
    if math.isnan(x) or math.isinf(x):
        return None
    r = _round_half_away(x)
    return r if _I64_MIN <= r <= _I64_MAX else None


def _parse_f64(s: str):
    return float(s) if _RUST_FLOAT.fullmatch(s) else None


def json_get_int(doc: bytes, key: str):
    value = _got(doc, key)
    if value is None:
        return None
    out = None
    if isinstance(value, bool):
        out = int(value)
    elif isinstance(value, int):
        out = value if _I64_MIN <= value <= _I64_MAX else None
    elif isinstance(value, float):
        out = _float_to_i64(value)
    elif isinstance(value, str):
        if _RUST_INT.fullmatch(value) and _I64_MIN <= int(value) <= _I64_MAX:
            out = int(value)
        else:
            f = _parse_f64(value)
            out = None if f is None else _float_to_i64(f)
    if out is None:
        raise _cast_error("integer")
    return out


def json_get_float(doc: bytes, key: str):
    value = _got(doc, key)
    if value is None:
        return None
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):
        f = _parse_f64(value)
        if f is not None:
            return f
    raise _cast_error("float")


def json_get_bool(doc: bytes, key: str):
    value = _got(doc, key)
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.lower()
        if word in ("true", "yes"):
            return True
        if word in ("false", "no"):
            return False
    raise _cast_error("boolean")


def json_array_contains(doc: bytes, path: str, needle: str) -> bool:
    """True when an array the path selects has an element printing as ``needle`` (or as the
    JSON string of ``needle``)."""
    quoted = f'"{needle}"'
    for value in select(parse_path(path), loads(doc)):
        if isinstance(value, list):
            for element in value:
                text = to_text(element)
                if text == needle or text == quoted:
                    return True
    return False


def json_array_length(doc: bytes, path: str):
    """Elements of the first value the path selects (0 when it is not an array); None when
    the path selects nothing."""
    found = select(parse_path(path), loads(doc))
    if not found:
        return None
    return len(found[0]) if isinstance(found[0], list) else 0


FUNCTIONS = {
    # name: (implementation, number of arguments, Arrow result type name)
    "json_extract": (json_extract, 2, "string"),
    "json_exists": (json_exists, 2, "bool"),
    "json_get": (json_get, 2, "large_binary"),
    "json_get_string": (json_get_string, 2, "string"),
    "json_get_int": (json_get_int, 2, "int64"),
    "json_get_float": (json_get_float, 2, "float64"),
    "json_get_bool": (json_get_bool, 2, "bool"),
    "json_array_contains": (json_array_contains, 3, "bool"),
    "json_array_length": (json_array_length, 2, "int64"),
}
