"""pylance's SQL dialect (DataFusion's) -> pyarrow compute expressions.

Filters (``"id > 3 AND s LIKE 'a%'"``), projection expressions (``{"twice": "id * 2"}``) and
update values are parsed with sqlglot (Spark dialect: backtick identifiers, ``"..."`` strings,
``X'..'`` binary literals, as Lance reads them) and translated node by node into
``pyarrow.compute.Expression`` s, typed against the dataset schema so literals take the type of
the column they meet and mismatches are refused with the column's name.
"""
from .translate import parse_expression, parse_filter, referenced_columns, to_expression

__all__ = ["parse_filter", "parse_expression", "to_expression", "referenced_columns"]
