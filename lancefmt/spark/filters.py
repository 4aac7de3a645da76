"""Spark pushed filters (``pyspark.sql.datasource.Filter``, Spark 4.1+) -> pyarrow expressions.

Spark hands a conjunction of simple filters to ``DataSourceReader.pushFilters``. The ones this
module can translate are applied inside the fragment scan (and counted as pushed); the rest are
returned to Spark, which evaluates them after the scan. Translation is deterministic, as Spark
requires (planning replays it in fresh processes).
"""
from __future__ import annotations

import datetime as _dt
import decimal
from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc


def _field(attribute, schema: pa.Schema):
    """pc.field for a Spark ColumnPath, or None if it does not name a column of ``schema``."""
    if not attribute:
        return None, None
    t = schema
    for i, part in enumerate(attribute):
        if isinstance(t, pa.Schema):
            idx = t.get_field_index(part)
            if idx < 0:
                return None, None
            t = t.field(idx).type
        elif pa.types.is_struct(t):
            idx = t.get_field_index(part)
            if idx < 0:
                return None, None
            t = t.field(idx).type
        else:
            return None, None
    return (pc.field(*attribute) if len(attribute) > 1 else pc.field(attribute[0])), t


_SUPPORTED_VALUES = (bool, int, float, str, bytes, decimal.Decimal, _dt.date, _dt.datetime)


def _scalar(value, arrow_type):
    if value is None or not isinstance(value, _SUPPORTED_VALUES):
        return None
    try:
        return pa.scalar(value, type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None


def filter_to_expression(f, schema: pa.Schema) -> Optional[pc.Expression]:
    """The expression for one Spark filter, or None when it cannot be pushed."""
    name = type(f).__name__
    if name == "Not":
        inner = filter_to_expression(f.child, schema)
        return None if inner is None else ~inner
    field, arrow_type = _field(getattr(f, "attribute", None), schema)
    if field is None:
        return None
    if name == "IsNull":
        return field.is_null()
    if name == "IsNotNull":
        return field.is_valid()
    if name in ("StringStartsWith", "StringEndsWith", "StringContains"):
        if not (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)) \
                or not isinstance(f.value, str):
            return None
        fn = {"StringStartsWith": "starts_with", "StringEndsWith": "ends_with",
              "StringContains": "match_substring"}[name]
        return pc.Expression._call(fn, [field], pc.MatchSubstringOptions(f.value))
    if name == "In":
        values = [_scalar(v, arrow_type) for v in f.value if v is not None]
        if any(v is None for v in values):
            return None
        return field.isin(pa.array([v.as_py() for v in values], type=arrow_type))
    value = _scalar(f.value, arrow_type)
    if value is None:
        return None
    lit = pc.scalar(value)
    if name == "EqualTo":
        return field == lit
    if name == "EqualNullSafe":  # value is never NULL here (NULL literals are not pushed)
        return pc.Expression._call("coalesce", [field == lit, pc.scalar(False)])
    if name == "GreaterThan":
        return field > lit
    if name == "GreaterThanOrEqual":
        return field >= lit
    if name == "LessThan":
        return field < lit
    if name == "LessThanOrEqual":
        return field <= lit
    return None


def split_filters(filters, schema: pa.Schema):
    """(combined expression of the translatable filters or None, the filters left for Spark)."""
    pushed = None
    rejected = []
    for f in filters:
        e = filter_to_expression(f, schema)
        if e is None:
            rejected.append(f)
        else:
            pushed = e if pushed is None else (pushed & e)
    return pushed, rejected


def filter_to_term(f, schema: pa.Schema):
    """The index-answerable form of one Spark filter (a ``lancefmt.sql.sargable`` tree) or
    OTHER: the same values the scan compares, so an index answers what the filter keeps."""
    from ..sql.sargable import OTHER, Contains, Equals, IsIn, IsNull, Negate, Range, Term

    name = type(f).__name__
    if name == "Not":
        inner = filter_to_term(f.child, schema)
        return OTHER if inner is OTHER else Negate(inner)
    attribute = getattr(f, "attribute", None)
    field, arrow_type = _field(attribute, schema)
    if field is None:
        return OTHER
    column = ".".join(attribute)
    if name == "IsNull":
        return Term(column, IsNull())
    if name == "IsNotNull":
        return Negate(Term(column, IsNull()))
    if name == "StringContains" and isinstance(f.value, str) and pa.types.is_string(arrow_type):
        return Term(column, Contains(f.value))
    if name == "In":
        values = [_scalar(v, arrow_type) for v in f.value if v is not None]
        if any(v is None for v in values):
            return OTHER
        return Term(column, IsIn(tuple(v.as_py() for v in values), arrow_type))
    value = _scalar(getattr(f, "value", None), arrow_type)
    if value is None or (isinstance(value.as_py(), float) and value.as_py() != value.as_py()):
        return OTHER
    v = value.as_py()
    if name in ("EqualTo", "EqualNullSafe"):
        return Term(column, Equals(v, arrow_type))
    bounds = {"GreaterThan": (v, False, None, False), "GreaterThanOrEqual": (v, True, None, False),
              "LessThan": (None, False, v, False), "LessThanOrEqual": (None, False, v, True)}
    if name in bounds:
        return Term(column, Range(*bounds[name], arrow_type))
    return OTHER
