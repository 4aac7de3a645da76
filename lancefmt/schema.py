"""pylance's ``lance.schema``: the Lance schema (field ids) of a dataset."""
from .table.lance_schema import LanceField, LanceSchema

__all__ = ["LanceField", "LanceSchema"]
