"""Which client should issue a batch of ranged reads: s3fs's async core (lancefmt's S3Store,
``read_many``: one event loop, up to 64 requests in flight) or ``pyarrow.fs.S3FileSystem`` (C++,
``read_at`` from a pool of 64 Python threads, the GIL released while waiting)?

Both read the same ranges of one 16 MiB object on moto behind the latency proxy (tests/support/
s3_proxy.py, in a child process; ``--latency`` per request, default 20 ms), uncoalesced (the store's coalescing gap is
set to -1 so both send one request per range, adjacent ones too), best of ``--repeat``; wall and CPU time (the
machine has two shared cores, so CPU per request matters too).

Run: cd asv_bench && PYTHONPATH=.. ../.venv/bin/python s3_client_compare.py [--latency 0.02]
"""
import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "support"))


def main():  # pragma: no cover - a one-shot measurement
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import pyarrow.fs as pafs
    from s3_proxy import ProxiedS3, RemoteProxy, create_bucket

    from lancefmt.io import open_store

    proxy = RemoteProxy()  # moto and the proxy in a child process: only the clients here
    env = ProxiedS3(proxy, proxy.upstream)
    bucket = create_bucket(proxy.upstream)
    size = 16 << 20
    blob = np.random.default_rng(0).integers(0, 255, size, dtype=np.uint8).tobytes()
    uri = f"s3://{bucket}/blob.bin"
    ours = open_store(uri, env.pylance_options())
    ours.put(uri, blob)
    ours.settings = type(ours.settings)(**{**ours.settings.__dict__, "coalesce_gap": -1})
    theirs = pafs.S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1",
                               endpoint_override=env.endpoint, scheme="http")
    pool = ThreadPoolExecutor(64)
    proxy.reset(latency=args.latency)

    def ranges(n, length, seed):
        starts = np.sort(np.random.default_rng(seed).choice(size // length - 1, n, replace=False))
        return [(int(s) * length, length) for s in starts]

    def run_s3fs(rs):
        return ours.read_ranges(uri, rs)

    def run_arrow(rs):
        f = theirs.open_input_file(f"{bucket}/blob.bin")
        return list(pool.map(lambda r: bytes(f.read_at(r[1], r[0])), rs))

    cases = [("64 x 4 KiB", ranges(64, 4096, 1)), ("256 x 16 KiB", ranges(256, 16384, 2)),
             ("8 x 1 MiB", ranges(8, 1 << 20, 3)), ("1 x 12 MiB", [(0, 12 << 20)])]
    print(f"latency {args.latency * 1e3:.0f} ms per request, best of {args.repeat}")
    for name, rs in cases:
        assert run_s3fs(rs) == run_arrow(rs) == [blob[s:s + n] for s, n in rs]
        out = {}
        for label, fn in (("s3fs async", run_s3fs), ("pyarrow.fs", run_arrow)):
            best = (float("inf"), 0.0)
            for _ in range(args.repeat):
                proxy.reset()
                w, c = time.perf_counter(), time.process_time()
                fn(rs)
                w, c = time.perf_counter() - w, time.process_time() - c
                best = min(best, (w, c))
            out[label] = (best, proxy.counts().get("GET", 0), proxy.max_in_flight)
        print(f"{name:>13}: " + "  |  ".join(
            f"{label} {w * 1e3:7.1f} ms wall {c * 1e3:6.1f} ms cpu, {n} GETs, {m} in flight"
            for label, ((w, c), n, m) in out.items()))
    proxy.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
