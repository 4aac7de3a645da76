"""A local SparkSession that can run the lance data source (examples, tests, benchmarks).

Two things trip up a fresh local session: Spark starts its Python workers with ``python3`` from
``PATH`` (not this interpreter, so not this environment's pyarrow), and a lancefmt that is not
installed (run from a source tree) is invisible to them. :func:`local_session` fixes both
through the environment before the JVM starts, and registers the data source.

It is also quiet (``quiet=True``): Spark logs errors only (a log4j2 configuration shipped with
lancefmt, given to the JVM at launch), the driver binds to the loopback address instead of
warning that the host name resolves to it, and the JVM's start-up notices that need no action
(incubator modules, the native-Hadoop fallback) are dropped from its stderr; everything else on
that stream is passed through.

Its executors' Python workers are forked from :mod:`lancefmt.spark.daemon`, which imports
lancefmt once, so no task pays that import (seconds on a busy machine) itself.
"""
from __future__ import annotations

import os
import re
import sys
import threading

# JVM start-up lines that ask nothing of the user.
_NOISE = re.compile(
    r"Using incubator modules|Using Spark's default log4j profile|NativeCodeLoader|"
    r"Setting default log level to|To adjust logging level use|resolves to a loopback address|"
    r"Set SPARK_LOCAL_IP if you need")
LOG4J_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
ARROW_BATCH_ROWS = 131072
ARROW_BATCH_BYTES = 64 << 20


def _worker_environment() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    import lancefmt

    root = os.path.dirname(os.path.dirname(os.path.abspath(lancefmt.__file__)))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root] + paths)


def _forward(stream, out) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace")
        if not _NOISE.search(line):
            out.write(line)
            out.flush()


def _launch_quiet_jvm(conf) -> None:
    """Start the JVM gateway ourselves with its stderr filtered (see the module docstring)."""
    from subprocess import PIPE

    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # a JVM is already running in this process
        return
    proc_kwargs = {"stderr": PIPE}
    gateway = launch_gateway(conf, popen_kwargs=proc_kwargs)
    stderr = gateway.proc.stderr if hasattr(gateway, "proc") else None
    if stderr is not None:
        threading.Thread(target=_forward, args=(stderr, sys.stderr), daemon=True,
                         name="spark-jvm-stderr").start()
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def local_session(master: str = "local[*]", app_name: str = "lancefmt", conf: dict | None = None,
                  *, register: bool = True, filter_pushdown: bool = False, log_level: str = "ERROR",
                  quiet: bool = True):
    """``SparkSession`` on ``master`` with the UI off, few shuffle partitions and (``register``)
    the ``lance`` source registered.

    ``filter_pushdown`` turns on ``spark.sql.python.filterPushdown.enabled``. Off by default:
    Spark 4.1-4.3 keep the read plan of the first filtered query on a DataFrame and reuse it for
    later queries on the same DataFrame object, pushed filters included (see
    :mod:`lancefmt.spark.reader`); with it on, ``load()`` afresh for each query.
    """
    _worker_environment()
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    settings = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        # Python workers of a busy machine may take long to start and connect back
        "spark.python.authenticate.socketTimeout": "120s",
        "spark.sql.python.filterPushdown.enabled": str(bool(filter_pushdown)).lower(),
        # executor Python workers fork from a daemon that has lancefmt imported already
        "spark.python.daemon.module": "lancefmt.spark.daemon",
        # the Arrow batches a Python sink's tasks receive: 10,000 rows by default; fewer,
        # larger batches cost the Python workers less (docs/performance.md, Spark write),
        # and the byte cap keeps wide rows (vectors) from making huge ones
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
        "spark.sql.execution.arrow.maxBytesPerBatch": str(ARROW_BATCH_BYTES),
    }
    if quiet:
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"
    settings.update({k: str(v) for k, v in (conf or {}).items()})
    if quiet:
        _launch_quiet_jvm(SparkConf(loadDefaults=False).setAll(list(settings.items())))
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    if register:
        from . import register as _register

        _register(spark)
    return spark
