"""SQL literals -> Arrow scalars of the type of the expression they meet.

DataFusion gives an untyped literal the type of the column it is compared with, and refuses a
literal that cannot take that type (``s > 1`` on a string column). lancefmt does the same, and
also accepts ISO strings for date/timestamp columns (a convenience pylance refuses).
"""
from __future__ import annotations

import datetime as _dt
import decimal

import pyarrow as pa


class Literal:
    """A literal still waiting to learn its type from what it meets; ``type`` is set for typed
    literals (``DATE '...'``, ``X'..'``)."""

    __slots__ = ("value", "type")

    def __init__(self, value, type: pa.DataType | None = None):
        self.value = value
        self.type = type

    def __repr__(self):
        return f"Literal({self.value!r})"

    def default_scalar(self) -> pa.Scalar:
        """The scalar when nothing tells the type (``1 = 1``, a projection of a constant)."""
        if self.type is not None:
            return pa.scalar(self.value, type=self.type)
        return pa.scalar(self.value)


class LiteralTypeError(Exception):
    """The literal cannot take the type (caller names the column)."""


def _is_string(t):
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_binary(t):
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) \
        or pa.types.is_binary_view(t)


def coerce(lit: Literal, target: pa.DataType | None) -> pa.Scalar:
    """``lit`` as a scalar of ``target`` (None: its own type). Raises LiteralTypeError."""
    v = lit.value
    if target is None or isinstance(target, pa.BaseExtensionType):
        return lit.default_scalar()
    if v is None:
        return pa.scalar(None, type=target)
    try:
        if isinstance(v, bool):
            if pa.types.is_boolean(target):
                return pa.scalar(v, type=target)
        elif pa.types.is_integer(target):
            if isinstance(v, int):
                try:
                    return pa.scalar(v, type=target)
                except (pa.ArrowInvalid, OverflowError):
                    return pa.scalar(v)  # out of the column's range: compare in a wider type
            if isinstance(v, (float, decimal.Decimal)):
                return pa.scalar(float(v))
        elif pa.types.is_floating(target):
            if isinstance(v, (int, float, decimal.Decimal)):
                return pa.scalar(float(v), type=target)
        elif pa.types.is_decimal(target):
            if isinstance(v, (int, float, decimal.Decimal)):
                d = decimal.Decimal(repr(v)) if isinstance(v, float) else decimal.Decimal(v)
                try:
                    return pa.scalar(d, type=target)
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    return pa.scalar(d)
        elif _is_string(target):
            if isinstance(v, str):
                return pa.scalar(v, type=target)
        elif _is_binary(target):
            if isinstance(v, (bytes, str)):
                b = v.encode() if isinstance(v, str) else v
                return pa.scalar(b, type=pa.binary() if pa.types.is_fixed_size_binary(target) else target)
        elif pa.types.is_date(target):
            if isinstance(v, str):
                v = _dt.date.fromisoformat(v)
            if isinstance(v, _dt.datetime):
                v = v.date()
            if isinstance(v, _dt.date):
                return pa.scalar(v, type=target)
        elif pa.types.is_timestamp(target):
            if isinstance(v, str):
                v = parse_timestamp(v)
            if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
                v = _dt.datetime(v.year, v.month, v.day)
            if isinstance(v, _dt.datetime):
                return pa.scalar(v, type=target)
        elif pa.types.is_boolean(target):
            pass
        elif lit.type is not None:
            return lit.default_scalar()
        else:
            return pa.scalar(v)
    except (ValueError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        pass
    raise LiteralTypeError(f"{v!r} cannot be converted to {target}")


def parse_timestamp(text: str) -> _dt.datetime:
    s = text.strip().replace(" ", "T", 1)
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    return _dt.datetime.fromisoformat(s)


def number(text: str):
    """An SQL numeric literal: int when it has no point/exponent, else float."""
    if text.isdigit():
        return int(text)
    return float(text)
