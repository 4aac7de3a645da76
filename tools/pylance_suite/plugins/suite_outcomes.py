"""A pytest plugin that writes each test's outcome as one JSON line, as soon as it is known.

Why lines and not junit XML: the runner must learn what happened even when the process dies
half-way (a segfault, a hang it kills), and it must know which test was running then. Each
line is flushed at once; ``start`` lines name the test about to run.

Loaded with ``-p suite_outcomes``; ``PYLANCE_SUITE_OUT`` is the file to append to, and
``PYLANCE_SUITE_DESELECT`` (optional) a file of node ids not to run again (a resumed run).
"""
from __future__ import annotations

import json
import os
import sys
import traceback

import pytest

_OUT = os.environ.get("PYLANCE_SUITE_OUT")
_state: dict[str, dict] = {}


def _emit(record: dict) -> None:
    if not _OUT:
        return
    with open(_OUT, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()


def _exception(excinfo) -> dict:
    """Type, message and the frames of an exception, for the categoriser."""
    exc = excinfo.value
    frames = [f"{os.path.basename(str(e.path))}:{e.lineno + 1}:{e.name}"
              for e in excinfo.traceback]
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return {
        "type": type(exc).__name__,
        "module": type(exc).__module__,
        "bases": [c.__name__ for c in type(exc).__mro__[1:-1]],
        "message": str(exc)[:2000],
        "text": text[:2000],
        "frames": frames[-12:],
    }


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("PYLANCE_SUITE_DESELECT")
    if path and os.path.exists(path):
        done = set(open(path, encoding="utf-8").read().split("\n"))
        keep = [i for i in items if i.nodeid not in done]
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid in done])
        items[:] = keep
    _emit({"event": "collected", "nodeids": [i.nodeid for i in items]})


def pytest_collectreport(report):
    if report.failed:
        exc = getattr(report, "suite_exc", None)
        _emit({"event": "collect-error", "nodeid": report.nodeid,
               "exception": exc, "longrepr": str(report.longrepr)[-4000:]})


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        # the collection error's exception is gone by now: keep the last line of its text
        lines = [ln for ln in str(report.longrepr).splitlines() if ln.startswith("E ")]
        report.suite_exc = {"text": lines[-1][1:].strip() if lines else ""}


def _probe_used() -> list | None:
    """The shim's probe placeholders used (None when the probe is off)."""
    probe = sys.modules.get("_pylance_suite_probe")
    return probe.USED if probe is not None and probe.enabled() else None


def pytest_runtest_logstart(nodeid, location):
    _state[nodeid] = {"outcome": "passed", "duration": 0.0}
    used = _probe_used()
    if used is not None:
        used.clear()
    _emit({"event": "start", "nodeid": nodeid})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and report.failed:
        report.suite_exc = _exception(call.excinfo)


def pytest_runtest_logreport(report):
    st = _state.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0})
    st["duration"] += report.duration
    if report.failed:
        if report.when == "call":
            st["outcome"] = "failed"
        elif st["outcome"] == "passed":
            st["outcome"] = "error"  # setup or teardown failed
        st["phase"] = report.when
        st.setdefault("exception", getattr(report, "suite_exc", None))
        st.setdefault("longrepr", str(report.longrepr)[-4000:])
    elif report.skipped:
        if hasattr(report, "wasxfail"):
            st["outcome"] = "xfailed"
        else:
            st["outcome"] = "skipped"
            longrepr = report.longrepr
            if isinstance(longrepr, tuple) and len(longrepr) == 3:
                st["reason"] = str(longrepr[2])[:500]
    elif report.when == "call" and hasattr(report, "wasxfail"):
        st["outcome"] = "xpassed"


def pytest_runtest_logfinish(nodeid, location):
    st = _state.pop(nodeid, {"outcome": "passed", "duration": 0.0})
    st["duration"] = round(st["duration"], 3)
    used = _probe_used()
    if used:
        st["placeholders_used"] = sorted(set(used))
    _emit({"event": "result", "nodeid": nodeid, **st})
