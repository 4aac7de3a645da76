"""Byte flips and truncations of real Lance files give LanceErrors (or data), never a crash."""
import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileWriter as PyLanceWriter

from lancefmt.errors import LanceError
from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter

from file_tables import wide_table


def _exercise(data: bytes) -> str:
    """Open and read a (possibly damaged) file every way the reader offers: "ok" when it
    decodes, "error" when it raises a LanceError (anything else fails the test)."""
    import io

    try:
        r = LanceFileReader(io.BytesIO(data))
        r.read_all()
        n = r.num_rows
        if n:
            r.take([0, n - 1, n // 2])
            r.read_range(n // 3, n)
            batches = list(r.read_batches(max(1, n // 3)))
            assert sum(b.num_rows for b in batches) == n
    except LanceError:
        return "error"
    return "ok"


@pytest.fixture(scope="module")
def real_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    t = wide_table(120, seed=7)
    files = []
    p = str(d / "pylance.lance")
    with PyLanceWriter(p, t.schema, version="2.0", max_page_bytes=256) as w:
        w.write_batch(t)
    files.append(p)
    low = pa.table({"s": pa.array(["a", "b", None] * 40), "z": pa.array(
        ["text %d" % i for i in range(120)])}).cast(pa.schema([
            pa.field("s", pa.string()),
            pa.field("z", pa.string(), metadata={"lance-encoding:compression": "zstd"})]))
    p = str(d / "pylance_dict_zstd.lance")
    with PyLanceWriter(p, low.schema, version="2.0") as w:
        w.write_batch(low)
    files.append(p)
    blob_schema = pa.schema([pa.field("b", pa.large_binary(),
                                      metadata={"lance-encoding:blob": "true"})])
    blobs = pa.table([pa.array([None if i % 4 == 0 else b"x" * (i % 9) for i in range(60)],
                               pa.large_binary())], schema=blob_schema)
    p = str(d / "pylance_blob.lance")
    with PyLanceWriter(p, blob_schema, version="2.0") as w:
        w.write_batch(blobs)
    files.append(p)
    p = str(d / "ours.lance")
    with LanceFileWriter(p, t.schema, max_page_bytes=300) as w:
        w.write_batch(t)
    files.append(p)
    return [open(f, "rb").read() for f in files]


@pytest.mark.parametrize("which", [0, 1, 2, 3])
def test_byte_flips(real_files, which):
    data = real_files[which]
    rng = np.random.default_rng(1234 + which)
    size = len(data)
    outcomes = {"ok": 0, "error": 0}
    for k in range(400):
        buf = bytearray(data)
        # half the flips land in the metadata tail, where every byte matters
        if k % 2:
            pos = int(rng.integers(max(0, size - 4096), size))
        else:
            pos = int(rng.integers(0, size))
        buf[pos] ^= int(rng.integers(1, 256))
        if k % 5 == 0:  # and some multi-byte damage
            pos2 = int(rng.integers(0, size))
            buf[pos2] = int(rng.integers(0, 256))
        outcomes[_exercise(bytes(buf))] += 1
    # damage in the metadata tail is caught as a LanceError far more often than not
    assert outcomes["error"] >= 100, outcomes
    assert outcomes["ok"] + outcomes["error"] == 400


@pytest.mark.parametrize("which", [0, 1, 2, 3])
def test_truncations(real_files, which):
    data = real_files[which]
    size = len(data)
    cuts = sorted(set(list(range(0, 80)) + list(range(size - 600, size)) +
                      list(np.random.default_rng(which).integers(0, size, 100))))
    for cut in cuts:
        # a file cut short anywhere loses its footer: always a clear error
        assert _exercise(data[:int(cut)]) == "error", cut
    assert _exercise(b"") == "error"
    assert _exercise(b"\x00" * 100 + data[-40:]) == "error"
    assert _exercise(data) == "ok"
