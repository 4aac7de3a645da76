"""Which pylance methods lancefmt lacks, and how many failing tests call each.

A failing test names only the first thing it missed; the methods it would call next are
in its source. ``methods(impl)`` lists, in a subprocess running that implementation, the
public attributes of the objects a small dataset hands out (the dataset, a scanner, a
fragment, ``ds.optimize``, ``ds.tags``, a merge-insert builder); ``gaps`` is what pylance's
objects have and lancefmt's do not; ``uses`` is which of those a test's source calls, its
fixtures and the helper functions of its file included. The index query arguments a test
passes (``full_text_query=``, ``nearest=``...) are counted the same way: lancefmt takes
them and refuses them when it cannot answer, so no signature shows that gap.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from .runner import PLUGINS, Impl

QUERY_KEYWORDS = ("full_text_query", "nearest", "prefilter", "use_scalar_index", "fast_search",
                  "use_index", "index_name")

_PROBE = r"""
import json, sys, tempfile
import pyarrow as pa
import lance
d = tempfile.mkdtemp()
ds = lance.write_dataset(pa.table({"a": [1, 2]}), d + "/t.lance")
objects = {"LanceDataset": lambda: ds, "LanceScanner": lambda: ds.scanner(),
           "LanceFragment": lambda: ds.get_fragments()[0],
           "DatasetOptimizer": lambda: ds.optimize, "Tags": lambda: ds.tags,
           "DatasetStats": lambda: ds.stats,
           "MergeInsertBuilder": lambda: ds.merge_insert("a")}
out = {}
for name, make in objects.items():
    try:
        out[name] = sorted(a for a in dir(make()) if not a.startswith("_"))
    except Exception as e:
        out[name] = []
json.dump(out, sys.stdout)
"""


def methods(impl: Impl) -> dict[str, list[str]]:
    """Class (pylance's name) -> public attributes, under ``impl``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PYTHONPATH"] = os.pathsep.join([*impl.paths, str(PLUGINS)])
    env.update(impl.env)
    env.pop("PYLANCE_SUITE_PROBE", None)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, check=True,
                         capture_output=True, text=True, cwd="/").stdout
    return json.loads(out)


def gaps(pylance: dict, lancefmt: dict) -> dict[str, str]:
    """method -> ``Class.method`` for pylance methods that no lancefmt object has."""
    everywhere = set().union(*map(set, lancefmt.values())) if lancefmt else set()
    out = {}
    for cls, names in pylance.items():
        for name in names:
            if name not in set(lancefmt.get(cls, [])) and name not in everywhere:
                out.setdefault(name, f"{cls}.{name}")
    return out


class Sources:
    """A test file's functions, for the attribute names a test (with its fixtures and the
    helpers it calls) uses."""

    def __init__(self, path: Path):
        tree = ast.parse(path.read_text())
        self.functions: dict[str, ast.AST] = {}
        self.classes: dict[str, dict[str, ast.AST]] = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = {n.name: n for n in node.body if isinstance(
                    n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def attributes(self, nodeid: str) -> set[str]:
        """Attribute names (``x.name``) the test's code reaches."""
        return {n.attr for n in self._nodes(nodeid) if isinstance(n, ast.Attribute)}

    def keywords(self, nodeid: str) -> set[str]:
        """Keyword argument names the test's code passes to calls."""
        return {k.arg for n in self._nodes(nodeid) if isinstance(n, ast.Call)
                for k in n.keywords if k.arg}

    def _nodes(self, nodeid: str) -> list[ast.AST]:
        """Every AST node of the test, its fixtures and the helpers of the file it uses."""
        parts = nodeid.split("::")[1:]
        name = parts[-1].split("[")[0]
        start = (self.classes.get(parts[0], {}).get(name) if len(parts) > 1
                 else self.functions.get(name))
        if start is None:
            return []
        seen, todo, nodes = set(), [start], []
        while todo:
            fn = todo.pop()
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            args = [a.arg for a in fn.args.args] if hasattr(fn, "args") else []
            todo += [self.functions[a] for a in args if a in self.functions]  # fixtures
            for node in ast.walk(fn):
                nodes.append(node)
                if isinstance(node, ast.Name) and node.id in self.functions:
                    todo.append(self.functions[node.id])  # helpers and fixtures by name
        return nodes
