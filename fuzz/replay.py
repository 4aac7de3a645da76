"""Replay kept inputs under an address-space cap, without atheris:
``python -m fuzz.replay SEEDS_DIR [TARGET ...]``.

Every file of ``SEEDS_DIR/TARGET`` and ``fuzz/regressions/TARGET`` goes through its target
(all targets by default) in this one process, capped at ``FUZZ_MEM_MB`` (default 1024) MiB of
address space (:mod:`fuzz.memcap`), so an input that asks for more than the bytes it holds can back hits the cap
(a finding, even when a LanceError follows). Findings are printed with their traceback; the
last line is a JSON summary (inputs, findings, peak memory). Exit status 1 on any finding.
"""
from __future__ import annotations

import json
import os
import sys
import traceback

from fuzz.memcap import cap_address_space

HERE = os.path.dirname(os.path.abspath(__file__))


def _inputs(seeds: str, name: str) -> list[str]:
    out = []
    for d in (os.path.join(seeds, name), os.path.join(HERE, "regressions", name)):
        if os.path.isdir(d):
            out += [os.path.join(d, f) for f in sorted(os.listdir(d))]
    return out


def _status(key: str) -> int:
    """A /proc/self/status figure in KiB (0 where there is none)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.exit("usage: python -m fuzz.replay SEEDS_DIR [TARGET ...]")
    mem = cap_address_space(1024, "fuzz.replay")
    from fuzz.targets import TARGETS, make_target

    seeds, names = argv[1], argv[2:] or sorted(TARGETS)
    counts, findings = {}, []
    for name in names:
        target = make_target(name, seeds)
        files = _inputs(seeds, name)
        counts[name] = len(files)
        for path in files:
            with open(path, "rb") as f:
                data = f.read()
            try:
                target(data)
            except Exception:  # noqa: BLE001 - every escape is a finding, reported below
                findings.append(os.path.relpath(path, seeds) if path.startswith(seeds) else path)
                print(f"FINDING {name} {path}\n{traceback.format_exc()}", flush=True)
    print(json.dumps({"inputs": counts, "findings": findings, "cap_mb": mem >> 20,
                      "peak_vm_mb": _status("VmPeak") >> 10,
                      "peak_rss_mb": _status("VmHWM") >> 10}), flush=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
