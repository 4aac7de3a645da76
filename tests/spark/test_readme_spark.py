"""The Spark ```python blocks of README.md run (on the shared test SparkSession)."""
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
          if "lancefmt.spark" in b]


@pytest.mark.spark
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_spark_block_runs(spark, index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "assert " in BLOCKS[index], "every README Spark block checks what it shows"
    namespace = {"__name__": "__readme__"}
    exec(compile(BLOCKS[index], f"README.md spark block {index}", "exec"), namespace)
    assert "spark" in namespace  # the block ran to its end on a session it made or reused
