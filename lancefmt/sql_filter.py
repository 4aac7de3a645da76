"""SQL boolean expressions (``"id < 10 AND name IS NOT NULL"``) -> pyarrow compute expressions.

pylance accepts filters and delete predicates as SQL strings (DataFusion syntax); lancefmt
accepts the common subset and evaluates it with pyarrow compute:

* literals: integers, decimals/floats (``1.5``, ``1e3``), ``'strings'`` (``''`` escapes a quote),
  ``TRUE``/``FALSE``/``NULL``, ``DATE 'yyyy-mm-dd'``, ``TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.f]'``;
* columns: ``name``, a backquoted name, nested ``a.b`` (as in Lance, ``"text"`` is a string);
* ``= == != <> < <= > >=``, ``+ - * / %``, unary ``-``, ``AND OR NOT``, parentheses;
* ``IS [NOT] NULL``, ``IS [NOT] TRUE|FALSE``, ``[NOT] IN (...)``, ``[NOT] BETWEEN x AND y``,
  ``[NOT] LIKE 'pattern'`` (``%`` and ``_``), ``ILIKE``;
* functions: ``lower upper length abs starts_with ends_with contains regexp_match is_nan``.

Anything else raises :class:`InvalidArgumentError` with the position of the problem. String
literals compared with date/timestamp columns are converted to that type, as DataFusion does.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidArgumentError

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<str>'(?:[^']|'')*')
  | (?P<dstr>"(?:[^"]|"")*")
  | (?P<qid>`[^`]+`)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><=|>=|<>|!=|==|=|<|>|\(|\)|,|\+|-|\*|/|%|\.)
""", re.X)

_KEYWORDS = {"AND", "OR", "NOT", "IS", "NULL", "TRUE", "FALSE", "IN", "BETWEEN", "LIKE",
             "ILIKE", "DATE", "TIMESTAMP"}


class _Tok:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind, text, pos):
        self.kind, self.text, self.pos = kind, text, pos

    def __repr__(self):
        return f"{self.kind}:{self.text}"


def _tokenize(text: str):
    pos = 0
    out = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise InvalidArgumentError(f"cannot parse filter {text!r} at position {pos}: {text[pos:pos + 10]!r}")
        kind = m.lastgroup
        if kind != "ws":
            tok = m.group(kind)
            if kind == "id" and tok.upper() in _KEYWORDS:
                out.append(_Tok("kw", tok.upper(), pos))
            else:
                out.append(_Tok(kind, tok, pos))
        pos = m.end()
    out.append(_Tok("end", "", pos))
    return out


class _Lit:
    """A literal still waiting to learn its type from the column it is compared with."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _Parser:
    def __init__(self, text: str, schema: pa.Schema | None):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.schema = schema

    # -- token helpers ------------------------------------------------------------------
    def peek(self, k=0):
        return self.toks[self.i + k]

    def next(self):
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def accept(self, kind, text=None):
        tok = self.peek()
        if tok.kind == kind and (text is None or tok.text == text):
            self.i += 1
            return tok
        return None

    def expect(self, kind, text=None):
        tok = self.accept(kind, text)
        if tok is None:
            got = self.peek()
            raise self.error(f"expected {text or kind}", got)
        return tok

    def error(self, message, tok=None):
        tok = tok or self.peek()
        return InvalidArgumentError(f"invalid filter {self.text!r}: {message} at position {tok.pos}")

    # -- grammar --------------------------------------------------------------------------
    def parse(self):
        expr = self.or_expr()
        if self.peek().kind != "end":
            raise self.error("unexpected token")
        return self.as_expr(expr)

    def or_expr(self):
        left = self.and_expr()
        while self.accept("kw", "OR"):
            left = self.as_expr(left) | self.as_expr(self.and_expr())
        return left

    def and_expr(self):
        left = self.not_expr()
        while self.accept("kw", "AND"):
            left = self.as_expr(left) & self.as_expr(self.not_expr())
        return left

    def not_expr(self):
        if self.accept("kw", "NOT"):
            return ~self.as_expr(self.not_expr())
        return self.predicate()

    def predicate(self):
        left = self.additive()
        tok = self.peek()
        if tok.kind == "op" and tok.text in ("=", "==", "!=", "<>", "<", "<=", ">", ">="):
            self.next()
            right = self.additive()
            return self.compare(tok.text, left, right)
        if self.accept("kw", "IS"):
            negate = bool(self.accept("kw", "NOT"))
            if self.accept("kw", "NULL"):
                e = self.as_expr(left).is_null()
            elif self.accept("kw", "TRUE"):
                e = pc.Expression._call("coalesce", [self.as_expr(left) == pa.scalar(True), pc.scalar(False)])
            elif self.accept("kw", "FALSE"):
                e = pc.Expression._call("coalesce", [self.as_expr(left) == pa.scalar(False), pc.scalar(False)])
            else:
                raise self.error("expected NULL, TRUE or FALSE after IS")
            return ~e if negate else e
        negate = False
        if tok.kind == "kw" and tok.text == "NOT" and self.peek(1).kind == "kw" and \
                self.peek(1).text in ("IN", "BETWEEN", "LIKE", "ILIKE"):
            self.next()
            negate = True
        if self.accept("kw", "IN"):
            self.expect("op", "(")
            values = [self.additive()]
            while self.accept("op", ","):
                values.append(self.additive())
            self.expect("op", ")")
            field = self.as_expr(left)
            if not all(isinstance(v, _Lit) for v in values):
                e = None
                for v in values:
                    term = self.compare("=", left, v)
                    e = term if e is None else (e | term)
            else:
                arrow_type = self.type_of(left)
                e = field.isin(pa.array([self.coerce(v.value, arrow_type) for v in values], type=arrow_type))
            return ~e if negate else e
        if self.accept("kw", "BETWEEN"):
            low = self.additive()
            self.expect("kw", "AND")
            high = self.additive()
            e = self.compare(">=", left, low) & self.compare("<=", left, high)
            return ~e if negate else e
        for kw, ignore_case in (("LIKE", False), ("ILIKE", True)):
            if self.accept("kw", kw):
                pattern = self.expect("str").text
                e = pc.Expression._call("match_like", [self.as_expr(left)],
                                        pc.MatchSubstringOptions(_unquote(pattern), ignore_case=ignore_case))
                return ~e if negate else e
        if negate:
            raise self.error("expected IN, BETWEEN or LIKE after NOT")
        return left

    def additive(self):
        left = self.multiplicative()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.text in ("+", "-"):
                self.next()
                right = self.multiplicative()
                fn = "add_checked" if tok.text == "+" else "subtract_checked"
                left = self.arith(fn, left, right)
            else:
                return left

    def multiplicative(self):
        left = self.unary()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.text in ("*", "/", "%"):
                self.next()
                right = self.unary()
                if tok.text == "%":
                    a, b = self.as_expr(left), self.as_expr(right)
                    left = pc.Expression._call("subtract", [a, pc.Expression._call(
                        "multiply", [pc.Expression._call("divide", [a, b]), b])])
                else:
                    left = self.arith("multiply_checked" if tok.text == "*" else "divide_checked", left, right)
            else:
                return left

    def unary(self):
        if self.accept("op", "-"):
            operand = self.unary()
            if isinstance(operand, _Lit) and isinstance(operand.value, (int, float, decimal.Decimal)):
                return _Lit(-operand.value)
            return pc.Expression._call("negate_checked", [self.as_expr(operand)])
        if self.accept("op", "+"):
            return self.unary()
        return self.primary()

    def primary(self):
        tok = self.next()
        if tok.kind == "num":
            text = tok.text
            if re.fullmatch(r"\d+", text):
                return _Lit(int(text))
            return _Lit(float(text))
        if tok.kind == "str":
            return _Lit(_unquote(tok.text))
        if tok.kind == "dstr":  # Lance's SQL dialect reads "..." as a string, not a column
            return _Lit(tok.text[1:-1].replace('""', '"'))
        if tok.kind == "kw":
            if tok.text == "TRUE":
                return _Lit(True)
            if tok.text == "FALSE":
                return _Lit(False)
            if tok.text == "NULL":
                return _Lit(None)
            if tok.text == "DATE":
                s = _unquote(self.expect("str").text)
                try:
                    return _Lit(_dt.date.fromisoformat(s))
                except ValueError:
                    raise self.error(f"bad DATE literal {s!r}", tok)
            if tok.text == "TIMESTAMP":
                s = _unquote(self.expect("str").text)
                try:
                    return _Lit(_dt.datetime.fromisoformat(s.replace(" ", "T")))
                except ValueError:
                    raise self.error(f"bad TIMESTAMP literal {s!r}", tok)
            raise self.error(f"unexpected {tok.text}", tok)
        if tok.kind == "op" and tok.text == "(":
            e = self.or_expr()
            self.expect("op", ")")
            return e
        if tok.kind in ("id", "qid"):
            name = _ident(tok.text)
            if tok.kind == "id" and self.peek().kind == "op" and self.peek().text == "(":
                return self.function(name.lower(), tok)
            path = [name]
            while self.accept("op", "."):
                nxt = self.next()
                if nxt.kind not in ("id", "qid"):
                    raise self.error("expected a field name after '.'", nxt)
                path.append(_ident(nxt.text))
            self.check_field(path, tok)
            return pc.field(*path) if len(path) > 1 else pc.field(path[0])
        raise self.error("unexpected token", tok)

    def function(self, name, tok):
        self.expect("op", "(")
        args = []
        if not self.accept("op", ")"):
            args.append(self.or_expr())
            while self.accept("op", ","):
                args.append(self.or_expr())
            self.expect("op", ")")
        simple = {"lower": "utf8_lower", "upper": "utf8_upper", "length": "utf8_length",
                  "char_length": "utf8_length", "abs": "abs", "is_nan": "is_nan"}
        if name in simple and len(args) == 1:
            return pc.Expression._call(simple[name], [self.as_expr(args[0])])
        pattern_fns = {"starts_with": "starts_with", "ends_with": "ends_with", "contains": "match_substring",
                       "regexp_match": "match_substring_regex", "regexp_like": "match_substring_regex"}
        if name in pattern_fns and len(args) == 2 and isinstance(args[1], _Lit) and isinstance(args[1].value, str):
            return pc.Expression._call(pattern_fns[name], [self.as_expr(args[0])],
                                       pc.MatchSubstringOptions(args[1].value))
        raise self.error(f"unsupported function {name}({len(args)} arguments)", tok)

    # -- typing --------------------------------------------------------------------------
    def check_field(self, path, tok):
        if self.schema is None:
            return
        t = self.schema
        for i, part in enumerate(path):
            fields = t if isinstance(t, pa.Schema) else None
            if fields is None:
                if not pa.types.is_struct(t):
                    raise self.error(f"{'.'.join(path[:i])} is not a struct", tok)
                idx = t.get_field_index(part)
                if idx < 0:
                    raise self.error(f"no field {'.'.join(path[:i + 1])!r}", tok)
                t = t.field(idx).type
            else:
                idx = fields.get_field_index(part)
                if idx < 0:
                    raise self.error(f"no column {part!r}", tok)
                t = fields.field(idx).type

    def type_of(self, node):
        if self.schema is None or not isinstance(node, pc.Expression):
            return None
        try:
            return _expr_type(node, self.schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError):
            return None

    def coerce(self, value, arrow_type):
        if value is None or arrow_type is None:
            return value
        if isinstance(value, str):
            try:
                if pa.types.is_date(arrow_type):
                    return _dt.date.fromisoformat(value)
                if pa.types.is_timestamp(arrow_type):
                    return _dt.datetime.fromisoformat(value.replace(" ", "T"))
            except ValueError:
                raise InvalidArgumentError(f"invalid filter {self.text!r}: {value!r} is not a {arrow_type}")
        if isinstance(value, float) and pa.types.is_decimal(arrow_type):
            return decimal.Decimal(repr(value))
        return value

    def literal(self, lit: _Lit, other):
        arrow_type = self.type_of(other)
        value = self.coerce(lit.value, arrow_type)
        if value is None:
            return pa.scalar(None, type=arrow_type) if arrow_type is not None else pa.scalar(None)
        if arrow_type is not None and (isinstance(value, (_dt.date, _dt.datetime)) or
                                       pa.types.is_decimal(arrow_type)):
            try:
                return pa.scalar(value, type=arrow_type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
                pass
        return pa.scalar(value)

    def as_expr(self, node, other=None):
        if isinstance(node, _Lit):
            return pc.scalar(self.literal(node, other))
        return node

    def compare(self, op, left, right):
        a = self.as_expr(left, right)
        b = self.as_expr(right, left)
        if op in ("=", "=="):
            return a == b
        if op in ("!=", "<>"):
            return a != b
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]

    def arith(self, fn, left, right):
        if isinstance(left, _Lit) and isinstance(right, _Lit):
            a, b = left.value, right.value
            if fn.startswith("add"):
                return _Lit(a + b)
            if fn.startswith("subtract"):
                return _Lit(a - b)
            if fn.startswith("multiply"):
                return _Lit(a * b)
        return pc.Expression._call(fn, [self.as_expr(left, right), self.as_expr(right, left)])


def _expr_type(expr: pc.Expression, schema: pa.Schema):
    """The Arrow type an expression evaluates to over ``schema`` (None if unknown)."""
    empty = pa.table({f.name: pa.array([], f.type) for f in schema})
    import pyarrow.dataset as pads

    result = pads.dataset(empty).to_table(columns={"_": expr})
    return result.schema.field("_").type


def _unquote(tok: str) -> str:
    return tok[1:-1].replace("''", "'")


def _ident(tok: str) -> str:
    if tok.startswith("`"):
        return tok[1:-1]
    return tok


def parse_sql_filter(text: str, schema: pa.Schema | None = None) -> pc.Expression:
    """Parse a SQL boolean expression into a pyarrow compute expression.

    With ``schema``, unknown columns are refused and string literals compared with date or
    timestamp columns are converted.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("empty filter")
    return _Parser(text, schema).parse()


def to_expression(filter: Any, schema: pa.Schema | None = None) -> pc.Expression | None:
    """A pyarrow expression from a filter given as None, an Expression or a SQL string."""
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        return filter
    if isinstance(filter, str):
        return parse_sql_filter(filter, schema)
    raise InvalidArgumentError(f"a filter is a SQL string or a pyarrow Expression, not {type(filter).__name__}")


def referenced_columns(expr: pc.Expression, schema: pa.Schema) -> list[str]:
    """Top-level columns of ``schema`` the expression reads (a superset at worst, never less)."""
    text = str(expr)
    names = [f.name for f in schema if re.search(r"(?<![\w.])" + re.escape(f.name) + r"(?![\w])", text)]
    probe = pa.table({f.name: pa.array([], schema.field(f.name).type) for f in schema if f.name in names})
    try:
        import pyarrow.dataset as pads

        pads.dataset(probe).to_table(filter=expr)
        return names
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError):
        return [f.name for f in schema]
