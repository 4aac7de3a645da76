"""Fixtures shared by the write tests."""
import pytest

from lancefmt.io import uploads


@pytest.fixture
def upload_log(monkeypatch):
    """``(started, waited)``: the URIs whose background uploads began, and those a close waited
    for (the commit's barrier waits for the rest)."""
    started, waited = [], []
    real_start, real_finish = uploads.start, uploads.finish
    monkeypatch.setattr(uploads, "start",
                        lambda uri, future: started.append(uri) or real_start(uri, future))
    monkeypatch.setattr(uploads, "finish", lambda uri: waited.append(uri) or real_finish(uri))
    return started, waited
