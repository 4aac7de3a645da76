"""Lance's Python tests, taken from a git directory of the lance repository when a run starts.

Nothing of Lance's is kept in this repository: ``extract`` writes ``python/python/tests`` (with
its conftest, helper and data files), ``python/pyproject.toml`` (pytest's markers and warning
filters) and ``test_data`` (datasets of old releases, 2 MB) of one commit into a scratch
directory.
"""
from __future__ import annotations

import io
import os
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_GIT_DIR = os.environ.get("LANCE_GIT_DIR", "/work/.mirror/lancedb+lance/repo")
TESTS = "python/python/tests"
PYPROJECT = "python/pyproject.toml"
TEST_DATA = "test_data"  # datasets written by old releases (backward-compatibility tests)

# the files this suite measures: the index ones, then the table-format ones
INDEX_FILES = ["test_scalar_index.py", "test_indices.py", "test_create_empty_index.py",
               "test_commit_index.py", "test_vector_index.py", "test_vector.py",
               "test_kmeans.py", "test_ivf_centroids.py"]
TABLE_FILES = ["test_dataset.py", "test_fragment.py", "test_file.py",
               "test_schema_evolution.py", "test_blob.py", "test_namespace_dir.py",
               "test_namespace_rest.py", "test_optimize.py", "test_json.py",
               "test_multi_base.py", "test_sampler.py", "test_schema.py", "test_debug.py",
               "test_session.py"]
FILE_SETS = {"index": INDEX_FILES, "table": TABLE_FILES, "all": INDEX_FILES + TABLE_FILES}


@dataclass(frozen=True)
class Checkout:
    """The tests of one lance commit, extracted under ``root``."""

    root: Path      # pytest's rootdir (holds pyproject.toml)
    tests: Path     # python/python/tests
    commit: str
    version: str    # the lance version at that commit (python/Cargo.toml)


def _git(git_dir: str, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True,
                          capture_output=True).stdout


def resolve(git_dir: str, rev: str) -> tuple[str, str]:
    """The commit ``rev`` names, and the lance version there."""
    commit = _git(git_dir, "rev-parse", f"{rev}^{{commit}}").decode().strip()
    cargo = _git(git_dir, "show", f"{commit}:python/Cargo.toml").decode()
    m = re.search(r'^version\s*=\s*"([^"]+)"', cargo, re.M)
    return commit, (m.group(1) if m else "?")


def extract(git_dir: str, rev: str, dest: Path) -> Checkout:
    """Write the tests of ``rev`` under ``dest`` (a scratch directory)."""
    commit, version = resolve(git_dir, rev)
    data = _git(git_dir, "archive", "--format=tar", commit, TESTS, PYPROJECT, TEST_DATA)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return Checkout(root=dest / "python", tests=dest / TESTS, commit=commit, version=version)


def present(checkout: Checkout, files: list[str]) -> tuple[list[str], list[str]]:
    """``files`` split into those the commit has and those it has not."""
    have = [f for f in files if (checkout.tests / f).is_file()]
    return have, [f for f in files if f not in have]
