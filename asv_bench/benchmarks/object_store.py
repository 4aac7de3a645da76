"""Reading at cloud latency (issue 26): lancefmt vs pylance on the same dataset in S3, through
the latency proxy of ``tests/support/s3_proxy.py`` (20 ms per request, optionally a bandwidth
cap per bucket) in front of moto, both in a child process so the client measured here has the
interpreter to itself. Both libraries get the same ``storage_options`` dict (pylance's names).

Fixture: 2M rows (int64, float64, int32) in 10 fragments written once with pylance (2.0 and
2.2), copied into a moto bucket (straight, not through the proxy). Measured: open (a fresh
``dataset()``), take of 1,000 random rows on an open dataset, full scan, one-column scan.
``track_*_ratio`` = pylance time / lancefmt time, interleaved, best of several (above 1:
lancefmt faster); ``track_*_requests`` = requests the proxy served for one run of each.

Run directly for a one-shot table (``--rows`` smaller for a quick run):
``cd asv_bench && PYTHONPATH=.. ../.venv/bin/python -m benchmarks.object_store [--rows 200000]``

Every row reports wall time, requests, bytes and client CPU (this process's CPU time per
operation, best of ``--repeat``; the store and the proxy run in other processes, so it is the
client's alone): on a shared machine CPU time is the trustworthy number.

``--split`` adds lancefmt's client CPU per operation split between the thread running the
store's event loop, the threads receiving bodies (``lancefmt-http``) and all others (planning,
decoding).

``--gb`` adds a scan of a 1 GB dataset (50M rows, 50 files) at 0 ms latency: bytes moved per
second of client CPU, lancefmt and pylance (target: at least pylance's).

``--bytes`` adds the byte path alone: ten 4 MB ranged GETs at once, client CPU per MB through
lancefmt's store (blocking sockets, and aiohttp) and through ``pyarrow.fs.S3FileSystem``.

``--floor`` adds, per operation, the CPU the rig itself (proxy and moto) spends serving each
library, and the floor that puts under any client on this machine: the serial round trips times
the latency, plus the rig's CPU (the less of the two libraries') spread over all cores. Where
that floor is above pylance's time / 1.5, no client can be 1.5x pylance here.
"""
import argparse
import atexit
import os
import shutil
import sys

import numpy as np
import pyarrow as pa

from .common import best_time, scratch_dir, speedup

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.isdir(os.path.join(_CHECKOUT, "lancefmt")) and sys.path[:1] != [_CHECKOUT]:
    sys.path.insert(0, _CHECKOUT)
_SUPPORT = os.path.join(_CHECKOUT, "tests", "support")
if _SUPPORT not in sys.path:
    sys.path.insert(1, _SUPPORT)

ROWS = int(os.environ.get("LANCEFMT_BENCH_S3_ROWS", 2_000_000))
FRAGMENTS = 10
LATENCY = 0.02
VERSIONS = ["2.0", "2.2"]
TAKE_ROWS = 1_000


def _table(rows, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({
        "i64": pa.array(np.arange(rows, dtype=np.int64)),
        "f64": pa.array(rng.random(rows)),
        "i32": pa.array(rng.integers(0, 1 << 30, rows, dtype=np.int32)),
    })


def local_fixture(rows: int, version: str, fragments: int = FRAGMENTS) -> str:
    """The dataset written by pylance on local disk (kept between runs)."""
    import lance

    name = f"ds_{version}_{rows}" + ("" if fragments == FRAGMENTS else f"_{fragments}f")
    path = os.path.join(scratch_dir("object_store"), name)
    if not os.path.exists(path + ".ready"):
        shutil.rmtree(path, ignore_errors=True)
        lance.write_dataset(_table(rows), path, max_rows_per_file=max(1, rows // fragments),
                            data_storage_version=version)
        open(path + ".ready", "w").close()
    return path


class S3Env:
    """moto + the proxy in a child process, a bucket holding the fixtures, the options."""

    def __init__(self, rows=ROWS, versions=VERSIONS, latency=LATENCY, bandwidth=None,
                 fragments=FRAGMENTS):
        from s3_proxy import ProxiedS3, RemoteProxy, create_bucket

        from lancefmt.io import open_store

        self.proxy = RemoteProxy()
        atexit.register(self.proxy.stop)
        env = ProxiedS3(self.proxy, self.proxy.upstream)
        self.options = env.pylance_options()
        bucket = create_bucket(self.proxy.upstream)
        direct = open_store("s3://x", {**self.options, "aws_endpoint": self.proxy.upstream})
        self.uris = {}
        for version in versions:
            local = local_fixture(rows, version, fragments)
            uri = f"s3://{bucket}/ds_{version}"
            for dirpath, _, files in os.walk(local):
                for name in files:
                    rel = os.path.relpath(os.path.join(dirpath, name), local)
                    if rel.endswith("latest_version_hint.json"):
                        continue  # pylance writes none on S3
                    with open(os.path.join(dirpath, name), "rb") as f:
                        direct.put(f"{uri}/{rel}", f.read())
            self.uris[version] = uri
        self.rows = rows
        self.proxy.reset(latency=latency, bandwidth=bandwidth)

    def requests(self, fn) -> int:
        """Requests the proxy served for one ``fn()``."""
        return self.traffic(fn)[0]

    def traffic(self, fn) -> tuple[int, int]:
        """Requests the proxy served for one ``fn()``, and the body bytes it sent back."""
        self.proxy.reset()
        fn()
        n = sum(self.proxy.counts().values())
        return n, self.proxy.bytes_out


_ENV = None


def _env() -> S3Env:
    global _ENV
    if _ENV is None:
        _ENV = S3Env()
    return _ENV


def random_rows(n, total, seed=26):
    return np.sort(np.random.default_rng(seed).choice(total, n, replace=False))


class Workload:
    """The four operations, for one storage version, on both libraries."""

    def __init__(self, env: S3Env, version: str):
        import lance

        import lancefmt

        assert lancefmt.__file__.startswith(_CHECKOUT), lancefmt.__file__
        self.env, self.uri, self.opts = env, env.uris[version], env.options
        self.idx = random_rows(min(TAKE_ROWS, env.rows), env.rows)
        self.open = {"lancefmt": lambda: lancefmt.dataset(self.uri, storage_options=self.opts),
                     "pylance": lambda: lance.dataset(self.uri, storage_options=self.opts)}
        ours, peer = self.open["lancefmt"](), self.open["pylance"]()
        self.take = {"lancefmt": lambda: ours.take(self.idx), "pylance": lambda: peer.take(self.idx)}
        self.scan = {"lancefmt": lambda: ours.to_table(), "pylance": lambda: peer.to_table()}
        self.projected = {"lancefmt": lambda: ours.to_table(columns=["f64"]),
                          "pylance": lambda: peer.to_table(columns=["f64"])}
        assert self.take["lancefmt"]().equals(self.take["pylance"]())
        assert self.projected["lancefmt"]().equals(self.projected["pylance"]())
        assert self.scan["lancefmt"]().num_rows == env.rows

    def ops(self):
        return {"open": self.open, "take 1,000 rows": self.take, "full scan": self.scan,
                "one-column scan": self.projected}


def client_cpu(fn, repeat: int = 5) -> float:
    """Best client CPU seconds (this process, every thread) of one ``fn()``."""
    import time

    fn()
    best = float("inf")
    for _ in range(repeat):
        c = time.process_time()
        fn()
        best = min(best, time.process_time() - c)
    return best


def cpu_ratio(pair, repeat: int = 5) -> float:
    """pylance's client CPU / lancefmt's for one operation (above 1: lancefmt spends less)."""
    return client_cpu(pair["pylance"], repeat) / max(client_cpu(pair["lancefmt"], repeat), 1e-9)


class ObjectStoreRead:
    params = VERSIONS
    param_names = ["data_storage_version"]
    timeout = 3600
    number = 1
    repeat = 5

    def setup(self, version):
        self.w = Workload(_env(), version)

    def time_lancefmt_open(self, version):
        self.w.open["lancefmt"]()

    def time_pylance_open(self, version):
        self.w.open["pylance"]()

    def time_lancefmt_take(self, version):
        self.w.take["lancefmt"]()

    def time_pylance_take(self, version):
        self.w.take["pylance"]()

    def time_lancefmt_scan(self, version):
        self.w.scan["lancefmt"]()

    def time_pylance_scan(self, version):
        self.w.scan["pylance"]()

    def time_lancefmt_projected_scan(self, version):
        self.w.projected["lancefmt"]()

    def time_pylance_projected_scan(self, version):
        self.w.projected["pylance"]()

    def _ratio(self, pair):
        return speedup(pair["lancefmt"], pair["pylance"], repeat=5)

    def track_open_ratio(self, version):
        return self._ratio(self.w.open)

    def track_take_ratio(self, version):
        return self._ratio(self.w.take)

    def track_scan_ratio(self, version):
        return self._ratio(self.w.scan)

    def track_projected_scan_ratio(self, version):
        return self._ratio(self.w.projected)

    def track_take_requests_lancefmt(self, version):
        return self.w.env.requests(self.w.take["lancefmt"])

    def track_take_requests_pylance(self, version):
        return self.w.env.requests(self.w.take["pylance"])

    def track_scan_requests_lancefmt(self, version):
        return self.w.env.requests(self.w.scan["lancefmt"])

    def track_scan_requests_pylance(self, version):
        return self.w.env.requests(self.w.scan["pylance"])

    def track_take_cpu_ratio(self, version):
        return cpu_ratio(self.w.take)

    def track_scan_cpu_ratio(self, version):
        return cpu_ratio(self.w.scan)

    def track_projected_scan_cpu_ratio(self, version):
        return cpu_ratio(self.w.projected)

    track_take_cpu_ratio.unit = "pylance client CPU / lancefmt client CPU"
    track_scan_cpu_ratio.unit = track_projected_scan_cpu_ratio.unit = track_take_cpu_ratio.unit
    track_open_ratio.unit = track_take_ratio.unit = "pylance time / lancefmt time"
    track_scan_ratio.unit = track_projected_scan_ratio.unit = "pylance time / lancefmt time"
    track_take_requests_lancefmt.unit = track_take_requests_pylance.unit = "requests"
    track_scan_requests_lancefmt.unit = track_scan_requests_pylance.unit = "requests"


# Scan memory: the same fragment size (100k rows, 2 MB), 4x the fragments. Flat means the
# scan holds a bounded number of fragments' reads whatever the dataset's size.
MEMORY_ROWS = [1_500_000, 6_000_000]


def scan_peak_bytes(uri: str, options: dict) -> int:
    """Peak bytes held while streaming a whole scan: Python objects (downloaded bodies) plus
    pyarrow's pools (decoded batches: the default pool and the decode pool), above what was
    held before."""
    import tracemalloc

    import lancefmt

    from lancefmt.encoding.pool_memory import decode_pool

    ds = lancefmt.dataset(uri, storage_options=options)
    pools = {id(p): p for p in (pa.default_memory_pool(), decode_pool())}.values()

    def held():
        return sum(p.bytes_allocated() for p in pools)

    tracemalloc.start()
    try:
        base, peak = held(), 0
        for _ in ds.to_batches():
            peak = max(peak, held() - base)
        return tracemalloc.get_traced_memory()[1] + peak
    finally:
        tracemalloc.stop()


class ScanMemory:
    params = MEMORY_ROWS
    param_names = ["rows"]
    timeout = 3600

    def setup(self, rows):
        self.env = S3Env(rows, ["2.2"], fragments=rows // 100_000)

    def teardown(self, rows):
        self.env.proxy.stop()

    def track_scan_peak_mb(self, rows):
        return scan_peak_bytes(self.env.uris["2.2"], self.env.options) / 1e6

    track_scan_peak_mb.unit = "MB"


GB_ROWS = 50_000_000  # 20 bytes a row: 1 GB
GB_FRAGMENTS = 50


def gb_scan(version: str, repeat: int = 3, env: "S3Env | None" = None) -> dict:
    """A full scan of the 1 GB dataset at 0 ms latency, per library: bytes the proxy sent,
    best client CPU seconds and wall seconds."""
    import time

    import lance

    import lancefmt

    env = env or S3Env(GB_ROWS, [version], 0.0, fragments=GB_FRAGMENTS)
    uri, opts = env.uris[version], env.options
    out = {}
    for name, ds in (("lancefmt", lancefmt.dataset(uri, storage_options=opts)),
                     ("pylance", lance.dataset(uri, storage_options=opts))):
        _, nbytes = env.traffic(ds.to_table)
        cpu = wall = float("inf")
        for _ in range(repeat):
            c, w = time.process_time(), time.perf_counter()
            assert ds.to_table().num_rows == GB_ROWS
            cpu, wall = min(cpu, time.process_time() - c), min(wall, time.perf_counter() - w)
        out[name] = {"bytes": nbytes, "cpu": cpu, "wall": wall}
    return out


class GigabyteScan:
    """Bytes per second of client CPU scanning 1 GB at 0 ms latency, lancefmt / pylance."""

    params = ["2.0"]
    param_names = ["data_storage_version"]
    timeout = 3600
    number = 1
    repeat = 1

    def setup(self, version):
        self.env = S3Env(GB_ROWS, [version], 0.0, fragments=GB_FRAGMENTS)

    def teardown(self, version):
        self.env.proxy.stop()

    def track_bytes_per_cpu_second_ratio(self, version):
        got = gb_scan(version, env=self.env)
        per = {k: v["bytes"] / v["cpu"] for k, v in got.items()}
        return per["lancefmt"] / per["pylance"]

    track_bytes_per_cpu_second_ratio.unit = "lancefmt bytes per CPU second / pylance's"


def byte_path(env: "S3Env", objects: int = 10, size: int = 4 << 20, repeat: int = 8) -> dict:
    """Client CPU per MB of ``objects`` ranged GETs of ``size`` bytes sent at once: through
    lancefmt's store on blocking sockets and on aiohttp, and through pyarrow.fs (a thread
    each)."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.fs as pafs
    from s3_proxy import create_bucket

    from lancefmt.io import open_store

    bucket = create_bucket(env.proxy.upstream)
    store = open_store(f"s3://{bucket}/x", env.options)
    os.environ["LANCEFMT_S3_HTTP"] = "aiohttp"  # a second store that sends through aiohttp
    try:
        aiohttp_store = open_store(f"s3://{bucket}/x", env.options)
    finally:
        del os.environ["LANCEFMT_S3_HTTP"]
    blob = np.random.default_rng(0).integers(0, 255, size + 64, dtype=np.uint8).tobytes()
    uris = [f"s3://{bucket}/blob{i}" for i in range(objects)]
    for u in uris:
        store.put(u, blob)
    requests = [(u, 64, size) for u in uris]
    arrow = pafs.S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1",
                              endpoint_override=env.options["aws_endpoint"], scheme="http")
    pool = ThreadPoolExecutor(objects)

    def through_store(which):
        return lambda: which.read_many(requests)

    def through_arrow():
        return list(pool.map(lambda r: arrow.open_input_file(r[0][5:]).read_at(r[2], r[1]),
                             requests))

    out = {}
    for name, fn in (("lancefmt, sockets", through_store(store)),
                     ("lancefmt, aiohttp", through_store(aiohttp_store)),
                     ("pyarrow.fs", through_arrow)):
        assert all(bytes(b) == blob[64:64 + size] for b in fn())
        best = float("inf")
        for _ in range(repeat):
            c = time.process_time()
            fn()
            best = min(best, time.process_time() - c)
        out[name] = best * 1e3 / (objects * size / 1e6)
    pool.shutdown()
    return out


def http_clients(env: "S3Env", version: str, repeat: int = 9) -> dict:
    """Client CPU (median) of lancefmt's take and scans with ranged GETs on blocking sockets
    and on aiohttp (a second view, opened and warmed with ``LANCEFMT_S3_HTTP=aiohttp``: its
    readers keep that store), interleaved."""
    import statistics
    import time

    import lancefmt

    uri, opts = env.uris[version], env.options
    idx = random_rows(min(TAKE_ROWS, env.rows), env.rows)
    views = {"sockets": lancefmt.dataset(uri, storage_options=opts)}
    os.environ["LANCEFMT_S3_HTTP"] = "aiohttp"
    try:
        views["aiohttp"] = lancefmt.dataset(uri, storage_options=opts)
        ops = {"take 1,000 rows": lambda ds: ds.take(idx), "full scan": lambda ds: ds.to_table(),
               "one-column scan": lambda ds: ds.to_table(columns=["f64"])}
        for op in ops.values():
            op(views["aiohttp"])
    finally:
        del os.environ["LANCEFMT_S3_HTTP"]
    out = {}
    for name, op in ops.items():
        cpu = {k: [] for k in views}
        for _ in range(repeat):
            for k, ds in views.items():
                op(ds)
                c = time.process_time()
                op(ds)
                cpu[k].append(time.process_time() - c)
        out[name] = {k: statistics.median(v) for k, v in cpu.items()}
    return out


ROUND_TRIPS = {"open": 2}  # serial requests an operation needs at least (others: 1)


def rig_pids() -> list[int]:
    """This process's descendants: the proxy and moto (the rig)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [os.getpid()]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def cpu_seconds(pids) -> float:
    ticks = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def rig_cpu(fn, runs: int = 10) -> tuple[float, float]:
    """Seconds of CPU per ``fn()``: the rig's, and this process's (the client's)."""
    import time

    pids = rig_pids()
    fn()
    rig, client = cpu_seconds(pids), time.process_time()
    for _ in range(runs):
        fn()
    return (cpu_seconds(pids) - rig) / runs, (time.process_time() - client) / runs


def thread_cpu() -> dict:
    """CPU seconds so far of each thread of this process, by native thread id."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def client_cpu_split(fn, runs: int = 10) -> tuple[float, float, float]:
    """Seconds of client CPU per ``fn()``: in the thread running fsspec's event loop (the
    store's requests), in the threads receiving bodies (``lancefmt-http``), and in all other
    threads (planning, decoding). pylance's client has no such threads."""
    import threading
    import time

    from fsspec.asyn import get_loop

    loop, ident = get_loop(), []
    loop.call_soon_threadsafe(lambda: ident.append(threading.get_native_id()))
    while not ident:
        time.sleep(0.001)
    fn()
    before, cpu = thread_cpu(), time.process_time()
    for _ in range(runs):
        fn()
    after, total = thread_cpu(), time.process_time() - cpu
    http_ids = {t.native_id for t in threading.enumerate() if t.name.startswith("lancefmt-http")}
    io = after.get(ident[0], 0.0) - before.get(ident[0], 0.0)
    http = sum(after.get(t, 0.0) - before.get(t, 0.0) for t in http_ids)
    return io / runs, http / runs, max(0.0, total - io - http) / runs


def scan_timeline(fn, runs: int = 12) -> dict:
    """Where a lancefmt read's wall time goes against the rig's: medians over ``runs`` of
    ``fn()`` of when its ranged reads were sent (first, last), answered (first, last) and when
    it returned, in ms from its call, and how long it ran after its last read's answer. All of a one-column scan's reads sent before the first
    answer and the call returning just after the last leaves nothing to the client: the
    rest is the rig serving (issue 37)."""
    import statistics
    import threading
    import time

    from lancefmt.io import s3 as s3mod

    marks, lock = [], threading.Lock()
    fetch = s3mod.S3Store._fetch_one

    def timed(store, f):
        sent = time.perf_counter()
        try:
            return fetch(store, f)
        finally:
            with lock:
                marks.append((sent, time.perf_counter()))

    fn()
    rows = {k: [] for k in ("reads", "first sent", "last sent", "first done", "last done",
                            "returned", "after the last read")}
    s3mod.S3Store._fetch_one = timed
    try:
        for _ in range(runs):
            marks.clear()
            t0 = time.perf_counter()
            fn()
            end = time.perf_counter()
            sent, done = [m[0] for m in marks], [m[1] for m in marks]
            rows["reads"].append(len(marks))
            if not marks:
                continue
            for k, v in (("first sent", min(sent)), ("last sent", max(sent)),
                         ("first done", min(done)), ("last done", max(done)), ("returned", end)):
                rows[k].append((v - t0) * 1e3)
            rows["after the last read"].append((end - max(done)) * 1e3)
    finally:
        s3mod.S3Store._fetch_one = fetch
    return {k: statistics.median(v) if v else float("nan") for k, v in rows.items()}


def main():  # pragma: no cover - a one-shot report
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--latency", type=float, default=LATENCY)
    ap.add_argument("--bandwidth", type=float, default=None, help="bytes/s per bucket")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--versions", default=",".join(VERSIONS))
    ap.add_argument("--memory", action="store_true", help="also the scan-memory check")
    ap.add_argument("--floor", action="store_true", help="also the rig's CPU and the floor it sets")
    ap.add_argument("--split", action="store_true",
                    help="also lancefmt's client CPU split: event loop / HTTP threads / others")
    ap.add_argument("--gb", action="store_true", help="also the 1 GB scan at 0 ms latency")
    ap.add_argument("--bytes", action="store_true", help="also the byte path alone (CPU per MB)")
    ap.add_argument("--timeline", action="store_true",
                    help="also when lancefmt's one-column scan sends and gets its reads")
    ap.add_argument("--ops", default="", help="only these operations (comma-separated: open, "
                    "take, full, one-column)")
    args = ap.parse_args()
    versions = args.versions.split(",")
    env = S3Env(args.rows, versions, args.latency, args.bandwidth)
    print(f"{args.rows:,} rows, {args.latency * 1e3:.0f} ms per request"
          + (f", {args.bandwidth / 1e6:.0f} MB/s per bucket" if args.bandwidth else "")
          + f"; best of {args.repeat}, interleaved; store and proxy in other processes")
    if args.bytes:
        for name, per_mb in byte_path(env).items():
            print(f"byte path, 10 x 4 MB at once: {name:>18}: {per_mb:5.2f} ms of client CPU per MB")
        for version in versions:
            for name, cpu in http_clients(env, version).items():
                print(f"{version} {name:>16}: lancefmt client CPU (median) on sockets "
                      f"{cpu['sockets'] * 1e3:5.1f} ms, on aiohttp {cpu['aiohttp'] * 1e3:5.1f} ms")
    for version in versions:
        w = Workload(env, version)
        for name, pair in w.ops().items():
            if args.ops and not any(name.startswith(o.strip()) or o.strip() in name
                                    for o in args.ops.split(",")):
                continue
            ratio = speedup(pair["lancefmt"], pair["pylance"], repeat=args.repeat)
            ours = best_time(pair["lancefmt"], repeat=args.repeat)
            peer = best_time(pair["pylance"], repeat=args.repeat)
            (n_ours, b_ours), (n_peer, b_peer) = env.traffic(pair["lancefmt"]), env.traffic(pair["pylance"])
            print(f"{version} {name:>16}: lancefmt {ours * 1e3:8.1f} ms ({n_ours:4d} req, "
                  f"{b_ours / 1e6:6.1f} MB)  pylance {peer * 1e3:8.1f} ms ({n_peer:4d} req, "
                  f"{b_peer / 1e6:6.1f} MB)  | ratio {ratio:5.2f}")
            c_ours = client_cpu(pair["lancefmt"], args.repeat)
            c_peer = client_cpu(pair["pylance"], args.repeat)
            print(f"{'':>21} client CPU: lancefmt {c_ours * 1e3:6.1f} ms, pylance "
                  f"{c_peer * 1e3:6.1f} ms | ratio {c_peer / max(c_ours, 1e-9):5.2f}")
            if args.floor:
                (rig_o, cli_o), (rig_p, cli_p) = rig_cpu(pair["lancefmt"]), rig_cpu(pair["pylance"])
                floor = ROUND_TRIPS.get(name, 1) * args.latency + min(rig_o, rig_p) / os.cpu_count()
                print(f"{'':>21} rig CPU {rig_o * 1e3:6.1f} / {rig_p * 1e3:6.1f} ms, client CPU "
                      f"{cli_o * 1e3:6.1f} / {cli_p * 1e3:6.1f} ms (lancefmt / pylance); floor "
                      f"{floor * 1e3:6.1f} ms vs pylance / 1.5 = {peer / 1.5 * 1e3:6.1f} ms")
            if args.split:
                loop, http, rest = client_cpu_split(pair["lancefmt"])
                print(f"{'':>21} lancefmt client CPU: event loop {loop * 1e3:6.1f} ms, HTTP "
                      f"threads {http * 1e3:6.1f} ms, other threads {rest * 1e3:6.1f} ms")
        if args.timeline:
            got = scan_timeline(w.projected["lancefmt"], args.repeat)
            print(f"{version} one-column scan timeline (lancefmt, medians, ms from the call): "
                  + ", ".join(f"{k} {v:.1f}" if k != "reads" else f"{v:.0f} reads on the "
                              "calling threads" for k, v in got.items()))
    env.proxy.stop()
    if args.gb:
        for version in versions:
            got = gb_scan(version)
            per = {k: v["bytes"] / v["cpu"] / 1e6 for k, v in got.items()}
            print(f"{version} 1 GB scan, 0 ms: " + "  ".join(
                f"{k} {v['bytes'] / 1e6:.0f} MB in {v['wall']:.2f} s, {v['cpu']:.2f} s CPU "
                f"({per[k]:.0f} MB per CPU second)" for k, v in got.items())
                + f" | ratio {per['lancefmt'] / per['pylance']:.2f}")
    if args.memory:
        for rows in MEMORY_ROWS:
            menv = S3Env(rows, ["2.2"], args.latency, args.bandwidth, fragments=rows // 100_000)
            peak = scan_peak_bytes(menv.uris["2.2"], menv.options)
            print(f"scan memory: {rows:,} rows in {rows // 100_000} fragments: "
                  f"peak {peak / 1e6:.1f} MB held ({rows * 20 / 1e6:.0f} MB of data)")
            menv.proxy.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
