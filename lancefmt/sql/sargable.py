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

import decimal
from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from .float_order import is_float, is_zero, rust_float, scalar_key, with_both_zeros, zero_for
from .literals import Literal, LiteralTypeError, coerce
from .translate import Translator, Typed


# -- queries on one column ---------------------------------------------------------------------
@dataclass(frozen=True)
class Equals:
    value: object          # a Python value of ``type``
    type: pa.DataType

    def describe(self, column: str) -> str:
        return f"{column} = {show_value(self.value, self.type)}"


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
            parts.append(f"{column} {'>=' if self.lower_inclusive else '>'} {show_value(self.lower, self.type)}")
        if self.upper is not None:
            parts.append(f"{column} {'<=' if self.upper_inclusive else '<'} {show_value(self.upper, self.type)}")
        return " && ".join(parts)  # as pylance's plans print a range


@dataclass(frozen=True)
class IsIn:
    values: tuple          # Python values of ``type`` (nulls dropped: they never match)
    type: pa.DataType

    def describe(self, column: str) -> str:
        return f"{column} IN [{','.join(show_value(v, self.type) for v in self.values)}]"


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


@dataclass(frozen=True)
class JsonPath:
    """``json_get_<type>(column, key)`` compared (``query`` over the function's result type):
    what pylance's JSON index on ``column`` at ``key`` answers. Its plans print it as
    ``Json(<query>-><key>)``."""
    key: str
    function: str          # json_get_int, json_get_float, json_get_string or json_get_bool
    query: object

    def describe(self, column: str) -> str:
        return f"Json({self.query.describe(column)}->{self.key})"


#: the json_get functions a JSON index may answer, and their result types
JSON_GETS = {"json_get_int": pa.int64(), "json_get_float": pa.float64(),
             "json_get_string": pa.string(), "json_get_bool": pa.bool_()}

QUERY_TYPES = (Equals, Range, IsIn, IsNull, LabelsAny, LabelsAll, Contains, Like, JsonPath)


def normalized(query):
    """``query`` on a float column with its zeros as Lance's rewrite leaves them (what an index
    searching in total order needs): ``= 0`` is ``IN [-0,0]``, a zero lower bound is ``-0.0``
    when inclusive and ``0.0`` when not, a zero upper bound the reverse, an IN list holds both
    zeros or neither. Filters already come this way; a term built elsewhere (Spark's pushed
    filters) may not. Other queries are returned as they are."""
    t = getattr(query, "type", None)
    if not is_float(t):
        return query
    if isinstance(query, Equals) and is_zero(query.value):
        return IsIn((-0.0, 0.0), t)
    if isinstance(query, IsIn) and any(is_zero(v) for v in query.values):
        return IsIn(tuple(with_both_zeros(list(query.values))), t)
    if isinstance(query, Range):
        lo, hi = query.lower, query.upper
        if is_zero(lo):
            lo = zero_for("gte" if query.lower_inclusive else "gt")
        if is_zero(hi):
            hi = zero_for("lte" if query.upper_inclusive else "lt")
        if lo is not query.lower or hi is not query.upper:
            return Range(lo, query.lower_inclusive, hi, query.upper_inclusive, t)
    return query

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


def show_value(v, t: pa.DataType | None = None) -> str:
    """A literal as pylance's plans print it (DataFusion's ``ScalarValue`` display): floats as
    Rust prints them, binary as hex (the first 10 bytes, then ``...``), booleans in lower case,
    timestamps as their integer, decimals as ``Some(unscaled),precision,scale``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return rust_float(v, t)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v[:10]).hex() + ("..." if len(v) > 10 else "")
    if t is not None and pa.types.is_timestamp(t) and v is not None:
        return str(pa.scalar(v, t).cast(pa.int64()).as_py())
    if t is not None and pa.types.is_decimal(t) and isinstance(v, decimal.Decimal):
        return f"Some({int(v.scaleb(t.scale))}),{t.precision},{t.scale}"
    return str(v)


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
_FLIP = {"lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte", "eq": "eq", "neq": "neq"}
_OPS = {exp.EQ: "eq", exp.NEQ: "neq", exp.LT: "lt", exp.LTE: "lte", exp.GT: "gt", exp.GTE: "gte"}


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
            return negate(self.node(n.this))
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
        t = got.type
        return name, (t.storage_type if isinstance(t, pa.BaseExtensionType) else t)  # indices hold storage

    def target(self, n) -> "_Target | None":
        """``n`` as what a term is about: a column, or ``json_get_<type>(json column, 'key')``
        (a JSON index's answer)."""
        col = self.column(n)
        if col is not None:
            return _Target(col[0], col[1])
        while isinstance(n, exp.Paren):
            n = n.this
        if not isinstance(n, exp.Anonymous) or len(n.expressions) != 2:
            return None
        fn = n.name.lower()
        t = JSON_GETS.get(fn)
        doc = self.column(n.expressions[0])
        if t is None or doc is None or not pa.types.is_large_binary(doc[1]):
            return None
        key = self.t.node(n.expressions[1])
        if not isinstance(key, Literal) or not isinstance(key.value, str):
            return None
        return _Target(doc[0], t, (key.value, fn))

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
        if isinstance(n, (exp.Column, exp.Dot)):  # a boolean column on its own: ``= true``
            col = self.column(n)
            if col is None or not pa.types.is_boolean(col[1]):
                return None
            return Term(col[0], Equals(True, col[1]))
        if isinstance(n, exp.Between):
            tg = self.target(n.this)
            if tg is None:
                return None
            t = tg.type
            lo, hi = self.literal(n.args["low"], t), self.literal(n.args["high"], t)
            if lo is None or hi is None or _nan(lo) or _nan(hi):
                return None
            if is_float(t):
                lo = zero_for("gte") if is_zero(lo) else lo
                hi = zero_for("lte") if is_zero(hi) else hi
            if tg.json is not None:  # pylance: two terms, AND([>= lo],[<= hi])
                return All((tg.term(Range(lo, True, None, False, t)), tg.term(Range(None, False, hi, True, t))))
            return tg.term(Range(lo, True, hi, True, t))
        if isinstance(n, exp.In):
            if n.args.get("query") is not None or n.args.get("unnest") is not None:
                return None
            tg = self.target(n.this)
            if tg is None:
                return None
            return self.in_list(tg, [self.literal(e, tg.type) for e in n.expressions])
        if isinstance(n, exp.Is) and isinstance(n.expression, exp.Null):
            tg = self.target(n.this)
            return None if tg is None else tg.term(IsNull())
        if isinstance(n, exp.Is) and isinstance(n.expression, exp.Boolean) and n.expression.this:
            tg = self.target(n.this)  # ``b IS TRUE``: the rows where b = true
            if tg is None or not pa.types.is_boolean(tg.type):
                return None
            return tg.term(Equals(True, tg.type))
        if isinstance(n, exp.Contains):
            tg = self.target(n.this)
            if tg is None or not (pa.types.is_string(tg.type) or pa.types.is_large_string(tg.type)):
                return None
            text = self.literal(n.expression, pa.string())
            return None if text is None else tg.term(Contains(text))
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
        tg = self.target(a)
        other = b
        if tg is None:
            tg, other, op = self.target(b), a, _FLIP[op]
        if tg is None:
            return None
        t = tg.type
        v = self.literal(other, t)
        if v is None:
            return None  # = NULL never matches: the scan says so
        if _nan(v):
            return None  # NaN: leave it to the scan
        if op in ("eq", "neq"):
            term = tg.term(_equals(v, t))
            return term if op == "eq" else Negate(term)  # pylance: x != v is NOT(x = v)
        if is_float(t) and is_zero(v):
            v = zero_for(op)  # Lance's rewrite: a zero literal means both zeros
        if op in ("lt", "lte"):
            return tg.term(Range(None, False, v, op == "lte", t))
        return tg.term(Range(v, op == "gte", None, False, t))

    def in_list(self, tg: "_Target", values: list):
        """``col IN (values)`` as pylance plans it: no index with a NULL in the list; up to
        three distinct values (DataFusion's rewrite, for a column only) an OR chain of
        equalities, more an IsIn (a float zero adding the other zero)."""
        t = tg.type
        if any(v is None for v in values) or any(_nan(v) for v in values):
            return None
        distinct, seen = [], set()
        for v in values:
            key = _order_key(v, t)
            if key not in seen:
                seen.add(key)
                distinct.append(v)
        if not distinct:
            return None
        if len(distinct) <= 3 and tg.json is None:
            tree = tg.term(_equals(distinct[0], t))
            for v in distinct[1:]:
                tree = Any((tree, tg.term(_equals(v, t))))
            return tree
        if is_float(t):
            distinct = with_both_zeros(distinct)
        return tg.term(IsIn(tuple(distinct), t))

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


@dataclass(frozen=True)
class _Target:
    """What a leaf is about: a column (``json`` None) or ``json_get_<type>(column, key)``
    (``json`` = (key, function)); ``type`` is the type its values compare as."""
    name: str
    type: pa.DataType
    json: tuple | None = None

    def term(self, query) -> Term:
        if self.json is None:
            return Term(self.name, query)
        return Term(self.name, JsonPath(self.json[0], self.json[1], query))


def _nan(v) -> bool:
    return isinstance(v, float) and v != v


def _order_key(v, t: pa.DataType):
    """What tells two values of ``t`` apart (floats: their bits, so ``-0.0`` is not ``0.0``)."""
    return scalar_key(v, t) if is_float(t) and isinstance(v, float) else (type(v), v)


def _equals(v, t: pa.DataType):
    """``= v``; a float zero means both zeros (``IN [-0,0]``, as pylance plans it)."""
    if is_float(t) and is_zero(v):
        return IsIn((-0.0, 0.0), t)
    return Equals(v, t)


def negate(tree):
    """NOT ``tree`` as DataFusion simplifies it: NOT NOT x is x, De Morgan's laws push NOT to
    the leaves, and NOT of a one-sided range is the other side (``NOT x > 0`` is ``x <= 0``,
    exact: a NULL stays NULL)."""
    if tree is OTHER:
        return OTHER
    if isinstance(tree, Negate):
        return tree.child
    if isinstance(tree, All):
        out = negate(tree.children[0])
        for c in tree.children[1:]:
            out = Any((out, negate(c)))
        return out
    if isinstance(tree, Any):
        return _all(negate(tree.children[0]), negate(tree.children[1])) if len(tree.children) == 2 \
            else _all_of([negate(c) for c in tree.children])
    if isinstance(tree, Term) and isinstance(tree.query, Range):
        q = tree.query
        if q.lower is not None and q.upper is None:
            return Term(tree.column, Range(None, False, q.lower, not q.lower_inclusive, q.type))
        if q.upper is not None and q.lower is None:
            return Term(tree.column, Range(q.upper, not q.upper_inclusive, None, False, q.type))
        if q.lower is not None and q.upper is not None:  # NOT BETWEEN: below OR above
            return Any((Term(tree.column, Range(None, False, q.lower, not q.lower_inclusive, q.type)),
                        Term(tree.column, Range(q.upper, not q.upper_inclusive, None, False, q.type))))
    return Negate(tree)


def _all_of(parts: list):
    out = parts[0]
    for p in parts[1:]:
        out = _all(out, p)
    return out


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
        lo, lo_inc = _tighter(a.lower, a.lower_inclusive, b.lower, b.lower_inclusive, True, a.type)
        hi, hi_inc = _tighter(a.upper, a.upper_inclusive, b.upper, b.upper_inclusive, False, a.type)
    except TypeError:  # values that do not order (never for one column's type, but be safe)
        return None
    return Range(lo, lo_inc, hi, hi_inc, a.type)


def _tighter(v1, inc1, v2, inc2, lower: bool, t: pa.DataType):
    """The tighter of two lower (or upper) bounds, floats in total order (``x >= -0.0`` and
    ``x > 0.0`` keep different zeros)."""
    if v1 is None:
        return v2, inc2
    if v2 is None:
        return v1, inc1
    k1, k2 = (scalar_key(v1, t), scalar_key(v2, t)) if is_float(t) else (v1, v2)
    if k1 == k2:
        return v1, inc1 and inc2
    if (k1 > k2) == lower:
        return v1, inc1
    return v2, inc2


def _any(a, b):
    """OR stays binary: pylance's plans print ``a OR b OR c`` as ``OR(OR(a,b),c)``."""
    return Any((a, b))


def sargable(text: str, schema: pa.Schema):
    """The index-answerable structure of the SQL filter ``text`` over ``schema`` (see module
    docstring). Raises nothing a valid filter would not: parts it cannot read are OTHER."""
    return _Extractor(text, schema).tree()
