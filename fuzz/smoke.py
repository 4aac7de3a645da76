"""Every target fuzzed in one process: ``python -m fuzz.smoke SEEDS_DIR MARKS_DIR [libFuzzer flags]``.

The suite's smoke pass. Instrumenting lancefmt's imports costs a process about ten seconds, so
a pass per target (:mod:`fuzz.run`) spent most of the suite's fuzzing time starting up. Here
an input's first byte picks the target (its index in :data:`fuzz.targets.TARGETS`) and the rest
is that target's input; the corpus is every target's seeds behind their byte, so libFuzzer's
first pass runs each seed through its own target and its mutations then reach every target,
switching between them when the first byte mutates. Each target writes ``MARKS_DIR/NAME`` the
first time it runs, so the caller can check that every target ran. The 1 GiB cap and the rules
of a finding are :mod:`fuzz.run`'s.
"""
from __future__ import annotations

import os
import sys
import tempfile

import atheris

from fuzz.memcap import cap_address_space

HERE = os.path.dirname(os.path.abspath(__file__))


def _corpus(seeds: str, names: list) -> str:
    """A scratch corpus: every seed (and kept finding) behind its target's byte."""
    out = tempfile.mkdtemp(prefix="lancefmt-fuzz-smoke-")
    for i, name in enumerate(names):
        for d in (os.path.join(seeds, name), os.path.join(HERE, "regressions", name)):
            if not os.path.isdir(d):
                continue
            for f in sorted(os.listdir(d)):
                with open(os.path.join(d, f), "rb") as src, \
                        open(os.path.join(out, f"{i:02d}-{name}-{f}"), "wb") as dst:
                    dst.write(bytes([i]) + src.read())
    return out


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        sys.exit("usage: python -m fuzz.smoke SEEDS_DIR MARKS_DIR [libFuzzer flags]")
    seeds, marks = argv[1], argv[2]
    flags = argv[3:]
    cap_address_space(1024, "fuzz.smoke")
    with atheris.instrument_imports(include=["lancefmt"]):
        from fuzz.targets import TARGETS, make_target
    names = sorted(TARGETS)
    targets = [make_target(n, seeds) for n in names]
    seen = set()
    os.makedirs(marks, exist_ok=True)

    def one(data: bytes) -> None:
        if not data or data[0] >= len(names):
            return
        i = data[0]
        if i not in seen:
            seen.add(i)
            open(os.path.join(marks, names[i]), "w").close()
        targets[i](data[1:])

    if not any(f.startswith("-timeout=") for f in flags):
        flags.append("-timeout=20")
    if not any(f.startswith("-rss_limit_mb=") for f in flags):
        flags.append("-rss_limit_mb=0")  # the address-space cap above does it, per allocation
    corpus = _corpus(seeds, names)
    atheris.Setup([argv[0], *flags, tempfile.mkdtemp(prefix="lancefmt-fuzz-new-"), corpus], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
