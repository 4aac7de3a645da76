"""Streaming reads of an object store fetch the pages of the windows ahead in rounds of up to
READAHEAD_BYTES (lancefmt/file/reader.py): a file of small pages costs a request per round,
not one per window (issue 37: a 1 GB scan of pylance's ~650 KB 2.0 pages sent 1,050 requests
and spent 2.9 s of client CPU; 1 request per ~16 MiB since)."""
import numpy as np
import pyarrow as pa
from s3_counting import new_bucket

from lancefmt.file import reader as reader_mod
from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter

ROWS = 400_000


def test_small_pages_are_fetched_a_round_at_a_time(counting_s3, monkeypatch):
    opts, log = counting_s3
    uri = f"s3://{new_bucket(opts)}/small_pages.lance"
    t = pa.table({"a": pa.array(np.arange(ROWS)), "b": pa.array(np.arange(ROWS) * 0.5)})
    with LanceFileWriter(uri, t.schema, version="2.0", storage_options=opts,
                         page_buffer_bytes=64 * 1024, max_page_bytes=64 * 1024) as w:
        for batch in t.to_batches(max_chunksize=8_192):
            w.write_batch(batch)
    reader = LanceFileReader(uri, storage_options=opts)
    pages = sum(len(c.pages) for c in reader.metadata.columns)
    assert pages >= 90  # 6.4 MB in pages of 64 KiB
    monkeypatch.setattr(reader_mod, "READAHEAD_BYTES", 1 << 20)
    log.reset()
    got = pa.Table.from_batches(list(reader.read_batches(16_384)))
    gets = [r for r in log.requests if r[0] == "GET"]
    assert got.equals(t)
    # 6.4 MB in rounds of at most 1 MiB (a window's pages may cross it): 7-8 requests, where
    # one round per window of 16,384 rows made 25
    assert 6 <= len(gets) <= 9, len(gets)
