"""The code blocks of README.md and docs/*.md, and how the tests run them.

The convention, for whoever writes a page:

* Every fenced block is ```python or ```bash, its fence at the start of a line.
* A page's ```python blocks run in order, in one namespace, in a fresh scratch directory (the
  working directory, and where ``tempfile.mkdtemp()`` makes its directories). A block may use
  what an earlier block of the same page defined; a reader pastes them in the same order.
  Every block checks what it shows with at least one ``assert``.
* A block that needs more than Python says so in an HTML comment on the last non-blank line
  before its fence (readers do not see it):

  - ``<!-- needs: spark -->``: the block runs in ``tests/spark`` on the shared local
    SparkSession (``lancefmt.spark.local_session()`` returns it). The Spark blocks of a page
    are their own sequence: they run in order in their own namespace, and do not see what the
    page's other blocks defined.
  - ``<!-- needs: s3 -->``: the page runs with a local moto S3 server reached through the
    standard AWS variables (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``), which s3fs and boto3 read, so the block
    reads as it would against AWS. Every bucket a quoted ``s3://bucket/...`` of the page names
    is created empty before the page runs and removed afterwards.

  Both: ``<!-- needs: spark, s3 -->``.
* ```bash blocks are not run; every command in them must be one the repository has
  (:func:`bash_problems`): a make target of the Makefile, an extra of pyproject.toml, a
  ``lancefmt`` sub-command the CLI parses, a file or benchmark module that exists.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shlex
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
KNOWN_NEEDS = {"spark", "s3"}

_FENCE = re.compile(r"^```(.*)$")
_NEEDS = re.compile(r"^<!--\s*needs:\s*([a-z0-9_, ]+?)\s*-->$")
_SPARK_USE = re.compile(r"\blancefmt\.spark\b|\bpyspark\b")
_BUCKET = re.compile(r"""["']s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/|["'])""")


@dataclasses.dataclass(frozen=True)
class Block:
    page: Path
    lang: str
    code: str
    line: int            # line number of the block's first code line in the page
    needs: frozenset

    @property
    def where(self) -> str:
        return f"{page_id(self.page)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page under docs/ (sorted)."""
    return [README] + sorted(DOCS.glob("*.md"))


def page_id(page: Path) -> str:
    """The page's path relative to the repository (as given if it lies elsewhere)."""
    try:
        return str(page.relative_to(ROOT))
    except ValueError:
        return str(page)


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``; raises ValueError on an unclosed fence."""
    lines = page.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1).strip(), i + 1
        end = start
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{page_id(page)}:{i + 1}: the block opened here is never closed")
        prev = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        needs = _NEEDS.match(prev)
        out.append(Block(page, lang, "\n".join(lines[start:end]) + "\n", start + 1,
                         frozenset(n.strip() for n in needs.group(1).split(",") if n.strip())
                         if needs else frozenset()))
        i = end + 1
    return out


def python_blocks(page: Path, spark: bool) -> list[Block]:
    return [b for b in blocks(page) if b.lang == "python" and ("spark" in b.needs) == spark]


def convention_problems(page: Path) -> list[str]:
    """What in ``page`` breaks the convention of this module's docstring."""
    problems = []
    text = page.read_text()
    for n, line in enumerate(text.splitlines(), 1):
        if re.match(r"^\s+```", line):
            problems.append(f"{page_id(page)}:{n}: indented fence (fences start their line)")
    for b in blocks(page):
        if b.lang not in ("python", "bash"):
            problems.append(f"{b.where}: a ```{b.lang} block (only python and bash blocks)")
        if b.needs - KNOWN_NEEDS:
            problems.append(f"{b.where}: unknown needs {sorted(b.needs - KNOWN_NEEDS)}")
        if b.lang != "python":
            continue
        if not re.search(r"^\s*assert\b", b.code, flags=re.M):
            problems.append(f"{b.where}: the block checks nothing (no assert)")
        if _SPARK_USE.search(b.code) and "spark" not in b.needs:
            problems.append(f"{b.where}: uses Spark without <!-- needs: spark -->")
    return problems


def buckets(page_blocks: list[Block]) -> list[str]:
    """The S3 buckets the blocks name in quoted ``s3://`` URIs."""
    return sorted({m.group(1) for b in page_blocks for m in _BUCKET.finditer(b.code)})


def run(page_blocks: list[Block], request, monkeypatch, tmp_path) -> dict:
    """Run the blocks in order in one namespace, in ``tmp_path``; returns the namespace.

    ``request`` gives the ``s3_server`` fixture when a block needs S3. Tracebacks name the page
    and its line numbers."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made = []
    if any("s3" in b.needs for b in page_blocks):
        made = _s3_environment(request.getfixturevalue("s3_server"), page_blocks, monkeypatch)
    namespace = {"__name__": "__doc_page__"}
    try:
        for b in page_blocks:
            code = "\n" * (b.line - 1) + b.code
            exec(compile(code, str(b.page), "exec"), namespace)
    finally:
        for remove in reversed(made):
            remove()
    return namespace


def _s3_environment(options: dict, page_blocks: list[Block], monkeypatch) -> list:
    import boto3

    monkeypatch.setenv("AWS_ENDPOINT_URL", options["endpoint_url"])
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", options["key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", options["secret"])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    s3 = boto3.resource("s3", endpoint_url=options["endpoint_url"], region_name="us-east-1",
                        aws_access_key_id=options["key"], aws_secret_access_key=options["secret"])
    made = []
    for name in buckets(page_blocks):
        bucket = s3.Bucket(name)
        bucket.create()

        def remove(bucket=bucket):
            bucket.objects.all().delete()
            bucket.delete()

        made.append(remove)
    return made


# -- bash blocks -----------------------------------------------------------------------------

def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return {m.group(1) for m in re.finditer(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, flags=re.M)
            if not m.group(1).startswith(".")} | {
        t for m in re.finditer(r"^\.PHONY:(.*)$", text, flags=re.M) for t in m.group(1).split()}


def make_variables() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"\$\(([A-Z_][A-Z0-9_]*)\)", text))


def pip_extras() -> set[str]:
    """The extras of pyproject.toml's [project.optional-dependencies] (no tomllib on 3.10)."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([A-Za-z0-9_-]+)\s*=", section, flags=re.M))


def commands(block: Block) -> list[tuple[int, list[str]]]:
    """``(line, words)`` for every command of a bash block: continuation lines joined, comments
    and blank lines dropped, ``a && b`` split into two commands (``cd`` carries over)."""
    out, pending, first = [], "", None
    for n, raw in enumerate(block.code.splitlines(), block.line):
        line = raw.rstrip()
        if first is None:
            first = n
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text = (pending + line).strip()
        pending, start, first = "", first, None
        try:
            words = shlex.split(text, comments=True)
        except ValueError as e:
            out.append((start, ["<unparsable>", str(e), text]))
            continue
        part = []
        for w in words + ["&&"]:
            if w == "&&":
                if part:
                    out.append((start, part))
                part = []
            else:
                part.append(w)
    return out


def _is_python(word: str) -> bool:
    return re.fullmatch(r"(.*/)?python3?(\.\d+)?", word) is not None


def _command_problem(tokens: list[str], cwd: Path) -> tuple[str | None, Path]:
    """Why ``tokens`` is not a real command (None if it is), and the directory after it."""
    while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", tokens[0]):
        tokens = tokens[1:]  # environment assignments
    if not tokens:
        return "an empty command", cwd
    word, args = tokens[0], tokens[1:]
    if word == "cd":
        target = (cwd / args[0]).resolve() if args else ROOT
        return (None if target.is_dir() else f"no directory {args[0]!r}"), target
    if word == "make":
        targets = [a for a in args if "=" not in a and not a.startswith("-")]
        variables = [a.split("=", 1)[0] for a in args if "=" in a]
        unknown = [t for t in targets if t not in make_targets()]
        unknown += [f"variable {v}" for v in variables if v not in make_variables()]
        return (f"the Makefile has no {', '.join(unknown)}" if unknown else None), cwd
    if word in ("pip", "pip3") or (_is_python(word) and args[:2] == ["-m", "pip"]):
        args = args[2:] if _is_python(word) else args
        if args[:1] != ["install"]:
            return f"pip {' '.join(args[:1])}: only pip install is known", cwd
        problems = []
        for spec in args[1:]:
            if spec.startswith("-"):
                continue
            m = re.fullmatch(r"\.(?:\[([a-z0-9_,-]+)\])?", spec)
            if not m:
                problems.append(f"installs {spec!r}, not this project")
            elif m.group(1):
                problems += [f"no extra {e!r}" for e in m.group(1).split(",")
                             if e not in pip_extras()]
        return ("; ".join(problems) or None), cwd
    if word == "lancefmt" or (_is_python(word) and args[:2] == ["-m", "lancefmt"]):
        from lancefmt import cli

        rest = args if word == "lancefmt" else args[2:]
        try:
            cli.build_parser().parse_args(rest)
        except SystemExit:
            return f"lancefmt does not take {' '.join(rest)!r}", cwd
        return None, cwd
    if _is_python(word):
        if args[:1] == ["-m"] and len(args) > 1:
            module = cwd.joinpath(*args[1].split("."))
            ok = module.with_suffix(".py").is_file() or (module / "__main__.py").is_file()
            return (None if ok else f"no module {args[1]!r} under {cwd.relative_to(ROOT)}"), cwd
        if args and args[0].endswith(".py"):
            return (None if (cwd / args[0]).is_file() else f"no script {args[0]!r}"), cwd
        return f"python {' '.join(args)}: not a module or script run", cwd
    return f"unknown command {word!r} (teach tests/docs/doc_blocks.py to check it)", cwd


def bash_problems(block: Block) -> list[str]:
    """Commands of a bash block that the repository does not have."""
    problems, cwd = [], ROOT  # a block starts in the repository's root; cd carries over
    for line, words in commands(block):
        problem, cwd = _command_problem(words, cwd)
        if problem:
            problems.append(f"{page_id(block.page)}:{line}: {shlex.join(words)}: {problem}")
    return problems
