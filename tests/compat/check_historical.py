"""Read the historical datasets Lance keeps in its own repository (``test_data/`` and
``python/python/tests/historical_datasets/`` of a lancedb/lance checkout) with lancefmt and
with pylance 14, every version, and print where they differ. They are not ours to commit, so
this runs against a checkout you point it at::

    python tests/compat/check_historical.py /path/to/lance
"""
from __future__ import annotations

import glob
import os
import sys

import pyarrow as pa

import lance
import lancefmt


def _values(t: pa.Table) -> pa.Table:
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in t.columns]
    return pa.table(cols, names=t.column_names).combine_chunks()


def check(root: str) -> tuple[str, list[str]]:
    out = []
    for v in [x["version"] for x in lance.dataset(root).versions()]:
        try:
            want = _values(lance.dataset(root, version=v).to_table())
        except Exception as e:  # noqa: BLE001 -- pylance's own verdict on a broken dataset
            try:
                lancefmt.dataset(root, version=v).to_table()
                out.append(f"v{v}: pylance fails ({type(e).__name__}), lancefmt reads")
            except lancefmt.LanceError as e2:
                out.append(f"v{v}: both refuse ({type(e2).__name__})")
            continue
        try:
            got = _values(lancefmt.dataset(root, version=v).to_table())
            ok = got.equals(want) and lancefmt.dataset(root, version=v).count_rows() == \
                lance.dataset(root, version=v).count_rows()
            out.append(f"v{v}: {'same' if ok else 'DIFFERENT'} ({want.num_rows} rows)")
        except Exception as e:  # noqa: BLE001 -- reported
            out.append(f"v{v}: lancefmt fails: {type(e).__name__}: {str(e)[:200]}")
    return root, out


def main(lance_src: str) -> int:
    roots = sorted({os.path.dirname(p) for p in glob.glob(
        os.path.join(lance_src, "**", "_versions"), recursive=True)})
    bad = False
    for root in roots:
        try:
            name, lines = check(root)
        except Exception as e:  # noqa: BLE001 -- pylance cannot list its versions
            print(f"{root}: pylance cannot open it ({type(e).__name__})")
            continue
        print(os.path.relpath(name, lance_src), "; ".join(lines))
        bad |= any("DIFFERENT" in x or "lancefmt fails" in x for x in lines)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
