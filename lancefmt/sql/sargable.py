"""The parts of a filter an index can answer ("sargable" terms), as plain hashable values.

A filter's syntax tree becomes a tree of :class:`All` (AND), :class:`Any` (OR), :class:`Negate`
(NOT) and :class:`Term` leaves; everything an index cannot answer is :data:`OTHER`. A term is
one column and one query: :class:`Equals`, :class:`Range`, :class:`IsIn`, :class:`IsNull`,
:class:`LabelsAny`, :class:`LabelsAll`, :class:`Contains` or :class:`Like`. Literals are
converted to the column's type, exactly as the filter's own translation converts them (the same
:class:`~.translate.Translator` does both), so an index compares the values the scan compares.

The index planner (``lancefmt.index.core.planner``) decides which terms an index serves; this
module knows nothing of indices.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from .literals import Literal, LiteralTypeError, coerce
from .translate import Translator, Typed


# -- queries on one column ---------------------------------------------------------------------
@dataclass(frozen=True)
class Equals:
    value: object          # a Python value of ``type``
    type: pa.DataType

    def describe(self, column: str) -> str:
        return f"{column} = {_show(self.value)}"


@dataclass(frozen=True)
class Range:
    """``lower`` / ``upper`` None = unbounded."""
    lower: object
    lower_inclusive: bool
    upper: object
    upper_inclusive: bool
    type: pa.DataType

    def describe(self, column: str) -> str:
        parts = []
        if self.lower is not None:
            parts.append(f"{column} {'>=' if self.lower_inclusive else '>'} {_show(self.lower)}")
        if self.upper is not None:
            parts.append(f"{column} {'<=' if self.upper_inclusive else '<'} {_show(self.upper)}")
        return " && ".join(parts)  # as pylance's plans print a range


@dataclass(frozen=True)
class IsIn:
    values: tuple          # Python values of ``type`` (nulls dropped: they never match)
    type: pa.DataType

    def describe(self, column: str) -> str:
        return f"{column} IN [{', '.join(_show(v) for v in self.values)}]"


@dataclass(frozen=True)
class IsNull:
    def describe(self, column: str) -> str:
        return f"{column} IS NULL"


@dataclass(frozen=True)
class LabelsAny:
    """``array_has_any`` / ``array_has`` on a list column."""
    values: tuple
    type: pa.DataType      # the list's item type

    def describe(self, column: str) -> str:
        return f"array_has_any({column}, List([{', '.join(str(v) for v in self.values)}]))"


@dataclass(frozen=True)
class LabelsAll:
    values: tuple
    type: pa.DataType

    def describe(self, column: str) -> str:
        return f"array_has_all({column}, List([{', '.join(str(v) for v in self.values)}]))"


@dataclass(frozen=True)
class Contains:
    """``contains(column, 'text')``: a substring of a string column."""
    text: str

    def describe(self, column: str) -> str:
        return f'contains({column}, Utf8("{self.text}"))'


@dataclass(frozen=True)
class Like:
    """``column LIKE 'pattern'`` on a string column (case-sensitive; ``%`` any run, ``_`` one
    character, a backslash escapes the next character), with at least one of those three
    characters (a pattern without them is an :class:`Equals`, as DataFusion rewrites it). A
    plain-literal ``regexp_like(column, 'text')`` is ``Like('%text%')``, as DataFusion rewrites
    it too. pylance prints the pattern as the regular expression its index looks up."""
    pattern: str

    def describe(self, column: str) -> str:
        return f"regexp_like({column}, Utf8({_rust_debug(like_regex(self.pattern))}))"


QUERY_TYPES = (Equals, Range, IsIn, IsNull, LabelsAny, LabelsAll, Contains, Like)

LIKE_SPECIAL = "%_\\"
_REGEX_META = set("\\.+*?()|[]{}^$#&-~")


def like_regex(pattern: str) -> str:
    """A LIKE pattern as the regular expression pylance shows for it (``%`` -> ``.*``, ``_`` ->
    ``.``, literal characters escaped where the regex syntax needs it)."""
    out = []
    it = iter(pattern)
    for c in it:
        if c == "\\":
            c = next(it, None)
            if c is None:
                break
        elif c == "%":
            out.append(".*")
            continue
        elif c == "_":
            out.append(".")
            continue
        out.append("\\" + c if c in _REGEX_META else c)
    return "".join(out)


def _rust_debug(text: str) -> str:
    """``text`` quoted as Rust's ``{:?}`` prints a string (how pylance's plans show literals)."""
    esc = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}
    return '"' + "".join(esc.get(c) or (c if c.isprintable() else f"\\u{{{ord(c):x}}}") for c in text) + '"'


def _show(v) -> str:
    return repr(v) if isinstance(v, bytes) else str(v)


# -- the tree -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Term:
    column: str            # a column path ("id", "st.a"), as the schema spells it
    query: object          # one of QUERY_TYPES

    def describe(self) -> str:
        return self.query.describe(self.column)


@dataclass(frozen=True)
class All:
    children: tuple


@dataclass(frozen=True)
class Any:
    children: tuple


@dataclass(frozen=True)
class Negate:
    child: object


class _Other:
    """A part of the filter no index answers (it is evaluated on the rows)."""

    def __repr__(self):
        return "OTHER"


OTHER = _Other()


def terms(tree) -> list:
    """Every :class:`Term` of ``tree``, left to right."""
    if isinstance(tree, Term):
        return [tree]
    if isinstance(tree, (All, Any)):
        return [t for c in tree.children for t in terms(c)]
    if isinstance(tree, Negate):
        return terms(tree.child)
    return []


# -- extraction ---------------------------------------------------------------------------------
_FLIP = {"lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte", "eq": "eq"}
_OPS = {exp.EQ: "eq", exp.LT: "lt", exp.LTE: "lte", exp.GT: "gt", exp.GTE: "gte"}


class _Extractor:
    def __init__(self, text: str, schema: pa.Schema):
        self.t = Translator(text, schema)
        self.schema = schema

    def tree(self):
        return self.node(self.t.parse())

    def node(self, n):
        if isinstance(n, exp.Paren):
            return self.node(n.this)
        if isinstance(n, exp.And):
            return _all(self.node(n.this), self.node(n.expression))
        if isinstance(n, exp.Or):
            return _any(self.node(n.this), self.node(n.expression))
        if isinstance(n, exp.Not):
            inner = self.node(n.this)
            return OTHER if inner is OTHER else Negate(inner)
        try:
            out = self.leaf(n)
        except (LiteralTypeError, ValueError, TypeError, pa.ArrowInvalid, pa.ArrowTypeError):
            return OTHER
        except Exception as e:  # the translator's own errors: the filter itself reports them
            if type(e).__name__ == "InvalidArgumentError":
                return OTHER
            raise
        return OTHER if out is None else out

    # -- leaves ----------------------------------------------------------------------------
    def column(self, n) -> tuple[str, pa.DataType] | None:
        """``n`` as a column of the schema (a top-level name, or a path into structs such as
        ``st.a``, spelled as the schema spells it), else None."""
        if isinstance(n, exp.Paren):
            return self.column(n.this)
        if not isinstance(n, (exp.Column, exp.Identifier, exp.Dot)):
            return None
        got = self.t.node(n)
        if not isinstance(got, Typed) or len(got.columns) != 1:
            return None
        name = got.columns[0]
        if self.schema.get_field_index(name.split(".")[0]) < 0:
            return None  # _rowid / _rowaddr
        return name, got.type

    def literal(self, n, type_: pa.DataType):
        """``n`` as a constant of ``type_`` (a Python value; None for NULL), or raise."""
        lit = self.t.node(n)
        if not isinstance(lit, Literal):
            raise ValueError("not a constant")
        value = coerce(lit, type_).as_py()
        if value is not None and pa.scalar(value, type=type_).as_py() != value:
            raise ValueError("not a value of the column's type")  # 1.5 on an integer column
        return value

    def leaf(self, n):
        op = _OPS.get(type(n))
        if op is not None:
            return self.compare(n.this, n.expression, op)
        if isinstance(n, exp.Between):
            col = self.column(n.this)
            if col is None:
                return None
            name, t = col
            lo, hi = self.literal(n.args["low"], t), self.literal(n.args["high"], t)
            if lo is None or hi is None:
                return None
            return Term(name, Range(lo, True, hi, True, t))
        if isinstance(n, exp.In):
            if n.args.get("query") is not None or n.args.get("unnest") is not None:
                return None
            col = self.column(n.this)
            if col is None:
                return None
            name, t = col
            values = [self.literal(e, t) for e in n.expressions]
            return Term(name, IsIn(tuple(v for v in values if v is not None), t))
        if isinstance(n, exp.Is) and isinstance(n.expression, exp.Null):
            col = self.column(n.this)
            return None if col is None else Term(col[0], IsNull())
        if isinstance(n, exp.Contains):
            col = self.column(n.this)
            if col is None or not (pa.types.is_string(col[1]) or pa.types.is_large_string(col[1])):
                return None
            text = self.literal(n.expression, pa.string())
            return None if text is None else Term(col[0], Contains(text))
        if isinstance(n, exp.Like) and not n.args.get("negate"):
            col = self.column(n.this)
            if col is None or not (pa.types.is_string(col[1]) or pa.types.is_large_string(col[1])):
                return None
            pattern = self.literal(n.expression, pa.string())
            if pattern is None:
                return None
            if not any(c in LIKE_SPECIAL for c in pattern):
                return Term(col[0], Equals(pattern, col[1]))
            return Term(col[0], Like(pattern))
        if isinstance(n, exp.RegexpLike) and n.args.get("flag") is None:
            col = self.column(n.this)
            if col is None or not (pa.types.is_string(col[1]) or pa.types.is_large_string(col[1])):
                return None
            text = self.literal(n.expression, pa.string())
            if text is None or not text or any(c in _REGEX_META for c in text):
                return None
            return Term(col[0], Like("%" + "".join("\\" + c if c in LIKE_SPECIAL else c for c in text) + "%"))
        if isinstance(n, exp.ArrayContains):
            return self.labels(n.this, n.expression, LabelsAny, False)
        if isinstance(n, exp.ArrayContainsAll):
            return self.labels(n.this, n.expression, LabelsAll, True)
        if isinstance(n, exp.ArrayOverlaps):
            return self.labels(n.this, n.expression, LabelsAny, True)
        if isinstance(n, exp.Anonymous):
            name, args = n.name.lower(), n.expressions
            if len(args) == 2 and name in ("array_has_any", "list_has_any"):
                return self.labels(args[0], args[1], LabelsAny, True)
            if len(args) == 2 and name in ("array_has_all", "list_has_all"):
                return self.labels(args[0], args[1], LabelsAll, True)
            if len(args) == 2 and name in ("array_has", "list_has", "array_contains", "list_contains"):
                return self.labels(args[0], args[1], LabelsAny, False)
        return None

    def compare(self, a, b, op):
        col = self.column(a)
        other = b
        if col is None:
            col, other, op = self.column(b), a, _FLIP[op]
        if col is None:
            return None
        name, t = col
        v = self.literal(other, t)
        if v is None:
            return None  # = NULL never matches: the scan says so
        if isinstance(v, float) and v != v:
            return None  # NaN: leave its ordering to the scan
        if op == "eq":
            return Term(name, Equals(v, t))
        if op in ("lt", "lte"):
            return Term(name, Range(None, False, v, op == "lte", t))
        return Term(name, Range(v, op == "gte", None, False, t))

    def labels(self, list_node, values_node, kind, is_list):
        col = self.column(list_node)
        if col is None:
            return None
        name, t = col
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
            return None
        lit = self.t.node(values_node)
        if not isinstance(lit, Literal):
            return None
        values = lit.value if is_list else [lit.value]
        if not isinstance(values, list):
            return None
        item = t.value_type
        out = tuple(coerce(Literal(v), item).as_py() for v in values)
        if any(v is None for v in out):
            return None
        return Term(name, kind(out, item))


def _all(a, b):
    parts = []
    for x in (a, b):
        parts.extend(x.children if isinstance(x, All) else (x,))
    parts = _merged_ranges(parts)
    return parts[0] if len(parts) == 1 else All(tuple(parts))


def _merged_ranges(parts: list) -> list:
    """Ranges on one column ANDed together become one range (``x >= 1 AND x < 2`` is
    ``[x >= 1 && x < 2]``, as pylance plans it): an index answers the two bounds at once."""
    out, seen = [], {}
    for p in parts:
        if isinstance(p, Term) and isinstance(p.query, Range):
            at = seen.get(p.column)
            if at is not None:
                both = _intersect(out[at].query, p.query)
                if both is not None:
                    out[at] = Term(p.column, both)
                    continue
            seen[p.column] = len(out)
        out.append(p)
    return out


def _intersect(a: Range, b: Range) -> Range | None:
    if a.type != b.type:
        return None
    try:
        lo, lo_inc = _tighter(a.lower, a.lower_inclusive, b.lower, b.lower_inclusive, max)
        hi, hi_inc = _tighter(a.upper, a.upper_inclusive, b.upper, b.upper_inclusive, min)
    except TypeError:  # values that do not order (never for one column's type, but be safe)
        return None
    return Range(lo, lo_inc, hi, hi_inc, a.type)


def _tighter(v1, inc1, v2, inc2, pick):
    if v1 is None:
        return v2, inc2
    if v2 is None or v1 == v2:
        return v1, (inc1 and inc2) if v2 is not None else inc1
    return (v1, inc1) if pick(v1, v2) == v1 else (v2, inc2)


def _any(a, b):
    parts = []
    for x in (a, b):
        parts.extend(x.children if isinstance(x, Any) else (x,))
    return Any(tuple(parts))


def sargable(text: str, schema: pa.Schema):
    """The index-answerable structure of the SQL filter ``text`` over ``schema`` (see module
    docstring). Raises nothing a valid filter would not: parts it cannot read are OTHER."""
    return _Extractor(text, schema).tree()
