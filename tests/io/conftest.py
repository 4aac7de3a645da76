"""Helpers shared by the io tests."""
import contextlib
import threading
import time

from lancefmt.dataset.core.snapshot import Snapshot
from lancefmt.errors import StorageError


@contextlib.contextmanager
def writer_held_before_commit(monkeypatch, marker: str, write, failed):
    """Run ``write()`` (writer A) on a thread and hold it just before it commits to a URI
    containing ``marker``, its files written and their upload or sync started, until
    ``failed()`` (the registry's failed objects) names one. Yields that object and the list
    that receives A's StorageError once it is released, when the block ends."""
    held, release = threading.Event(), threading.Event()
    real = Snapshot.commit_to.__func__

    def commit_to(cls, uri, *args, **kwargs):
        if marker in str(uri):
            held.set()
            release.wait(30)
        return real(cls, uri, *args, **kwargs)

    monkeypatch.setattr(Snapshot, "commit_to", classmethod(commit_to))
    errors = []

    def run():
        try:
            write()
        except StorageError as e:
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert held.wait(30)
        deadline = time.monotonic() + 30
        while not failed() and time.monotonic() < deadline:
            time.sleep(0.01)
        (bad,) = failed()
        yield bad, errors
    finally:
        release.set()
        thread.join(30)
