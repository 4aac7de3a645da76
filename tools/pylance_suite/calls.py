"""The index type a failing ``create_scalar_index`` / ``create_index`` call asked for.

"missing method create_scalar_index" is one line of a to-do list; which index types the
failing tests wanted (BTREE, INVERTED, IVF_PQ...) is what divides the work. The call is
found in the test's source at the line where the test stopped.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

INDEX_METHODS = ("create_scalar_index", "create_index", "create_index_uncommitted")
_KNOWN = re.compile(r"\b(BTREE|BITMAP|LABEL_LIST|INVERTED|FTS|NGRAM|ZONEMAP|BLOOMFILTER|JSON|"
                    r"IVF_PQ|IVF_FLAT|IVF_SQ|IVF_RQ|IVF_HNSW_PQ|IVF_HNSW_SQ|IVF_HNSW_FLAT|"
                    r"IVF_HNSW|HNSW)\b", re.I)


@functools.lru_cache(maxsize=32)
def _calls(path: Path) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr in INDEX_METHODS]


def index_type(path: Path, line: int, method: str, params: str = "") -> str | None:
    """The index type of the ``method`` call spanning ``line`` of ``path`` (``?`` if it is
    not a literal and the test's parameters name none); None if there is no such call."""
    calls = [c for c in _calls(path)
             if c.func.attr == method and c.lineno <= line <= (c.end_lineno or c.lineno)]
    if not calls:
        return None
    call = calls[-1]
    value = next((k.value for k in call.keywords if k.arg == "index_type"), None)
    if value is None and len(call.args) >= 2:
        value = call.args[1]
    if value is None:
        return "?"
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value.upper()
    m = _KNOWN.search(params)
    if m:
        return m.group(1).upper()
    text = ast.unparse(value)
    m = _KNOWN.search(text)
    return m.group(1).upper() if m else f"{text[:40]} (not a literal)"
