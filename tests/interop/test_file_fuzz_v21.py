"""Seeded, time-boxed fuzzing of real Lance 2.1 / 2.2 files (pylance 14.0.2): byte flips in the
page data and in the metadata, and truncations, give data or a LanceError -- never another
exception. ``LANCEFMT_FUZZ_SECONDS`` (default 6 per file and version) lengthens the run
(``make fuzz``)."""
import io
import os
import time

import numpy as np
import pyarrow as pa
import pytest

from lancefmt.errors import LanceError
from lancefmt.file.reader import LanceFileReader

lance_file = pytest.importorskip("lance.file")

SECONDS = float(os.environ.get("LANCEFMT_FUZZ_SECONDS", "6"))
N = 1500


def _table():
    rng = np.random.default_rng(5)
    return pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "i32": pa.array([None if i % 9 == 0 else int(v) for i, v in
                         enumerate(rng.integers(0, 1000, N))], pa.int32()),
        "f": pa.array(rng.normal(size=N)),
        "s": pa.array([None if i % 7 == 0 else f"name-{i}-{'z' * (i % 5)}" for i in range(N)]),
        "low": pa.array([["INFO", "WARN", "DEBUG"][i % 3] for i in range(N)]),
        "long": pa.array(["L" * 260 + str(i) if i % 4 else None for i in range(N)]),
        "l": pa.array([None if i % 11 == 0 else list(range(i % 4)) for i in range(N)],
                      pa.list_(pa.int32())),
        "st": pa.array([None if i % 6 == 0 else {"a": i, "b": None if i % 4 else "x"}
                        for i in range(N)], pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(N * 4).astype(np.float32)), 4),
        "c": pa.array([3] * N, pa.int64()),
    })


def _exercise(data: bytes) -> str:
    try:
        r = LanceFileReader(io.BytesIO(data))
        r.read_all()
        n = r.num_rows
        if n:
            r.take([0, n - 1, n // 2, n // 3])
            r.read_range(n // 3, n)
            list(r.read_batches(max(1, n // 2)))
    except LanceError:
        return "error"
    return "ok"


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def real_file(request, tmp_path_factory):
    t = _table()
    path = str(tmp_path_factory.mktemp("fuzz21") / f"f_{request.param}.lance")
    with lance_file.LanceFileWriter(path, t.schema, version=request.param) as w:
        w.write_batch(t)
    data = open(path, "rb").read()
    assert LanceFileReader(io.BytesIO(data)).read_all().equals(
        lance_file.LanceFileReader(path).read_all().to_table())
    return request.param, data


def test_byte_flips(real_file):
    version, data = real_file
    rng = np.random.default_rng(2101 if version == "2.1" else 2201)
    size = len(data)
    outcomes = {"ok": 0, "error": 0}
    deadline = time.monotonic() + SECONDS
    k = 0
    while time.monotonic() < deadline or k < 20:
        buf = bytearray(data)
        for _ in range(1 + k % 3):
            pos = int(rng.integers(max(0, size - 3000), size)) if k % 4 == 3 else \
                int(rng.integers(0, size))
            buf[pos] ^= int(rng.integers(1, 256))
        outcomes[_exercise(bytes(buf))] += 1
        k += 1
    assert outcomes["ok"] + outcomes["error"] == k
    assert outcomes["error"] > 0, outcomes


def test_truncations(real_file):
    _version, data = real_file
    size = len(data)
    rng = np.random.default_rng(size)
    for cut in sorted(set(list(range(0, 64)) + list(range(size - 400, size)) +
                          rng.integers(0, size, 60).tolist())):
        assert _exercise(data[:int(cut)]) == "error", cut
    assert _exercise(data) == "ok"
