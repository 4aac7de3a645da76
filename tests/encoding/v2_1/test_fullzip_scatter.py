"""Full-zip pages copy their values in bounded chunks (a page of large strings once needed
~25x its size in index arrays); the bytes are those of a one-shot copy."""
import numpy as np
import pytest

from lancefmt.encoding.v2_1 import fullzip_encoder
from lancefmt.encoding.v2_1.fullzip_encoder import scatter_values


@pytest.mark.parametrize("count", [3, 500])
@pytest.mark.parametrize("chunk", [1, 700, 1 << 23])
def test_scatter_matches_a_plain_copy(monkeypatch, count, chunk):
    monkeypatch.setattr(fullzip_encoder, "SCATTER_CHUNK_BYTES", chunk)
    rng = np.random.default_rng(count)
    lens = rng.integers(0, 300, count)
    src_starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    data = rng.integers(0, 256, int(lens.sum()), dtype=np.uint8)
    gaps = rng.integers(0, 9, count)
    dst_starts = np.cumsum(gaps + np.concatenate([[0], lens[:-1]]))
    out = np.zeros(int(dst_starts[-1] + lens[-1]), np.uint8)
    scatter_values(out, data, src_starts, dst_starts, lens)
    want = np.zeros_like(out)
    for s, d, n in zip(src_starts, dst_starts, lens):
        want[d:d + n] = data[s:s + n]
    assert np.array_equal(out, want)


def test_large_strings_page_stays_small(tmp_path):
    """20 Ki strings of 1-5 KiB (89 MiB) encode at 2.1 with well under 10x their size."""
    import subprocess
    import sys

    code = (
        "import resource, pyarrow as pa\n"
        "from lancefmt.file import LanceFileWriter\n"
        "t = pa.table({'b': [f'{i}' * 1024 for i in range(20 * 1024)]})\n"
        f"w = LanceFileWriter({str(tmp_path / 'a.lance')!r}, version='2.1')\n"
        "w.write_batch(t); w.close()\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"LANCEFMT_WRITE_THREADS": "1", "PATH": ""},
                         cwd=str(fullzip_encoder.__file__).rsplit("/lancefmt/", 1)[0])
    assert int(out.stdout.strip()) < 1200, "peak RSS (MiB)"
