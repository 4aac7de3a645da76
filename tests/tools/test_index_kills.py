"""tools/index_kills on a small fixed-seed sample (the big runs are ``make kill-index`` and
``make race-index``): writers SIGKILLed during index builds, optimizes and compactions, on
local disk and on S3 (moto), and writers racing index commits; every invariant of
tools/index_kills/checks.py holds after each."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

pytest.importorskip("lance")

from tools.index_kills import kills, races  # noqa: E402


def test_killed_index_writers_on_local_disk(tmp_path):
    report = kills.campaign(kills.Config(kills=12, seed=11, stores=("local",), rounds_per_world=9,
                                         cleanup_every=3, workdir=str(tmp_path)), log=lambda m: None)
    assert report.failures == []
    assert report.total_kills == 12
    assert {op for op, _, _ in report.kills} == {"create", "optimize", "compact"}, report.kills
    assert {how for _, how, _ in report.kills} == {"hook", "delay"}, report.kills
    assert len({pt for _, _, pt in report.kills}) >= 4, report.kills  # kills at several steps
    assert set(report.cleanups) == {"pylance", "lancefmt", "lancefmt-8-days"}
    assert {o for _, o in report.outcomes} == {"committed", "not committed"}


def test_killed_index_writers_on_s3(tmp_path):
    pytest.importorskip("moto.server")
    report = kills.campaign(kills.Config(kills=4, seed=12, stores=("s3",), rounds_per_world=6,
                                         cleanup_every=2, workdir=str(tmp_path)), log=lambda m: None)
    assert report.failures == [] and report.total_kills == 4
    assert sum(report.cleanups.values()) >= 2


def test_writers_racing_index_commits(tmp_path):
    report = races.campaign(races.Config(commits=100, seed=13, stores=("local",), seconds_per_round=1.0,
                                         min_rounds=5, workdir=str(tmp_path)), log=lambda m: None)
    assert report.failures == []
    assert report.total_commits >= 100
    assert set(report.rounds) == set(races.SCENARIOS)
    assert report.versions_checked >= len(races.SCENARIOS)
    assert sum(report.retries.values()) + sum(report.refused.values()) > 0  # they did race
