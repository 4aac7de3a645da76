"""Spark fixtures: one local SparkSession per test process (``local[2,2]``: two cores, a failed
task tried twice; UI off), shared by every Spark test module, because starting the JVM and its
Python workers costs ~10 s. The Python workers inherit ``LANCEFMT_SPARK_FAULTS`` (set before
the JVM starts), so a test can arm a fault that kills one task of a job (:func:`arm_fault`).

Helpers for the distributed jobs' tests: :func:`twins` (a dataset and its copy, one for
lancefmt on Spark, one for pylance), :func:`assert_same_rows`, :func:`unreferenced_files`."""
import os
import shutil
import tempfile

import pytest

FAULTS = tempfile.mkdtemp(prefix="lancefmt-spark-faults-")


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
    from lancefmt.spark.jobs import FAULTS_ENV

    os.environ[FAULTS_ENV] = FAULTS
    session = local_session("local[2,2]", "lancefmt-tests", conf={
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


def arm_fault(kind: str) -> str:
    """The next task of a ``kind`` job (``compact``, ``backfill``, ``delete``, ``update``,
    ``merge``) kills its Python worker after writing its files; Spark retries it."""
    marker = os.path.join(FAULTS, kind)
    open(marker, "w").close()
    return marker


def writer_between_tasks_and_commit(monkeypatch, job_module, write) -> list:
    """Makes ``write()`` (another writer's commit) happen once, after the first run of a job of
    ``job_module`` (``dml``, ``merge``) collected its tasks' results and before it commits.
    Returns a list that grows by one per run of the job."""
    real, runs = job_module.collect_payloads, []

    def collect_then_write(df):
        out = real(df)
        runs.append(1)
        if len(runs) == 1:
            write()
        return out

    monkeypatch.setattr(job_module, "collect_payloads", collect_then_write)
    return runs


def twins(tmp_path, table, **write_kw):
    """``table`` written by lancefmt, and a byte copy of it: (lancefmt's URI, pylance's URI)."""
    import lancefmt

    uri, copy = str(tmp_path / "spark.lance"), str(tmp_path / "pylance.lance")
    lancefmt.write_dataset(table, uri, **write_kw)
    shutil.copytree(uri, copy)
    return uri, copy


def sorted_rows(table, key="id"):
    return table.sort_by([(key, "ascending")] + [(n, "ascending") for n in table.column_names
                                                 if n != key])


def assert_same_rows(uri, copy, key="id"):
    """The latest versions of ``uri`` and ``copy`` hold the same rows and schema (pylance reads)."""
    import lance

    ours, theirs = lance.dataset(uri).to_table(), lance.dataset(copy).to_table()
    assert ours.schema.equals(theirs.schema), (ours.schema, theirs.schema)
    assert sorted_rows(ours, key).equals(sorted_rows(theirs, key))


def unreferenced_files(uri):
    """Files under ``uri``'s ``data/`` and ``_deletions/`` that no version references, and
    anything left in the staging area."""
    import lancefmt
    from lancefmt.dataset.core.snapshot import Snapshot
    from lancefmt.table.deletion import deletion_file_kind
    from lancefmt.table.naming import deletion_file_name

    referenced = set()
    for v in lancefmt.dataset(uri).versions():
        for pb in Snapshot.open(uri, v["version"]).fragment_pbs():
            referenced.update(os.path.join("data", f.path) for f in pb.files)
            if pb.HasField("deletion_file"):
                d = pb.deletion_file
                referenced.add(os.path.join("_deletions", deletion_file_name(
                    pb.id, d.read_version, d.id, deletion_file_kind(d))))
    on_disk = set()
    for sub in ("data", "_deletions", "_lancefmt_staging"):
        for root, _, names in os.walk(os.path.join(uri, sub)):
            on_disk.update(os.path.relpath(os.path.join(root, n), uri) for n in names)
    return sorted(on_disk - referenced)
