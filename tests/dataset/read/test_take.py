"""The take path's pieces: deletion mapping (against a plain numpy twin), the per-view cache of
opened data files, and argument checks."""
import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.dataset.core import reader_cache
from lancefmt.dataset.read import scan
from lancefmt.dataset.read.take import live_to_physical
from lancefmt.table.deletion import DeletionVector


class _Scan:
    def __init__(self, n, deleted):
        self.num_rows = n
        self.deletions = DeletionVector.from_offsets(deleted) if deleted is not None else None


@pytest.mark.parametrize("deleted", [None, [], [0], [5, 6, 7], [0, 1, 2, 99], list(range(0, 100, 3))])
def test_live_to_physical_matches_kept_indices(deleted):
    s = _Scan(100, deleted)
    kept = np.setdiff1d(np.arange(100), deleted or [])
    live = np.random.default_rng(1).integers(0, kept.size, 500)
    assert np.array_equal(live_to_physical(s, live), kept[live])


def test_take_opens_each_data_file_once_per_view(tmp_path, monkeypatch):
    uri = str(tmp_path / "ds")
    t = pa.table({"a": np.arange(1000), "b": np.arange(1000) * 2.0})
    lancefmt.write_dataset(t, uri, max_rows_per_file=250)
    ds = lancefmt.dataset(uri)
    opened = []
    real = reader_cache.LanceFileReader
    monkeypatch.setattr(reader_cache, "LanceFileReader",
                        lambda *a, **k: opened.append(a[0]) or real(*a, **k))
    for _ in range(3):
        assert ds.take([999, 3, 500]).column("a").to_pylist() == [999, 3, 500]
    # the direct take plans (and maps) every fragment's file once, on the first take
    assert sorted(opened) == sorted(set(opened)) and len(opened) == 4
    assert ds.to_table().equals(t)
    assert len(opened) == 4  # the scan reused them
    assert ds.take([1, 2], columns=["b"]).column("b").to_pylist() == [2.0, 4.0]
    assert len(opened) == 4  # so did the plan of other columns
    other = lancefmt.dataset(uri)  # another view has its own cache
    other.take([0])
    assert len(opened) == 8


def test_take_plans_each_fragment_once_per_view_and_columns(tmp_path, monkeypatch):
    """Repeated takes reuse the fragment's read plan (and its field readers); other columns
    get their own plan; a new view of a new version plans afresh."""
    uri = str(tmp_path / "ds")
    t = pa.table({"a": np.arange(1000), "b": np.arange(1000) * 2.0})
    lancefmt.write_dataset(t, uri, max_rows_per_file=500)
    ds = lancefmt.dataset(uri)
    plans = []
    real = scan.FragmentScan._make_file_plan
    monkeypatch.setattr(scan.FragmentScan, "_make_file_plan",
                        lambda self: plans.append(self.spec.read_columns) or real(self))
    for _ in range(3):
        assert ds.take([999, 3, 3, 500]).equals(t.take([999, 3, 3, 500]))
        assert ds.take([7, 600], columns=["b"]).equals(t.select(["b"]).take([7, 600]))
    assert len(plans) == 4  # 2 fragments x 2 column sets
    lancefmt.write_dataset(pa.table({"a": [5], "b": [0.5]}), uri, mode="append")
    new = lancefmt.dataset(uri)
    assert new.take([1000, 0]).column("b").to_pylist() == [0.5, 0.0]
    assert len(plans) == 7  # the new view's direct take planned its 3 fragments


def test_range_row_ids_are_computed_not_decoded():
    ids = scan.id_run(10, 5)
    assert ids.dtype == np.uint64 and ids.tolist() == [10, 11, 12, 13, 14]
    assert scan.shifted(np.array([3, 1], np.uint32), 1 << 40).tolist() == [(1 << 40) + 3, (1 << 40) + 1]
    assert scan.id_run(0, scan.WINDOW_ROWS + 3)[-1] == scan.WINDOW_ROWS + 2


def test_shuffled_batches_arguments(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"a": np.arange(10)}), uri)
    ds = lancefmt.dataset(uri)
    with pytest.raises(lancefmt.LanceError):
        next(ds.shuffled_batches(0))
    assert sorted(pa.Table.from_batches(ds.shuffled_batches(4, seed=1)).column("a").to_pylist()) \
        == list(range(10))


def test_a_big_take_does_not_wait_for_a_pool_thread_that_never_starts(tmp_path, monkeypatch):
    """The direct take shares its work with pool threads; one that is slow to wake (or never
    runs) only means the calling thread does its part."""
    from concurrent.futures import Future

    from lancefmt.dataset.read import take_plan

    class _Stuck:  # a pool whose threads never run what they are given
        submitted = 0

        def submit(self, fn, *args):
            _Stuck.submitted += 1
            return Future()  # never completed: result() would block forever

    uri = str(tmp_path / "ds")
    t = pa.table({"a": np.arange(100_000), "b": np.arange(100_000) * 0.5})
    lancefmt.write_dataset(t, uri, max_rows_per_file=30_000)
    ds = lancefmt.dataset(uri)
    monkeypatch.setattr(take_plan, "scan_pool", lambda threads: _Stuck())
    monkeypatch.setattr(take_plan, "default_threads", lambda: 3)
    idx = np.random.default_rng(2).integers(0, 100_000, 40_000)
    assert ds.take(idx).equals(t.take(idx))
    assert _Stuck.submitted == 2  # two helpers were asked, neither was needed


def test_a_view_moved_by_a_write_drops_its_take_plans(tmp_path):
    """Takes reuse a view's plan per column set; a delete or append through the same object
    moves it to the new version, and the next take plans afresh."""
    uri = str(tmp_path / "ds")
    t = pa.table({"a": np.arange(1000), "b": np.arange(1000) * 2.0})
    lancefmt.write_dataset(t, uri, max_rows_per_file=300)
    ds = lancefmt.dataset(uri)
    assert ds.take([0, 999]).equals(t.take([0, 999]))
    assert ds.take([5], columns=["b"]).column("b").to_pylist() == [10.0]
    ds.delete("a < 10")
    assert ds.take([0, 989]).equals(t.take([10, 999]))
    assert ds.take([0], columns=["b"]).column("b").to_pylist() == [20.0]
    ds.insert(pa.table({"a": [7], "b": [0.25]}))
    assert ds.take([990, 0]).equals(pa.table({"a": [7, 10], "b": [0.25, 20.0]}))
    with pytest.raises(lancefmt.errors.RowOutOfRangeError):
        ds.take([991])


def test_concurrent_big_takes_on_one_view_share_the_pool_correctly(tmp_path):
    """Several threads taking at once: their jobs' helpers queue on the same pool, each
    helper works only on its own job (or finds it done), and every result is right."""
    from concurrent.futures import ThreadPoolExecutor

    uri = str(tmp_path / "ds")
    t = pa.table({"a": np.arange(200_000), "b": np.arange(200_000) * 0.5,
                  "c": np.arange(200_000, dtype=np.int32)})
    lancefmt.write_dataset(t, uri, max_rows_per_file=50_000)
    ds = lancefmt.dataset(uri)

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(5):
            idx = rng.integers(0, 200_000, 30_000)
            if seed % 2:
                idx.sort()
            assert ds.take(idx).equals(t.take(idx))
        return seed

    with ThreadPoolExecutor(4) as ex:
        assert sorted(ex.map(work, range(6))) == list(range(6))
