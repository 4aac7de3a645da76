"""Byte flips and truncations of real legacy (v0.1) files -- written by pylance 14, by pylance
0.10 (a compat fixture) and by lancefmt -- give LanceErrors (or data), never a crash or another
exception; through a file object (ranged reads) and a memory-mapped local file alike."""
import glob
import io
import os

import numpy as np
import pytest

import lance
from lancefmt.errors import LanceError
from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter

from file_tables import wide_table

FIXTURE_010 = os.path.join(os.path.dirname(__file__), "..", "compat", "fixtures", "0.10",
                           "dataset", "data")


def _exercise(source) -> str:
    """"ok" when a (possibly damaged) file decodes every way the reader offers, "error" when
    it raises a LanceError; anything else fails the test."""
    try:
        r = LanceFileReader(source)
        r.read_all()
        n = r.num_rows
        if n:
            r.take([0, n - 1, n // 2, 0])
            r.read_range(n // 3, n)
            assert sum(b.num_rows for b in r.read_batches(max(1, n // 3))) == n
    except LanceError:
        return "error"
    return "ok"


@pytest.fixture(scope="module")
def legacy_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz_legacy")
    t = wide_table(90, seed=5)
    lance.write_dataset(t, str(d / "ds"), data_storage_version="legacy", max_rows_per_group=32)
    files = sorted(glob.glob(str(d / "ds" / "data" / "*.lance")))[:1]
    p = str(d / "ours.lance")
    with LanceFileWriter(p, t.schema, "legacy", max_rows_per_group=25) as w:
        w.write_batch(t)
    files.append(p)
    files.append(max(glob.glob(os.path.join(FIXTURE_010, "*.lance")), key=os.path.getsize))
    return [open(f, "rb").read() for f in files]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_byte_flips(legacy_files, which, tmp_path):
    data = legacy_files[which]
    assert _exercise(io.BytesIO(data)) == "ok"
    rng = np.random.default_rng(77 + which)
    size = len(data)
    outcomes = {"ok": 0, "error": 0}
    for k in range(300):
        buf = bytearray(data)
        # half the flips land in the tail (Metadata, schema, page table), where every byte counts
        pos = int(rng.integers(max(0, size - 2048), size)) if k % 2 else int(rng.integers(0, size))
        buf[pos] ^= int(rng.integers(1, 256))
        if k % 5 == 0:
            buf[int(rng.integers(0, size))] = int(rng.integers(0, 256))
        if k % 3 == 0:  # the memory-mapped path of local files
            path = tmp_path / f"f{k}.lance"
            path.write_bytes(bytes(buf))
            outcomes[_exercise(str(path))] += 1
            path.unlink()
        else:
            outcomes[_exercise(io.BytesIO(bytes(buf)))] += 1
    assert outcomes["error"] >= 60, outcomes


@pytest.mark.parametrize("which", [0, 1, 2])
def test_truncations(legacy_files, which):
    data = legacy_files[which]
    size = len(data)
    cuts = sorted(set(list(range(0, 40)) + list(range(size - 300, size)) +
                      list(np.random.default_rng(which).integers(0, size, 60))))
    for cut in cuts:
        # a file cut short loses its footer: always a clear error
        assert _exercise(io.BytesIO(data[:int(cut)])) == "error", cut
    assert _exercise(io.BytesIO(b"\x00" * 100 + data[-16:])) == "error"
