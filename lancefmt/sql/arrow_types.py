"""Arrow type names as DataFusion's ``arrow_cast(expr, 'Type')`` reads them.

The names are arrow-rs' ``DataType`` display: ``Int64``, ``Utf8``, ``LargeBinary``,
``FixedSizeBinary(16)``, ``Timestamp(Nanosecond, None)`` or ``Timestamp(ns)``,
``Timestamp(µs, "UTC")``, ``Decimal128(10, 2)``, ``List(Int64)`` / ``List(nullable Int64)``,
``FixedSizeList(2, Float32)`` / ``FixedSizeList(2 x Float32)``, ``Dictionary(Int32, Utf8)``...
A name it does not know is refused with DataFusion's message.
"""
from __future__ import annotations

import re

import pyarrow as pa

from ..errors import InvalidArgumentError

_SIMPLE = {
    "Null": pa.null(), "Boolean": pa.bool_(), "Int8": pa.int8(), "Int16": pa.int16(),
    "Int32": pa.int32(), "Int64": pa.int64(), "UInt8": pa.uint8(), "UInt16": pa.uint16(),
    "UInt32": pa.uint32(), "UInt64": pa.uint64(), "Float16": pa.float16(),
    "Float32": pa.float32(), "Float64": pa.float64(), "Utf8": pa.string(),
    "LargeUtf8": pa.large_string(), "Utf8View": pa.string_view(), "Binary": pa.binary(),
    "LargeBinary": pa.large_binary(), "BinaryView": pa.binary_view(), "Date32": pa.date32(),
    "Date64": pa.date64(),
}
_UNITS = {"Second": "s", "Millisecond": "ms", "Microsecond": "us", "Nanosecond": "ns",
          "s": "s", "ms": "ms", "µs": "us", "us": "us", "ns": "ns"}
_INTERVALS = {"MonthDayNano": pa.month_day_nano_interval()}
_TOKEN = re.compile(r'\s*(?:(?P<str>"[^"]*")|(?P<word>[A-Za-zµ_][A-Za-z0-9µ_]*)|(?P<num>\d+)|(?P<sym>[(),]))')


class ArrowTypeNameError(InvalidArgumentError):
    """An ``arrow_cast`` type name DataFusion would refuse."""


def _tokens(text: str) -> list:
    out, pos = [], 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(text[pos:])
        out.append(m.group(m.lastgroup) if m.lastgroup != "str" else m.group("str"))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want=None):
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise ValueError(f"expected {want!r}")
        self.i += 1
        return tok

    def number(self) -> int:
        tok = self.take()
        if not tok.isdigit():
            raise ValueError(tok)
        return int(tok)

    def unit(self) -> str:
        tok = self.take()
        if tok not in _UNITS:
            raise ValueError(tok)
        return _UNITS[tok]

    def timezone(self):
        tok = self.take()
        if tok == "None":
            return None
        if tok == "Some":
            self.take("(")
            tz = self.take()
            self.take(")")
            return tz.strip('"')
        if tok.startswith('"'):
            return tok.strip('"')
        raise ValueError(tok)

    def item(self) -> pa.DataType:
        if self.peek() == "nullable":  # List(nullable Int64): arrow-rs' newer display
            self.take()
        return self.type()

    def type(self) -> pa.DataType:
        name = self.take()
        if name in _SIMPLE:
            return _SIMPLE[name]
        self.take("(")
        if name == "FixedSizeBinary":
            out = pa.binary(self.number())
        elif name == "Timestamp":
            unit = self.unit()
            tz = None
            if self.peek() == ",":
                self.take(",")
                tz = self.timezone()
            out = pa.timestamp(unit, tz)
        elif name == "Time32":
            out = pa.time32(self.unit())
        elif name == "Time64":
            out = pa.time64(self.unit())
        elif name == "Duration":
            out = pa.duration(self.unit())
        elif name in ("Decimal128", "Decimal256"):
            p = self.number()
            self.take(",")
            s = self.number()
            out = (pa.decimal128 if name == "Decimal128" else pa.decimal256)(p, s)
        elif name in ("List", "LargeList"):
            out = (pa.list_ if name == "List" else pa.large_list)(self.item())
        elif name == "FixedSizeList":
            n = self.number()
            if self.peek() == ",":
                self.take(",")
            else:
                self.take("x")
            out = pa.list_(self.item(), n)
        elif name == "Dictionary":
            key = self.type()
            self.take(",")
            out = pa.dictionary(key, self.type())
        elif name == "Interval":
            kind = self.take()
            if kind not in _INTERVALS:
                raise ValueError(kind)
            out = _INTERVALS[kind]
        else:
            raise ValueError(name)
        self.take(")")
        return out


def parse_arrow_type(text: str) -> pa.DataType:
    """The Arrow type named ``text`` (see module docstring)."""
    try:
        p = _Parser(text)
        out = p.type()
        if p.peek() is not None:
            raise ValueError(p.peek())
        return out
    except (ValueError, TypeError, pa.ArrowInvalid):
        raise ArrowTypeNameError(
            f"Unsupported type '{text}'. Must be a supported arrow type name such as 'Int32' or "
            f"'Timestamp(ns)'") from None
