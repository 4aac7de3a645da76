"""``python -m tools.pylance_suite``: run Lance's Python tests on pylance or on lancefmt.

    --impl pylance --write-baseline   the baseline (which tests pass on pylance) -> baseline.json
    --impl lancefmt                   the same files on lancefmt, compared with the baseline

Files run one at a time, each in its own pytest process (no xdist). The full per-test
outcomes go to ``--out`` as JSON; a table (and, for lancefmt, the failures by category)
is printed.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from . import baseline, report, surface, upstream
from .runner import Impl, run_file

REPO = Path(__file__).resolve().parents[2]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.pylance_suite", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", choices=["lancefmt", "pylance"], default="lancefmt")
    p.add_argument("files", nargs="*", help="test files (default: the --set)")
    p.add_argument("--set", choices=sorted(upstream.FILE_SETS), default="all",
                   help="index: the index files; table: the table-format ones; all: both")
    p.add_argument("--git-dir", default=upstream.DEFAULT_GIT_DIR,
                   help="git directory of lancedb/lance (env LANCE_GIT_DIR)")
    p.add_argument("--rev", default="HEAD", help="the lance commit whose tests run")
    p.add_argument("--lancefmt-path", default=str(REPO),
                   help="the lancefmt under test: a checkout with its extensions built "
                        "(default: the repository this harness is in)")
    p.add_argument("--probe", action="store_true",
                   help="(--impl lancefmt) a diagnostic: what lancefmt lacks becomes a "
                        "placeholder, so every test runs to its first use of a missing "
                        "thing; counted apart, never as lancefmt's result")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per test")
    p.add_argument("--file-timeout", type=float, default=3600.0, help="seconds per file")
    p.add_argument("--upstream-warnings", action="store_true",
                   help="keep upstream's filterwarnings (DeprecationWarning is an error), "
                        "which fails tests that call APIs pylance 14 deprecates")
    p.add_argument("--baseline", type=Path, default=baseline.PATH)
    p.add_argument("--write-baseline", action="store_true",
                   help="(--impl pylance) merge the passing tests into --baseline")
    p.add_argument("--out", type=Path, help="the JSON report "
                   "(default: build/pylance-suite/<impl>.json in the repository)")
    p.add_argument("--workdir", type=Path, help="keep the extracted tests and logs here")
    p.add_argument("--from-json", type=Path, metavar="REPORT",
                   help="run nothing: compare and summarise a saved lancefmt report again "
                        "(against --baseline), rewriting it (or writing --out)")
    return p


def _gaps(lancefmt_path: str) -> dict[str, str]:
    """pylance methods the lancefmt at ``lancefmt_path`` lacks (surface.py)."""
    return surface.gaps(surface.methods(Impl.pylance()),
                        surface.methods(Impl.lancefmt(lancefmt_path)))


def _rereport(args) -> int:
    """``--from-json``: compare a saved lancefmt run with the baseline again."""
    result = json.loads(args.from_json.read_text())
    if result["impl"] != "lancefmt":
        sys.exit("--from-json takes a lancefmt run's report")
    base = baseline.load(args.baseline)
    with tempfile.TemporaryDirectory(prefix="pylance-suite-") as tmp:
        checkout = upstream.extract(args.git_dir, result["lance_commit"], Path(tmp))
        report.compare(result, base, checkout, _gaps(result["lancefmt_path"]))
    out = args.out or args.from_json
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(report.table(result, base))
    print(report.failure_summary(result))
    print(f"report: {out}")
    return 0


def _git_state(path: str) -> str | None:
    """``<commit>`` (``+dirty`` when there are uncommitted changes) of the checkout at path."""
    try:
        head = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", path, "status", "--porcelain", "--", "lancefmt"],
                               check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def _run(args, impl: Impl, label: str, work: Path) -> tuple[dict, upstream.Checkout]:
    """Run the chosen files one after the other; the result (every test's outcome)."""
    checkout = upstream.extract(args.git_dir, args.rev, work / "src")
    have, missing = upstream.present(checkout, args.files or upstream.FILE_SETS[args.set])
    lancefmt = impl.name == "lancefmt"
    result = {
        "impl": impl.name, "probe": args.probe,
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "lance_commit": checkout.commit, "lance_version": checkout.version,
        "pylance_version": importlib.metadata.version("pylance"),
        "lancefmt_path": str(Path(args.lancefmt_path).resolve()) if lancefmt else None,
        "lancefmt_commit": _git_state(args.lancefmt_path) if lancefmt else None,
        "timeout": args.timeout, "upstream_warnings": args.upstream_warnings,
        "missing_files": missing, "files": {},
    }
    print(f"lance {checkout.version} ({checkout.commit[:12]}) tests on {label}"
          + (f" from {result['lancefmt_path']}" if lancefmt else "")
          + (f"; not at this commit: {', '.join(missing)}" if missing else ""), flush=True)
    logs = work / label
    logs.mkdir(exist_ok=True)
    for file in have:
        run = run_file(checkout, file, impl, logs, timeout=args.timeout,
                       file_timeout=args.file_timeout, upstream_warnings=args.upstream_warnings,
                       log=lambda msg: print(msg, flush=True))
        entry = asdict(run)
        entry.pop("file"), entry.pop("raw_ids")
        result["files"][file] = entry
        errors = "".join(f"; collection error: {e['exception'].get('text', '')}"
                         for e in run.collect_errors if e.get("exception"))
        print(f"  {file}: {report.outcome_counts(run.tests)}{errors} in {run.wall:.0f}s",
              flush=True)
    return result, checkout


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.from_json:
        return _rereport(args)
    if args.write_baseline and args.impl != "pylance":
        sys.exit("--write-baseline needs --impl pylance")
    if args.probe and args.impl != "lancefmt":
        sys.exit("--probe needs --impl lancefmt")
    impl = (Impl.pylance() if args.impl == "pylance"
            else Impl.lancefmt(args.lancefmt_path, probe=args.probe))
    label = args.impl + ("-probe" if args.probe else "")
    out = args.out or REPO / "build" / "pylance-suite" / f"{label}.json"
    with tempfile.TemporaryDirectory(prefix="pylance-suite-") as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        result, checkout = _run(args, impl, label, work)
        base = baseline.load(args.baseline)
        if impl.name == "lancefmt":
            report.compare(result, base, checkout, _gaps(args.lancefmt_path))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    if args.write_baseline:
        base = baseline.update(result, args.baseline)
        print(f"baseline: {args.baseline}")
    print(report.table(result, base))
    if impl.name == "lancefmt":
        print(report.failure_summary(result))
    print(f"report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
