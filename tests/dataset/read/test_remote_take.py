"""Takes from object stores planned in one pass (lancefmt/dataset/read/remote_take.py): the
same rows as pylance's take, and guards counted instead of timed: no read unit, one request
per data file and a fixed number of Python calls per take, however many files and columns.

Issue 37: a take of 1,000 rows from ten files ran ~70 read units and spent 16-23 ms of client
CPU planning and coordinating them, per (file, column) piece."""
import threading

import numpy as np
import pyarrow as pa
import pytest
from call_count import CallCounter
from s3_counting import new_bucket

import lancefmt
from lancefmt.dataset.read import remote_take
from lancefmt.dataset.read.direct_take import direct_plan
from lancefmt.errors import CorruptFileError, RowOutOfRangeError
from lancefmt.file import fetch_batch
from lancefmt.file.reader import LanceFileReader
from lancefmt.io.io_stats import totals as io_totals

lance = pytest.importorskip("lance")

ROWS = 12_000
NUMERIC = ["i64", "f64", "i32", "u8"]


def pylance_options(opts):
    return {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1",
            "endpoint": opts["endpoint_url"], "allow_http": "true"}


def _table(n):
    rng = np.random.default_rng(3)
    return pa.table({"i64": pa.array(np.arange(n)), "f64": pa.array(rng.random(n)),
                     "i32": pa.array(rng.integers(-1000, 1000, n, dtype=np.int32)),
                     "u8": pa.array(rng.integers(0, 255, n, dtype=np.uint8)),
                     "s": pa.array([f"s{i}" for i in range(n)])})


def _written(opts, version, rows=ROWS, files=6, delete=True):
    uri = f"s3://{new_bucket(opts)}/ds"
    theirs = lance.write_dataset(_table(rows), uri, storage_options=pylance_options(opts),
                                 max_rows_per_file=rows // files, data_storage_version=version)
    if delete:
        theirs.delete("i64 % 7 = 3 OR (i64 >= 100 AND i64 < 1100)")
    return lancefmt.dataset(uri, storage_options=opts), theirs


def test_remote_takes_match_pylance(counting_s3, storage_version):
    opts, _ = counting_s3
    ours, theirs = _written(opts, storage_version)
    snap = ours.snapshot
    plan = direct_plan(snap.ctx, snap.fragment_pbs(), tuple(NUMERIC))
    assert isinstance(plan, remote_take.RemoteTakePlan)
    n = theirs.count_rows()
    assert plan.live_rows == n
    rng = np.random.default_rng(4)
    for idx in (np.sort(rng.choice(n, 300, replace=False)), rng.permutation(n)[:2_000],
                rng.integers(0, n, 700), np.arange(n), [n - 1], [0, 0, 5, 0]):
        for cols in (NUMERIC, ["f64"], ["u8", "i64"]):
            assert ours.take(idx, columns=cols).equals(theirs.take(idx, columns=cols)), cols
    with pytest.raises(RowOutOfRangeError):
        ours.take([0, n], columns=["i64"])
    # other columns, row ids: the general path, the same answers
    assert ours.take([5, 1], columns=["s", "i64"]).equals(theirs.take([5, 1], columns=["s", "i64"]))


def _warm_take(ds, idx, cols, log):
    ds.take(idx, columns=cols)
    log.reset()
    units = []
    real = fetch_batch.FetchBatch.run

    def run(self, fns):
        fns = list(fns)
        units.append(len(fns))
        return real(self, fns)

    fetch_batch.FetchBatch.run = run
    try:
        r0, b0 = io_totals()
        with CallCounter() as calls:
            got = ds.take(idx, columns=cols)
        r1, b1 = io_totals()
    finally:
        fetch_batch.FetchBatch.run = real
    # the calling thread does all of a take's work but the HTTP client's (the event loop's
    # thread, not counted); the in-process moto server's request threads are left out
    return got, calls.in_thread(threading.get_ident()), sum(units), r1 - r0, b1 - b0


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_a_take_costs_the_same_python_calls_for_any_number_of_files(counting_s3, version):
    opts, log = counting_s3
    rows = 240_000  # files larger than the tail read at open (else read whole then)
    few, _ = _written(opts, version, rows=rows, files=2, delete=False)
    many, theirs = _written(opts, version, rows=rows, files=12, delete=False)
    idx = np.sort(np.random.default_rng(5).choice(rows, 300, replace=False))
    got, calls_few, units, requests, nbytes = _warm_take(few, idx, ["i64"], log)
    got, calls_many, units, requests, nbytes = _warm_take(many, idx, NUMERIC, log)
    gets = [r for r in log.requests if r[0] == "GET"]
    assert got.equals(theirs.take(idx, columns=NUMERIC))
    assert units == 0  # no read unit: one vectorised plan, one round of reads
    assert requests == len(gets) == 12, log.requests  # one coalesced GET per data file
    assert nbytes <= rows * 21 * 1.05  # at most every value once (8 + 8 + 4 + 1 bytes a row)
    # 12 files and 4 columns instead of 2 files and 1 column: the store's planning of each
    # request (at most 6 calls a request: one request a file here) and building each
    # column's table (at most 6 calls a column); none per page, and no unit per file and
    # column (the general take made hundreds of calls per file and column)
    assert calls_many - calls_few <= 6 * (12 - 2) + 6 * (4 - 1), (calls_few, calls_many)
    assert calls_many <= 400, calls_many


def test_a_corrupt_chunk_read_remotely_is_a_corrupt_file_error(counting_s3):
    import struct

    import boto3

    opts, _ = counting_s3
    ours, _ = _written(opts, "2.2", files=1, delete=False)
    frag = ours.get_fragments()[0]
    uri = ours.uri.rstrip("/") + "/data/" + frag.data_files()[0].path
    reader = LanceFileReader(uri, storage_options=opts)
    page = reader.metadata.columns[0].pages[0]
    bucket, key = uri[len("s3://"):].split("/", 1)
    s3 = boto3.client("s3", endpoint_url=opts["endpoint_url"], aws_access_key_id="testing",
                      aws_secret_access_key="testing", region_name="us-east-1")
    raw = bytearray(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    at = int(page.buffer_offsets[1])  # chunk 0: u16 levels, then a u32 value-buffer size
    raw[at + 2:at + 6] = struct.pack("<I", (1 << 32) - 8)
    s3.put_object(Bucket=bucket, Key=key, Body=bytes(raw))
    fresh = lancefmt.dataset(ours.uri, storage_options=opts)
    with pytest.raises(CorruptFileError) as e:
        fresh.take([1, 2], columns=["i64"])
    assert key.rsplit("/", 1)[1] in str(e.value)
