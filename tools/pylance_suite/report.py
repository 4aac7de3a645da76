"""A lancefmt run against the baseline: per file, how many of the tests that pass on pylance
pass on lancefmt, and why the others fail (grouped by category, most frequent first)."""
from __future__ import annotations

from collections import Counter, defaultdict

from . import calls, fts, surface, upstream
from .categorize import categorize

SPLIT = {"test_scalar_index.py": ("FTS", "non-FTS")}  # files reported in two halves


def outcome_counts(tests: dict) -> str:
    counts = Counter(t["outcome"] for t in tests.values())
    return ", ".join(f"{n} {k}" for k, n in counts.most_common()) or "-"


def _lancefmt_record(run: dict, nodeid: str, probe: bool) -> dict:
    """The lancefmt outcome of a baseline test; a file that did not import fails them all.
    In a probe run a placeholder may change a parametrized test's id: then the outcome is
    that of a test of the same function (the first not passing)."""
    if nodeid in run["tests"]:
        rec = run["tests"][nodeid]
        if probe and rec["outcome"] == "passed" and rec.get("placeholders_used"):
            return {**rec, "outcome": "passed-using-placeholder"}
        return rec
    if run["collect_errors"]:
        err = run["collect_errors"][0]
        return {"outcome": "collect-error", "exception": err.get("exception") or {}}
    if probe:
        base = nodeid.split("[", 1)[0]
        siblings = [t for n, t in run["tests"].items() if n.split("[", 1)[0] == base]
        failing = [t for t in siblings if t["outcome"] != "passed"]
        if siblings:
            return _lancefmt_record({"tests": {nodeid: (failing or siblings)[0]},
                                     "collect_errors": []}, nodeid, probe)
    return {"outcome": "absent"}


def compare(result: dict, base: dict, checkout: upstream.Checkout,
            gaps: dict[str, str] | None = None) -> None:
    """Add ``comparison`` to a lancefmt run's result: per file the baseline's passing tests,
    those passing here, and each other one's outcome, category and the pylance methods
    lancefmt lacks (``gaps``, see surface.py) that its source calls."""
    gaps = gaps or {}
    result["pylance_methods_lancefmt_lacks"] = sorted(gaps.values())
    if base.get("lance_commit") and base["lance_commit"] != result["lance_commit"]:
        result["baseline_warning"] = (f"baseline is of lance {base['lance_commit'][:12]}, "
                                      f"tests are of {result['lance_commit'][:12]}")
    comparison = {}
    for file, run in result["files"].items():
        if file not in base.get("files", {}):
            continue
        passed_there = base["files"][file]["passed"]
        entry = {"pylance_passed": len(passed_there), "lancefmt_passed": 0, "failing": {},
                 "lancefmt_only": sorted(n for n, t in run["tests"].items()
                                         if t["outcome"] == "passed" and
                                         n not in set(passed_there))}
        sources = surface.Sources(checkout.tests / file)
        groups = None
        if file in SPLIT:
            is_fts = fts.classify(checkout.tests / file, passed_there)
            yes, no = SPLIT[file]
            groups = {yes: [0, 0], no: [0, 0]}
        for nodeid in passed_there:
            rec = _lancefmt_record(run, nodeid, result.get("probe", False))
            ok = rec["outcome"] == "passed"
            if groups is not None:
                g = groups[SPLIT[file][0] if is_fts[nodeid] else SPLIT[file][1]]
                g[0] += 1
                g[1] += ok
            if ok:
                entry["lancefmt_passed"] += 1
                continue
            category, detail = categorize(rec, file)
            entry["failing"][nodeid] = {"outcome": rec["outcome"], "category": category,
                                        "detail": detail}
            kind = _index_type(checkout, file, nodeid, category, detail)
            if kind:
                entry["failing"][nodeid]["index_type"] = kind
            lacks = sorted(gaps[a] for a in sources.attributes(nodeid) if a in gaps)
            if lacks:
                entry["failing"][nodeid]["calls_missing"] = lacks
            query = sorted(k for k in sources.keywords(nodeid) if k in surface.QUERY_KEYWORDS)
            if query:
                entry["failing"][nodeid]["query_arguments"] = query
            if groups is not None:
                entry["failing"][nodeid]["group"] = (SPLIT[file][0] if is_fts[nodeid]
                                                     else SPLIT[file][1])
        if groups is not None:
            entry["groups"] = {k: {"pylance_passed": a, "lancefmt_passed": b}
                               for k, (a, b) in groups.items()}
        comparison[file] = entry
    result["comparison"] = comparison


def _index_type(checkout, file: str, nodeid: str, category: str, detail: str) -> str | None:
    """For a failing index-creation call, the index type it asked for."""
    method = category.rpartition(".")[2]
    if method not in calls.INDEX_METHODS or not detail.startswith(file + ":"):
        return None
    line = int(detail.split(":")[1].split()[0])
    params = nodeid.partition("[")[2]
    return calls.index_type(checkout.tests / file, line, method, params)


def _pct(a: int, b: int) -> str:
    return f"{100 * b / a:5.1f}%" if a else "    -"


def table(result: dict, base: dict) -> str:
    """The per-file table: for lancefmt, pylance-pass / lancefmt-pass / %; for pylance, the
    outcome counts."""
    lines = []
    if result["impl"] == "pylance":
        lines.append(f"{'file':34} {'collected':>9} {'passed':>7}  other")
        for file, run in result["files"].items():
            tests = run["tests"]
            n = sum(t["outcome"] == "passed" for t in tests.values())
            other = outcome_counts({k: v for k, v in tests.items() if v["outcome"] != "passed"})
            errs = f"; {len(run['collect_errors'])} collection errors" if run["collect_errors"] \
                else ""
            lines.append(f"{file:34} {len(tests):9} {n:7}  {other}{errs}")
        return "\n".join(lines)
    comp = result.get("comparison", {})
    lines.append(f"{'file':34} {'pylance':>8} {'lancefmt':>9} {'%':>6}"
                 + ("   (probe: a diagnostic, not lancefmt's result)" if result.get("probe")
                    else ""))
    for name, rows in _groups(comp):
        if not rows:
            continue
        total_a = total_b = 0
        for file in rows:
            e = comp[file]
            a, b = e["pylance_passed"], e["lancefmt_passed"]
            total_a, total_b = total_a + a, total_b + b
            lines.append(f"{file:34} {a:8} {b:9} {_pct(a, b)}")
            for g, ge in e.get("groups", {}).items():
                ga, gb = ge["pylance_passed"], ge["lancefmt_passed"]
                lines.append(f"{'  (' + g + ')':34} {ga:8} {gb:9} {_pct(ga, gb)}")
        lines.append(f"{'= ' + name:34} {total_a:8} {total_b:9} {_pct(total_a, total_b)}")
    missing = [f for f in result["files"] if f not in comp]
    if missing:
        lines.append(f"(no baseline for {', '.join(missing)})")
    if result.get("missing_files"):
        lines.append(f"(not at lance {result['lance_commit'][:12]}: "
                     f"{', '.join(result['missing_files'])})")
    if result.get("baseline_warning"):
        lines.append(f"WARNING: {result['baseline_warning']}")
    return "\n".join(lines)


def categories(result: dict, files: list[str]) -> list[tuple[str, int, dict, dict]]:
    """(category, number of tests, {test function: count}, {index type: count}) over
    ``files``, most frequent first."""
    by_cat: dict[str, Counter] = defaultdict(Counter)
    kinds: dict[str, Counter] = defaultdict(Counter)
    for file in files:
        for nodeid, f in result.get("comparison", {}).get(file, {}).get("failing", {}).items():
            label = f"{file.removesuffix('.py')}::{nodeid.split('::', 1)[1].split('[')[0]}"
            if "group" in f:
                label += f" ({f['group']})"
            by_cat[f["category"]][label] += 1
            if "index_type" in f:
                kinds[f["category"]][f["index_type"]] += 1
    return sorted(((c, sum(t.values()), dict(t), dict(kinds[c].most_common()))
                   for c, t in by_cat.items()), key=lambda x: (-x[1], x[0]))


def uses(result: dict, files: list[str], key: str) -> list[tuple[str, int]]:
    """(name, number of failing tests using it) for the ``key`` list of the failures
    (``calls_missing``, ``query_arguments``), most used first."""
    counts = Counter()
    for file in files:
        for f in result.get("comparison", {}).get(file, {}).get("failing", {}).values():
            counts.update(f.get(key, []))
    return counts.most_common()


def _groups(files) -> list[tuple[str, list[str]]]:
    """The files of a run as the report groups them."""
    other = [f for f in files if f not in upstream.FILE_SETS["all"]]
    return [("index files", [f for f in upstream.INDEX_FILES if f in files]),
            ("table-format files", [f for f in upstream.TABLE_FILES if f in files]),
            ("other files", other)]


def failure_summary(result: dict, width: int = 6) -> str:
    """The categories of lancefmt's failures, most frequent first, a few tests named each;
    then the pylance methods lancefmt lacks that the failing tests call."""
    lines = []
    for name, group in _groups(result.get("comparison", {})):
        cats = categories(result, group)
        if not cats:
            continue
        lines.append(f"\nwhy lancefmt fails, {name} (tests passing on pylance):")
        for cat, n, tests, kinds in cats:
            named = ", ".join(f"{t}" + (f" x{c}" if c > 1 else "")
                              for t, c in sorted(tests.items(), key=lambda x: -x[1])[:width])
            more = f", ... ({len(tests) - width} more)" if len(tests) > width else ""
            lines.append(f"{n:5}  {cat}")
            if kinds:
                lines.append("       by index_type: "
                             + ", ".join(f"{k} {c}" for k, c in kinds.items()))
            lines.append(f"       {named}{more}")
        needed = uses(result, group, "calls_missing")
        if needed:
            lines.append(f"\npylance methods lancefmt lacks, {name}: how many of the failing "
                         "tests call each (test, fixtures and helpers; not only the first "
                         "failure):")
            lines += [f"{n:5}  {m}" for m, n in needed]
        query = uses(result, group, "query_arguments")
        if query:
            lines.append(f"\nindex query arguments the failing tests pass, {name}:")
            lines += [f"{n:5}  {k}=" for k, n in query]
    return "\n".join(lines)
