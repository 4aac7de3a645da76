"""FetchBatch: the ranged reads of concurrent units go out in rounds, merged per file."""
import threading

import pytest

from lancefmt.file.fetch_batch import FetchBatch, active


class FakeSource:
    """Counts the fetches that reach it and what each covered."""

    def __init__(self, name):
        self.name = name
        self.calls = []
        self.lock = threading.Lock()

    def fetch_now(self, ranges):
        with self.lock:
            self.calls.append(list(ranges))
        return [f"{self.name}:{s}+{n}" for s, n in ranges]

    def fetch(self, ranges):
        batch = active()
        return batch.fetch(self, ranges) if batch is not None else self.fetch_now(ranges)


@pytest.fixture
def patient(monkeypatch):
    """Rounds wait for units whose threads have not started yet, however loaded the machine:
    the tests that count rounds must not see one go out early because a thread started late
    (the linger is only a guard against a saturated pool, tested on its own below)."""
    from lancefmt.file import fetch_batch

    monkeypatch.setattr(fetch_batch, "LINGER", 30.0)


def test_units_reading_in_two_steps_cost_two_rounds_per_file(patient):
    files = [FakeSource("a"), FakeSource("b")]

    def unit(src, k):
        first = src.fetch([(k, 1)])            # e.g. page metadata
        second = src.fetch([(100 + k, 1)])     # then the values it points at
        return first + second

    batch = FetchBatch()
    out = batch.run([lambda s=s, k=k: unit(s, k) for s in files for k in range(3)])
    assert out[0] == ["a:0+1", "a:100+1"] and out[5] == ["b:2+1", "b:102+1"]
    for src in files:  # every unit's first reads went out together, then the second ones
        assert sorted(map(sorted, src.calls)) == [[(0, 1), (1, 1), (2, 1)],
                                                  [(100, 1), (101, 1), (102, 1)]]


def test_a_round_finishing_elsewhere_does_not_send_a_waiting_round_early(patient):
    """Files answering at different moments wake every waiting unit; a unit woken so is not
    in a quiet round and must not send its file's requests before the others arrive (it did:
    about one run in four split a file's second round)."""
    import random
    import time

    class Slow(FakeSource):
        def fetch_now(self, ranges):
            time.sleep(random.random() * 0.004)
            return super().fetch_now(ranges)

    def unit(src, k):
        return src.fetch([(k, 1)]) + src.fetch([(100 + k, 1)])

    for _ in range(60):
        files = [Slow("a"), Slow("b"), Slow("c")]
        FetchBatch().run([lambda s=s, k=k: unit(s, k) for s in files for k in range(3)])
        assert [len(src.calls) for src in files] == [2, 2, 2]


def test_fan_out_parent_does_not_hold_a_round_back(patient):
    src = FakeSource("f")

    def parent():
        batch = active()
        return batch.fan_out([lambda k=k: src.fetch([(k, 1)]) for k in range(4)])

    batch = FetchBatch()
    assert batch.run([parent, lambda: src.fetch([(9, 1)])])[0] == [["f:0+1"], ["f:1+1"],
                                                                 ["f:2+1"], ["f:3+1"]]
    assert len(src.calls) == 1 and len(src.calls[0]) == 5


def test_a_failing_fetch_reaches_every_unit_of_its_file_and_others_finish(patient):
    class Broken(FakeSource):
        def fetch_now(self, ranges):
            raise OSError("gone")

    ok, broken = FakeSource("ok"), Broken("broken")
    batch = FetchBatch()
    with pytest.raises(OSError, match="gone"):
        batch.run([lambda: ok.fetch([(0, 1)]), lambda: broken.fetch([(0, 1)])])
    assert ok.calls == [[(0, 1)]]
    assert active() is None


def test_more_units_than_threads_still_finish(monkeypatch):
    """Units waiting for a pool thread count as running; the rounds of those that started go
    out after a quiet pause instead of waiting for them forever."""
    from lancefmt.file import fetch_batch

    monkeypatch.setattr(fetch_batch, "_pools", {})
    monkeypatch.setattr(fetch_batch, "UNIT_THREADS", 2)
    src = FakeSource("s")
    out = FetchBatch().run([lambda k=k: src.fetch([(k, 1)]) for k in range(6)])
    assert out == [[f"s:{k}+1"] for k in range(6)]
    assert sorted(r for call in src.calls for r in call) == [(k, 1) for k in range(6)]
    fetch_batch._pools.clear()  # the 2-thread pool is not left for other tests
