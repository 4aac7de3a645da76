"""Every ```python block of README.md runs (Spark blocks run in tests/spark/test_readme_spark.py).

Blocks run in order in one namespace, in a scratch working directory; what a block needs is
set up in the README itself, so a reader can paste it as is."""
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(spark: bool) -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    return [b for b in blocks if ("lancefmt.spark" in b) == spark]


def test_readme_has_python_blocks():
    assert len(python_blocks(False)) >= 2 and len(python_blocks(True)) >= 1


@pytest.mark.parametrize("index", range(len(python_blocks(False))))
def test_readme_block_runs(index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = python_blocks(False)[index]
    exec(compile(code, f"README.md python block {index}", "exec"), {"__name__": "__readme__"})
