"""JSON text <-> JSONB bytes, as pylance writes and prints them.

A JSONB document is a container: a big-endian u32 header (type in the top 3 bits: array
``0x80000000``, object ``0x40000000``, scalar ``0x20000000``; element count below), then one
u32 *JEntry* per element (type in bits 28-30: null, string, number, false, true, container;
payload length in the low 28 bits), then the payloads in order. An object lists its keys'
JEntries, then its values', then the key bytes, then the value payloads; keys are sorted by
their UTF-8 bytes and unique. A scalar document is a scalar header and one JEntry. Numbers
are one tag byte (zero, NaN, +inf, -inf, int, uint, float) and the shortest big-endian
integer (1, 2, 4 or 8 bytes) or an f64.

Text is parsed with the standard library's JSON parser (plus NaN/Infinity, raw control
characters in strings and an empty document as null, which pylance's parser accepts too);
an integer that fits u64 (or i64 when negative) stays an integer, any other number is an f64.
Printing follows pylance: compact, keys in stored order, floats as the shortest round-trip
digits in positional notation from 1e-5 up to 1e16 and ``1.5e+20`` style outside, non-finite
numbers as ``null``.
"""
from __future__ import annotations

import decimal
import json
import math
import struct

import pyarrow as pa

from ..errors import CorruptFileError, InvalidInputError

LANCE_JSON_EXT_NAME = "lance.json"
ARROW_JSON_EXT_NAME = "arrow.json"

ARRAY = 0x80000000
OBJECT = 0x40000000
SCALAR = 0x20000000
HEADER_TYPE_MASK = 0xE0000000
HEADER_LEN_MASK = 0x1FFFFFFF

NULL_TAG = 0x00000000
STRING_TAG = 0x10000000
NUMBER_TAG = 0x20000000
FALSE_TAG = 0x30000000
TRUE_TAG = 0x40000000
CONTAINER_TAG = 0x50000000
JENTRY_TYPE_MASK = 0x70000000
JENTRY_LEN_MASK = 0x0FFFFFFF

NUMBER_ZERO = 0x00
NUMBER_NAN = 0x10
NUMBER_INF = 0x20
NUMBER_NEG_INF = 0x30
NUMBER_INT = 0x40
NUMBER_UINT = 0x50
NUMBER_FLOAT = 0x60

_U64_MAX = (1 << 64) - 1
_I64_MIN = -(1 << 63)
_BE_U32 = struct.Struct(">I")
_BE_F64 = struct.Struct(">d")


# ---------------------------------------------------------------------------------------------
# text -> Python values


class JsonInputError(InvalidInputError):
    """A value of an ``arrow.json`` column is not JSON (pylance: "Failed to encode JSON")."""


def _parse_int(text: str):
    v = int(text)
    return v if _I64_MIN <= v <= _U64_MAX else float(text)


def _unique_keys(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise JsonInputError(f"Failed to encode JSON: duplicate object attribute {k!r}")
        out[k] = v
    return out


def parse(text: str):
    """The Python value of a JSON document (dicts, lists, str, int, float, bool, None)."""
    if not text.strip():
        return None
    try:
        return json.loads(text, parse_int=_parse_int, object_pairs_hook=_unique_keys,
                          strict=False)
    except json.JSONDecodeError as e:
        raise JsonInputError(f"Failed to encode JSON: {e.msg}, pos {e.pos}") from None
    except RecursionError:
        raise JsonInputError("Failed to encode JSON: nested too deeply") from None


# ---------------------------------------------------------------------------------------------
# Python values -> JSONB


def _number_payload(v) -> bytes:
    if isinstance(v, float):
        if math.isnan(v):
            return bytes([NUMBER_NAN])
        if math.isinf(v):
            return bytes([NUMBER_INF if v > 0 else NUMBER_NEG_INF])
        return bytes([NUMBER_FLOAT]) + _BE_F64.pack(v)
    if v == 0:
        return bytes([NUMBER_ZERO])
    if v > 0:
        if v > _U64_MAX:
            return _number_payload(float(v))
        width = 1 if v <= 0xFF else 2 if v <= 0xFFFF else 4 if v <= 0xFFFFFFFF else 8
        return bytes([NUMBER_UINT]) + v.to_bytes(width, "big")
    if v < _I64_MIN:
        return _number_payload(float(v))
    width = 1 if v >= -0x80 else 2 if v >= -0x8000 else 4 if v >= -0x80000000 else 8
    return bytes([NUMBER_INT]) + v.to_bytes(width, "big", signed=True)


def _utf8(s: str) -> bytes:
    # a lone surrogate (from a "\ud800" escape) is kept as its escape text, as pylance does
    return s.encode("utf-8", "backslashreplace")


def _entry(v) -> tuple[int, bytes]:
    """(JEntry type, payload) of one value inside a container."""
    if v is None:
        return NULL_TAG, b""
    if v is True:
        return TRUE_TAG, b""
    if v is False:
        return FALSE_TAG, b""
    if isinstance(v, str):
        return STRING_TAG, _utf8(v)
    if isinstance(v, (int, float)):
        return NUMBER_TAG, _number_payload(v)
    if isinstance(v, (list, tuple, dict)):
        return CONTAINER_TAG, _container(v)
    raise JsonInputError(f"Failed to encode JSON: {type(v).__name__} is not a JSON value")


def _jentry(tag: int, payload: bytes) -> bytes:
    if len(payload) > JENTRY_LEN_MASK:
        raise JsonInputError("Failed to encode JSON: a value is larger than 256 MiB")
    return _BE_U32.pack(tag | len(payload))


def _header(kind: int, n: int) -> bytes:
    if n > HEADER_LEN_MASK:
        raise JsonInputError("Failed to encode JSON: a container has too many elements")
    return _BE_U32.pack(kind | n)


def _container(v) -> bytes:
    if isinstance(v, dict):
        keys = sorted(v, key=_utf8)
        entries = [_entry(v[k]) for k in keys]
        key_bytes = [_utf8(k) for k in keys]
        parts = [_header(OBJECT, len(keys))]
        parts += [_jentry(STRING_TAG, k) for k in key_bytes]
        parts += [_jentry(t, p) for t, p in entries]
        parts += key_bytes
        parts += [p for _, p in entries]
        return b"".join(parts)
    entries = [_entry(x) for x in v]
    parts = [_header(ARRAY, len(entries))]
    parts += [_jentry(t, p) for t, p in entries]
    parts += [p for _, p in entries]
    return b"".join(parts)


def dumps(value) -> bytes:
    """The JSONB document of a Python value."""
    if isinstance(value, (list, tuple, dict)):
        return _container(value)
    tag, payload = _entry(value)
    return _BE_U32.pack(SCALAR) + _jentry(tag, payload) + payload


def encode(text: str) -> bytes:
    """The JSONB document of one JSON text, as pylance stores it."""
    return dumps(parse(text))


# ---------------------------------------------------------------------------------------------
# JSONB -> Python values (every length checked: the bytes come from storage)


def _corrupt(why: str) -> CorruptFileError:
    return CorruptFileError(f"invalid JSONB value: {why}")


def _u32(buf, pos: int, end: int) -> int:
    if pos + 4 > end:
        raise _corrupt("truncated")
    return _BE_U32.unpack_from(buf, pos)[0]


def _number(buf, start: int, end: int):
    if end <= start:
        raise _corrupt("empty number")
    tag, n = buf[start], end - start - 1
    if tag == NUMBER_ZERO and n == 0:
        return 0
    if tag == NUMBER_NAN and n == 0:
        return math.nan
    if tag == NUMBER_INF and n == 0:
        return math.inf
    if tag == NUMBER_NEG_INF and n == 0:
        return -math.inf
    if tag in (NUMBER_INT, NUMBER_UINT) and n in (1, 2, 4, 8):
        return int.from_bytes(buf[start + 1:end], "big", signed=tag == NUMBER_INT)
    if tag == NUMBER_FLOAT and n == 8:
        return _BE_F64.unpack_from(buf, start + 1)[0]
    raise _corrupt(f"number tag {tag:#x} with {n} bytes")


def _text(buf, start: int, end: int) -> str:
    return bytes(buf[start:end]).decode("utf-8", "replace")


def _scalar(tag: int, buf, start: int, end: int, depth: int):
    if tag == NULL_TAG:
        return None
    if tag == TRUE_TAG:
        return True
    if tag == FALSE_TAG:
        return False
    if tag == STRING_TAG:
        return _text(buf, start, end)
    if tag == NUMBER_TAG:
        return _number(buf, start, end)
    if tag == CONTAINER_TAG:
        return _load(buf, start, end, depth + 1)
    raise _corrupt(f"JEntry type {tag:#x}")


def _load(buf, start: int, end: int, depth: int = 0):
    if depth > 512:
        raise _corrupt("nested too deeply")
    header = _u32(buf, start, end)
    kind, n = header & HEADER_TYPE_MASK, header & HEADER_LEN_MASK
    pos = start + 4
    if kind == SCALAR:
        entry = _u32(buf, pos, end)
        length = entry & JENTRY_LEN_MASK
        if pos + 4 + length > end:
            raise _corrupt("truncated scalar")
        tag = entry & JENTRY_TYPE_MASK
        if tag == CONTAINER_TAG:
            raise _corrupt("a scalar header over a container")
        return _scalar(tag, buf, pos + 4, pos + 4 + length, depth)
    if kind not in (ARRAY, OBJECT):
        raise _corrupt(f"container header {header:#x}")
    count = n * 2 if kind == OBJECT else n
    if pos + 4 * count > end:
        raise _corrupt("truncated JEntries")
    entries = struct.unpack_from(f">{count}I", buf, pos)
    data = pos + 4 * count
    values = []
    for entry in entries:
        length = entry & JENTRY_LEN_MASK
        if data + length > end:
            raise _corrupt("truncated payload")
        values.append(_scalar(entry & JENTRY_TYPE_MASK, buf, data, data + length, depth))
        data += length
    if kind == ARRAY:
        return values
    keys = values[:n]
    if not all(isinstance(k, str) for k in keys):
        raise _corrupt("an object key that is not a string")
    return dict(zip(keys, values[n:]))


def loads(data) -> object:
    """The Python value of one JSONB document (CorruptFileError when it does not decode)."""
    buf = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    return _load(buf, 0, len(buf))


# ---------------------------------------------------------------------------------------------
# Python values -> JSON text (pylance's printing)


def format_float(x: float) -> str:
    """A float as pylance prints it inside JSON (see the module docstring)."""
    if math.isnan(x) or math.isinf(x):
        return "null"
    sign, digit_tuple, exp = decimal.Decimal(repr(x)).as_tuple()
    all_digits = "".join(map(str, digit_tuple))
    digits = all_digits.rstrip("0")
    if not digits:
        return "-0.0" if sign else "0.0"
    sci = len(all_digits) - 1 + exp  # exponent of the first digit; repr is the shortest round trip
    minus = "-" if sign else ""
    if -5 <= sci < 16:
        if sci < 0:
            return f"{minus}0.{'0' * (-sci - 1)}{digits}"
        whole, frac = digits[:sci + 1], digits[sci + 1:]
        whole += "0" * (sci + 1 - len(whole))
        return f"{minus}{whole}.{frac or '0'}"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{minus}{mantissa}e{'+' if sci > 0 else '-'}{abs(sci)}"


def to_text(value) -> str:
    """Compact JSON text of a Python value, as pylance prints a JSONB document."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{to_text(v)}"
                              for k, v in value.items()) + "}"
    return "[" + ",".join(to_text(v) for v in value) + "]"


def decode(data) -> str:
    """The JSON text of one JSONB document, as pylance returns it."""
    return to_text(loads(data))


# ---------------------------------------------------------------------------------------------
# whole arrays


def encode_array(arr) -> pa.Array:
    """JSON strings (``arrow.json``, utf8 or large_utf8, possibly chunked) -> JSONB
    ``large_binary``; nulls stay null."""
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([encode_array(c) for c in arr.chunks], pa.large_binary())
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    return pa.array([None if s is None else encode(s) for s in arr.to_pylist()],
                    pa.large_binary())


def decode_array(arr, out_type: pa.DataType = pa.string()) -> pa.Array:
    """JSONB ``large_binary`` -> JSON strings of ``out_type``; nulls stay null."""
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([decode_array(c, out_type) for c in arr.chunks], out_type)
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    return pa.array([None if b is None else decode(b) for b in arr.to_pylist()], out_type)
