"""Run by an old pylance release (in its venv): read a dataset lancefmt changed and compare it
with what lancefmt read (an Arrow IPC file). Prints one line, ``same``, ``DIFF ...`` or
``cannot read: ...``; exits 1 only on a difference (an old release that cannot open a newer
dataset is a limit of that release, reported, not a failure)."""
import sys

import pyarrow as pa

import lance


def values(t):
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in t.columns]
    return pa.table(cols, names=t.column_names).combine_chunks()


def main(uri: str, expected_path: str) -> int:
    with pa.ipc.open_file(expected_path) as f:
        want = values(f.read_all())
    try:
        got = values(lance.dataset(uri).to_table())
    except Exception as e:  # noqa: BLE001 -- reported: the release's own limit
        print(f"cannot read: {type(e).__name__}: {str(e)[:300]}")
        return 0
    bad = [n for n in want.column_names if n not in got.column_names or not want[n].equals(got[n])]
    if bad or got.num_rows != want.num_rows:
        print(f"DIFF rows {got.num_rows} vs {want.num_rows}, columns {bad}")
        return 1
    print(f"same ({got.num_rows} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
