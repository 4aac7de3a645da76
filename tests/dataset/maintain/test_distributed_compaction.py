"""Distributed compaction (``lancefmt.optimize.Compaction``): plan on a driver, execute in
other processes, commit; pylance as the oracle for the plan, the versions and the rows."""
import multiprocessing
import pickle

import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.optimize import Compaction, CompactionPlan, CompactionTask, RewriteResult

lance = pytest.importorskip("lance")
from lance.optimize import Compaction as PylanceCompaction  # noqa: E402

VERSIONS = ["legacy", "2.0", "2.1", "2.2"]


def rows(n, start=0):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "s": pa.array([f"s{i}" for i in ids])})


def _both(tmp_path, version, n=800, per_file=100, **kw):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for lib, uri in ((lancefmt, ours), (lance, theirs)):
        lib.write_dataset(rows(n), uri, max_rows_per_file=per_file, data_storage_version=version,
                          **kw)
        lib.dataset(uri).delete("id % 10 = 3 AND id < 200")
    return lancefmt.dataset(ours), lance.dataset(theirs)


def _execute_in_child(pickled_task: bytes) -> bytes:
    """What a worker does: unpickle a task, run it on its own, pickle the result."""
    task = pickle.loads(pickled_task)
    return pickle.dumps(task.execute())


@pytest.mark.parametrize("version", VERSIONS)
def test_plan_execute_commit_as_pylance(tmp_path, version):
    ours, theirs = _both(tmp_path, version)
    options = dict(target_rows_per_fragment=300, num_threads=1)
    plan, their_plan = Compaction.plan(ours, options), PylanceCompaction.plan(theirs, options)
    assert plan.read_version == their_plan.read_version == 2
    assert [[f.id for f in t.fragments] for t in plan.tasks] == \
        [[f.id for f in t.fragments] for t in their_plan.tasks]
    assert repr(plan) == repr(their_plan)
    assert pickle.loads(pickle.dumps(plan)) == plan
    assert CompactionPlan.from_json(plan.json()) == plan

    # tasks run in other processes (spawned: nothing inherited), results come back pickled
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = [pickle.loads(b) for b in pool.map(
            _execute_in_child, [pickle.dumps(t) for t in plan.tasks])]
    their_results = [t.execute(theirs) for t in their_plan.tasks]
    assert all(isinstance(r, RewriteResult) for r in results)
    assert [vars(r.metrics) for r in results] == \
        [{k: getattr(r.metrics, k) for k in vars(results[0].metrics)} for r in their_results]
    assert RewriteResult.from_json(results[0].json()) == results[0]

    metrics = Compaction.commit(ours, results)
    their_metrics = PylanceCompaction.commit(theirs, their_results)
    assert vars(metrics) == {k: getattr(their_metrics, k) for k in vars(metrics)}
    assert ours.version == theirs.version == 4  # ReserveFragments, then the Rewrite
    assert [f.fragment_id for f in ours.get_fragments()] == \
        [f.fragment_id for f in theirs.get_fragments()]
    expected = theirs.to_table()
    assert ours.to_table().equals(expected)
    assert lance.dataset(ours.uri).to_table().equals(expected)  # pylance reads ours
    lance.dataset(ours.uri).validate()


def test_task_runs_on_any_version_of_its_dataset(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(rows(400), uri, max_rows_per_file=100)
    plan = Compaction.plan(ds, dict(target_rows_per_fragment=200))
    ds.insert(rows(50, 400))  # a later version: the task still reads its planned one
    results = [t.execute(lancefmt.dataset(uri)) for t in plan.tasks]
    assert [r.read_version for r in results] == [1, 1]
    Compaction.commit(ds, results)
    assert ds.version == 4 and ds.to_table().sort_by("id") == rows(450)
    assert len(ds.get_fragments()) == 3


def test_conflicting_delete_fails_the_commit_and_removes_the_files(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(rows(400), uri, max_rows_per_file=100)
    plan = Compaction.plan(ds, dict(target_rows_per_fragment=400))
    (result,) = [t.execute(ds) for t in plan.tasks]
    lancefmt.dataset(uri).delete("id = 5")
    written = [f"{uri}/data/{f.path}" for frag in result.new_fragments for f in frag.files]
    with pytest.raises(OSError, match="Retryable commit conflict for version 2") as err:
        Compaction.commit(ds, [result])
    assert isinstance(err.value, lancefmt.CommitConflictError) and err.value.retryable
    assert not any(lancefmt.dataset(uri).snapshot.store.exists(w) for w in written)
    assert lancefmt.dataset(uri).count_rows() == 399


def test_stable_row_ids_survive_distributed_compaction(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(rows(300), uri, max_rows_per_file=50, enable_stable_row_ids=True)
    ds.delete("id % 7 = 0")
    before = ds.to_table(with_row_id=True)
    plan = Compaction.plan(ds, dict(target_rows_per_fragment=150))
    Compaction.commit(ds, [pickle.loads(pickle.dumps(t)).execute(ds) for t in plan.tasks])
    assert ds.to_table(with_row_id=True) == before
    assert lance.dataset(uri).to_table(with_row_id=True) == before


def test_planning_limits_and_exclusions(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(rows(800), uri, max_rows_per_file=100)
    theirs = lance.write_dataset(rows(800), str(tmp_path / "t"), max_rows_per_file=100)
    for options in (dict(target_rows_per_fragment=200, max_source_fragments=5),
                    dict(target_rows_per_fragment=200, max_source_rows=450),
                    dict(target_rows_per_fragment=200, excluded_fragment_ids=[2, 5]),
                    dict(target_rows_per_fragment=300)):
        ours = [[f.id for f in t.fragments] for t in Compaction.plan(ds, options).tasks]
        expected = [[f.id for f in t.fragments]
                    for t in PylanceCompaction.plan(theirs, options).tasks]
        assert ours == expected, options
    with pytest.raises(ValueError, match="unknown compaction options"):
        Compaction.plan(ds, dict(target_rows=5))


def test_nothing_to_compact_commits_nothing(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(rows(100), uri)
    plan = Compaction.plan(ds)
    assert plan.num_tasks() == 0
    assert vars(Compaction.commit(ds, [])) == dict(fragments_removed=0, fragments_added=0,
                                                   files_removed=0, files_added=0)
    assert ds.version == 1
    assert Compaction.execute(ds, dict(target_rows_per_fragment=10)).fragments_removed == 0
    task = CompactionTask.from_json(CompactionTask(1, [], uri=None).json())
    with pytest.raises(ValueError, match="does not know its dataset"):
        task.execute()
