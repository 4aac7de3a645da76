"""sqlglot syntax trees -> typed pyarrow compute expressions.

Every node becomes either a :class:`~lancefmt.sql.literals.Literal` (typed later by what it
meets) or a :class:`Typed` (an expression and its Arrow type). Types of columns come from the
schema (plus ``_rowid``/``_rowaddr``); types of computed nodes from Arrow itself (the
expression evaluated over an empty table), so arithmetic and casts type exactly as they run.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import operator
import re
from functools import lru_cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError

from ..errors import InvalidArgumentError
from .json_functions import is_json_function, json_arity, json_function
from .list_functions import list_function
from .arrow_types import ArrowTypeNameError, parse_arrow_type
from .float_order import (common_float, is_float, is_zero, key_type, order_key_expr, scalar_key,
                          with_both_zeros, zero_for)
from .templates import ShapeParser
from .literals import Literal, LiteralTypeError, coerce, number, parse_timestamp

ROW_ID = "_rowid"
ROW_ADDRESS = "_rowaddr"
META_COLUMNS = {ROW_ID: pa.uint64(), ROW_ADDRESS: pa.uint64()}
DIALECT = "spark"  # backtick identifiers, "..." strings, X'..' binary: what Lance's parser reads


class LanceSpark(Spark):
    """Spark's dialect without its JSON functions: pylance's ``json_*`` functions take their
    JSONPath as a plain string (sqlglot would parse and re-spell it)."""

    class Parser(Spark.Parser):
        FUNCTIONS = {k: v for k, v in Spark.Parser.FUNCTIONS.items() if not k.startswith("JSON")}


class Typed:
    __slots__ = ("expr", "type", "columns")

    def __init__(self, expr: pc.Expression, type: pa.DataType | None, columns=()):
        self.expr = expr
        self.type = type
        self.columns = tuple(columns)  # column paths named in it (for error messages)


def _sql_types():
    D = exp.DataType.Type
    return {
        D.BOOLEAN: pa.bool_(), D.TINYINT: pa.int8(), D.SMALLINT: pa.int16(), D.INT: pa.int32(),
        D.BIGINT: pa.int64(), D.UTINYINT: pa.uint8(), D.USMALLINT: pa.uint16(),
        D.UINT: pa.uint32(), D.UBIGINT: pa.uint64(), D.FLOAT: pa.float32(),
        D.DOUBLE: pa.float64(), D.TEXT: pa.string(), D.VARCHAR: pa.string(),
        D.CHAR: pa.string(), D.NVARCHAR: pa.string(), D.NCHAR: pa.string(),
        D.BINARY: pa.binary(), D.VARBINARY: pa.binary(), D.BLOB: pa.binary(),
        D.DATE: pa.date32(), D.TIMESTAMP: pa.timestamp("us"), D.TIMESTAMPTZ: pa.timestamp("us"),
        D.TIMESTAMPNTZ: pa.timestamp("us"), D.DATETIME: pa.timestamp("us"),
        D.TIMESTAMP_NS: pa.timestamp("ns"), D.TIMESTAMP_MS: pa.timestamp("ms"),
        D.TIMESTAMP_S: pa.timestamp("s"),
    }


_SQL_TYPES = _sql_types()


_WORD = re.compile(r"""('(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|`[^`]*`)|\b([A-Za-z_][A-Za-z0-9_]*)\b""")


def _quote_columns(text: str, schema) -> str:
    """``text`` with every bare word that names a top-level column backtick-quoted (string
    literals and quoted names left alone)."""
    if schema is None:
        return text
    names = set(schema.names)

    def sub(m):
        if m.group(1) is not None or m.group(2) not in names:
            return m.group(0)
        return f"`{m.group(2)}`"

    return _WORD.sub(sub, text)


def _parse_text(text: str):
    return sqlglot.parse_one(text, read=LanceSpark)


_SHAPES = ShapeParser(_parse_text)


@lru_cache(maxsize=512)
def _parse_tree(text: str):
    """The sqlglot tree of ``text`` (read, never modified, by the filter translation and the
    index-term extraction alike, so a filter is parsed once; texts differing only in their
    literals share one parse, see :mod:`.templates`)."""
    return _SHAPES.parse(text)


class Translator:
    def __init__(self, text: str, schema: pa.Schema | None):
        self.text = text
        self.schema = schema

    # -- errors ---------------------------------------------------------------------------------
    def error(self, message: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"invalid expression {self.text!r}: {message}")

    # -- entry points ---------------------------------------------------------------------------
    def parse(self) -> exp.Expression:
        try:
            tree = _parse_tree(self.text)
        except (ParseError, TokenError) as e:
            # a column named like an SQL keyword (``values``, ``select``): DataFusion reads it
            # as the column; quote the schema's names and try once more
            quoted = _quote_columns(self.text, self.schema)
            try:
                tree = _parse_tree(quoted) if quoted != self.text else None
            except (ParseError, TokenError):
                tree = None
            if tree is None:
                raise self.error(f"cannot parse ({str(e).splitlines()[0]})") from None
        if tree is None:
            raise self.error("empty")
        return tree

    def value(self, node) -> Typed:
        out = self.node(node)
        if isinstance(out, Literal):
            s = out.default_scalar()
            return Typed(pc.scalar(s), s.type)
        return out

    def predicate(self, node) -> Typed:
        out = self.value(node)
        if out.type is not None and not pa.types.is_boolean(out.type) and not pa.types.is_null(out.type):
            raise self.error(f"a filter must be boolean, not {out.type}")
        return out

    # -- dispatch -------------------------------------------------------------------------------
    def node(self, n) -> Literal | Typed:
        method = getattr(self, "_" + type(n).__name__.lower(), None)
        if method is None:
            raise self.error(f"unsupported SQL {n.sql(dialect=DIALECT)!r} ({type(n).__name__})")
        return method(n)

    # literals
    def _literal(self, n: exp.Literal):
        if n.is_string:
            return Literal(n.this)
        try:
            return Literal(number(n.this))
        except ValueError:
            raise self.error(f"bad number {n.this!r}") from None

    def _boolean(self, n):
        return Literal(bool(n.this))

    def _null(self, n):
        return Literal(None)

    def _hexstring(self, n):
        h = n.this
        try:
            return Literal(bytes.fromhex(h if len(h) % 2 == 0 else "0" + h), pa.binary())
        except ValueError:
            raise self.error(f"bad binary literal X'{h}'") from None

    def _paren(self, n):
        return self.node(n.this)

    def _neg(self, n):
        inner = self.node(n.this)
        if isinstance(inner, Literal) and isinstance(inner.value, (int, float, decimal.Decimal)):
            return Literal(-inner.value, inner.type)
        t = self.value(n.this) if isinstance(inner, Literal) else inner
        return self.typed(pc.Expression._call("negate_checked", [t.expr]), t.columns)

    def _array(self, n):
        items = [self.node(e) for e in n.expressions]
        if not all(isinstance(i, Literal) for i in items):
            raise self.error("array literals may hold only constants")
        return Literal([i.value for i in items])

    # columns
    def _column(self, n: exp.Column):
        parts = [p.name for p in n.parts]
        return self.column(parts, [p.args.get("quoted", False) for p in n.parts])

    def _dot(self, n: exp.Dot):
        parts = []
        for p in n.flatten():
            if isinstance(p, exp.Column):
                parts.extend(x.name for x in p.parts)
            elif isinstance(p, (exp.Identifier, exp.Var)):
                parts.append(p.name)
            else:
                raise self.error(f"unsupported field reference {n.sql(dialect=DIALECT)!r}")
        return self.column(parts, [True] * len(parts))

    def _identifier(self, n):
        return self.column([n.name], [n.args.get("quoted", False)])

    def _bracket(self, n: exp.Bracket):
        base = self.node(n.this)
        if isinstance(base, Literal) or len(n.expressions) != 1:
            raise self.error(f"unsupported subscript {n.sql(dialect=DIALECT)!r}")
        key = self.node(n.expressions[0])
        if not isinstance(key, Literal):
            raise self.error("subscripts must be constants")
        t = base.type
        if isinstance(key.value, str) and t is not None and pa.types.is_struct(t):
            idx = t.get_field_index(key.value)
            if idx < 0:
                raise self.error(f"no field {key.value!r} in {'.'.join(base.columns) or 'struct'}")
            return Typed(pc.Expression._call("struct_field", [base.expr], pc.StructFieldOptions([idx])),
                         t.field(idx).type, base.columns)
        if isinstance(key.value, int) and t is not None and (pa.types.is_list(t) or pa.types.is_large_list(t)
                                                          or pa.types.is_fixed_size_list(t)):
            # SQL arrays are 1-based
            return self.typed(pc.Expression._call("list_element", [base.expr, pc.scalar(key.value - 1)]),
                              base.columns)
        raise self.error(f"unsupported subscript {n.sql(dialect=DIALECT)!r}")

    def column(self, parts: list[str], quoted: list[bool]) -> Typed:
        if self.schema is None:
            return Typed(pc.field(*parts) if len(parts) > 1 else pc.field(parts[0]), None, [".".join(parts)])
        t, names = self._resolve(parts, quoted)
        ref = pc.field(*names) if len(names) > 1 else pc.field(names[0])
        return Typed(ref, t, [".".join(names)])

    def _resolve(self, parts, quoted):
        schema = self.schema
        names = []
        t = None
        for i, (part, q) in enumerate(zip(parts, quoted)):
            if i == 0:
                idx = schema.get_field_index(part)
                if idx < 0 and not q:
                    idx = _find_ci(schema.names, part)
                if idx < 0:
                    if part in META_COLUMNS:
                        t = META_COLUMNS[part]
                        names.append(part)
                        continue
                    valid = ", ".join(schema.names + list(META_COLUMNS))
                    raise self.error(f"no column named {part!r} (valid columns: {valid})")
                f = schema.field(idx)
            else:
                if t is None or not pa.types.is_struct(t):
                    raise self.error(f"{'.'.join(names)!r} is not a struct, it has no field {part!r}")
                idx = t.get_field_index(part)
                if idx < 0 and not q:
                    idx = _find_ci([t.field(j).name for j in range(t.num_fields)], part)
                if idx < 0:
                    raise self.error(f"no field {'.'.join(names + [part])!r}")
                f = t.field(idx)
            names.append(f.name)
            t = f.type
        return t, names

    # typing helpers
    def typed(self, expr: pc.Expression, columns=()) -> Typed:
        if self.schema is None:
            return Typed(expr, None, columns)
        try:
            t = expression_type(expr, self.schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError) as e:
            cols = ", ".join(repr(c) for c in columns) or "the expression"
            raise self.error(f"type error on {cols}: {str(e).splitlines()[0]}") from None
        return Typed(expr, t, columns)

    def operands(self, a, b):
        """Two nodes as Typed, each literal taking the other side's type."""
        if isinstance(a, Literal) and isinstance(b, Literal):
            return Typed(pc.scalar(a.default_scalar()), a.default_scalar().type), \
                Typed(pc.scalar(b.default_scalar()), b.default_scalar().type)
        if isinstance(a, Literal):
            return self.lit(a, b), b
        if isinstance(b, Literal):
            return a, self.lit(b, a)
        return a, b

    def lit(self, lit: Literal, other: Typed) -> Typed:
        target = other.type
        if lit.type is not None and target is not None and not (
                pa.types.is_timestamp(target) and pa.types.is_timestamp(lit.type)) and not (
                pa.types.is_decimal(lit.type) and (pa.types.is_decimal(target) or pa.types.is_floating(target))):
            target = lit.type if not _same_family(lit.type, target) else target
        try:
            s = coerce(lit, target)
        except LiteralTypeError:
            what = f"column {other.columns[0]!r}" if len(other.columns) == 1 else "the expression"
            raise self.error(f"{what} has type {other.type}; literal {lit.value!r} "
                             f"cannot be converted to it") from None
        return Typed(pc.scalar(s), s.type)

    # boolean logic
    def _and(self, n):
        a, b = self.predicate(n.this), self.predicate(n.expression)
        return Typed(a.expr & b.expr, pa.bool_(), a.columns + b.columns)

    def _or(self, n):
        a, b = self.predicate(n.this), self.predicate(n.expression)
        return Typed(a.expr | b.expr, pa.bool_(), a.columns + b.columns)

    def _not(self, n):
        inner = self.predicate(n.this)
        return Typed(~inner.expr, pa.bool_(), inner.columns)

    def _cols(self, n):
        return [c.sql() for c in n.find_all(exp.Column)]

    # comparisons
    def compare(self, n, op):
        return self.compare_values(self.node(n.this), self.node(n.expression), op)

    def compare_values(self, a0, b0, op) -> Typed:
        """``a0 <op> b0`` for two translated nodes (a literal takes the other side's type)."""
        a0, b0 = _storage(a0), _storage(b0)
        coerced = isinstance(a0, Literal) != isinstance(b0, Literal)  # literal took the other's type
        a, b = self.operands(a0, b0)
        floats = self.float_comparison(a0, b0, a, b, op)
        if floats is not None:
            return floats
        try:
            e = _COMPARE[op](a.expr, b.expr)  # only the one asked (each is an Arrow call)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
            raise self.error(str(e)) from None
        if coerced:
            return Typed(e, pa.bool_(), a.columns + b.columns)
        return self.typed(e, a.columns + b.columns)

    def float_comparison(self, a0, b0, a: Typed, b: Typed, op) -> Typed | None:
        """A comparison involving floats as pylance evaluates it (see :mod:`.float_order`):
        order keys compared, a zero literal meaning both zeros; None when no float is involved
        (or a side is NULL, which the plain comparison already answers)."""
        ta, tb = a.type, b.type
        if not (is_float(ta) or is_float(tb)) or not (_plain_number(ta) and _plain_number(tb)):
            return None
        t = common_float(ta, tb)
        columns = a.columns + b.columns
        if isinstance(a0, Literal) and not isinstance(b0, Literal):
            a0, b0, a, b, op = b0, a0, b, a, _FLIP[op]
        x = a.expr if a.type == t else a.expr.cast(t)
        if isinstance(b0, Literal) and not isinstance(a0, Literal):
            try:
                v = coerce(b0, t).as_py()
            except LiteralTypeError:
                return None
            if v is None:
                return None
            value = pc.scalar(pa.scalar(v, t))
            if v == v and op in ("eq", "neq"):  # IEEE equality with a number is bit equality,
                return Typed(x == value if op == "eq" else x != value, pa.bool_(), columns)  # zeros aside
            if is_zero(v):
                v = zero_for(op)
            y = pc.scalar(pa.scalar(scalar_key(v, t), key_type(t)))
        else:
            y = order_key_expr(b.expr if b.type == t else b.expr.cast(t), t)
        kx = order_key_expr(x, t)
        e = _COMPARE[op](kx, y)
        return Typed(e, pa.bool_(), columns)

    def _eq(self, n):
        return self.compare(n, "eq")

    def _neq(self, n):
        return self.compare(n, "neq")

    def _lt(self, n):
        return self.compare(n, "lt")

    def _lte(self, n):
        return self.compare(n, "lte")

    def _gt(self, n):
        return self.compare(n, "gt")

    def _gte(self, n):
        return self.compare(n, "gte")

    def _nullsafeeq(self, n):
        a0, b0 = self.node(n.this), self.node(n.expression)
        a, b = self.operands(a0, b0)
        both_null = a.expr.is_null() & b.expr.is_null()
        eq = pc.Expression._call("coalesce", [self.compare_values(a0, b0, "eq").expr, pc.scalar(False)])
        return self.typed(both_null | eq, a.columns + b.columns)

    def _is(self, n):
        left = self.node(n.this)
        right = n.expression
        if isinstance(left, Literal):
            left = self.value(n.this)
        if isinstance(right, exp.Null):
            return Typed(left.expr.is_null(), pa.bool_(), left.columns)
        if isinstance(right, exp.Boolean):
            if left.type is not None and not pa.types.is_boolean(left.type):
                raise self.error(f"IS TRUE/FALSE needs a boolean, {left.columns} is {left.type}")
            e = pc.Expression._call("coalesce", [left.expr == pc.scalar(bool(right.this)), pc.scalar(False)])
            return Typed(e, pa.bool_(), left.columns)
        raise self.error(f"unsupported IS {right.sql(dialect=DIALECT)}")

    def _in(self, n: exp.In):
        if n.args.get("query") is not None or n.args.get("unnest") is not None:
            raise self.error("IN (subquery) is not supported")
        left = self.node(n.this)
        items = [self.node(e) for e in n.expressions]
        if not items:
            raise self.error("IN () needs values")
        if isinstance(left, Literal):
            left = self.value(n.this)
        left = _storage(left)
        if all(isinstance(i, Literal) for i in items) and left.type is not None:
            for i in items:
                self.lit(i, left)  # refuses values the column's type cannot hold
            non_null = [i for i in items if i.value is not None]
            try:
                arr = pa.array([coerce(i, left.type).as_py() for i in non_null],
                               type=left.type if not isinstance(left.type, pa.BaseExtensionType) else None)
            except (pa.ArrowInvalid, pa.ArrowTypeError, LiteralTypeError):
                arr = None
            if arr is not None and is_float(left.type):
                # floats: bit equality (total order), a zero meaning both zeros
                keys = [scalar_key(v, left.type) for v in with_both_zeros(arr.to_pylist())]
                member = order_key_expr(left.expr, left.type).isin(pa.array(keys, key_type(left.type)))
            elif arr is not None:
                member = left.expr.isin(arr)
            if arr is not None:
                # SQL: NULL IN (...) is NULL (so NOT IN drops it too)
                e = pc.Expression._call("if_else", [left.expr.is_valid(), member,
                                                    pc.scalar(pa.scalar(None, pa.bool_()))])
                if len(non_null) != len(items):  # x IN (.., NULL): never False, NULL instead
                    e = pc.Expression._call("if_else", [member, pc.scalar(True),
                                                        pc.scalar(pa.scalar(None, pa.bool_()))])
                return Typed(e, pa.bool_(), left.columns)
        e = None
        for i in items:
            term = self.compare_values(left, i, "eq").expr
            e = term if e is None else (e | term)
        if e is None:
            raise self.error("IN () needs values")
        return self.typed(e, left.columns)

    def _between(self, n):
        x = self.node(n.this)
        lo = self.compare_nodes(x, self.node(n.args["low"]), "gte")
        hi = self.compare_nodes(x, self.node(n.args["high"]), "lte")
        return Typed(lo.expr & hi.expr, pa.bool_(), lo.columns)

    def compare_nodes(self, a, b, op):
        return self.compare_values(a, b, op)

    # strings
    def _like(self, n, ignore_case=False, escape=None):
        left = self.value(n.this)
        pat = self.node(n.expression)
        if not isinstance(pat, Literal) or not isinstance(pat.value, str):
            raise self.error("LIKE needs a constant string pattern")
        self.need_string(left, "LIKE")
        pattern = pat.value
        if escape is not None and escape != "\\":
            pattern = _reescape(pattern, escape)
        e = pc.Expression._call("match_like", [left.expr],
                                pc.MatchSubstringOptions(pattern, ignore_case=ignore_case))
        if n.args.get("negate"):
            e = ~e
        return Typed(e, pa.bool_(), left.columns)

    def _ilike(self, n):
        return self._like(n, ignore_case=True)

    def _escape(self, n):
        esc = self.node(n.expression)
        if not isinstance(esc, Literal) or not isinstance(esc.value, str) or len(esc.value) != 1:
            raise self.error("ESCAPE needs one character")
        inner = n.this
        return self._like(inner, ignore_case=isinstance(inner, exp.ILike), escape=esc.value)

    def need_string(self, t: Typed, what):
        if t.type is not None and not (pa.types.is_string(t.type) or pa.types.is_large_string(t.type)
                                       or pa.types.is_string_view(t.type)):
            col = f"column {t.columns[0]!r}" if len(t.columns) == 1 else "the expression"
            raise self.error(f"{what} needs a string; {col} has type {t.type}")

    def pattern_fn(self, n, fn, what):
        left = self.value(n.this)
        pat = self.node(n.expression)
        if not isinstance(pat, Literal) or not isinstance(pat.value, str):
            raise self.error(f"{what} needs a constant string")
        self.need_string(left, what)
        return Typed(pc.Expression._call(fn, [left.expr], pc.MatchSubstringOptions(pat.value)),
                     pa.bool_(), left.columns)

    def _regexplike(self, n):
        return self.pattern_fn(n, "match_substring_regex", "regexp_like")

    def _startswith(self, n):
        return self.pattern_fn(n, "starts_with", "starts_with")

    def _endswith(self, n):
        return self.pattern_fn(n, "ends_with", "ends_with")

    def _contains(self, n):
        return self.pattern_fn(n, "match_substring", "contains")

    def unary(self, n, fn):
        arg = self.value(n.this)
        return self.typed(pc.Expression._call(fn, [arg.expr]), arg.columns)

    def _lower(self, n):
        return self.unary(n, "utf8_lower")

    def _upper(self, n):
        return self.unary(n, "utf8_upper")

    def _length(self, n):
        return self.unary(n, "utf8_length")

    def _abs(self, n):
        return self.unary(n, "abs")

    def _isnan(self, n):
        return self.unary(n, "is_nan")

    def _trim(self, n):
        return self.unary(n, "utf8_trim_whitespace")

    def _coalesce(self, n):
        args = [self.node(n.this)] + [self.node(e) for e in n.expressions]
        anchor = next((a for a in args if isinstance(a, Typed)), None)
        exprs = []
        for a in args:
            if isinstance(a, Typed):
                exprs.append(a)
            elif anchor is not None:
                exprs.append(self.lit(a, anchor))  # literals take the type of the first column
            else:
                exprs.append(Typed(pc.scalar(a.default_scalar()), None))
        return self.typed(pc.Expression._call("coalesce", [a.expr for a in exprs]),
                          [c for a in exprs for c in a.columns])

    # lists
    def list_membership(self, lists_node, needles_node, kind, needles_are_list):
        lists = self.value(lists_node)
        t = lists.type
        if t is not None and not (pa.types.is_list(t) or pa.types.is_large_list(t)
                                  or pa.types.is_fixed_size_list(t)):
            raise self.error(f"column {lists.columns[0] if lists.columns else ''!r} is not a list ({t})")
        needles = self.node(needles_node)
        if not isinstance(needles, Literal):
            raise self.error("array_has* needs constant values")
        values = needles.value if needles_are_list else [needles.value]
        if not isinstance(values, list):
            raise self.error("array_has_any/array_has_all need an array literal ([...])")
        value_type = t.value_type if t is not None else None
        try:
            arr = pa.array([coerce(Literal(v), value_type).as_py() for v in values], type=value_type)
        except LiteralTypeError as e:
            raise self.error(f"values of {lists.columns[0]!r}: {e}") from None
        arg = pa.scalar(arr.to_pylist(), type=pa.list_(arr.type))
        name = list_function(kind, t, arg.type)
        return Typed(pc.Expression._call(name, [lists.expr, pc.scalar(arg)]), pa.bool_(), lists.columns)

    def _arraycontains(self, n):
        return self.list_membership(n.this, n.expression, "any", False)

    def _arraycontainsall(self, n):
        return self.list_membership(n.this, n.expression, "all", True)

    def _arrayoverlaps(self, n):
        return self.list_membership(n.this, n.expression, "any", True)

    def _anonymous(self, n: exp.Anonymous):
        name = n.name.lower()
        args = n.expressions
        if name in ("array_has_any", "list_has_any") and len(args) == 2:
            return self.list_membership(args[0], args[1], "any", True)
        if name in ("array_has_all", "list_has_all") and len(args) == 2:
            return self.list_membership(args[0], args[1], "all", True)
        if name in ("array_has", "list_has", "array_contains", "list_contains") and len(args) == 2:
            return self.list_membership(args[0], args[1], "any", False)
        if name in ("regexp_match", "regexp_like") and len(args) == 2:
            return self.pattern_fn(exp.RegexpLike(this=args[0], expression=args[1]),
                                   "match_substring_regex", name)
        if name in ("is_nan", "isnan") and len(args) == 1:
            return self.unary(exp.IsNan(this=args[0]), "is_nan")
        if name in ("char_length", "character_length") and len(args) == 1:
            return self.unary(exp.Length(this=args[0]), "utf8_length")
        if is_json_function(name):
            return self.json_call(name, args)
        if name == "arrow_cast":
            return self.arrow_cast(args)
        if name == "_cast_list_f16" and len(args) == 1:
            return self.cast_list_f16(args[0])
        raise self.error(f"unsupported function {name}()")

    def cast_list_f16(self, arg) -> Typed:
        """Lance's ``_cast_list_f16(vectors)``: a (fixed-size) list of float32 or float16 as
        the same lists of float16."""
        inner = self.value(arg)
        t = inner.type
        if t is None or not (pa.types.is_fixed_size_list(t) or pa.types.is_list(t)):
            raise self.error("cast_list_f16 only supports FixedSizeList/List arguments")
        if not (pa.types.is_float32(t.value_type) or pa.types.is_float16(t.value_type)):
            raise self.error("cast_list_f16 only supports list of float32 or float16")
        item = t.value_field.with_type(pa.float16())
        target = pa.list_(item, t.list_size) if pa.types.is_fixed_size_list(t) else pa.list_(item)
        return self.typed(inner.expr.cast(target, safe=False), inner.columns)

    def arrow_cast(self, args):
        """DataFusion's ``arrow_cast(value, 'Type')``: a cast to an Arrow type named as arrow-rs
        prints it (``FixedSizeBinary(16)``, ``Timestamp(ns)``...); a constant stays a constant."""
        if len(args) != 2:
            raise self.error("arrow_cast needs a value and a type name")
        name = self.node(args[1])
        if not isinstance(name, Literal) or not isinstance(name.value, str):
            raise self.error("arrow_cast's type name must be a string constant")
        try:
            target = parse_arrow_type(name.value)
        except ArrowTypeNameError as e:
            raise self.error(str(e)) from None
        inner = self.node(args[0])
        if isinstance(inner, Literal):
            return self.cast_literal(inner, target)
        try:
            expr = inner.expr.cast(target, safe=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as err:
            raise self.error(str(err)) from None
        return self.typed(expr, inner.columns)

    def cast_literal(self, lit: Literal, target: pa.DataType) -> Literal:
        v = lit.value
        if v is None:
            return Literal(None, target)
        if pa.types.is_fixed_size_binary(target) and isinstance(v, (bytes, str)):
            b = v.encode() if isinstance(v, str) else v
            if len(b) != target.byte_width:
                raise self.error(f"cannot cast {len(b)} bytes to {target}")
            return Literal(b, target)
        try:
            s = pc.cast(lit.default_scalar(), target, safe=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as err:
            raise self.error(f"Unsupported CAST of {v!r} to {target} ({err})") from None
        return Literal(s.as_py(), target)

    def json_call(self, name: str, args) -> Typed:
        """pylance's json_* functions: a JSON column (JSONB) and string paths/keys."""
        if len(args) != json_arity(name):
            raise self.error(f"{name} requires exactly {json_arity(name)} arguments")
        doc = self.value(args[0])
        if doc.type is not None and not pa.types.is_large_binary(doc.type):
            raise self.error(f"{name}: the first argument must be a JSON column, not {doc.type}")
        exprs, columns = [doc.expr], list(doc.columns)
        for a in args[1:]:
            node = self.node(a)
            if isinstance(node, Literal):
                if not isinstance(node.value, str) and node.value is not None:
                    raise self.error(f"{name}: paths and keys are strings, not {node.value!r}")
                exprs.append(pc.scalar(pa.scalar(node.value, pa.string())))
                continue
            if node.type is not None and not (pa.types.is_string(node.type)
                                              or pa.types.is_large_string(node.type)):
                raise self.error(f"{name}: paths and keys are strings, not {node.type}")
            exprs.append(pc.Expression._call("cast", [node.expr], pc.CastOptions(pa.string())))
            columns += node.columns
        call = pc.Expression._call(json_function(name), exprs)
        return self.typed(call, columns)

    # arithmetic
    def arith(self, n, fn, fold):
        a, b = self.node(n.this), self.node(n.expression)
        if isinstance(a, Literal) and isinstance(b, Literal) and fold is not None \
                and isinstance(a.value, (int, float)) and isinstance(b.value, (int, float)):
            try:
                return Literal(fold(a.value, b.value))
            except ZeroDivisionError:
                raise self.error("division by zero") from None
        a, b = self.operands(a, b)
        if fn == "mod":
            quotient = pc.Expression._call("divide", [a.expr, b.expr])
            if a.type is not None and pa.types.is_floating(a.type):
                quotient = pc.Expression._call("trunc", [quotient])
            e = pc.Expression._call("subtract", [a.expr, pc.Expression._call("multiply", [quotient, b.expr])])
        else:
            e = pc.Expression._call(fn, [a.expr, b.expr])
        return self.typed(e, a.columns + b.columns)

    def _add(self, n):
        return self.arith(n, "add_checked", lambda x, y: x + y)

    def _sub(self, n):
        return self.arith(n, "subtract_checked", lambda x, y: x - y)

    def _mul(self, n):
        return self.arith(n, "multiply_checked", lambda x, y: x * y)

    def _div(self, n):
        def fold(x, y):
            return x // y if isinstance(x, int) and isinstance(y, int) else x / y
        return self.arith(n, "divide_checked", fold)

    def _mod(self, n):
        return self.arith(n, "mod", None)

    # casts and typed literals
    def arrow_type(self, dt: exp.DataType) -> pa.DataType:
        D = exp.DataType.Type
        if dt.this == D.DECIMAL:
            params = [int(p.this.this) for p in dt.expressions]
            if len(params) == 2:
                return pa.decimal128(*params)
            if len(params) == 1:
                return pa.decimal128(params[0], 0)
            return pa.decimal128(38, 10)
        t = _SQL_TYPES.get(dt.this)
        if t is None:
            raise self.error(f"unsupported type {dt.sql(dialect=DIALECT)}")
        return t

    def _cast(self, n):
        target = self.arrow_type(n.args["to"])
        inner = self.node(n.this)
        if isinstance(inner, Literal):
            return self.typed_literal(inner, target, n)
        try:
            e = inner.expr.cast(target, safe=False) if pa.types.is_decimal(target) else inner.expr.cast(target)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as err:
            raise self.error(str(err)) from None
        return self.typed(e, inner.columns)

    _trycast = _cast

    def typed_literal(self, lit: Literal, target: pa.DataType, n) -> Literal:
        v = lit.value
        try:
            if pa.types.is_date(target) and isinstance(v, str):
                return Literal(_dt.date.fromisoformat(v.strip()), target)
            if pa.types.is_timestamp(target) and isinstance(v, str):
                return Literal(parse_timestamp(v), target)
            if pa.types.is_decimal(target):
                d = decimal.Decimal(str(v))
                if not n.args["to"].expressions:  # DECIMAL '2.5': precision from the digits
                    exp_ = -d.as_tuple().exponent if d.as_tuple().exponent < 0 else 0
                    target = pa.decimal128(max(len(d.as_tuple().digits), exp_ + 1, 1), exp_)
                return Literal(d, target)
            s = pa.scalar(v).cast(target) if v is not None else pa.scalar(None, target)
            return Literal(s.as_py(), target)
        except (ValueError, decimal.InvalidOperation, pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise self.error(f"{v!r} is not a valid {target}") from None

    def _case(self, n: exp.Case):
        if n.this is not None:
            raise self.error("CASE <expr> WHEN is not supported; use CASE WHEN <condition>")
        conds = []
        vals = []
        for w in n.args.get("ifs") or []:
            conds.append(self.predicate(w.this).expr)
            vals.append(self.node(w.args["true"]))
        default = self.node(n.args["default"]) if n.args.get("default") is not None else Literal(None)
        anchor = next((v for v in vals + [default] if isinstance(v, Typed)), None)
        def as_t(v):
            if isinstance(v, Typed):
                return v
            if anchor is not None:
                return self.lit(v, anchor)
            s = v.default_scalar()
            return Typed(pc.scalar(s), s.type)
        e = as_t(default).expr
        for c, v in reversed(list(zip(conds, vals))):
            e = pc.Expression._call("if_else", [c, as_t(v).expr, e])
        return self.typed(e, self._cols(n))


_COMPARE = {"eq": operator.eq, "neq": operator.ne, "lt": operator.lt, "lte": operator.le,
            "gt": operator.gt, "gte": operator.ge}
_FLIP = {"eq": "eq", "neq": "neq", "lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte"}


def _storage(node):
    """An extension-typed value as its storage (``uuid`` compares as ``fixed_size_binary(16)``,
    as DataFusion sees it); anything else unchanged."""
    if isinstance(node, Typed) and isinstance(node.type, pa.BaseExtensionType):
        return Typed(node.expr.cast(node.type.storage_type), node.type.storage_type, node.columns)
    return node


def _plain_number(t: pa.DataType | None) -> bool:
    return t is not None and (pa.types.is_integer(t) or pa.types.is_floating(t))


def _same_family(a: pa.DataType, b: pa.DataType) -> bool:
    checks = (pa.types.is_date, pa.types.is_timestamp, pa.types.is_decimal, pa.types.is_binary,
              pa.types.is_large_binary)
    return any(c(a) and c(b) for c in checks)


def _find_ci(names, part) -> int:
    low = part.lower()
    hits = [i for i, n in enumerate(names) if n.lower() == low]
    return hits[0] if len(hits) == 1 else -1


def _reescape(pattern: str, esc: str) -> str:
    """A LIKE pattern with a custom ESCAPE character rewritten for backslash escaping."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == esc and i + 1 < len(pattern):
            out.append("\\" + pattern[i + 1])
            i += 2
            continue
        out.append("\\\\" if c == "\\" else c)
        i += 1
    return "".join(out)


def _empty_table(schema: pa.Schema) -> pa.Table:
    fields = list(schema)
    for name, t in META_COLUMNS.items():
        if schema.get_field_index(name) < 0:
            fields.append(pa.field(name, t))
    return pa.schema(fields).empty_table()


@lru_cache(maxsize=64)
def _probe_dataset(schema: pa.Schema):
    return pads.dataset(_empty_table(schema))


def expression_type(expr: pc.Expression, schema: pa.Schema) -> pa.DataType:
    """The Arrow type ``expr`` evaluates to over ``schema`` (+ _rowid/_rowaddr)."""
    out = _probe_dataset(schema).to_table(columns={"_": expr})
    return out.schema.field(0).type


# -- public API --------------------------------------------------------------------------------
_FILTERS: dict = {}
MAX_CACHED_FILTERS = 512


def parse_filter(text: str, schema: pa.Schema | None = None) -> pc.Expression:
    """A SQL boolean expression (a WHERE clause) as a pyarrow Expression over ``schema``.
    Translations are kept per (text, schema): a repeated look-up parses its filter once."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("empty filter")
    key = (text, schema)
    hit = _FILTERS.get(key)
    if hit is not None:
        return hit
    t = Translator(text, schema)
    typed = t.predicate(t.parse())
    expr = typed.expr
    if len(_FILTERS) >= MAX_CACHED_FILTERS:
        _FILTERS.clear()
        _FILTER_COLUMNS.clear()
    _FILTERS[key] = expr
    if schema is not None:  # the translation knows the columns it read: no probing later
        names = {c.split(".")[0] for c in typed.columns}
        if all(schema.get_field_index(n) >= 0 or n in META_COLUMNS for n in names):
            _FILTER_COLUMNS[id(expr)] = (expr, schema, tuple(n for n in list(schema.names) +
                                                            list(META_COLUMNS) if n in names))
    return expr


def filter_is_parsed(text: str, schema: pa.Schema | None) -> bool:
    """Whether :func:`parse_filter` holds the translation of ``text`` (it costs nothing now)."""
    return (text, schema) in _FILTERS


def parse_expression(text: str, schema: pa.Schema | None = None) -> pc.Expression:
    """A SQL value expression (``id * 2``, ``st.small``, ``upper(s)``) as a pyarrow Expression."""
    return parse_typed_expression(text, schema)[0]


def parse_typed_expression(text: str, schema: pa.Schema | None = None):
    """(expression, Arrow type or None, top-level columns it reads)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("empty expression")
    t = Translator(text, schema)
    out = t.value(t.parse())
    return out.expr, out.type, sorted({c.split(".")[0] for c in out.columns})


def to_expression(filter: Any, schema: pa.Schema | None = None) -> pc.Expression | None:
    """A pyarrow expression from a filter given as None, an Expression or a SQL string."""
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        return filter
    if isinstance(filter, str):
        return parse_filter(filter, schema)
    raise InvalidArgumentError(
        f"a filter is a SQL string or a pyarrow Expression, not {type(filter).__name__}")


_FILTER_COLUMNS: dict = {}  # id(expr) -> (expr, schema, columns) for filters parse_filter made


def referenced_columns(expr: pc.Expression, schema: pa.Schema) -> list[str]:
    """Top-level columns of ``schema`` (and ``_rowid``/``_rowaddr``) the expression reads; a
    superset at worst, never fewer (checked by evaluating it over just those columns, unless
    the filter's own translation said which columns it read)."""
    known = _FILTER_COLUMNS.get(id(expr))
    if known is not None and known[0] is expr and known[1] == schema:
        return list(known[2])
    return list(_referenced(str(expr), expr, schema))


_REFERENCED: dict = {}


def _referenced(text: str, expr: pc.Expression, schema: pa.Schema) -> tuple:
    key = (text, schema)
    hit = _REFERENCED.get(key)
    if hit is None:
        if len(_REFERENCED) > 256:
            _REFERENCED.clear()
        hit = _REFERENCED[key] = tuple(_find_referenced(text, expr, schema))
    return hit


def _find_referenced(text: str, expr: pc.Expression, schema: pa.Schema) -> list[str]:
    candidates = list(schema.names) + [m for m in META_COLUMNS if schema.get_field_index(m) < 0]
    names = [n for n in candidates
             if re.search(r"(?<![\w.])" + re.escape(n) + r"(?![\w])", text)
             or f"FieldRef.Name({n})" in text]
    fields = [schema.field(n) if schema.get_field_index(n) >= 0 else pa.field(n, META_COLUMNS[n])
              for n in names]
    try:
        pads.dataset(pa.schema(fields).empty_table()).to_table(filter=expr)
        return names
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError):
        return candidates
