"""Index terms of filters that differ only in their integer literals, extracted once per shape.

A service looks rows up with the same filter and new values (``id = 17``, ``id = 42``...).
:mod:`.templates` already parses such texts once per shape; here the index terms
(:func:`.sargable.sargable`) are also extracted once per shape: from the shape's text, whose
literals are placeholder numbers, and each new text puts its own values where the placeholders
landed in the terms.

That is only the same tree as the text's own extraction when no step of the extraction looked
at the values, so a shape is bound only when every placeholder lands exactly once, as itself, in
an ``Equals``/``Range``/``IsIn`` term on an integer column (no merge of two bounds dropped one,
no conversion changed it), and a text only when each of its values is a plain decimal integer
that fits the column's type, all different (an ``IN`` list's duplicates and ranges with equal
bounds are what the extraction merges). Anything else is extracted text by text.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace

import pyarrow as pa

from .sargable import All, Any, Equals, IsIn, Negate, Range, Term, sargable
from .templates import placeholder_number, shape_of

MAX_SHAPES = 256
_SHAPES: OrderedDict = OrderedDict()
_LOCK = threading.Lock()
_UNBOUND = object()  # a shape whose terms must be extracted text by text


def shaped_sargable(text: str, schema: pa.Schema):
    """:func:`.sargable.sargable` of ``text``, through its shape when it can be (see module
    docstring)."""
    found = _bound(text, schema)
    return sargable(text, schema) if found is None else found[1]


def translates_like_its_shape(text: str, schema: pa.Schema) -> bool:
    """Whether ``text`` binds to a shape (see module docstring) a text of which translated
    without error: its translation can wait until a scan needs it. Each of its values fits
    the column it meets, and nothing else differs."""
    found = _bound(text, schema)
    return found is not None and found[0] in _TRANSLATED


def note_translated(text: str, schema: pa.Schema) -> None:
    """Record that ``text`` translated without error: texts binding to its shape differ from
    it in integer values only, which fit their columns."""
    found = _bound(text, schema)
    if found is not None:
        with _LOCK:
            _TRANSLATED[found[0]] = True
            while len(_TRANSLATED) > MAX_SHAPES:
                _TRANSLATED.popitem(last=False)


_TRANSLATED: OrderedDict = OrderedDict()  # shape keys a text of which was translated
MAX_TEXTS = 512
_BOUND: OrderedDict = OrderedDict()  # (text, schema) -> (shape key, terms) or _UNBOUND


def _bound(text: str, schema: pa.Schema):
    """(shape key, ``text``'s terms bound into its shape's) or None (kept per text: a scanner
    and the index selection of one look-up ask twice)."""
    key = (text, schema)
    with _LOCK:
        hit = _BOUND.get(key)
    if hit is not None:
        return None if hit is _UNBOUND else hit
    found = _binding(text, schema)
    out = _UNBOUND
    if found is not None:
        try:
            out = (found[0], _bind(found[1], found[2]))
        except (pa.ArrowInvalid, OverflowError, ValueError, TypeError):  # out of the column's range
            pass
    with _LOCK:
        _BOUND[key] = out
        while len(_BOUND) > MAX_TEXTS:
            _BOUND.popitem(last=False)
    return None if out is _UNBOUND else out


def _binding(text: str, schema: pa.Schema):
    """(shape key, the shape's terms, placeholder -> value) when ``text`` binds, else None."""
    found = shape_of(text)
    if found is None:
        return None
    shape, values = found
    template = _template(shape, len(values), schema)
    if template is _UNBOUND:
        return None
    ints = {}
    for ph, literal in values:
        if not (_plain_integer(literal) and ph.isdigit()):
            return None
        ints[int(ph)] = int(literal)
    if len(set(ints.values())) != len(ints):
        return None
    return (shape, schema), template, ints


def _plain_integer(literal: str) -> bool:
    return literal.isascii() and literal.isdigit() and (literal == "0" or literal[0] != "0")


def _template(shape: str, count: int, schema: pa.Schema):
    key = (shape, schema)
    with _LOCK:
        hit = _SHAPES.get(key)
        if hit is not None:
            _SHAPES.move_to_end(key)
            return hit
    try:
        tree = sargable(shape, schema)
    except Exception:  # the texts' own extraction reports it
        tree = None
    found: list = []
    if tree is None or not _slots(tree, found) or \
            sorted(found) != [int(placeholder_number(k)) for k in range(count)]:
        tree = _UNBOUND
    with _LOCK:
        _SHAPES[key] = tree
        while len(_SHAPES) > MAX_SHAPES:
            _SHAPES.popitem(last=False)
    return tree


def _integer_type(t) -> bool:
    return isinstance(t, pa.DataType) and pa.types.is_integer(t)


def _slots(tree, found: list) -> bool:
    """Collect the values of the tree's integer terms into ``found``; False when the tree holds
    something a binding cannot reproduce (a term of another kind holding a number)."""
    if isinstance(tree, (All, Any)):
        return all(_slots(c, found) for c in tree.children)
    if isinstance(tree, Negate):
        return _slots(tree.child, found)
    if not isinstance(tree, Term):
        return True  # OTHER: no placeholder inside (the count check sees any that vanished)
    q = tree.query
    if isinstance(q, Equals) and _integer_type(q.type) and type(q.value) is int:
        found.append(q.value)
        return True
    if isinstance(q, Range) and _integer_type(q.type):
        for v in (q.lower, q.upper):
            if v is not None:
                if type(v) is not int:
                    return False
                found.append(v)
        return True
    if isinstance(q, IsIn) and _integer_type(q.type) and all(type(v) is int for v in q.values):
        found.extend(q.values)
        return True
    return False  # any other term: bound text by text


def _bind(tree, ints: dict):
    """``tree`` with each placeholder value replaced by its text's value (checked to fit the
    column's type, as the extraction checks a literal)."""
    if isinstance(tree, All):
        return All(tuple(_bind(c, ints) for c in tree.children))
    if isinstance(tree, Any):
        return Any(tuple(_bind(c, ints) for c in tree.children))
    if isinstance(tree, Negate):
        return Negate(_bind(tree.child, ints))
    if not isinstance(tree, Term):
        return tree
    q = tree.query
    if isinstance(q, Equals):
        return Term(tree.column, Equals(_value(ints[q.value], q.type), q.type))
    if isinstance(q, Range):
        lo = None if q.lower is None else _value(ints[q.lower], q.type)
        hi = None if q.upper is None else _value(ints[q.upper], q.type)
        return Term(tree.column, replace(q, lower=lo, upper=hi))
    return Term(tree.column, IsIn(tuple(_value(ints[v], q.type) for v in q.values), q.type))


def _value(v: int, t: pa.DataType) -> int:
    out = pa.scalar(v, type=t).as_py()  # raises when out of the column's range
    if out != v:
        raise ValueError("not a value of the column's type")
    return out
