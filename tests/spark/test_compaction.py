"""Distributed compaction (``lancefmt.spark.compaction.compact``): the result and the metrics of
pylance's ``compact_files`` on a copy; a task killed mid-job leaves one commit, no duplicate row
and no stray file; a concurrent append survives (rebased), a concurrent delete of a rewritten
fragment makes the job re-plan and run again."""
import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.spark import compaction

from .conftest import arm_fault, assert_same_rows, twins, unreferenced_files

pytestmark = pytest.mark.spark


def rows(lo, hi):
    ids = np.arange(lo, hi, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 0.5, "s": pa.array([f"r{i}" for i in ids])})


def small_fragments(tmp_path, **kw):
    uri, copy = twins(tmp_path, rows(0, 200), max_rows_per_file=20, **kw)
    for u in (uri, copy):
        lance.dataset(u).delete("id % 7 = 3")
    return uri, copy


def test_compact_equals_pylance_with_a_task_killed(spark, tmp_path):
    uri, copy = small_fragments(tmp_path)
    marker = arm_fault("compact")
    ours = compaction.compact(spark, uri, target_rows_per_fragment=60)
    theirs = lance.dataset(copy).optimize.compact_files(target_rows_per_fragment=60)
    assert not os.path.exists(marker)        # the fault fired, the task was retried
    assert (ours.fragments_removed, ours.fragments_added, ours.files_removed, ours.files_added) == \
        (theirs.fragments_removed, theirs.fragments_added, theirs.files_removed, theirs.files_added)
    assert lance.dataset(uri).version == 3       # one commit (pylance: ReserveFragments + Rewrite)
    assert len(lance.dataset(uri).get_fragments()) == len(lance.dataset(copy).get_fragments())
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []


def test_compact_keeps_stable_row_ids(spark, tmp_path):
    uri, copy = small_fragments(tmp_path, enable_stable_row_ids=True)
    compaction.compact(spark, uri)
    lance.dataset(copy).optimize.compact_files()
    ours = lance.dataset(uri).to_table(with_row_id=True)
    theirs = lance.dataset(copy).to_table(with_row_id=True)
    assert ours.sort_by("id").equals(theirs.sort_by("id"))
    assert len(lance.dataset(uri).get_fragments()) == 1


def _during_rewrite(monkeypatch, action):
    """Run ``action()`` on the driver once, after the executors rewrote and before the commit."""
    real = compaction.run_tasks
    calls = []

    def patched(*args, **kw):
        out = real(*args, **kw)
        if not calls:
            action()
        calls.append(1)
        return out

    monkeypatch.setattr(compaction, "run_tasks", patched)
    return calls


def test_concurrent_append_survives_the_compaction(spark, tmp_path, monkeypatch):
    uri, _ = small_fragments(tmp_path)
    calls = _during_rewrite(monkeypatch, lambda: lancefmt.write_dataset(
        rows(1000, 1010), uri, mode="append"))
    compaction.compact(spark, uri)
    ds = lance.dataset(uri)
    assert len(calls) == 1                                   # rebased, not re-run
    assert ds.version == 4                                   # delete, append, rewrite
    ids = sorted(ds.to_table()["id"].to_pylist())
    assert ids == [i for i in range(200) if i % 7 != 3] + list(range(1000, 1010))
    frags = ds.get_fragments()
    assert [f.fragment_id for f in frags] == sorted(f.fragment_id for f in frags)  # id order
    assert sorted(f.count_rows() for f in frags) == [10, 171]  # the append, as it was
    ds.validate()
    assert unreferenced_files(uri) == []


def test_concurrent_delete_makes_the_compaction_run_again(spark, tmp_path, monkeypatch):
    uri, _ = small_fragments(tmp_path)
    calls = _during_rewrite(monkeypatch, lambda: lancefmt.dataset(uri).delete("id = 41"))
    metrics = compaction.compact(spark, uri)
    ds = lance.dataset(uri)
    assert len(calls) == 2                                   # conflict: planned and run again
    assert ds.version == 4 and metrics.fragments_added == 1
    ids = sorted(ds.to_table()["id"].to_pylist())
    assert ids == [i for i in range(200) if i % 7 != 3 and i != 41]
    assert len(ds.get_fragments()) == 1
    assert unreferenced_files(uri) == []
