"""Spark fixtures: one local SparkSession per test process (``local[2]``, UI off), shared by every
Spark test module, because starting the JVM and its Python workers costs ~10 s."""
import shutil

import pytest


def _spark_available() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install 'lancefmt[spark]')"
    if shutil.which("java") is None:
        return "no java on PATH"
    return None


@pytest.fixture(scope="session")
def spark():
    reason = _spark_available()
    if reason:
        pytest.skip(reason)
    from lancefmt.spark import local_session

    session = local_session("local[2]", "lancefmt-tests", conf={
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.driver.memory": "1g",
        "spark.python.worker.reuse": "true",
    })
    yield session
    session.stop()


@pytest.fixture
def pushdown(spark):
    """Python filter pushdown on for one test (restored afterwards)."""
    key = "spark.sql.python.filterPushdown.enabled"
    old = spark.conf.get(key)
    spark.conf.set(key, "true")
    yield spark
    spark.conf.set(key, old)
