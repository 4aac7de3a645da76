"""The package's structure holds: no private name crosses a module border.

``lint-imports`` (contracts in pyproject.toml, run by ``make test``) checks the layers, that
there are no import cycles, and that private ``.py`` modules stay in their package. This test
adds what it cannot see: names with a leading underscore imported from another module or read
off an imported module (``mod._helper``), and private Cython modules (``_kernels.pyx``, which
import-linter does not know) imported from outside the package that owns them. A name another
module needs is public in its own module.
"""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lancefmt"


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of ours (.py, package, or Cython)."""
    base = ROOT.joinpath(*dotted.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists() or \
        base.with_suffix(".pyx").exists()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private_module_outside_owner(importer: str, target: str) -> bool:
    """``target`` has a private component whose owning package does not contain ``importer``
    (the generated ``_proto`` package belongs to all of lancefmt)."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if _private(part) and part != "_proto":
            owner = ".".join(parts[:i])
            if not (importer == owner or importer.startswith(owner + ".")):
                return True
    return False


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "_proto" in path.parts:
            continue
        importer = _module_name(path)
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))
        modules = {}  # local name -> our module it is bound to
        where = f"{path.relative_to(ROOT)}"
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(importer, is_package, node)
                if not target.startswith("lancefmt"):
                    continue
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    if _is_module(full):
                        modules[alias.asname or alias.name] = full
                        if _private_module_outside_owner(importer, full):
                            found.append(f"{where}:{node.lineno} imports private module {full}")
                    elif _private(alias.name):
                        found.append(f"{where}:{node.lineno} imports private name "
                                     f"{alias.name} from {target}")
                if _private_module_outside_owner(importer, target):
                    found.append(f"{where}:{node.lineno} imports from private module {target}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("lancefmt"):
                        if alias.asname:
                            modules[alias.asname] = alias.name
                        if _private_module_outside_owner(importer, alias.name):
                            found.append(f"{where}:{node.lineno} imports private module "
                                         f"{alias.name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id in modules and _private(node.attr):
                found.append(f"{where}:{node.lineno} reads private {node.attr} of "
                             f"{modules[node.value.id]}")
    return found


def test_no_private_name_crosses_a_module_border():
    assert violations() == []


def test_the_check_sees_what_it_looks_for(tmp_path):
    """The checker itself: a private name import, a private module from outside its owner, and
    a private attribute of an imported module are each found."""
    tree = ast.parse("from lancefmt.table.commit import _backoff\n")
    node = tree.body[0]
    assert _private(node.names[0].name) and not _is_module("lancefmt.table.commit._backoff")
    assert _private_module_outside_owner("lancefmt.dataset.read.scan", "lancefmt.table._rowids")
    assert not _private_module_outside_owner("lancefmt.table.rowids.sequence",
                                             "lancefmt.table._rowids")
    assert not _private_module_outside_owner("lancefmt.dataset.read.scan", "lancefmt._proto")
    assert _is_module("lancefmt.table._rowids")  # a Cython module counts as a module
