"""Runs one upstream test file in its own pytest process and collects every test's outcome.

Per test, pytest-timeout (signal method) fails a test stuck in Python code. A test stuck in
native code (pylance's Rust, holding the main thread) is not interrupted by a signal, and a
crash (segfault, abort) ends the process: so the runner watches the outcome stream, kills the
process when it has said nothing for ``timeout + grace`` seconds, marks the test that was
running ``hung`` (or ``crashed`` when the process died by itself) and starts pytest again on
the rest of the file.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .upstream import Checkout

PLUGINS = Path(__file__).resolve().parent / "plugins"
SHIM = Path(__file__).resolve().parent / "shim"
GRACE = 30.0  # seconds past the per-test timeout before the process is taken as hung


@dataclass
class Impl:
    """What ``import lance`` means in a run: ``paths`` go first on PYTHONPATH."""

    name: str                 # "pylance" or "lancefmt"
    paths: list[str]
    env: dict = field(default_factory=dict)

    @classmethod
    def pylance(cls) -> "Impl":
        return cls("pylance", [])

    @classmethod
    def lancefmt(cls, repo: str, probe: bool = False) -> "Impl":
        """lancefmt from the checkout ``repo``; ``probe``: the shim's placeholders on (see
        shim/_pylance_suite_probe.py)."""
        path = str(Path(repo).resolve())
        return cls("lancefmt", [str(SHIM), path],
                   {"PYLANCE_SUITE_LANCEFMT": path, **({"PYLANCE_SUITE_PROBE": "1"} if probe
                                                       else {})})


@dataclass
class FileRun:
    """The outcomes of one file: ``tests`` maps a node id (``test_x.py::test_y[p]``) to its
    record (``outcome``, ``duration``, ``exception``...)."""

    file: str
    tests: dict = field(default_factory=dict)
    collect_errors: list = field(default_factory=list)
    restarts: list = field(default_factory=list)   # why pytest had to be started again
    wall: float = 0.0
    returncodes: list = field(default_factory=list)
    stopped: str | None = None                     # set when the file's time ran out
    raw_ids: list = field(default_factory=list)    # node ids as pytest spells them (deselect)


def _short(nodeid: str) -> str:
    """``python/tests/test_x.py::t`` -> ``test_x.py::t`` (ids do not depend on the rootdir)."""
    head, sep, rest = nodeid.partition("::")
    return os.path.basename(head) + sep + rest


def _read_events(path: Path, offset: int) -> tuple[list[dict], int]:
    if not path.exists():
        return [], offset
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    end = data.rfind(b"\n") + 1  # only whole lines
    events = [json.loads(line) for line in data[:end].splitlines() if line.strip()]
    return events, offset + end


def _command(checkout: Checkout, file: str, timeout: float, basetemp: Path,
             upstream_warnings: bool) -> list[str]:
    # unless upstream_warnings, warnings are shown, not raised: the tests predate pylance 14,
    # which deprecates APIs they call (list_indices), and upstream's filterwarnings
    # (error::DeprecationWarning) would fail them for that alone
    relax = [] if upstream_warnings else ["-W", "default::DeprecationWarning",
                                          "-W", "default::FutureWarning"]
    return [sys.executable, "-m", "pytest", str(checkout.tests / file),
            "-c", str(checkout.root / "pyproject.toml"), "--rootdir", str(checkout.root),
            "-p", "suite_outcomes", "-p", "no:xdist", "-p", "no:cacheprovider",
            "-p", "no:randomly", "-q", "--no-header", "-rN",
            f"--timeout={timeout:g}", "-o", "timeout_method=signal", *relax,
            "--basetemp", str(basetemp)]


def _environment(impl: Impl, out: Path, deselect: Path) -> dict:
    env = dict(os.environ)
    for var in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        env.pop(var, None)
    env["PYTHONPATH"] = os.pathsep.join([*impl.paths, str(PLUGINS)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYLANCE_SUITE_OUT"] = str(out)
    env["PYLANCE_SUITE_DESELECT"] = str(deselect)
    env.setdefault("HF_HUB_OFFLINE", "1")           # no model downloads
    env.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    env.update(impl.env)
    return env


class _Stream:
    """The outcome lines of one pytest process, read as they come."""

    def __init__(self, path: Path, run: FileRun):
        self.path, self.run = path, run
        self.offset = path.stat().st_size if path.exists() else 0
        self.running: str | None = None     # the test started and not finished
        self.collected: list[str] = []
        self.last = time.monotonic()        # when the process last said something

    def poll(self) -> None:
        events, self.offset = _read_events(self.path, self.offset)
        for ev in events:
            self.last = time.monotonic()
            kind = ev["event"]
            if kind == "collected":
                self.collected = [_short(n) for n in ev["nodeids"]]
            elif kind == "collect-error":
                self.run.collect_errors.append({k: v for k, v in ev.items() if k != "event"})
            elif kind == "start":
                self.running = ev["nodeid"]
            elif kind == "result":
                self.run.tests[_short(ev["nodeid"])] = {
                    k: v for k, v in ev.items() if k not in ("event", "nodeid")}
                self.run.raw_ids.append(ev["nodeid"])
                self.running = None


def run_file(checkout: Checkout, file: str, impl: Impl, workdir: Path, *, timeout: float,
             file_timeout: float, upstream_warnings: bool = False, grace: float = GRACE,
             log=print) -> FileRun:
    """Run ``file`` on ``impl``, restarting after a hang or crash, within ``file_timeout``."""
    run = FileRun(file)
    stem = file.removesuffix(".py")
    out, deselect = workdir / f"{stem}.jsonl", workdir / f"{stem}.deselect"
    basetemp = workdir / f"tmp-{stem}"  # the tests' tmp_path (GBs for test_dataset.py)
    command = _command(checkout, file, timeout, basetemp, upstream_warnings)
    env = _environment(impl, out, deselect)
    collected: list[str] = []
    start = time.monotonic()
    while True:
        before = len(run.tests)
        deselect.write_text("\n".join(run.raw_ids))
        with open(workdir / f"{stem}.log", "ab") as log_file:
            proc = subprocess.Popen(command, cwd=checkout.root, env=env, stdout=log_file,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        stream, killed = _Stream(out, run), None
        while proc.poll() is None:
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
            stream.poll()
            now = time.monotonic()
            if proc.returncode is None and now - start > file_timeout:
                killed = "stopped"
            elif proc.returncode is None and now - stream.last > timeout + grace:
                killed = "hung"
            if killed:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        stream.poll()
        collected = collected or stream.collected
        run.returncodes.append(proc.returncode)
        if stream.running is not None:  # the process ended or was killed inside a test
            why = {"hung": f"hung: silent for {timeout + grace:g}s, killed",
                   "stopped": f"the file's {file_timeout:g}s ran out"}.get(
                       killed, f"crashed (exit {proc.returncode})")
            outcome = killed or "crashed"
            run.tests[_short(stream.running)] = {
                "outcome": outcome, "duration": round(time.monotonic() - stream.last, 1),
                "exception": {"type": outcome, "message": why, "text": why}}
            run.raw_ids.append(stream.running)
            run.restarts.append({"test": _short(stream.running), "why": why})
        elif killed:
            run.restarts.append({"test": None, "why": f"{killed} outside a test"})
        if killed == "stopped":
            run.stopped = f"the file's {file_timeout:g}s ran out"
            break
        if stream.running is None or len(run.tests) == before:
            break  # finished, or no progress (nothing to resume)
        if collected and all(n in run.tests for n in collected):
            break
        log(f"  {file}: restarting after {run.restarts[-1]['why']} in {run.restarts[-1]['test']}")
    for nodeid in collected:
        run.tests.setdefault(nodeid, {"outcome": "not-run", "duration": 0.0})
    run.wall = round(time.monotonic() - start, 1)
    shutil.rmtree(basetemp, ignore_errors=True)
    return run
