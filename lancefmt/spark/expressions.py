"""Spark SQL expressions and Columns given to the distributed jobs.

A job reads only the columns its expressions use: Spark cannot prune the columns of a Python
data source, so the jobs ask the ``lance`` source for them (its ``columns`` option). The names
come from the SQL text (sqlglot, Spark dialect; a ``Column``'s text is its repr); when that
text does not parse, or Spark cannot resolve the expressions over the columns found, every
column is read.
"""
from __future__ import annotations

import re

from ..errors import InvalidArgumentError

_COLUMN_REPR = re.compile(r"^Column<'(.*)'>$", re.S)


def as_column(value, what: str):
    """``value`` (Spark SQL text or a ``Column``) as a ``Column``."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(value, Column):
        return value
    if isinstance(value, str) and value.strip():
        return F.expr(value)
    raise InvalidArgumentError(f"{what} must be Spark SQL text or a Column, not {value!r}")


def sql_text(value) -> str:
    """The text of ``value``: itself, or a ``Column``'s expression as Spark prints it (its repr
    unwrapped; SQL for ``F.expr`` Columns, Spark's expression tree for others in Spark 4.1)."""
    if isinstance(value, str):
        return value
    match = _COLUMN_REPR.match(str(value))
    return match.group(1) if match else str(value)


def _names_in(text: str, qualifiers=None) -> set | None:
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(text, read="spark")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return None
    out = set()
    for c in tree.find_all(exp.Column):
        if qualifiers is None or not c.table or c.table.lower() in qualifiers:
            out.add(c.name)
    return out


def referenced_columns(values, names, qualifiers=None) -> list | None:
    """The dataset columns (of ``names``, in their order) that ``values`` (SQL texts, Columns,
    None) refer to; None when that cannot be told (then read every column). ``qualifiers``:
    only names without a table or with one of these (lower-case) tables count."""
    used: set = set()
    for value in values:
        if value is None:
            continue
        text = value if isinstance(value, str) else None
        if text is None:
            match = _COLUMN_REPR.match(str(value))
            text = match.group(1) if match else None
        found = _names_in(text, qualifiers) if text is not None else None
        if found is None:
            return None
        used |= found
    wanted = {u.lower() for u in used}
    return [n for n in names if n.lower() in wanted]


def select_pruned(read, names, values, select, qualifiers=None):
    """``select(read(columns))`` reading only the columns ``values`` refer to; when Spark
    cannot resolve the expressions over those (a name the text parse missed), over all."""
    from pyspark.errors import AnalysisException

    columns = referenced_columns(values, names, qualifiers)
    if columns is not None:
        try:
            return select(read(columns))
        except AnalysisException:
            pass
    return select(read(list(names)))
