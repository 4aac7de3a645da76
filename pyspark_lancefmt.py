"""Spark's data source auto-discovery hook: Spark imports every top-level ``pyspark_*`` module and
registers its ``DefaultSource``, so ``spark.read.format("lance")`` works without a
``lancefmt.spark.register(spark)`` call once lancefmt is installed with the ``spark`` extra."""
from lancefmt.spark.source import LanceDataSource as DefaultSource

__all__ = ["DefaultSource"]
