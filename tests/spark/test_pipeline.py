"""The main job (examples/pipeline.py) runs end to end on a small input, in its own process."""
import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "pipeline.py")


def _module():
    spec = importlib.util.spec_from_file_location("lancefmt_pipeline_example", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.spark
@pytest.mark.slow
def test_pipeline_runs(tmp_path):
    pytest.importorskip("pyspark")
    # what an earlier run over the same --root left (it starts over), and a file it must keep
    (tmp_path / "catalog" / "events.lance").mkdir(parents=True)
    (tmp_path / "us-east.offline").mkdir()
    (tmp_path / "notes.txt").write_text("mine")
    out = subprocess.run([sys.executable, SCRIPT, "--rows", "20000", "--master", "local[2]",
                          "--root", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    for line in ("removing the previous run's catalog, us-east.offline",
                 "write 20,000 events across 3 buckets", "append 5,000 events",
                 "version 1: 20,000 rows   tag before-refund-purge: 25,000 rows",
                 "2 appends to events.lance -> 2 versions of refunds.lance, 3,000 refund rows",
                 "still version 2 (nothing new, nothing committed)", "== summary"):
        assert line in out.stdout, out.stdout
    assert (tmp_path / "notes.txt").read_text() == "mine"
    # quiet: no JVM start-up notices, no Spark WARN lines, no pandas warning
    for noise in ("WARN", "Warning", "incubator", "log4j"):
        assert noise not in out.stderr, out.stderr[-3000:]


def test_failover_copies_the_base_and_repoints_it(tmp_path):
    pipeline = _module()
    bucket = tmp_path / "us-east"
    bucket.mkdir()
    (bucket / "a.lance").write_bytes(b"data")

    class Base:
        def __init__(self, name, path):
            self.name, self.path = name, path

    class FakeDataset:
        base_paths = {1: Base("us-east", str(bucket)), 2: Base("us-west", "/elsewhere")}
        calls = []

        def update_bases(self, mapping):
            self.calls.append(mapping)
            return "new version"

    ds = FakeDataset()
    replica = str(tmp_path / "replica")
    assert pipeline.failover(ds, "us-east", replica) == "new version"
    assert ds.calls == [{"us-east": replica}]
    assert (tmp_path / "replica" / "a.lance").read_bytes() == b"data"
