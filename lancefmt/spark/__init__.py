"""PySpark integration: the ``lance`` Python data source (Spark 4.x Python Data Source API).

``lancefmt.spark.register(spark)`` registers it; with lancefmt installed, Spark also finds it on
its own through the top-level ``pyspark_lancefmt`` module. pyspark is an optional dependency
(``pip install 'lancefmt[spark]'``): nothing here imports it until it is used.
"""
from __future__ import annotations

__all__ = ["register", "local_session", "LanceDataSource", "SHORT_NAME"]

SHORT_NAME = "lance"


def register(spark) -> None:
    """Register the ``lance`` data source with ``spark`` (a SparkSession).

    Registers a subclass carrying the session's ``defaultParallelism``: Spark plans reads in
    Python processes without a SparkContext, and reads plan at least that many partitions.
    """
    from .source import LanceDataSource

    try:
        cores = int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect sessions have no SparkContext
        cores = None
    # A class that is not importable by name is pickled by value, its attribute included.
    registered = type("LanceDataSource", (LanceDataSource,),
                      {"default_parallelism": cores, "__module__": __name__ + "._registered"})
    spark.dataSource.register(registered)


def local_session(*args, **kwargs):
    """A local SparkSession ready for the lance source (see :mod:`lancefmt.spark.session`)."""
    from .session import local_session as _local_session

    return _local_session(*args, **kwargs)


def __getattr__(name):
    if name == "LanceDataSource":
        from .source import LanceDataSource

        return LanceDataSource
    raise AttributeError(f"module 'lancefmt.spark' has no attribute {name!r}")
