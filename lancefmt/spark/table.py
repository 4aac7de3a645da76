"""``LanceTable``: the distributed jobs behind the shape Spark users know from Delta Lake's
``DeltaTable`` (``forPath``, ``delete``, ``update``, ``merge(...).whenMatchedUpdateAll()...``).

A Python data source cannot be a catalog table with row-level operations, so Spark's own
statements (``MERGE INTO``, ``UPDATE``, ``DELETE FROM``, ``ALTER TABLE ... ADD COLUMNS``) and
``DataFrame.mergeInto`` cannot reach it; this object is the closest shape. Conditions are Spark
SQL text or Columns; in a merge the target's columns are ``target.<col>`` and the source's
``source.<col>``. A merge condition that is an equality of key columns (``"target.id =
source.id"``) merges on keys, as Lance does; any other condition is the join condition.
"""
from __future__ import annotations

from ..errors import InvalidArgumentError, NotSupportedError
from . import backfill, compaction, dml
from .merge import MergeBuilder


class LanceTable:
    """A Lance dataset seen as a Delta-style table by one SparkSession."""

    def __init__(self, spark, uri: str, *, storage_options: dict | None = None,
                 manifest_store: str | None = None):
        self.spark, self.uri = spark, uri
        self.options = {"storage_options": storage_options, "manifest_store": manifest_store}

    @classmethod
    def forPath(cls, spark, path: str, **options) -> "LanceTable":  # noqa: N802 (Delta's name)
        return cls(spark, path, **options)

    def toDF(self):  # noqa: N802
        """The latest version as a DataFrame (the ``lance`` source)."""
        return self.spark.read.format("lance").load(self.uri)

    def delete(self, condition=None) -> int:
        """Delete the rows matching ``condition`` (None: all); the rows deleted."""
        return dml.delete(self.spark, self.uri, condition if condition is not None else "true",
                          **self.options)

    def update(self, condition=None, set: dict | None = None) -> int:  # noqa: A002 (Delta's name)
        """Set ``set`` (``{column: expression}``) on the rows matching ``condition``."""
        return dml.update(self.spark, self.uri, set or {}, condition, **self.options)

    def merge(self, source, condition) -> MergeBuilder:
        """A merge of the DataFrame ``source``: on key columns (a list of names, or
        ``target.k = source.k [AND ...]``), or on any other join condition (SQL text or a
        Column over ``target.``/``source.``; a target row two source rows match is an error)."""
        try:
            keys = merge_keys(condition)
        except (NotSupportedError, InvalidArgumentError):
            if isinstance(condition, str) and not _parses(condition):
                raise
            return MergeBuilder(self.spark, self.uri, source, condition=condition, **self.options)
        return MergeBuilder(self.spark, self.uri, source, keys, **self.options)

    def addColumns(self, transforms, **kw) -> int:  # noqa: N802
        """Backfill new columns (see :func:`lancefmt.spark.backfill.add_columns`)."""
        return backfill.add_columns(self.spark, self.uri, transforms, **self.options, **kw)

    def optimize(self) -> "_Optimize":
        return _Optimize(self)


class _Optimize:
    def __init__(self, table: LanceTable):
        self.table = table

    def executeCompaction(self, **kw):  # noqa: N802
        """Distributed compaction (:func:`lancefmt.spark.compaction.compact`); its metrics."""
        t = self.table
        return compaction.compact(t.spark, t.uri, **t.options, **kw)


def merge_keys(condition) -> list:
    """The key columns of a merge condition: names as given, or those of a conjunction of
    ``target.k = source.k`` equalities (the same name on both sides)."""
    if isinstance(condition, (list, tuple)):
        return list(condition)
    if not isinstance(condition, str):
        condition = str(condition)
        if condition.startswith("Column<'") and condition.endswith("'>"):
            condition = condition[len("Column<'"):-2]
    if condition.isidentifier():
        return [condition]
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(condition, read="spark")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as e:
        raise InvalidArgumentError(f"cannot parse the merge condition {condition!r}: {e}") from None
    terms = list(tree.flatten()) if isinstance(tree, exp.And) else [tree]
    keys = []
    for term in terms:
        sides = (term.left, term.right) if isinstance(term, exp.EQ) else ()
        if len(sides) != 2 or not all(isinstance(s, exp.Column) for s in sides) or \
                {s.table.lower() for s in sides} != {"target", "source"} or \
                sides[0].name.lower() != sides[1].name.lower():
            raise NotSupportedError(
                f"a merge condition must be target.k = source.k [AND ...] (Lance merges on "
                f"key columns; put other conditions in the when clauses), not {condition!r}")
        keys.append(sides[0].name)
    return keys


def _parses(text: str) -> bool:
    import sqlglot

    try:
        sqlglot.parse_one(text, read="spark")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return False
    return True
