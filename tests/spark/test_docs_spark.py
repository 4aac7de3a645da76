"""The ```python blocks marked ``<!-- needs: spark -->`` in README.md and docs/*.md run, in
order per page, on the shared test SparkSession (see tests/docs/doc_blocks.py)."""
import pytest

import doc_blocks
from doc_blocks import page_id

pytestmark = pytest.mark.filterwarnings("ignore:lance is not fork-safe")  # pages import pylance

PAGES = [p for p in doc_blocks.pages() if doc_blocks.python_blocks(p, spark=True)]
# session settings local_session() sets on the shared session when a block calls it
RESTORED = ("spark.sql.shuffle.partitions", "spark.sql.python.filterPushdown.enabled")


def test_spark_blocks_found():
    assert {p.name for p in PAGES} >= {"README.md", "spark.md"}


@pytest.mark.spark
@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_spark_blocks_run(spark, page, request, monkeypatch, tmp_path):
    blocks = doc_blocks.python_blocks(page, spark=True)
    saved = {k: spark.conf.get(k) for k in RESTORED}
    try:
        namespace = doc_blocks.run(blocks, request, monkeypatch, tmp_path)
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)
    assert namespace.get("spark") is spark  # the blocks ran to their end on the shared session
