"""README.md and docs/*.md: every ```python block runs (the Spark ones in
tests/spark/test_docs_spark.py), every ```bash command exists, the pages follow the convention
of doc_blocks, and the README stays short and links every page."""
import re

import pytest

import doc_blocks
from doc_blocks import DOCS, README, ROOT, pages, page_id

PAGES = pages()
RUNNABLE = [p for p in PAGES if doc_blocks.python_blocks(p, spark=False)]


def test_pages_found():
    names = {p.name for p in PAGES}
    assert {"README.md", "file-versions.md", "spark.md", "object-stores.md",
            "architecture.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_page_follows_the_convention(page):
    assert doc_blocks.convention_problems(page) == []


@pytest.mark.parametrize("page", RUNNABLE, ids=page_id)
def test_python_blocks_run(page, request, monkeypatch, tmp_path):
    """The page's non-Spark blocks, in order, in one namespace, in a scratch directory."""
    blocks = doc_blocks.python_blocks(page, spark=False)
    namespace = doc_blocks.run(blocks, request, monkeypatch, tmp_path)
    assert len(namespace) > 1  # the blocks ran to their end and defined what they show


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_bash_commands_exist(page):
    problems = []
    for block in doc_blocks.blocks(page):
        if block.lang == "bash":
            problems += doc_blocks.bash_problems(block)
    assert problems == []


def test_readme_is_short_and_states_the_two_commands():
    text = README.read_text()
    assert len(text.splitlines()) < 150
    quickstart = [b for b in doc_blocks.blocks(README) if b.lang == "bash"][0]
    assert [w for _, w in doc_blocks.commands(quickstart)][:2] == [["make", "demo"], ["make", "test"]]
    assert "make test" in (ROOT / ".ci" / "run").read_text()  # what CI runs


def test_links_resolve_and_every_page_is_linked_from_the_readme():
    linked_from_readme = set()
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            path = (page.parent / target).resolve()
            assert path.exists(), f"{page_id(page)} links to {target}, which does not exist"
            if page == README:
                linked_from_readme.add(path)
    assert set(DOCS.glob("*.md")) <= linked_from_readme


def test_the_checks_catch_what_they_should(tmp_path):
    """The convention and bash checks fail on what they exist to catch."""
    page = tmp_path / "page.md"
    page.write_text("\n".join([
        "```python", "import lancefmt.spark", "```",
        "<!-- needs: s3 -->", "```python", "uri = 's3://my-bucket/x'", "assert uri", "```",
        "```sh", "ls", "```",
        "```bash", "make demo", "make no-such-target", "make test PYTEST_ARGS=-x NOPE=1",
        "pip install '.[spark,nope]'", "lancefmt tags DS create v1", "lancefmt frobnicate DS",
        "cd asv_bench && python -m benchmarks.random_access && python -m benchmarks.nope",
        "curl https://example.com", "```", ""]))
    problems = doc_blocks.convention_problems(page)
    assert any("checks nothing" in p for p in problems)
    assert any("uses Spark without" in p for p in problems)
    assert any("```sh block" in p for p in problems)
    blocks = doc_blocks.blocks(page)
    assert blocks[1].needs == {"s3"} and doc_blocks.buckets(blocks) == ["my-bucket"]
    bash = doc_blocks.Block(ROOT / "README.md", "bash", blocks[3].code, 1, frozenset())
    problems = doc_blocks.bash_problems(bash)
    assert [p.split(": ", 2)[1] for p in problems] == [
        "make no-such-target", "make test PYTEST_ARGS=-x NOPE=1", "pip install '.[spark,nope]'",
        "lancefmt frobnicate DS", "python -m benchmarks.nope", "curl https://example.com"]
