"""The baseline: which upstream tests pass on pylance, kept in ``baseline.json`` so that a
lancefmt run compares against it without running pylance again."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

PATH = Path(__file__).resolve().parent / "baseline.json"


def load(path: Path = PATH) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"files": {}}


def update(report: dict, path: Path = PATH) -> dict:
    """Merge a pylance run's outcomes into the baseline file (files not run are kept)."""
    old = load(path)
    files = dict(old.get("files", {}))
    for file, run in report["files"].items():
        outcomes = Counter(t["outcome"] for t in run["tests"].values())
        files[file] = {
            "passed": sorted(n for n, t in run["tests"].items() if t["outcome"] == "passed"),
            "not_passed": dict(sorted((k, v) for k, v in outcomes.items() if k != "passed")),
            "collect_errors": [e.get("exception", {}).get("text", "") for e in
                               run["collect_errors"]],
        }
    new = {
        "about": "tests of lance's python/python/tests that pass on pylance "
                 "(tools/pylance_suite; rewritten by `make pylance-suite-baseline`)",
        "lance_commit": report["lance_commit"],
        "lance_version": report["lance_version"],
        "pylance_version": report["pylance_version"],
        "timeout": report["timeout"],
        "missing_files": sorted(set(old.get("missing_files", [])) - set(files)
                                | set(report["missing_files"])),
        "files": dict(sorted(files.items())),
    }
    path.write_text(json.dumps(new, indent=1) + "\n")
    return new
