"""Scan parallelism on S3: a moto server on loopback that counts requests and adds a fixed
latency per request (argv[1] seconds, to model a remote store); scans with one thread and with
the default pool, printing wall time, data GETs per file and the most requests in flight.

Run: cd asv_bench && PYTHONPATH=.. python s3_scan_parallelism.py 0.03
"""
import os
import sys, time
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "interop"))
import pyarrow as pa
from s3_counting import CountingMotoServer, new_bucket
import lancefmt
s = CountingMotoServer(); s.start(); h, p = s.get_host_and_port()
opts = {"key": "testing", "secret": "testing", "endpoint_url": f"http://{h}:{p}", "client_kwargs": {"region_name": "us-east-1"}}
uri = f"s3://{new_bucket(opts)}/ds"
n = 400_000
t = pa.table({"a": pa.array(range(n), pa.int64()), "b": pa.array([float(i) for i in range(n)]), "s": [f"row-{i}" for i in range(n)]})
lancefmt.write_dataset(t, uri, max_rows_per_file=25_000, storage_options=opts)
ds = lancefmt.dataset(uri, storage_options=opts); s.log.latency = float(sys.argv[1])
for threads in (1, None, 1, None):
    s.log.reset(); t0 = time.perf_counter()
    got = ds.to_table(threads=threads)
    dt = time.perf_counter() - t0
    reqs = [r for r in s.log.requests if "/data/" in r[1]]
    print(f"threads={threads}: {dt:.2f}s, {len(reqs)} data GETs for {len(ds.get_fragments())} files, max in flight {s.log.max_in_flight}, rows {got.num_rows}")
s.stop()
