"""Write a compatibility fixture with the pylance release installed in this interpreter.

Run inside a venv of an old pylance (``make compat`` builds them, tests/compat/make_venvs.sh)::

    python tests/compat/generate.py OUT_DIR [WRITE_OPTION=JSON ...]

(e.g. ``use_legacy_format=false`` for pylance 0.13's early 2.0 files; the options go to every
``write_dataset`` call and into info.json.)

It writes ``OUT_DIR/dataset`` -- a small dataset with every type the release stores, nulls,
several versions (create, append, delete, add_columns, compaction, delete, overwrite, append)
-- and, for every version, the table *this release* read back at that version as Arrow IPC
(``OUT_DIR/expected/v<N>.arrow``), plus ``OUT_DIR/info.json`` (release, pyarrow, storage
version, the steps taken, columns the release could not write). Only pylance and pyarrow of
the release are used: no lancefmt here.
"""
from __future__ import annotations

import decimal
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import lance

ROWS = 60
# pylance's Rust panics (pyo3's PanicException) are BaseExceptions, not Exceptions
_FAILURES = (Exception, BaseException)


def _masked(arr, rng, p=0.2):
    mask = rng.random(len(arr)) < p
    return pc.if_else(pa.array(~mask), arr, pa.scalar(None, arr.type))


def _strings(rng, n, dtype=pa.string()):
    words = ["", "a", "bb", "lance", "0123456789", "é€", "x" * 30]
    vals = [words[i] for i in rng.integers(0, len(words), n)]
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        vals = [v.encode() for v in vals]
    return _masked(pa.array(vals, dtype), rng)


def _list(rng, n, make_values, large=False):
    lengths = rng.integers(0, 4, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64 if large else np.int32)
    cls = pa.LargeListArray if large else pa.ListArray
    mask = pa.array(rng.random(n) < 0.15)
    return cls.from_arrays(pa.array(offsets), make_values(int(lengths.sum())), mask=mask)


def make_table(start: int, n: int = ROWS, seed: int = 0) -> pa.Table:
    """Every type, with nulls; ``id`` runs from ``start``."""
    rng = np.random.default_rng(seed)
    cols = {"id": pa.array(np.arange(start, start + n, dtype=np.int64))}
    for name, dt in [("i8", np.int8), ("i16", np.int16), ("i32", np.int32), ("u8", np.uint8),
                     ("u16", np.uint16), ("u32", np.uint32), ("u64", np.uint64)]:
        info = np.iinfo(dt)
        cols[name] = _masked(pa.array(rng.integers(info.min, info.max, n, dtype=dt)), rng)
    f16 = rng.standard_normal(n).astype(np.float16)
    cols["f16"] = pa.array(f16, mask=rng.random(n) < 0.2)
    cols["f32"] = _masked(pa.array(rng.standard_normal(n).astype(np.float32)), rng)
    cols["f64"] = _masked(pa.array(rng.standard_normal(n)), rng)
    cols["bool"] = _masked(pa.array(rng.random(n) < 0.5), rng)
    cols["date32"] = _masked(pa.array(rng.integers(0, 20000, n, dtype=np.int32)).cast(pa.date32()), rng)
    cols["time64"] = _masked(pa.array(rng.integers(0, 86400 * 10**6, n)).cast(pa.time64("us")), rng)
    cols["ts_us_utc"] = _masked(pa.array(rng.integers(0, 2**50, n)).cast(pa.timestamp("us", "UTC")), rng)
    cols["ts_ns"] = _masked(pa.array(rng.integers(0, 2**60, n)).cast(pa.timestamp("ns")), rng)
    cols["duration"] = _masked(pa.array(rng.integers(0, 2**40, n)).cast(pa.duration("ms")), rng)
    cols["dec128"] = _masked(pa.array([decimal.Decimal(int(v)).scaleb(-3)
                                       for v in rng.integers(-10**9, 10**9, n)],
                                      pa.decimal128(12, 3)), rng)
    cols["string"] = _strings(rng, n)
    cols["large_string"] = _strings(rng, n, pa.large_string())
    cols["binary"] = _strings(rng, n, pa.binary())
    cols["large_binary"] = _strings(rng, n, pa.large_binary())
    cols["fsb"] = _masked(pa.array([bytes(r) for r in rng.integers(0, 256, (n, 3), dtype=np.uint8)],
                                   pa.binary(3)), rng)
    # one dictionary for every batch: legacy releases refuse appends whose dictionary differs
    cols["dict"] = pa.DictionaryArray.from_arrays(
        pa.array(rng.integers(0, 3, n, dtype=np.int32)), pa.array(["red", "green", "blue"]))
    cols["list_i32"] = _list(rng, n, lambda k: _masked(pa.array(rng.integers(-99, 99, k, dtype=np.int32)), rng))
    cols["large_list_str"] = _list(rng, n, lambda k: _strings(rng, k), large=True)
    cols["list_list"] = _list(rng, n, lambda k: _list(
        rng, k, lambda j: pa.array(rng.integers(0, 9, j, dtype=np.int16))))
    cols["vector"] = pa.FixedSizeListArray.from_arrays(
        pa.array(rng.standard_normal(n * 4).astype(np.float32)), 4)
    inner = pa.StructArray.from_arrays([pa.array(rng.integers(0, 10**6, n)), _strings(rng, n)],
                                       names=["x", "y"])
    cols["struct"] = pa.StructArray.from_arrays(
        [inner, _list(rng, n, lambda k: pa.array(rng.integers(0, 255, k, dtype=np.uint8))),
         pa.array(rng.random(n) < 0.5)], names=["inner", "tags", "flag"])
    cols["list_struct"] = _list(rng, n, lambda k: pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 100, k, dtype=np.int32)), _strings(rng, k)], names=["a", "b"]))
    cols["all_null"] = pa.nulls(n, pa.int32())
    cols["null"] = pa.nulls(n)
    return pa.table(cols)


def _writable_columns(table: pa.Table, write) -> tuple[list[str], dict]:
    """The columns this release writes and reads back (it is tried column by column when the
    whole table fails), and why the others were left out."""
    tmp = tempfile.mkdtemp()
    try:
        try:
            write(table, os.path.join(tmp, "all"))
            lance.dataset(os.path.join(tmp, "all")).to_table()
            return table.column_names, {}
        except _FAILURES:
            pass
        ok, dropped = [], {}
        for i, name in enumerate(table.column_names):
            try:
                write(table.select(["id", name] if name != "id" else ["id"]),
                      os.path.join(tmp, str(i)))
                lance.dataset(os.path.join(tmp, str(i))).to_table()
                ok.append(name)
            except _FAILURES as e:  # recorded: what this release cannot do
                dropped[name] = f"{type(e).__name__}: {str(e)[:200]}"
        return ok, dropped
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _read_version(uri: str, version: int) -> pa.Table:
    return lance.dataset(uri, version=version).to_table()


def main(out: str, extra: dict) -> None:
    out = os.path.abspath(out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "expected"))
    uri = os.path.join(out, "dataset")
    opts = dict(max_rows_per_file=25, max_rows_per_group=8, **extra)

    def write(t, u, mode="create"):
        return lance.write_dataset(t, u, mode=mode, **opts)

    columns, dropped = _writable_columns(make_table(0), write)
    steps = []

    def step(name, fn):
        try:
            fn()
            steps.append(name)
        except _FAILURES as e:  # an operation this release lacks
            steps.append(f"{name} (not available: {type(e).__name__}: {str(e)[:120]})")

    write(make_table(0).select(columns), uri)
    steps.append("create")
    step("append", lambda: write(make_table(ROWS, seed=1).select(columns), uri, "append"))
    step("delete id % 7 = 0", lambda: lance.dataset(uri).delete("id % 7 = 0"))
    step("add_columns id2 = id * 2", lambda: lance.dataset(uri).add_columns({"id2": "id * 2"}))
    step("compact_files", lambda: lance.dataset(uri).optimize.compact_files(
        target_rows_per_fragment=200))
    step("delete id < 5", lambda: lance.dataset(uri).delete("id < 5"))
    step("overwrite", lambda: write(make_table(1000, 30, seed=2).select(columns), uri,
                                    "overwrite"))
    step("append", lambda: write(make_table(2000, 20, seed=3).select(columns), uri, "append"))

    ds = lance.dataset(uri)
    versions = [v["version"] for v in ds.versions()]
    for v in versions:
        # one dictionary per column (IPC files hold one): the values are what is compared
        t = _read_version(uri, v).unify_dictionaries().combine_chunks()
        with pa.ipc.new_file(os.path.join(out, "expected", f"v{v}.arrow"), t.schema,
                             options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
            w.write_table(t)
    info = {
        "pylance": lance.__version__,
        "pyarrow": pa.__version__,
        "data_storage_version": getattr(ds, "data_storage_version", None),
        "versions": versions,
        "steps": steps,
        "columns": columns,
        "dropped_columns": dropped,
        "write_options": extra,
    }
    with open(os.path.join(out, "info.json"), "w") as f:
        json.dump(info, f, indent=1, sort_keys=True)
    print(json.dumps({k: info[k] for k in ("pylance", "data_storage_version", "versions")}))


if __name__ == "__main__":
    main(sys.argv[1], {k: json.loads(v) for k, v in (a.split("=", 1) for a in sys.argv[2:])})
