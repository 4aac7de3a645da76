"""Kill points inside a writer: every object the process creates, replaces or deletes is an
*event* (an index file closed, a data file, a transaction file, the manifest's put-if-absent,
a removal, a part of a multipart upload ...). :func:`install` counts them and SIGKILLs the process itself just before or just
after the chosen one, so a campaign can hit each step of an operation, not only the ones a
random delay happens to land on. Installed in the writer (child) process only."""
from __future__ import annotations

import os
import signal

_STATE = {"events": [], "kill_at": None, "when": "before", "trail": None}

# what an object is, from the first matching path part
_KINDS = (("conditional_put_probe", "probe"), ("latest_version_hint", "hint"),
          ("/_indices/", "index"), ("/_transactions/", "txn"), ("/_versions/", "manifest"),
          ("/_deletions/", "deletion"), ("/_lancefmt_staging/", "staging"), ("/data/", "data"))


def kind_of(uri: str) -> str:
    for part, kind in _KINDS:
        if part in uri:
            return kind
    return "other"


def _event(action: str, uri: str, phase: str) -> None:
    if phase == "before":
        _STATE["events"].append(f"{action}:{kind_of(str(uri))}")
    label = f"{phase} {_STATE['events'][-1]}"
    trail = _STATE["trail"]
    if trail is not None:  # the campaign reads where a killed writer got to
        os.write(trail, (label + "\n").encode())
    if len(_STATE["events"]) == _STATE["kill_at"] and phase == _STATE["when"]:
        os.kill(os.getpid(), signal.SIGKILL)


def last_event(path: str) -> str:
    """The last event a writer's trail file records (``before any write`` when none)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        lines = []
    return lines[-1] if lines else "before any write"


def _wrap(cls, name: str, action: str) -> None:
    fn = cls.__dict__.get(name)
    if fn is None:
        return

    def hooked(self, uri, *args, **kwargs):
        _event(action, uri, "before")
        out = fn(self, uri, *args, **kwargs)
        _event(action, uri, "after")
        return out

    setattr(cls, name, hooked)


class _Output:
    """An output stream whose close (the moment its object appears) is an event."""

    def __init__(self, inner, uri: str):
        self._inner, self._uri = inner, uri

    def _closing(self, name: str):
        _event("close", self._uri, "before")
        out = getattr(self._inner, name)()
        _event("close", self._uri, "after")
        return out

    def close(self):
        return self._closing("close")

    def close_later(self):
        return self._closing("close_later")

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._inner.__exit__(*exc) if exc[0] is not None else self.close()


def _wrap_output(cls) -> None:
    fn = cls.__dict__.get("open_output")
    if fn is None:
        return

    def hooked(self, uri, *args, **kwargs):
        return _Output(fn(self, uri, *args, **kwargs), str(uri))

    setattr(cls, "open_output", hooked)


def _wrap_parts(cls) -> None:
    """Each part of a multipart upload is an event too (a kill between parts leaves the upload
    begun and never completed)."""
    fn = cls.__dict__.get("_send_part")
    if fn is None:
        return

    def hooked(self, chunk):
        _event("part", self.uri, "before")
        out = fn(self, chunk)
        _event("part", self.uri, "after")
        return out

    setattr(cls, "_send_part", hooked)


def install(kill_at: int | None = None, when: str = "before", trail: str | None = None) -> list:
    """Count store events from now on; SIGKILL this process at event ``kill_at`` (1-based),
    ``when`` = ``before`` or ``after`` it; append each event (``before close:index``, ``after
    close:index``...) to the file ``trail``. Returns the live list of event labels."""
    from lancefmt.io import store as store_mod
    from lancefmt.io.s3 import S3Store, _S3Writer

    _STATE.update(events=[], kill_at=kill_at, when=when,
                  trail=None if trail is None else os.open(trail, os.O_WRONLY | os.O_CREAT | os.O_APPEND))
    for cls in (store_mod.LocalStore, store_mod.FsspecStore, S3Store):
        for name, action in (("put", "put"), ("put_durable", "put"), ("put_if_absent", "commit"),
                             ("delete", "delete")):
            _wrap(cls, name, action)
        _wrap_output(cls)
    _wrap_parts(_S3Writer)
    return _STATE["events"]
