"""Which tests of a file are about full-text search (test_scalar_index.py is split in two).

A test is FTS when its parameters name an FTS thing, or, when they name another index type,
not FTS; without such parameters, when its source (decorators and fixtures included) mentions
INVERTED, FTS, ``full_text_query``, tokenizers or the FTS query classes.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

FTS_WORDS = re.compile(
    r"INVERTED|\bFTS\b|fts|full_text|FullText|tokeniz|MatchQuery|PhraseQuery|BooleanQuery|"
    r"BoostQuery|MultiMatchQuery|with_position|lindera|jieba|ascii_folding|remove_stop_words",
    re.I)
OTHER_INDEX = re.compile(r"\b(BTREE|BITMAP|LABEL_LIST|NGRAM|ZONEMAP|BLOOMFILTER|JSON|IVF_\w+)\b",
                         re.I)


def _sources(path: Path) -> dict[str, str]:
    """``name`` or ``Class::name`` -> the source of that test function, decorators included."""
    text = path.read_text()
    lines = text.splitlines()
    out: dict[str, str] = {}

    def visit(body, prefix=""):
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}::")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                out[prefix + node.name] = "\n".join(lines[first - 1:node.end_lineno])

    visit(ast.parse(text).body)
    return out


def classify(path: Path, nodeids: list[str]) -> dict[str, bool]:
    """nodeid (``file.py::test[params]``) -> whether the test is about FTS."""
    sources = _sources(path)
    result = {}
    for nodeid in nodeids:
        name = nodeid.split("::", 1)[1]
        base, _, params = name.partition("[")
        if FTS_WORDS.search(params):
            result[nodeid] = True
        elif OTHER_INDEX.search(params):
            result[nodeid] = False
        else:
            result[nodeid] = bool(FTS_WORDS.search(sources.get(base, base)))
    return result
