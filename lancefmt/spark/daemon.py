"""Spark's Python worker daemon, with lancefmt's Spark modules imported before it forks.

Every Python worker Spark starts on a machine (creating the data source, planning a read, reading
a partition, writing, committing a micro-batch) is forked from one daemon process. PySpark's own
daemon has imported only pyspark, so each fresh worker first spent seconds importing lancefmt
(pyarrow.dataset pulls in pandas, the filter translator sqlglot) -- measured 1-6 s per worker on
a busy 2-core machine, paid again by every new worker of every planning step. This daemon pays it
once; forked workers share the imported modules. :func:`lancefmt.spark.local_session` selects it
(``spark.python.daemon.module=lancefmt.spark.daemon``); other sessions may set the same conf.

Only modules are imported, no work is started: no thread pools or files exist before the fork.
"""
from pyspark.daemon import manager

try:  # a broken install must not take down every Python UDF of the session: workers then
    # import (and report the error) themselves, as with PySpark's plain daemon
    import lancefmt.spark.reader  # noqa: F401
    import lancefmt.spark.source  # noqa: F401
    import lancefmt.spark.stream_reader  # noqa: F401
    import lancefmt.spark.stream_writer  # noqa: F401
    import lancefmt.spark.writer  # noqa: F401
except ImportError:  # pragma: no cover
    pass

if __name__ == "__main__":
    manager()
