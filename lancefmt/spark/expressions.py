"""Spark SQL expressions and Columns given to the distributed jobs.

A job reads only the columns its expressions use: Spark cannot prune the columns of a Python
data source, so the jobs ask the ``lance`` source for them (its ``columns`` option). The names
come from the SQL text (sqlglot, Spark dialect); a ``Column`` is resolved by Spark's analyzer
over an empty frame of the job's columns (``frame``) and its references read off the analysed
plan, or, without that (Spark Connect), taken from its repr's text. When none of this tells,
or Spark cannot resolve the expressions over the columns found, every column is read.
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


def empty_frame(spark, schema, alias: str | None = None):
    """An empty DataFrame with the columns of the Arrow ``schema`` (to resolve Columns over)."""
    from pyspark.sql.types import StructField, StructType

    from .schema import spark_type

    df = spark.createDataFrame([], StructType([StructField(f.name, spark_type(f.type))
                                               for f in schema]))
    return df.alias(alias) if alias else df


def column_references(value, frame) -> set | None:
    """The names of ``frame = (DataFrame, side)``'s columns the Column ``value`` reads, from
    Spark's analysed plan of it (``side``: the part of the DataFrame that is the dataset);
    None when Spark cannot resolve it there or the Column has no JVM side (Spark Connect)."""
    if frame is None or getattr(value, "_jc", None) is None:
        return None
    df, side = frame
    try:
        plan = df.select(value.alias("__v"))._jdf.queryExecution().analyzed()
        ours = side._jdf.queryExecution().analyzed().outputSet()
        refs = plan.references().iterator()
        names = set()
        while refs.hasNext():
            attr = refs.next()
            if ours.contains(attr):
                names.add(attr.name())
        return names
    except Exception:  # noqa: BLE001 (an analysis or Py4J error: fall back to all columns)
        return None


def referenced_columns(values, names, qualifiers=None, frame=None) -> list | None:
    """The dataset columns (of ``names``, in their order) that ``values`` (SQL texts, Columns,
    None) refer to; None when that cannot be told (then read every column). ``qualifiers``:
    only names without a table or with one of these (lower-case) tables count; ``frame``: see
    :func:`column_references`."""
    used: set = set()
    for value in values:
        if value is None:
            continue
        text = value if isinstance(value, str) else None
        found = None
        if text is None:
            found = column_references(value, frame)
            if found is None:
                match = _COLUMN_REPR.match(str(value))
                text = match.group(1) if match else None
        if found is None:
            found = _names_in(text, qualifiers) if text is not None else None
        if found is None:
            return None
        used |= found
    wanted = {u.lower() for u in used}
    return [n for n in names if n.lower() in wanted]


def select_pruned(read, names, values, select, qualifiers=None, frame=None):
    """``select(read(columns))`` reading only the columns ``values`` refer to; when Spark
    cannot resolve the expressions over those (a name the text parse missed), over all.
    ``frame``: a callable giving the frame Columns are resolved over (see
    :func:`column_references`), called only when a value is a Column."""
    from pyspark.errors import AnalysisException

    if frame is not None and all(v is None or isinstance(v, str) for v in values):
        frame = None
    columns = referenced_columns(values, names, qualifiers, frame() if frame else None)
    if columns is not None:
        try:
            return select(read(columns))
        except AnalysisException:
            pass
    return select(read(list(names)))
