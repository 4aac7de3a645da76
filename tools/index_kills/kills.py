"""The kill campaign: writers SIGKILLed while they build, optimize or compact indices.

Each round mutates a world (an append, a delete, or nothing, by either library), then starts
a lancefmt writer (:mod:`.child`) that runs one operation (``create``: a scalar index of any
type, replacing one of that name; ``optimize``: ``optimize_indices``; ``compact``:
``compact_files``, which remaps indices; ``spark``: a Spark index build) and kills it:

* ``hook``: the writer kills itself just before or just after its n-th store event (an index
  file, the transaction file, the manifest's put-if-absent...: :mod:`.hooks`), n drawn over
  the events that operation made last time;
* ``delay``: the campaign kills it after a random delay within the operation's usual run time.

A writer that finishes first is counted as ``finished``. After every kill :mod:`.checks`
checks the dataset in both libraries; every few kills a cleanup (pylance's or lancefmt's, in
turn) must leave exactly what the last version references.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from .checks import (
    CheckFailed, Target, check_clean, check_dataset, check_no_uncommitted_index, State, listing,
    pending_uploads,
)
from .data import FTS, INDICES
from .hooks import last_event
from .worlds import S3Env, World, new_world

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPS = ("create", "optimize", "compact")
PART_SIZE = 64 * 1024  # half the S3 writers upload in parts this small (moto takes them)


@dataclass
class Config:
    kills: int = 200              # kills to reach (writers that finished first do not count)
    seed: int = 0
    stores: tuple = ("local", "s3")
    spark_kills: int = 0          # of which Spark index builds (a JVM each: slow)
    rounds_per_world: int = 12
    cleanup_every: int = 5
    workdir: str = "/tmp/index-kills"
    verbose: bool = False


@dataclass
class Report:
    kills: Counter = field(default_factory=Counter)     # (op, hook|delay, last event) -> kills
    delays: Counter = field(default_factory=Counter)    # delay kills by share of the usual run
    stores: Counter = field(default_factory=Counter)    # (store, op) -> kills
    outcomes: Counter = field(default_factory=Counter)  # (op, outcome) -> count
    finished: Counter = field(default_factory=Counter)  # op -> writers that finished first
    cleanups: Counter = field(default_factory=Counter)  # impl -> cleanups checked
    pending_uploads: int = 0                            # S3 multipart uploads never completed (all worlds)
    left_after_cleanup: Counter = field(default_factory=Counter)  # impl -> uploads a cleanup left
    failures: list = field(default_factory=list)
    worlds: int = 0
    seconds: float = 0.0

    @property
    def total_kills(self) -> int:
        return sum(self.kills.values())

    def summary(self) -> dict:
        return {"kills": self.total_kills, "worlds": self.worlds,
                "seconds": round(self.seconds, 1),
                "by_point": {f"{op} {how}: {pt}": n for (op, how, pt), n in sorted(self.kills.items())},
                "delay_kills_by_timing": dict(self.delays),
                "by_store": {f"{st} {op}": n for (st, op), n in sorted(self.stores.items())},
                "outcomes": {f"{op} {o}": n for (op, o), n in sorted(self.outcomes.items())},
                "finished_first": dict(self.finished), "cleanups": dict(self.cleanups),
                "pending_multipart_uploads": self.pending_uploads,
                "pending_uploads_after_cleanup": dict(self.left_after_cleanup),
                "failures": self.failures}


class Writers:
    """Forked lancefmt writers (a forkserver with lancefmt loaded) and Spark drivers."""

    def __init__(self):
        self.ctx = mp.get_context("forkserver")
        self.ctx.set_forkserver_preload(["lancefmt", "tools.index_kills.child",
                                         "tools.index_kills.hooks"])
        self.events: dict = {}     # (op, scheme) -> events the last finished writer made
        self.seconds: dict = {}    # op -> run times of finished writers

    def run(self, spec: dict, rng: np.random.Generator, mode: str, trail: str) -> tuple[str, str]:
        """Start, maybe kill, and reap one writer: (outcome, how: ``hook``/``delay <when>``).
        ``trail``: a file where the writer notes each store event (where a kill landed)."""
        op = spec["op"]
        key = (op, spec["uri"].split("://")[0] if "://" in spec["uri"] else "file")
        seen = self.events.get(key)
        spec = {**spec, "trail": trail}
        if mode == "hook" and seen:
            spec.update(kill_at=int(rng.integers(1, seen + 1)),
                        when="before" if rng.random() < 0.5 else "after")
        elif mode == "hook":
            mode = "learn"  # first run of this op here: let it finish and count its events
        runs = self.seconds.get(op, [])
        delay = float(rng.uniform(0, 1.2 * (np.median(runs) if runs else 0.3)))
        if op == "spark":
            outcome, how = self._spark(spec, mode, delay, key)
        else:
            outcome, how = self._forked(spec, mode, delay, key)
        return outcome, how

    def _finished(self, key, events, seconds) -> tuple[str, str]:
        self.events[key] = len(events)
        runs = self.seconds.setdefault(key[0], [])
        runs.append(seconds)
        del runs[:-20]
        return "finished", ""

    def _forked(self, spec: dict, mode: str, delay: float, key) -> tuple[str, str]:
        from .child import serve

        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=serve, args=(spec, child), daemon=True)
        p.start()
        child.close()
        try:
            if not parent.poll(120):
                raise CheckFailed(f"writer {spec['op']} never became ready (exit {p.exitcode})")
            parent.recv()
            t0 = time.monotonic()
            parent.send("go")
            if mode == "delay" and not parent.poll(delay):
                os.kill(p.pid, signal.SIGKILL)
                p.join(60)
                return "killed", f"delay {_bucket(delay, self.seconds.get(spec['op'], []))}"
            try:
                msg = parent.recv() if parent.poll(300) else None
            except EOFError:
                msg = None
            p.join(60)
            if msg is None:
                if p.exitcode == -signal.SIGKILL and "kill_at" in spec:
                    return "killed", "hook"
                raise CheckFailed(f"writer {spec['op']} died with exit {p.exitcode}")
            return self._finished(key, msg[1], time.monotonic() - t0)
        finally:
            if p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
                p.join(10)
            parent.close()

    def _spark(self, spec: dict, mode: str, delay: float, key) -> tuple[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([ROOT] + [x for x in env.get("PYTHONPATH", "").split(os.pathsep) if x])
        proc = subprocess.Popen([sys.executable, "-m", "tools.index_kills.child", json.dumps(spec)],
                                cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            line = proc.stdout.readline()
            if not line.startswith("ready"):
                raise CheckFailed(f"spark writer never became ready (exit {proc.poll()})")
            t0 = time.monotonic()
            proc.stdin.write("go\n")
            proc.stdin.flush()
            if mode == "delay":
                try:
                    proc.wait(delay)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)  # the JVM and the Python workers too
                    proc.wait(60)
                    return "killed", f"delay {_bucket(delay, self.seconds.get('spark', []))}"
            out = proc.stdout.readline()
            proc.wait(300)
            if not out.startswith("done"):
                if proc.returncode == -signal.SIGKILL and "kill_at" in spec:
                    return "killed", "hook"
                raise CheckFailed(f"spark writer died with exit {proc.returncode}")
            return self._finished(key, json.loads(out[5:]), time.monotonic() - t0)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # what is left of its group (the JVM)
            except ProcessLookupError:
                pass
            proc.wait(60)


def _bucket(delay: float, runs) -> str:
    """Where in the usual run time a delay fell (early / middle / late / after)."""
    usual = float(np.median(runs)) if runs else 0.3
    frac = delay / usual if usual else 0
    return "early" if frac < 0.33 else "middle" if frac < 0.66 else "late" if frac < 1 else "overtime"


def _spec(world: World, op: str, rng: np.random.Generator) -> dict:
    t = world.target
    spec = {"uri": t.uri, "storage_options": t.lf_options, "op": op}
    if t.s3 is not None and rng.random() < 0.5:
        spec["part_size"] = PART_SIZE
    if op in ("create", "spark"):
        built = {**INDICES, **FTS}
        name = list(built)[int(rng.integers(0, len(built)))]
        if op == "spark" and rng.random() < 0.5:  # a Spark INVERTED build: tasks share a directory
            name = next(iter(FTS))
        column, itype = built[name]
        spec["args"] = {"column": column, "type": itype, "name": name}
        if op == "spark":
            spec["args"].update(rows_per_task=int(rng.choice([1500, 3000, 100000])),
                                merge=bool(rng.random() < 0.7))
    elif op == "optimize":
        spec["args"] = {"merge": int(rng.choice([0, 1, 1, 2]))}
    else:
        spec["args"] = {"target": int(rng.choice([2500, 4000, 8000]))}
    return spec


def _prepare(world: World, op: str, rng: np.random.Generator) -> None:
    """Give the operation something to do: new fragments (optimize), small fragments and
    deleted rows (compaction); otherwise a random append or delete, or nothing."""
    r = rng.random()
    if op == "optimize" or (op != "compact" and r < 0.3):
        world.append(rng)
    if op == "compact":
        world.append(rng, int(rng.integers(100, 400)))
        if r < 0.7:
            world.delete(rng)
    elif r > 0.85:
        world.delete(rng)


def _segments(t: Target) -> State:
    from lancefmt.table.versions import load_manifest

    from .checks import _uuid

    mf = load_manifest(t.uri, None, storage_options=t.lf_options)
    return State(mf.version, {_uuid(pb): pb.name for pb in mf.indices}, np.empty(0))


def cleanup_and_check(world: World, impl: str, rng: np.random.Generator, report: Report) -> None:
    """Commit once more (so the killed writers' leftovers are older than the version kept),
    remove every old version and unverified file with ``impl``'s cleanup, check what is left."""
    world.append(rng, 50)
    t = world.target
    if impl == "pylance":
        t.pylance().cleanup_old_versions(older_than=timedelta(0), delete_unverified=True,
                                         error_if_tagged_old_versions=False)
    elif impl == "lancefmt":
        t.lancefmt().cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    else:  # no delete_unverified, eight days later: the leftovers are old enough to go
        from lancefmt.dataset.core.snapshot import Snapshot
        from lancefmt.dataset.maintain.cleanup import cleanup_old_versions

        snap = Snapshot.open(t.uri, storage_options=t.lf_options)
        cleanup_old_versions(snap, older_than=timedelta(0), now=time.time() + 8 * 86400)
    left = check_clean(t, "pylance" if impl == "pylance" else "lancefmt")
    report.left_after_cleanup[impl] += left["pending_uploads"]
    check_dataset(t, world.expected(), rng)
    report.cleanups[impl] += 1


def campaign(cfg: Config, log=print) -> Report:
    rng = np.random.default_rng(cfg.seed)
    report = Report()
    writers = Writers()
    s3 = S3Env() if "s3" in cfg.stores else None
    os.makedirs(cfg.workdir, exist_ok=True)
    start = time.monotonic()
    spark_left = cfg.spark_kills
    impls = ["pylance", "lancefmt", "lancefmt-8-days"]
    n_clean = n_rounds = 0
    try:
        while report.total_kills < cfg.kills:
            store = cfg.stores[report.worlds % len(cfg.stores)]
            name = f"w{report.worlds:04d}"
            t = s3.target(name) if store == "s3" else Target(os.path.join(cfg.workdir, name))
            world = new_world(t, rng)
            report.worlds += 1
            state = check_dataset(t, world.expected(), rng)
            failed = len(report.failures)
            for rnd in range(cfg.rounds_per_world):
                if report.total_kills >= cfg.kills:
                    break
                spark = spark_left > 0 and rng.random() < max(
                    0.5, spark_left / max(1, cfg.kills - report.total_kills))
                op = "spark" if spark else OPS[n_rounds % len(OPS)]  # in turn: every op is hit
                n_rounds += 1
                _prepare(world, op, rng)
                before = _segments(t)
                mode = "hook" if rng.random() < 0.6 else "delay"
                spec = _spec(world, op, rng)
                trail = os.path.join(cfg.workdir, f"trail-{report.worlds}-{rnd}")
                outcome, how = writers.run(spec, rng, mode, trail)
                point = last_event(trail)
                if os.path.exists(trail):
                    os.unlink(trail)
                try:
                    state = check_dataset(t, world.expected(), rng)
                    check_no_uncommitted_index(t, before, state)
                except CheckFailed as e:
                    report.failures.append(f"{world.label} {op} {outcome} {how} at {point}: {e}")
                    log(f"FAIL {report.failures[-1]}")
                    break
                if outcome == "killed":
                    report.kills[(op, how.split()[0], point)] += 1
                    report.stores[(store, op)] += 1
                    if how.startswith("delay"):
                        report.delays[how.split()[1]] += 1
                    committed = state.version > before.version
                    report.outcomes[(op, "committed" if committed else "not committed")] += 1
                    if op == "spark":
                        spark_left -= 1
                else:
                    report.finished[op] += 1
                if cfg.verbose:
                    what = spec["args"].get("name", "")
                    log(f"{world.label} {op} {what} {outcome} {how} at {point} v{before.version}->{state.version}")
                if (rnd + 1) % cfg.cleanup_every == 0:
                    impl = impls[n_clean % len(impls)]
                    n_clean += 1
                    try:
                        cleanup_and_check(world, impl, rng, report)
                    except CheckFailed as e:
                        report.failures.append(f"{world.label} cleanup {impl}: {e}")
                        log(f"FAIL {report.failures[-1]}")
                        break
            report.pending_uploads += len(pending_uploads(t))
            if len(report.failures) == failed:
                _drop(t)  # a failed world stays for a look
            log(f"{report.total_kills} kills, {report.worlds} worlds, "
                f"{time.monotonic() - start:.0f} s, {len(report.failures)} failures")
    finally:
        report.seconds = time.monotonic() - start
        if s3 is not None:
            s3.stop()
    return report


def _drop(t: Target) -> None:
    if t.local:
        shutil.rmtree(t.uri, ignore_errors=True)
