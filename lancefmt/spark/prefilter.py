"""Conditions of the Spark jobs that the ``lance`` scan can apply itself.

A delete or update condition is Spark SQL (or a ``Column``); Spark evaluates it after the scan
hands it every row. When the condition lies in a small subset whose meaning is the same in
Spark SQL and in Lance's filter language, the scan can skip the rows that cannot match (and
a delete can run without Spark seeing any row at all). The subset, deliberately narrow:

* top-level columns named exactly as in the dataset (and no other column differing only in
  case: Spark would call that ambiguous), of signed integer, string or boolean type;
* literals of the column's own kind (integers within the column type's range, strings for
  strings, booleans for booleans): no implicit cast, whose rules differ between the two;
* ``=``, ``!=``/``<>``, ``<``, ``<=``, ``>``, ``>=``, ``IN``, ``BETWEEN``, ``IS [NOT] NULL``,
  ``col % k`` (``k`` neither 0, an error under ANSI, nor -1, an overflow on the minimum),
  ``AND``, ``OR``, ``NOT`` and parentheses (NULLs are three-valued in both).

Anything else returns None, and Spark alone decides.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .expressions import sql_text

_COMPARISONS = ("EQ", "NEQ", "LT", "LTE", "GT", "GTE")


def _kind(arrow_type) -> str | None:
    if pa.types.is_signed_integer(arrow_type):  # unsigned ones reach Spark as wider types
        return "int"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "str"
    if pa.types.is_boolean(arrow_type):
        return "bool"
    return None


def _int_bounds(arrow_type) -> tuple[int, int]:
    info = np.iinfo(arrow_type.to_pandas_dtype())
    return int(info.min), int(info.max)


class _Check:
    """Walks a sqlglot tree; ``ok`` stays True only while every node is in the subset."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema

    def column(self, node):
        """The Arrow type of a plain column reference in the subset, else None."""
        from sqlglot import exp

        if not isinstance(node, exp.Column) or node.table:
            return None
        name = node.name
        idx = self.schema.get_field_index(name)
        if idx < 0 or sum(n.lower() == name.lower() for n in self.schema.names) != 1:
            return None
        arrow_type = self.schema.field(idx).type
        return arrow_type if _kind(arrow_type) else None

    def value(self, node):
        """(kind, the column type or None) of a column, ``col % k`` or literal operand."""
        from sqlglot import exp

        while isinstance(node, exp.Paren):
            node = node.this
        arrow_type = self.column(node)
        if arrow_type is not None:
            return _kind(arrow_type), arrow_type
        if isinstance(node, exp.Mod):
            arrow_type = self.column(node.this)
            k = self.literal(node.expression)
            if arrow_type is None or _kind(arrow_type) != "int" or k is None or k[0] != "int":
                return None
            low, high = _int_bounds(arrow_type)
            if k[1] in (0, -1) or not low <= k[1] <= high:
                return None
            return "int", arrow_type
        literal = self.literal(node)
        return (literal[0], None) if literal is not None else None

    @staticmethod
    def literal(node):
        """(kind, value) of an integer, string or boolean literal, else None."""
        from sqlglot import exp

        negative = False
        if isinstance(node, exp.Neg):
            negative, node = True, node.this
        if isinstance(node, exp.Boolean) and not negative:
            return "bool", bool(node.this)
        if not isinstance(node, exp.Literal):
            return None
        if node.is_string:
            return None if negative else ("str", node.this)
        text = node.this
        if not text.isdigit():  # 1.5, 1e3, 10L and the like: Spark types them otherwise
            return None
        return "int", -int(text) if negative else int(text)

    def operands_agree(self, nodes) -> bool:
        """Every operand in the subset, one kind, at least one a column, literals in range."""
        seen = [self.value(n) for n in nodes]
        if any(s is None for s in seen):
            return False
        kinds = {k for k, _ in seen}
        types = [t for _, t in seen if t is not None]
        if len(kinds) != 1 or not types:
            return False
        if kinds == {"int"}:
            for node in nodes:
                lit = self.literal(node)
                if lit is not None and not all(
                        lo <= lit[1] <= hi for lo, hi in map(_int_bounds, types)):
                    return False
        return True

    def predicate(self, node) -> bool:
        from sqlglot import exp

        name = type(node).__name__
        if isinstance(node, exp.Paren):
            return self.predicate(node.this)
        if isinstance(node, (exp.And, exp.Or)):
            return self.predicate(node.this) and self.predicate(node.expression)
        if isinstance(node, exp.Not):
            return self.predicate(node.this)
        if name in _COMPARISONS:
            return self.operands_agree([node.this, node.expression])
        if isinstance(node, exp.In):
            items = node.expressions
            return bool(items) and not node.args.get("query") and \
                self.operands_agree([node.this, *items])
        if isinstance(node, exp.Between):
            return self.operands_agree([node.this, node.args["low"], node.args["high"]])
        if isinstance(node, exp.Is):
            return isinstance(node.expression, exp.Null) and self.value(node.this) is not None \
                and self.literal(node.this) is None
        arrow_type = self.column(node)  # a boolean column on its own
        return arrow_type is not None and _kind(arrow_type) == "bool"


def lance_prefilter(value, schema: pa.Schema) -> str | None:
    """Lance filter text equivalent to ``value`` (Spark SQL text or a ``Column``) over a
    dataset of ``schema``, or None when ``value`` is outside the subset of the docstring."""
    import sqlglot

    if value is None:
        return None
    text = sql_text(value)
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return None
    if tree is None or not _Check(schema).predicate(tree):
        return None
    return tree.sql(dialect="spark")
