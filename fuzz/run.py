"""Fuzz one target with atheris: ``python -m fuzz.run TARGET SEEDS_DIR [libFuzzer flags]``.

The target's corpus is ``SEEDS_DIR/TARGET`` (plus ``fuzz/regressions/TARGET``); new inputs go
to a scratch corpus so the seeds stay as generated. Address space is capped (``FUZZ_MEM_MB``,
default 1024, :mod:`fuzz.memcap`) so an allocation past the cap is a MemoryError, which is a
finding like any non-LanceError, also when a LanceError was raised after it; libFuzzer's
``-timeout`` catches hangs. Findings are written to
``-artifact_prefix`` (default ``fuzz/findings/TARGET-``): minimize them with
``-minimize_crash=1`` and keep them in ``fuzz/regressions/TARGET/``.
"""
from __future__ import annotations

import os
import sys
import tempfile

import atheris

from fuzz.memcap import cap_address_space

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        sys.exit("usage: python -m fuzz.run TARGET SEEDS_DIR [libFuzzer flags]")
    name, seeds = argv[1], argv[2]
    flags = argv[3:]
    cap_address_space(1024, "fuzz.run")
    with atheris.instrument_imports(include=["lancefmt"]):
        from fuzz.targets import make_target
    target = make_target(name, seeds)
    corpora = [os.path.join(seeds, name)]
    regressions = os.path.join(HERE, "regressions", name)
    if os.path.isdir(regressions):
        corpora.append(regressions)
    scratch = tempfile.mkdtemp(prefix=f"lancefmt-fuzz-{name}-")
    findings = os.path.join(HERE, "findings")
    os.makedirs(findings, exist_ok=True)
    if not any(f.startswith("-artifact_prefix=") for f in flags):
        flags.append(f"-artifact_prefix={findings}/{name}-")
    if not any(f.startswith("-timeout=") for f in flags):
        flags.append("-timeout=20")
    if not any(f.startswith("-rss_limit_mb=") for f in flags):
        flags.append("-rss_limit_mb=0")  # the address-space cap above does it, per allocation
    atheris.Setup([argv[0], *flags, scratch, *corpora], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
