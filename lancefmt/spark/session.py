"""A local SparkSession that can run the lance data source (examples, tests, benchmarks).

Two things trip up a fresh local session: Spark starts its Python workers with ``python3`` from
``PATH`` (not this interpreter, so not this environment's pyarrow), and a lancefmt that is not
installed (run from a source tree) is invisible to them. :func:`local_session` fixes both
through the environment before the JVM starts, and registers the data source.
"""
from __future__ import annotations

import os
import sys


def _worker_environment() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    import lancefmt

    root = os.path.dirname(os.path.dirname(os.path.abspath(lancefmt.__file__)))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root] + paths)


def local_session(master: str = "local[*]", app_name: str = "lancefmt", conf: dict | None = None,
                  *, register: bool = True, filter_pushdown: bool = False, log_level: str = "ERROR"):
    """``SparkSession`` on ``master`` with the UI off, few shuffle partitions and (``register``)
    the ``lance`` source registered.

    ``filter_pushdown`` turns on ``spark.sql.python.filterPushdown.enabled``. Off by default:
    Spark 4.1-4.3 keep the read plan of the first filtered query on a DataFrame and reuse it for
    later queries on the same DataFrame object, pushed filters included (see
    :mod:`lancefmt.spark.reader`); with it on, ``load()`` afresh for each query.
    """
    _worker_environment()
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               # Python workers of a busy machine may take long to start and connect back
               .config("spark.python.authenticate.socketTimeout", "120s")
               .config("spark.sql.python.filterPushdown.enabled", str(bool(filter_pushdown)).lower()))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    if register:
        from . import register as _register

        _register(spark)
    return spark
