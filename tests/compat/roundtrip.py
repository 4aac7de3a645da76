"""``make compat``'s last step: lancefmt changes each fixture (delete, append, compaction) and every old release reads the result back in its own venv
(check_old_read.py), compared with what lancefmt reads.

    python tests/compat/roundtrip.py --venvs .compat-venvs --out build/compat [RELEASE ...]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lancefmt  # noqa: E402
from mutations import append  # noqa: E402


def change(uri: str) -> list[str]:
    """lancefmt's changes to the dataset at ``uri``; returns what it did."""
    done = []
    ds = lancefmt.dataset(uri)
    ds.delete("id % 5 = 0")
    done.append("delete")
    append(uri, lancefmt.dataset(uri).to_table().slice(0, 9))
    done.append("append")
    lancefmt.dataset(uri).optimize.compact_files()
    done.append("compact")
    return done


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--venvs", default=".compat-venvs")
    ap.add_argument("--out", default="build/compat")
    ap.add_argument("releases", nargs="*")
    args = ap.parse_args()
    releases = args.releases or sorted(
        (p.name for p in (HERE / "fixtures").iterdir() if (p / "info.json").exists()),
        key=lambda r: tuple(int(x) for x in r.split("-")[0].split(".")))
    failed = False
    for r in releases:
        out = Path(args.out) / r
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        uri = str(out / "dataset")
        shutil.copytree(HERE / "fixtures" / r / "dataset", uri)
        done = change(uri)
        ours = lancefmt.dataset(uri).to_table()
        with pa.ipc.new_file(out / "lancefmt.arrow", ours.schema) as w:
            w.write_table(ours.unify_dictionaries().combine_chunks())
        python = Path(args.venvs) / f"pylance-{r.split('-')[0]}" / "bin" / "python"
        proc = subprocess.run([str(python), str(HERE / "check_old_read.py"), uri,
                               str(out / "lancefmt.arrow")], capture_output=True, text=True,
                              env={"LANCE_LOG": "error", "PATH": "/usr/bin:/bin"})
        line = (proc.stdout.strip().splitlines() or [proc.stderr.strip()[-300:]])[-1]
        print(json.dumps({"release": r, "lancefmt did": done, "old release read": line}))
        failed |= proc.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
