"""The quickstart builds once: after ``make demo``, ``make test`` installs only what is missing
and compiles nothing already built (issue 38). Checked without a multi-minute build: the
Makefile's plans (``make -n``) for each state of the stamps, and an editable build of a copy of
the tree (what ``pip install -e`` runs) against the extensions already built in place."""
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPS = {"base": ".lancefmt-base", "spark": ".lancefmt-spark", "all": ".lancefmt-installed"}


def _plan(tmp_path, target: str, stamps: tuple) -> list[str]:
    """The commands ``make TARGET`` would run with a venv holding ``stamps`` (newer than the
    sources they depend on)."""
    if shutil.which("make") is None:
        pytest.skip("no make")
    venv = tmp_path / "venv"
    venv.mkdir(exist_ok=True)
    for name in STAMPS.values():
        if (venv / name).exists():
            (venv / name).unlink()
    for s in stamps:
        (venv / STAMPS[s]).touch()
    out = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    return [line for line in out.stdout.splitlines() if line.strip()]


def _compiles(cmd: str) -> bool:
    return "build_ext" in cmd or ("pip install" in cmd and "-e" in cmd.split())


def test_make_test_after_make_demo_installs_the_missing_extras_without_building(tmp_path):
    plan = _plan(tmp_path, "test", ("base", "spark"))  # what `make demo` leaves
    installs = [c for c in plan if "pip install" in c]
    assert len(installs) == 1, plan
    # the extras that are missing, into the same venv, reusing the in-place builds
    assert "--no-build-isolation" in installs[0] and "'.[test,spark,bench]'" in installs[0]
    assert not any("venv" in c.split()[:3] or "--upgrade pip" in c for c in plan), plan
    # the one build step before it is incremental (build/ is kept): nothing to compile
    builds = [i for i, c in enumerate(plan) if "build_ext --inplace" in c]
    assert builds and builds[0] < plan.index(installs[0]), plan


def test_every_editable_install_goes_after_the_in_place_build(tmp_path):
    for target, stamps in (("demo", ()), ("test", ()), ("test", ("base",))):
        plan = _plan(tmp_path, target, stamps)
        for i, cmd in enumerate(plan):
            if "pip install" in cmd and " -e " in f" {cmd} ":
                assert "--no-build-isolation" in cmd, cmd
                assert any("build_ext --inplace" in c for c in plan[:i]), plan


def test_make_test_when_everything_is_installed_installs_nothing(tmp_path):
    plan = _plan(tmp_path, "test", ("base", "spark", "all"))
    assert not any("pip install" in c for c in plan), plan
    assert plan[-1].endswith("pytest -n 2 tests")
    plan = _plan(tmp_path, "demo", ("base", "spark", "all"))
    assert not any("pip install" in c for c in plan), plan


def _tree_copy(dst) -> str:
    """The files an editable build reads, copied with their times (built extensions too)."""
    dst.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md", "pyspark_lancefmt.py"):
        shutil.copy2(os.path.join(ROOT, name), dst / name)
    for name in ("protos", "lancefmt"):
        shutil.copytree(os.path.join(ROOT, name), dst / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return str(dst)


def _editable_build(tree: str, **env) -> subprocess.CompletedProcess:
    script = ("import tempfile, setuptools.build_meta as b; "
              "print('WHEEL', b.build_editable(tempfile.mkdtemp()))")
    return subprocess.run([sys.executable, "-c", script], cwd=tree, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **env})


def test_editable_install_reuses_the_extensions_built_in_place(tmp_path):
    """``pip install -e`` builds in a temporary directory and so compiled every extension again;
    setup.py's build_ext copies each one whose in-place build is newer than its sources. A
    stale one is still compiled (here with a compiler that fails, so nothing slow runs)."""
    pyx = sorted(glob.glob(os.path.join(ROOT, "lancefmt", "**", "*.pyx"), recursive=True))
    modules = {os.path.relpath(p, ROOT)[:-4].replace(os.sep, ".") for p in pyx}
    tree = _tree_copy(tmp_path / "tree")
    out = _editable_build(tree)
    log = out.stdout + out.stderr
    assert out.returncode == 0 and "WHEEL" in out.stdout, log[-3000:]
    assert set(re.findall(r"reusing the in-place build of (\S+)", log)) == modules, log[-3000:]
    assert "building '" not in log, log[-3000:]
    # a source newer than its in-place build: that extension (and only it) is compiled
    stale = min(pyx, key=os.path.getsize)
    c_file = os.path.join(tree, os.path.relpath(stale, ROOT))[:-4] + ".c"
    os.utime(c_file, None)
    out = _editable_build(tree, CC="false", LDSHARED="false")
    log = out.stdout + out.stderr
    name = os.path.relpath(stale, ROOT)[:-4].replace(os.sep, ".")
    assert out.returncode != 0 and f"building '{name}'" in log, log[-3000:]
    assert log.count("building '") == 1, log[-3000:]
