"""Pure parts of the remote read path: planning a batch of ranges (coalescing, splitting,
order) and the retry policy (what is retried, the budgets, the backoff), without a server."""
import asyncio
import random

import pytest

from lancefmt.errors import StorageError, StorageNotFoundError, StoragePermissionError
from lancefmt.io.options import StoreSettings
from lancefmt.io.ranges import plan_reads
from lancefmt.io.retry import Backoff, ShortBody, classify, with_retries


def _fetch(blobs, plan):
    return [blobs[f.uri][f.start:f.end] for f in plan.fetches]


@pytest.mark.parametrize("seed", range(20))
def test_plans_return_every_range_in_order(seed):
    rng = random.Random(seed)
    blobs = {u: bytes(rng.randrange(256) for _ in range(5000)) for u in ("a", "b")}
    requests = [(rng.choice("ab"), rng.randrange(0, 5200), rng.randrange(0, 700))
                for _ in range(rng.randrange(1, 40))]
    max_size = rng.choice([1, 300, 10**6])
    plan = plan_reads(requests, gap=rng.choice([0, 64, 1000]), max_size=max_size)
    got = plan.assemble(_fetch(blobs, plan))
    assert got == [blobs[u][s:s + n] for u, s, n in requests]
    assert all(0 < f.end - f.start <= max_size for f in plan.fetches)


def test_coalescing_and_splitting():
    plan = plan_reads([("a", 0, 10), ("a", 60, 10), ("a", 200, 10), ("b", 0, 5), ("a", 5, 10)],
                      gap=50, max_size=1000)
    assert [(f.uri, f.start, f.end) for f in plan.fetches] == [("a", 0, 70), ("a", 200, 210),
                                                               ("b", 0, 5)]
    plan = plan_reads([("a", 0, 2500)], gap=0, max_size=1000)
    assert [(f.start, f.end) for f in plan.fetches] == [(0, 1000), (1000, 2000), (2000, 2500)]
    plan = plan_reads([("a", 0, 600), ("a", 600, 600)], gap=10, max_size=1000)
    assert len(plan.fetches) == 2  # merging would pass max_size
    assert plan_reads([("a", 5, 0)], 10, 10).fetches == []
    with pytest.raises(ValueError):
        plan_reads([("a", -1, 3)], 10, 10)


class _Answer(Exception):
    def __init__(self, status, code):
        super().__init__(code)
        self.response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}


@pytest.mark.parametrize("exc,kind", [
    (_Answer(503, "SlowDown"), "request"), (_Answer(500, "InternalError"), "request"),
    (_Answer(429, "TooManyRequests"), "request"), (_Answer(400, "RequestTimeout"), "request"),
    (_Answer(404, "NoSuchKey"), None), (_Answer(403, "AccessDenied"), None),
    (_Answer(412, "PreconditionFailed"), None), (ConnectionResetError(104, "reset"), "request"),
    (asyncio.TimeoutError(), "request"), (ShortBody(3, 10), "body"), (ValueError("bug"), None),
])
def test_classification(exc, kind):
    assert classify(exc) == kind


def test_backoff_is_decorrelated_jitter_under_a_cap():
    b = Backoff(rng=random.Random(1))
    sleeps = [b.next() for _ in range(200)]
    assert 0.05 <= sleeps[0] <= 0.15
    # each a random time between 100 ms and twice the previous one, never above 15 s
    assert all(0.1 <= s <= min(15.0, 2 * p) for p, s in zip(sleeps, sleeps[1:]))
    assert len(set(sleeps)) > 150  # jittered


def _run(attempt, **settings):
    async def go():
        return await with_retries(attempt, "read", "s3://b/k", StoreSettings(**settings))

    from unittest import mock

    with mock.patch("asyncio.sleep", new=_no_sleep):
        return asyncio.run(go())


async def _no_sleep(_):
    return None


def _failing(errors, result="ok"):
    calls = []

    async def attempt():
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return result

    return attempt, calls


def test_budgets():
    attempt, calls = _failing([_Answer(500, "InternalError")] * 3)
    assert _run(attempt, max_retries=3) == "ok" and len(calls) == 4
    attempt, calls = _failing([_Answer(500, "InternalError")] * 3)
    with pytest.raises(StorageError, match="gave up after 3 attempts") as info:
        _run(attempt, max_retries=2)
    assert info.value.path == "s3://b/k" and info.value.operation == "read"
    attempt, calls = _failing([ShortBody(1, 2)] * 2)
    with pytest.raises(StorageError, match="short read"):
        _run(attempt, download_retries=1)
    assert len(calls) == 2
    attempt, calls = _failing([ShortBody(1, 2), _Answer(503, "SlowDown"), ShortBody(1, 2)])
    assert _run(attempt, download_retries=2, max_retries=1) == "ok"  # separate budgets


def test_first_sleeps_differ_so_retried_ranges_do_not_come_back_together():
    firsts = {Backoff().next() for _ in range(50)}
    assert len(firsts) > 40 and all(0.05 <= s <= 0.15 for s in firsts)


def _run_resuming(errors, **settings):
    """``with_retries`` on a read that resumes: (result, calls, restarts)."""
    attempt, calls = _failing(errors)
    restarts = []

    async def go():
        return await with_retries(attempt, "read_range", "s3://b/k", StoreSettings(**settings),
                                  resume=lambda: restarts.append(len(calls)),
                                  what="bytes 10-19")

    from unittest import mock

    with mock.patch("asyncio.sleep", new=_no_sleep):
        return asyncio.run(go()), calls, restarts


def test_a_cut_body_resumes_then_starts_over_each_within_its_budget():
    # 3 resumes of one download, a restart, 3 more resumes, then the answer
    out, calls, restarts = _run_resuming([ShortBody(1, 2)] * 7, body_resumes=3)
    assert out == "ok" and len(calls) == 8 and restarts == [4]
    # (resumes + 1) x (download retries + 1) attempts, then the error naming the range
    with pytest.raises(StorageError) as info:
        _run_resuming([ShortBody(1, 2)] * 20, body_resumes=2, download_retries=1)
    err = info.value
    assert "bytes 10-19" in str(err) and "gave up after 6 attempts" in str(err)
    assert err.path == "s3://b/k"
    # request failures keep their own budget between resumes
    out, calls, _ = _run_resuming([ShortBody(1, 2), _Answer(503, "SlowDown"), ShortBody(1, 2)],
                                  body_resumes=1, download_retries=1, max_retries=1)
    assert out == "ok" and len(calls) == 4


def test_final_errors_keep_their_kind():
    attempt, calls = _failing([_Answer(404, "NoSuchKey")])
    with pytest.raises(StorageNotFoundError):
        _run(attempt)
    attempt, calls = _failing([_Answer(403, "AccessDenied")])
    with pytest.raises(StoragePermissionError) as info:
        _run(attempt)
    assert isinstance(info.value, PermissionError) and len(calls) == 1
    attempt, calls = _failing([ValueError("a bug of ours")])
    with pytest.raises(ValueError):  # not a storage failure: not wrapped, not retried
        _run(attempt)
    assert len(calls) == 1
