"""tools/pylance_suite, the harness running Lance's own Python tests on lancefmt: the ``lance``
shim (aliases, failures, the probe's placeholders), the runner's restarts after a crash and a
hang, and the categories of failures. Lance's tests themselves are not run here."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools.pylance_suite import baseline, calls, fts, upstream  # noqa: E402
from tools.pylance_suite.categorize import categorize  # noqa: E402
from tools.pylance_suite.runner import SHIM, Impl, run_file  # noqa: E402


def _shim_python(code: str, probe: bool = False, lancefmt: Path = ROOT
                 ) -> subprocess.CompletedProcess:
    env = {**os.environ, **Impl.lancefmt(str(ROOT), probe=probe).env,
           "PYTHONPATH": os.pathsep.join([str(SHIM), str(ROOT)]),
           "PYLANCE_SUITE_LANCEFMT": str(lancefmt)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, cwd="/")


def test_shim_is_lancefmt_and_missing_modules_fail():
    r = _shim_python("""
        import sys
        import lance, lance.fragment, lance.file
        import lancefmt
        assert sys.modules["lance.fragment"] is sys.modules["lancefmt.fragment"]
        assert lance.dataset is lancefmt.dataset and lance.LanceDataset is lancefmt.Dataset
        assert lancefmt.fragment.__spec__.name == "lancefmt.fragment"  # left untouched
        try:
            import lance.pylance_suite_no_such_module
        except ModuleNotFoundError as e:
            print("missing:", e.name)
        try:
            from lance.dataset import PylanceSuiteNoSuchName
        except ImportError:
            print("no name")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["missing: lance.pylance_suite_no_such_module", "no name"]


def test_shim_refuses_a_lancefmt_from_elsewhere(tmp_path):
    r = _shim_python("import lance", lancefmt=tmp_path)
    assert r.returncode != 0 and "lancefmt was imported from" in r.stderr


def test_probe_placeholders_import_and_fail_on_use():
    r = _shim_python("""
        import lance
        from lance.pylance_suite_nothing import Config
        from lance.dataset import PylanceSuiteNoSuchName, LanceDataset
        import lancefmt, _pylance_suite_probe as probe
        assert LanceDataset is lancefmt.Dataset
        x = Config.V3  # attributes of placeholders import (decorators use them)
        for use in (lambda: Config(1), lambda: PylanceSuiteNoSuchName.make()):
            try:
                use()
            except probe.LancefmtLacks as e:
                print(e)
        print(probe.USED)
    """, probe=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["lance.pylance_suite_nothing.Config",
                                        "lance.dataset.PylanceSuiteNoSuchName.make"]


def test_runner_records_outcomes_and_resumes_after_a_crash_and_a_hang(tmp_path):
    root = tmp_path / "src" / "python"
    tests = root / "python" / "tests"
    tests.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (tests / "test_fake.py").write_text(textwrap.dedent("""
        import os, signal, time
        def test_a():
            pass
        def test_b_crashes():
            os.abort()
        def test_c_hangs():
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # pytest-timeout's
            time.sleep(60)
        def test_d_fails():
            assert {}.get("x") == 1
        def test_e():
            pass
    """))
    checkout = upstream.Checkout(root=root, tests=tests, commit="0" * 40, version="test")
    work = tmp_path / "work"
    work.mkdir()
    run = run_file(checkout, "test_fake.py", Impl.pylance(), work, timeout=2, file_timeout=120,
                   grace=2, log=lambda msg: None)
    outcomes = {k.split("::")[1]: v["outcome"] for k, v in run.tests.items()}
    assert outcomes == {"test_a": "passed", "test_b_crashes": "crashed", "test_c_hangs": "hung",
                        "test_d_fails": "failed", "test_e": "passed"}
    assert [r["test"] for r in run.restarts] == ["test_fake.py::test_b_crashes",
                                                 "test_fake.py::test_c_hangs"]
    assert run.tests["test_fake.py::test_d_fails"]["exception"]["type"] == "AssertionError"


@pytest.mark.parametrize("record, category", [
    ({"outcome": "failed", "exception": {
        "type": "AttributeError", "message": "'Dataset' object has no attribute 'create_index'",
        "frames": ["test_x.py:12:test_y"]}}, "missing method LanceDataset.create_index"),
    ({"outcome": "collect-error", "exception": {
        "text": "ModuleNotFoundError: No module named 'lance.indices'"}},
     "missing module lance.indices (the file does not import)"),
    ({"outcome": "failed", "exception": {
        "type": "ImportError", "message": "cannot import name 'Index' from 'lancefmt.dataset' "
        "(/x/lancefmt/dataset/__init__.py)"}}, "missing name lance.dataset.Index"),
    ({"outcome": "failed", "exception": {
        "type": "TypeError",
        "message": "Dataset.to_table() got an unexpected keyword argument 'zz'"}},
     "unsupported argument LanceDataset.to_table(zz=)"),
    ({"outcome": "failed", "exception": {"type": "LancefmtLacks", "message": "lance.util.KMeans"}},
     "missing lance.util.KMeans"),
    ({"outcome": "hung"}, "hung (killed: no progress past the per-test timeout)"),
])
def test_categories(record, category):
    assert categorize(record, "test_x.py")[0] == category


def test_fts_split_and_index_types(tmp_path):
    path = tmp_path / "test_s.py"
    path.write_text(textwrap.dedent("""
        import pytest
        def test_fts(ds):
            ds.create_scalar_index("doc", index_type="INVERTED")
            ds.to_table(full_text_query="x")
        @pytest.mark.parametrize("kind", ["BTREE", "INVERTED"])
        def test_kinds(ds, kind):
            ds.create_scalar_index("x", kind)
        def test_btree(ds):
            ds.create_scalar_index(
                "x", "btree")
    """))
    ids = ["test_s.py::test_fts", "test_s.py::test_kinds[BTREE]",
           "test_s.py::test_kinds[INVERTED]", "test_s.py::test_btree"]
    assert fts.classify(path, ids) == dict(zip(ids, [True, False, True, False]))
    assert calls.index_type(path, 4, "create_scalar_index") == "INVERTED"
    assert calls.index_type(path, 8, "create_scalar_index", "BTREE") == "BTREE"
    assert calls.index_type(path, 10, "create_scalar_index") == "BTREE"


def test_stored_baseline_covers_the_measured_files():
    base = json.loads(baseline.PATH.read_text())
    assert base["pylance_version"] and len(base["lance_commit"]) == 40
    for file in upstream.FILE_SETS["all"]:
        assert file in base["files"] or file in base["missing_files"]
    for entry in base["files"].values():
        assert entry["passed"] == sorted(entry["passed"])
