"""The race campaign: writers committing at the same time as index builds.

Each round starts a fresh world and two or three writer processes at a barrier, each running
a loop of one kind of commit, with pylance or lancefmt (index builds and the optimize loop
always include lancefmt):

* ``index+append``: index builds (any type, replacing) against appends;
* ``index+index``: two builders of the same index name (BTREE or ZONEMAP on ``id``), each
  dropping it now and then;
* ``optimize+compact``: appends + ``optimize_indices`` against deletes + ``compact_files``;
* ``index+update``: index builds against updates of the indexed ``cat`` column;
* ``index+delete``: index builds against deletes (of some rows, or of whole fragments).

A writer plans half of its operations on a dataset object it has held since its previous
commit (others have committed since: the conflict rules must rebase or refuse), the rest on
the latest version. It records what each acknowledged commit did. Afterwards the latest version and a few
versions in between are checked (:mod:`.checks`): every acknowledged row is there and no
other, updated values are the last ones written, every index answers what a full scan does,
in both libraries. A commit the conflict rules refused (an error after its retries) is
counted, never acknowledged.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .checks import CheckFailed, Target, check_dataset, expect
from .data import INDICES, rows
from .worlds import S3Env, new_world

SCENARIOS = {
    "index+append": ("create", "append"),
    "index+index": ("create_same", "create_same"),
    "optimize+compact": ("optimize", "compact"),
    "index+update": ("create", "update"),
    "index+delete": ("create", "delete"),
}
LANCEFMT_ONLY = {"optimize"}  # at least the index side of each pair is lancefmt's: see _libs


@dataclass
class Config:
    commits: int = 1000
    seed: int = 0
    stores: tuple = ("local", "s3")
    seconds_per_round: float = 3.0  # each writer commits for this long (all at once)
    min_rounds: int = 10            # and at least this many rounds (each scenario on each store)
    workdir: str = "/tmp/index-races"
    verbose: bool = False


@dataclass
class Report:
    commits: Counter = field(default_factory=Counter)    # scenario -> versions committed
    acked: Counter = field(default_factory=Counter)      # (scenario, role, lib) -> acknowledged
    refused: Counter = field(default_factory=Counter)    # (scenario, role, lib) -> refused
    retries: Counter = field(default_factory=Counter)    # scenario -> lancefmt re-plans
    rounds: Counter = field(default_factory=Counter)
    versions_checked: int = 0
    failures: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total_commits(self) -> int:
        return sum(self.commits.values())

    def summary(self) -> dict:
        return {"commits": self.total_commits, "seconds": round(self.seconds, 1),
                "rounds": dict(self.rounds), "commits_by_scenario": dict(self.commits),
                "acknowledged": {" ".join(k): n for k, n in sorted(self.acked.items())},
                "refused": {" ".join(k): n for k, n in sorted(self.refused.items())},
                "lancefmt_replans": dict(self.retries),
                "versions_checked": self.versions_checked, "failures": self.failures}


def _writer(role: str, lib: str, worker: int, spec: dict, barrier, conn) -> None:
    """One writer's loop (a forked process): sends ``(acknowledged, refused, replans, error)``."""
    import lance

    import lancefmt
    from lancefmt.dataset.core import commit as commit_mod
    from lancefmt.errors import CommitConflictError

    replans = [0]
    real_backoff = commit_mod.conflict_backoff

    def counting_backoff(attempt):
        replans[0] += 1
        real_backoff(attempt)

    commit_mod.conflict_backoff = counting_backoff
    rng = np.random.default_rng(spec["seed"])
    uri, lf_opts, pl_opts = spec["uri"], spec["lf_options"], spec["pl_options"]

    def fresh():
        return lance.dataset(uri, storage_options=pl_opts) if lib == "pylance" else \
            lancefmt.dataset(uri, storage_options=lf_opts)

    held = [None]

    def ds():
        """Half the time the writer's long-held dataset object (it moves with its own commits
        only, so its operations are planned on a version others have moved past), else the
        latest version."""
        if held[0] is None or rng.random() < 0.5:
            held[0] = fresh()
        return held[0]

    def append(data):
        if lib == "pylance":
            lance.write_dataset(data, uri, mode="append", storage_options=pl_opts)
        else:
            lancefmt.write_dataset(data, uri, mode="append", storage_options=lf_opts)

    own = spec["own_ids"]  # initial ids only this writer deletes or updates
    next_id = 10_000_000 * (worker + 1)
    acked, refused = [], 0
    warm = fresh()  # imports and first reads before the start, so both writers start hot
    warm.count_rows("id = 1")
    warm.describe_indices()
    import lancefmt.dataset.indices.create  # noqa: F401
    import lancefmt.dataset.maintain.compaction  # noqa: F401
    barrier.wait()
    deadline = time.monotonic() + spec["seconds"]
    i = -1
    while time.monotonic() < deadline or i < 1:  # for a while, and at least two operations
        i += 1
        try:
            if role == "append":
                n = int(rng.integers(50, 400))
                append(rows(next_id, n))
                acked.append(("append", next_id, n))
                next_id += n
            elif role in ("create", "create_same"):
                if role == "create":
                    name = list(INDICES)[int(rng.integers(0, len(INDICES)))]
                    column, itype = INDICES[name]
                else:
                    name, column, itype = "id_idx", "id", ["BTREE", "ZONEMAP"][int(rng.integers(0, 2))]
                    if rng.random() < 0.2:  # a drop racing the other's replace (or drop)
                        d = ds()
                        if any(x.name == name for x in d.describe_indices()):
                            d.drop_index(name)
                            acked.append(("drop", name))
                        continue
                ds().create_scalar_index(column, itype, name=name, replace=True)
                acked.append(("create", name, itype))
            elif role == "update":
                pick = own[int(rng.integers(0, len(own) - 8)):][:8]
                value = f"u{i % 8}"
                ds().update({"cat": f"'{value}'"}, where=f"id IN ({', '.join(map(str, pick))})")
                acked.append(("update", [int(x) for x in pick], value))
            elif role == "delete" and rng.random() < 0.25:  # a whole initial fragment
                k = int(rng.integers(0, spec["initial"] // 1000))
                ds().delete(f"id >= {k * 1000} AND id < {k * 1000 + 1000}")
                acked.append(("delete", list(range(k * 1000, k * 1000 + 1000))))
            elif role in ("delete", "compact"):
                pick = [int(x) for x in rng.choice(own, size=6, replace=False)]
                ds().delete(f"id IN ({', '.join(map(str, pick))})")
                acked.append(("delete", pick))
                if role == "compact":
                    ds().optimize.compact_files(target_rows_per_fragment=int(rng.choice([3000, 6000])))
                    acked.append(("compact",))
            elif role == "optimize":
                n = int(rng.integers(50, 300))
                append(rows(next_id, n))
                acked.append(("append", next_id, n))
                next_id += n
                ds().optimize.optimize_indices(num_indices_to_merge=int(rng.choice([0, 1, 2])))
                acked.append(("optimize",))
        except Exception as e:  # noqa: BLE001 - a refusal by the conflict rules, or a finding
            if isinstance(e, CommitConflictError) or (
                    lib == "pylance" and "onflict" in str(e) and "etry" in str(e)) or (
                    "ot found" in str(e) and "drop" in traceback.format_exc()):  # dropped first
                refused += 1
                continue
            conn.send((acked, refused, replans[0], traceback.format_exc()))
            return
    conn.send((acked, refused, replans[0], None))


def _libs(roles, rng) -> list[str]:
    """The library of each writer: the first (the index side) is lancefmt's; the other is
    pylance's half of the time (the optimize loop is lancefmt's: it is what is tested)."""
    out = ["lancefmt"]
    for role in roles[1:]:
        out.append("lancefmt" if role in LANCEFMT_ONLY or rng.random() < 0.5 else "pylance")
    return out


def run_round(world, scenario: str, cfg: Config, rng, report: Report, ctx) -> None:
    t = world.target
    roles = SCENARIOS[scenario]
    libs = _libs(roles, rng)
    start_version = t.lancefmt().version
    initial = np.array(sorted(world.ids), np.int64)
    shares = np.array_split(rng.permutation(initial), len(roles))
    barrier = ctx.Barrier(len(roles))
    procs, pipes = [], []
    for w, (role, lib) in enumerate(zip(roles, libs)):
        spec = {"uri": t.uri, "lf_options": t.lf_options, "pl_options": t.pl_options,
                "seed": int(rng.integers(0, 2**31)), "seconds": cfg.seconds_per_round,
                "own_ids": [int(x) for x in shares[w]], "initial": int(world.lib_rows)}
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_writer, args=(role, lib, w, spec, barrier, child), daemon=True)
        p.start()
        child.close()
        procs.append(p)
        pipes.append(parent)
    results = []
    for p, conn in zip(procs, pipes):
        got = conn.recv() if conn.poll(900) else None
        p.join(60)
        results.append(got)
    ids = set(world.ids)
    cat = {}
    for (role, lib), got in zip(zip(roles, libs), results):
        expect(got is not None, f"{role} writer ({lib}) hung or died")
        acked, refused, replans, err = got
        expect(err is None, f"{role} writer ({lib}) failed: {err}")
        report.acked[(scenario, role, lib)] += len(acked)
        report.refused[(scenario, role, lib)] += refused
        report.retries[scenario] += replans
        for a in acked:
            if a[0] == "append":
                ids |= set(range(a[1], a[1] + a[2]))
            elif a[0] == "delete":
                ids -= set(a[1])
            elif a[0] == "update":
                cat.update({x: a[2] for x in a[1]})
    world.ids = ids
    latest = t.lancefmt().version
    report.commits[scenario] += latest - start_version
    state = check_dataset(t, world.expected(), rng, probes_per_index=2)
    _check_updates(t, cat)
    for v in sorted(rng.choice(np.arange(start_version + 1, latest), size=min(3, max(0, latest - start_version - 1)),
                               replace=False).tolist()) if latest - start_version > 1 else []:
        _check_version(t, int(v), rng)
        report.versions_checked += 1
    report.versions_checked += 1
    return state


def _check_updates(t: Target, cat: dict) -> None:
    """Every updated row holds the last value written to it (one updater per row)."""
    if not cat:
        return
    got = t.pylance().to_table(columns=["id", "cat"], filter=f"id IN ({', '.join(map(str, cat))})")
    have = dict(zip(got["id"].to_pylist(), got["cat"].to_pylist()))
    wrong = {i: (have.get(i), v) for i, v in cat.items() if i in have and have[i] != v}
    expect(not wrong, f"updated rows hold other values: {list(wrong.items())[:5]}")


def _check_version(t: Target, version: int, rng) -> None:
    """An intermediate version: pylance validates it, and its indices answer (both libraries)
    what a full scan of that version does."""
    import lance

    from .data import probes

    pl = lance.dataset(t.uri, version=version, storage_options=t.pl_options)
    pl.validate()
    lf = t.lancefmt(version)
    full = pl.to_table().sort_by("id")
    expect(full.equals(lf.to_table().sort_by("id")), f"v{version}: a full read differs")
    ids = full["id"].to_numpy()
    top = int(ids.max()) + 1 if ids.size else 1
    for d in pl.describe_indices():
        if d.name not in INDICES:
            continue
        for p in probes(d.name, rng, top):
            want = np.sort(ids[p.mask(full)])
            for lib, ds in (("pylance", pl), ("lancefmt", lf)):
                got = np.sort(ds.to_table(columns=["id"], filter=p.sql)["id"].to_numpy())
                expect(np.array_equal(got, want),
                       f"v{version} {lib}: {p.sql} gives {got.size} rows, a full scan {want.size}")


def campaign(cfg: Config, log=print) -> Report:
    rng = np.random.default_rng(cfg.seed)
    report = Report()
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["lancefmt", "tools.index_kills.races"])  # not pylance: it must not be forked
    s3 = S3Env() if "s3" in cfg.stores else None
    os.makedirs(cfg.workdir, exist_ok=True)
    start = time.monotonic()
    names = list(SCENARIOS)
    n = 0
    try:
        while report.total_commits < cfg.commits or sum(report.rounds.values()) < cfg.min_rounds:
            scenario = names[n % len(names)]
            store = cfg.stores[(n // len(names)) % len(cfg.stores)]
            n += 1
            name = f"r{n:04d}"
            t = s3.target(name) if store == "s3" else Target(os.path.join(cfg.workdir, name))
            world = new_world(t, rng, n_rows=6000, n_indices=int(rng.integers(2, len(INDICES) + 1)))
            report.rounds[scenario] += 1
            try:
                run_round(world, scenario, cfg, rng, report, ctx)
            except CheckFailed as e:
                report.failures.append(f"{world.label} {scenario}: {e}")
                log(f"FAIL {report.failures[-1]}")
                continue  # the dataset stays for a look
            if t.local:
                shutil.rmtree(t.uri, ignore_errors=True)
            log(f"{report.total_commits} commits, {sum(report.rounds.values())} rounds, "
                f"{time.monotonic() - start:.0f} s, {len(report.failures)} failures"
                + (f" ({world.label} {scenario})" if cfg.verbose else ""))
    finally:
        report.seconds = time.monotonic() - start
        if s3 is not None:
            s3.stop()
    return report
