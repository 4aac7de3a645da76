"""Why a test that passes on pylance fails on lancefmt, as a category fit for a to-do list.

A category names what is missing or wrong in pylance's terms (``lance.indices``,
``LanceDataset.create_scalar_index``, ``to_table(full_text_query=)``), so that the tests
failing for one reason group together; the rest of the message is the detail.
"""
from __future__ import annotations

import re

# lancefmt's class names -> pylance's, so that categories read as pylance's API
_CLASS_NAMES = {"Dataset": "LanceDataset", "Fragment": "LanceFragment"}


def _pylance_names(text: str) -> str:
    """lancefmt's module names as the shim shows them (``lancefmt.dataset`` -> ``lance.dataset``);
    the word lancefmt in a sentence stays."""
    return re.sub(r"\blancefmt(?=\.\w|')", "lance", text)


def _normalise(text: str, limit: int = 140, first_line: bool = True) -> str:
    """A message without the parts that differ from test to test (paths, numbers, uuids)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    text = " | ".join(lines[:1] if first_line else lines)
    text = re.sub(r"(/[\w.+-]+)+/?", "<path>", text)
    text = re.sub(r"0x[0-9a-f]+", "<addr>", text)
    text = re.sub(r"\b[0-9a-f]{8}-[0-9a-f-]{27,}\b", "<uuid>", text)
    text = re.sub(r"\b\d+(\.\d+)?\b", "N", text)
    return _pylance_names(text)[:limit]


def _test_line(frames: list[str], test_file: str) -> str:
    """The last frame inside the test file (``test_x.py:123``), where the test gave up."""
    inside = [f for f in frames if f.startswith(test_file + ":")]
    return ":".join(inside[-1].split(":")[:2]) if inside else ""


def categorize(record: dict, test_file: str) -> tuple[str, str]:
    """(category, detail) of one failing test's record."""
    outcome = record.get("outcome")
    if outcome == "hung":
        return "hung (killed: no progress past the per-test timeout)", ""
    if outcome == "crashed":
        return "process crashed", record.get("exception", {}).get("message", "")
    if outcome in ("not-run", "stopped"):
        return "not run (the file's time ran out)", ""
    if outcome == "passed-using-placeholder":
        return (f"passes only by taking a probe placeholder for an expected error: "
                f"{', '.join(record['placeholders_used'])}"), ""
    if outcome == "absent":
        return "not collected on lancefmt", ""
    if outcome == "skipped":
        return f"skipped on lancefmt: {_normalise(record.get('reason', ''))}", ""
    if outcome == "xfailed":
        return "xfailed on lancefmt", ""
    exc = record.get("exception") or {}
    etype, msg = exc.get("type", ""), exc.get("message", "") or exc.get("text", "")
    where = _test_line(exc.get("frames", []), test_file)
    if outcome == "collect-error":
        return _import_category(exc.get("text", "")) + " (the file does not import)", ""
    if etype == "Failed" and msg.startswith("Timeout"):
        return "timeout (per-test limit)", where
    if etype == "LancefmtLacks":  # a probe placeholder was used
        return f"missing {msg}", where
    if etype in ("ModuleNotFoundError", "ImportError"):
        return _import_category(f"{etype}: {msg}"), where
    if etype == "AttributeError":
        return _attribute_category(msg), where
    if etype == "TypeError":
        m = re.search(r"([\w.]+)\(\) got an unexpected keyword argument '(\w+)'", msg)
        if m:
            return f"unsupported argument {_method(m.group(1))}({m.group(2)}=)", where
        m = re.search(r"([\w.]+)\(\) (takes|missing) .*", msg)
        if m:
            return f"different signature: {_normalise(msg)}", where
    bases = set(exc.get("bases", []))
    if {"NotSupportedError", "UnsupportedFeatureError"} & (bases | {etype}):
        return f"not supported by lancefmt: {_normalise(msg)}", where
    if etype == "AssertionError" and "Regex pattern did not match" in msg:
        return "a different error message", f"{where} {_normalise(msg, 300, False)}"
    if etype == "AssertionError":
        return "wrong answer (a test assertion fails)", f"{where} {_normalise(msg, 300, False)}"
    if etype == "Failed" and "DID NOT RAISE" in msg:
        return "no error raised where pylance raises one", f"{where} {_normalise(msg)}"
    if etype == "Failed" and "DID NOT WARN" in msg:
        return "no warning where pylance warns", f"{where} {_normalise(msg)}"
    return f"{etype}: {_normalise(msg)}", where


def _import_category(text: str) -> str:
    m = re.search(r"No module named '([\w.]+)'", text)
    if m:
        return f"missing module {_pylance_names(m.group(1))}"
    m = re.search(r"cannot import name '(\w+)' from '([\w.]+)'", text)
    if m:
        return f"missing name {_pylance_names(m.group(2))}.{m.group(1)}"
    return f"import error: {_normalise(text)}"


def _method(qualname: str) -> str:
    cls, _, name = qualname.rpartition(".")
    return f"{_CLASS_NAMES.get(cls, cls)}.{name}" if cls else name


def _attribute_category(msg: str) -> str:
    m = re.match(r"module '([\w.]+)' has no attribute '(\w+)'", msg)
    if m:
        return f"missing {_pylance_names(m.group(1))}.{m.group(2)}"
    m = re.match(r"type object '(\w+)' has no attribute '(\w+)'", msg)
    if m:
        return f"missing {_CLASS_NAMES.get(m.group(1), m.group(1))}.{m.group(2)}"
    m = re.match(r"'NoneType' object has no attribute '(\w+)'", msg)
    if m:
        return f"None where pylance returns an object (with .{m.group(1)})"
    m = re.match(r"'(\w+)' object has no attribute '(\w+)'", msg)
    if m:
        return f"missing method {_CLASS_NAMES.get(m.group(1), m.group(1))}.{m.group(2)}"
    return f"AttributeError: {_normalise(msg)}"
