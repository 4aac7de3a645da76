"""JSONPath as pylance's ``json_extract`` / ``json_exists`` / ``json_array_*`` read it.

The grammar (the ``jsonb`` crate's, in lax mode): an optional ``$`` (a path may start with a
bare member name, ``user.name``), then steps: ``.name``, ``."quoted name"``, ``.*`` (every
member value), ``["name"]``, ``[*]`` (every element; a non-array is its own only element),
``[i]``, ``[i, j]``, ``[i to j]``, ``[last]``, ``[last - n]`` (array elements; nothing on a
non-array), and filters ``?(@.a > 1 && @.b == "x")`` that keep the current values for which
the predicate holds. A member step on a non-object selects nothing: there is no automatic
unwrapping of arrays. Anything else is an error, as in pylance ("Invalid JSONPath").
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import InvalidArgumentError

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
    | (?P<op>==|!=|<>|<=|>=|&&|\|\||[$@.\[\]*,?()<>!-])
    | (?P<name>[^\s"$@.\[\]*,?()<>!=&|-]+)
    )""", re.VERBOSE)


class JsonPathError(InvalidArgumentError):
    """A JSONPath pylance would refuse ("Invalid JSONPath")."""


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise JsonPathError(f"Invalid JSONPath {text!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


@dataclass(frozen=True)
class Member:
    name: str | None  # None: every member (.*)


@dataclass(frozen=True)
class Elements:
    selectors: tuple | None  # None: every element ([*]); else ((start, end), ...) of Index


@dataclass(frozen=True)
class Index:
    value: int
    from_last: bool = False  # last - value


@dataclass(frozen=True)
class Filter:
    predicate: object


@dataclass(frozen=True)
class Compare:
    op: str
    left: object
    right: object


@dataclass(frozen=True)
class Logic:
    op: str  # "&&", "||", "!"
    args: tuple


@dataclass(frozen=True)
class PathExpr:
    root: str  # "$" or "@"
    steps: tuple


@dataclass(frozen=True)
class Const:
    value: object


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def error(self) -> JsonPathError:
        return JsonPathError(f"Invalid JSONPath {self.text!r}")

    def peek(self, k: int = 0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else (None, None)

    def take(self, value=None):
        kind, v = self.peek()
        if kind is None or (value is not None and v != value):
            raise self.error()
        self.i += 1
        return kind, v

    def at(self, value) -> bool:
        kind, v = self.peek()
        return kind == "op" and v == value

    def path(self) -> tuple:
        steps = []
        if self.at("$"):
            self.take()
        elif self.peek()[0] == "name":
            steps.append(Member(self.take()[1]))
        elif self.peek()[0] is not None and not self.at(".") and not self.at("["):
            raise self.error()
        steps += self.steps()
        if self.peek()[0] is not None:
            raise self.error()
        return tuple(steps)

    def steps(self) -> list:
        steps = []
        while True:
            if self.at("."):
                self.take()
                kind, v = self.take()
                if kind == "op" and v == "*":
                    steps.append(Member(None))
                elif kind == "name":
                    steps.append(Member(v))
                elif kind == "str":
                    steps.append(Member(_unquote(v, self)))
                else:
                    raise self.error()
            elif self.at("["):
                steps.append(self.bracket())
            elif self.at("?"):
                self.take()
                self.take("(")
                steps.append(Filter(self.or_expr()))
                self.take(")")
            else:
                return steps

    def bracket(self):
        self.take("[")
        if self.at("*"):
            self.take()
            self.take("]")
            return Elements(None)
        if self.peek()[0] == "str":
            name = _unquote(self.take()[1], self)
            self.take("]")
            return Member(name)
        selectors = [self.selector()]
        while self.at(","):
            self.take()
            selectors.append(self.selector())
        self.take("]")
        return Elements(tuple(selectors))

    def selector(self):
        start = self.index()
        kind, v = self.peek()
        if kind == "name" and v == "to":
            self.take()
            return (start, self.index())
        return (start, start)

    def index(self) -> Index:
        kind, v = self.take()
        if kind == "name" and v == "last":
            if self.at("-"):
                self.take()
                kind, v = self.take()
                if kind != "num" or not v.isdigit():
                    raise self.error()
                return Index(int(v), True)
            return Index(0, True)
        if kind == "num" and v.isdigit():
            return Index(int(v))
        if kind == "op" and v == "-" and self.peek()[0] == "num" and self.peek()[1].isdigit():
            return Index(-int(self.take()[1]))  # a negative index selects nothing
        raise self.error()

    # filters
    def or_expr(self):
        args = [self.and_expr()]
        while self.at("||"):
            self.take()
            args.append(self.and_expr())
        return args[0] if len(args) == 1 else Logic("||", tuple(args))

    def and_expr(self):
        args = [self.unary()]
        while self.at("&&"):
            self.take()
            args.append(self.unary())
        return args[0] if len(args) == 1 else Logic("&&", tuple(args))

    def unary(self):
        if self.at("!"):
            self.take()
            self.take("(")
            inner = self.or_expr()
            self.take(")")
            return Logic("!", (inner,))
        if self.at("("):
            self.take()
            inner = self.or_expr()
            self.take(")")
            return inner
        left = self.operand()
        kind, op = self.peek()
        if kind == "op" and op in ("==", "!=", "<>", "<", "<=", ">", ">="):
            self.take()
            return Compare("!=" if op == "<>" else op, left, self.operand())
        if isinstance(left, PathExpr):  # a bare path: "exists"
            return Compare("exists", left, None)
        raise self.error()

    def operand(self):
        kind, v = self.peek()
        if kind == "op" and v in ("@", "$"):
            self.take()
            return PathExpr(v, tuple(self.steps()))
        if kind == "str":
            self.take()
            return Const(_unquote(v, self))
        if kind == "num":
            self.take()
            return Const(float(v) if any(c in v for c in ".eE") else int(v))
        if kind == "op" and v == "-" and self.peek(1)[0] == "num":
            self.take()
            n = self.take()[1]
            return Const(-(float(n) if any(c in n for c in ".eE") else int(n)))
        if kind == "name" and v in ("true", "false", "null"):
            self.take()
            return Const({"true": True, "false": False, "null": None}[v])
        raise self.error()


def _unquote(token: str, parser) -> str:
    import json

    try:
        return json.loads(token)
    except ValueError:
        raise parser.error() from None


@lru_cache(maxsize=256)
def parse_path(text: str) -> tuple:
    """The steps of a JSONPath (JsonPathError when pylance would refuse it)."""
    if not isinstance(text, str):
        raise JsonPathError(f"Invalid JSONPath {text!r}")
    return _Parser(text).path()


# ---------------------------------------------------------------------------------------------
# selection over Python values (codec.loads)


def _step(step, values: list, root) -> list:
    out = []
    for v in values:
        if isinstance(step, Member):
            if isinstance(v, dict):
                if step.name is None:
                    out.extend(v.values())
                elif step.name in v:
                    out.append(v[step.name])
        elif isinstance(step, Elements):
            if not isinstance(v, list):
                if step.selectors is None:
                    out.append(v)
                continue
            if step.selectors is None:
                out.extend(v)
                continue
            n = len(v)
            for lo, hi in step.selectors:
                a = n - 1 - lo.value if lo.from_last else lo.value
                b = n - 1 - hi.value if hi.from_last else hi.value
                for i in range(max(a, 0), min(b, n - 1) + 1):
                    out.append(v[i])
        elif isinstance(step, Filter):
            if _holds(step.predicate, v, root):
                out.append(v)
    return out


def select(steps: tuple, value, root=None) -> list:
    """Every value the path selects in ``value``, in document order."""
    root = value if root is None else root
    values = [value]
    for step in steps:
        values = _step(step, values, root)
        if not values:
            break
    return values


def _operand(x, current, root) -> list:
    if isinstance(x, Const):
        return [x.value]
    return select(x.steps, current if x.root == "@" else root, root)


def _compare(op: str, a, b) -> bool:
    num = (int, float)
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        if op in ("==", "!="):
            same = type(a) is type(b) and a == b
            return same if op == "==" else not same
        return False
    if isinstance(a, num) and isinstance(b, num) or isinstance(a, str) and isinstance(b, str):
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
                ">=": a >= b}[op]
    return False


def _holds(pred, current, root) -> bool:
    if isinstance(pred, Logic):
        if pred.op == "!":
            return not _holds(pred.args[0], current, root)
        results = (_holds(a, current, root) for a in pred.args)
        return all(results) if pred.op == "&&" else any(results)
    if pred.op == "exists":
        return bool(_operand(pred.left, current, root))
    lefts, rights = _operand(pred.left, current, root), _operand(pred.right, current, root)
    return any(_compare(pred.op, a, b) for a in lefts for b in rights
               if not isinstance(a, (list, dict)) and not isinstance(b, (list, dict)))
