"""The names pylance's native module (``lance.lance``) gives that code imports directly:
the compaction API, the Lance schema, and the debug formatters."""
from .debug import format_fragment, format_manifest, format_schema, list_transactions
from .optimize import (Compaction, CompactionMetrics, CompactionPlan, CompactionTask,
                       RewriteResult)
from .table.lance_schema import LanceField, LanceSchema

__all__ = ["Compaction", "CompactionMetrics", "CompactionPlan", "CompactionTask",
           "LanceField", "LanceSchema", "RewriteResult", "format_fragment", "format_manifest",
           "format_schema", "list_transactions"]
