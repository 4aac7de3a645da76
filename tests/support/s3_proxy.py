"""An HTTP proxy in front of an S3 server (moto on loopback) that makes it behave like a remote,
imperfect store: a fixed delay per request, a bandwidth cap per bucket, request counts by kind,
and faults injected on demand. Built on ``aiohttp.web`` (server) and ``aiohttp.ClientSession``
(upstream); it runs its own event loop in a thread, so tests and benchmarks drive it from plain
synchronous code.

Faults (:meth:`S3Proxy.inject`), each for the next ``times`` requests that match:

``slowdown``       503 SlowDown, nothing forwarded
``internal``       500 InternalError, nothing forwarded
``reset``          the connection is reset (RST) before any answer, nothing forwarded
``truncate``       forwarded; the answer announces its full length and stops half way (a request
                   with a body, a PUT: the connection drops half way through the upload)
``short_range``    forwarded; a ranged answer whose body and Content-Length are both cut in half
                   (a well-formed message holding fewer bytes than the range asked)
``lost_response``  forwarded (the upstream applied it: a PUT is stored), then the connection is
                   reset instead of answering
``delay:SECONDS``  forwarded after that long (to run into client timeouts)

Requests are also served path-style when they arrive virtual-hosted (``bucket.host``): the
bucket is taken from the Host header and the request forwarded path-style, and it is counted
with ``virtual_host=True``.
"""
from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import unquote

from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "expect",
        "proxy-connection", "upgrade", "te", "trailer"}
CONTROL = "/__proxy__/"
FAULTS = ("slowdown", "internal", "reset", "truncate", "short_range", "lost_response")

_ERROR_XML = ('<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
              '<Message>{message}</Message><RequestId>proxy</RequestId></Error>')


@dataclass
class Seen:
    """One request as the proxy saw it."""

    method: str
    bucket: str
    key: str
    query: str
    kind: str
    headers: dict
    virtual_host: bool = False
    fault: str | None = None
    status: int | None = None


@dataclass
class _Rule:
    fault: str
    times: int
    method: str | None
    kind: str | None
    path_contains: str | None
    every: int = 1
    served: int = 0
    matched: int = 0

    def matches(self, seen: Seen) -> bool:
        if self.served >= self.times:
            return False
        if self.method and seen.method != self.method:
            return False
        if self.kind and seen.kind != self.kind:
            return False
        if self.path_contains and self.path_contains not in f"/{seen.bucket}/{seen.key}":
            return False
        self.matched += 1
        return (self.matched - 1) % self.every == 0


def request_kind(method: str, key: str, query: dict, headers) -> str:
    """GET, HEAD, PUT, LIST, DELETE, COPY, UPLOAD_PART, CREATE_MULTIPART, COMPLETE_MULTIPART,
    ABORT_MULTIPART, DELETE_MANY (by method, key and query)."""
    if method == "GET":
        return "LIST" if not key else "GET"
    if method == "PUT":
        if "partNumber" in query:
            return "UPLOAD_PART"
        if "x-amz-copy-source" in headers:
            return "COPY"
        return "PUT" if key else "CREATE_BUCKET"
    if method == "POST":
        if "uploads" in query:
            return "CREATE_MULTIPART"
        if "uploadId" in query:
            return "COMPLETE_MULTIPART"
        if "delete" in query:
            return "DELETE_MANY"
        return "POST"
    if method == "DELETE":
        return "ABORT_MULTIPART" if "uploadId" in query else "DELETE"
    return method


class _Pipe:
    """A shared link of ``rate`` bytes/s: every chunk through it waits its turn."""

    def __init__(self, rate: float):
        self.rate = rate
        self._free_at = 0.0
        self._lock = threading.Lock()

    async def send(self, n: int) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._free_at)
            self._free_at = start + n / self.rate
            wait = self._free_at - now
        if wait > 0:
            await asyncio.sleep(wait)


class S3Proxy:
    """See the module docstring. ``latency`` seconds are added to every request; ``bandwidth``
    (bytes/s) caps each bucket's transfers, both directions together."""

    CHUNK = 64 * 1024

    def __init__(self, upstream: str, latency: float = 0.0, bandwidth: float | None = None):
        self.upstream = upstream.rstrip("/")
        self.latency = latency
        self.bandwidth = bandwidth
        self.requests: list[Seen] = []
        self.faults_served: Counter = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.bytes_out = 0  # response bodies sent since the last reset (what a read cost)
        self._rules: list[_Rule] = []
        self._pipes: dict[str, _Pipe] = {}
        self._lock = threading.Lock()
        self._loop = None
        self._thread = None
        self.endpoint = None
        self.port = None

    # -- control (from any thread) -----------------------------------------------------------
    def start(self) -> "S3Proxy":
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(512)
        self.port = sock.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        ready = threading.Event()

        def run():
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            loop.run_until_complete(self._serve(sock))
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._shutdown())
            loop.close()

        self._thread = threading.Thread(target=run, name="s3-proxy", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None

    def reset(self, latency: float | None = None, bandwidth="keep") -> None:
        """Forget the counts and pending faults (and set new delay / bandwidth)."""
        with self._lock:
            self.requests = []
            self.faults_served = Counter()
            self._rules = []
            self.max_in_flight = self.in_flight
            self.bytes_out = 0
            if latency is not None:
                self.latency = latency
            if bandwidth != "keep":
                self.bandwidth = bandwidth
                self._pipes = {}

    def inject(self, fault: str, times: int = 1, *, method: str | None = None,
               kind: str | None = None, path_contains: str | None = None,
               every: int = 1) -> None:
        """``fault`` for the next ``times`` matching requests; with ``every=N``, for the first
        of each N matching requests (``every=2``: every other one) until ``times`` are served."""
        if fault not in FAULTS and not fault.startswith("delay:"):
            raise ValueError(f"unknown fault {fault!r}")
        with self._lock:
            self._rules.append(_Rule(fault, times, method, kind, path_contains, max(1, every)))

    def counts(self, path_contains: str = "") -> Counter:
        """Requests by kind (see :func:`request_kind`), those touching ``path_contains`` only."""
        with self._lock:
            seen = list(self.requests)
        return Counter(s.kind for s in seen if path_contains in f"/{s.bucket}/{s.key}")

    def seen(self, kind: str | None = None, path_contains: str = "") -> list[Seen]:
        with self._lock:
            seen = list(self.requests)
        return [s for s in seen if (kind is None or s.kind == kind)
                and path_contains in f"/{s.bucket}/{s.key}"]

    # -- serving -------------------------------------------------------------------------------
    async def _serve(self, sock):
        self._session = ClientSession(connector=TCPConnector(limit=0), auto_decompress=False,
                                      timeout=ClientTimeout(total=None))
        app = web.Application(client_max_size=1 << 34)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        await web.SockSite(self._runner, sock, backlog=512).start()

    async def _shutdown(self):
        await self._runner.cleanup()
        await self._session.close()

    def _pipe(self, bucket: str):
        if not self.bandwidth:
            return None
        with self._lock:
            pipe = self._pipes.get(bucket)
            if pipe is None:
                pipe = self._pipes[bucket] = _Pipe(self.bandwidth)
        return pipe

    def _parse(self, request) -> tuple[Seen, str]:
        host = request.headers.get("Host", "").split(":")[0]
        path = request.path
        virtual = host not in ("127.0.0.1", "localhost", "") and not host[0].isdigit()
        if virtual:
            bucket = host.split(".")[0]
            key = path.lstrip("/")
            upstream_path = f"/{bucket}/{path.lstrip('/')}"
        else:
            bucket, _, key = path.lstrip("/").partition("/")
            upstream_path = path
        key = unquote(key)
        headers = {k.lower(): v for k, v in request.headers.items()}
        kind = request_kind(request.method, key, request.query, headers)
        return Seen(request.method, bucket, key, request.query_string, kind, headers, virtual), \
            upstream_path

    def _fault_for(self, seen: Seen) -> str | None:
        with self._lock:
            for rule in self._rules:
                if rule.matches(seen):
                    rule.served += 1
                    self.faults_served[rule.fault] += 1
                    return rule.fault
        return None

    async def _handle(self, request: web.Request):
        if request.path.startswith(CONTROL):
            return self._control(request)
        seen, upstream_path = self._parse(request)
        with self._lock:
            self.requests.append(seen)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(request, seen, upstream_path)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _answer(self, request, seen: Seen, upstream_path: str):
        fault = seen.fault = self._fault_for(seen)
        if fault == "truncate" and (request.content_length or 0) > 0:
            # an upload cut short: half the body arrives, then the connection drops
            await request.content.readexactly(request.content_length // 2)
            return self._reset(request)
        body = await request.read()
        pipe = self._pipe(seen.bucket)
        if self.latency:
            await asyncio.sleep(self.latency)
        if pipe is not None and body:
            await pipe.send(len(body))
        if fault == "slowdown":
            return self._error(seen, 503, "SlowDown", "Please reduce your request rate.")
        if fault == "internal":
            return self._error(seen, 500, "InternalError", "We encountered an internal error.")
        if fault == "reset":
            return self._reset(request)
        if fault and fault.startswith("delay:"):
            await asyncio.sleep(float(fault.split(":", 1)[1]))

        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        url = self.upstream + upstream_path + (f"?{request.query_string}" if request.query_string else "")
        async with self._session.request(request.method, url, headers=headers, data=body,
                                         allow_redirects=False) as up:
            payload = await up.read()
            status = up.status
            out_headers = [(k, v) for k, v in up.headers.items() if k.lower() not in _HOP]
        seen.status = status
        if fault == "lost_response":
            return self._reset(request)
        announced = len(payload) if request.method != "HEAD" else int(
            up.headers.get("Content-Length", 0))
        if fault == "short_range" and status == 206:
            payload = payload[:len(payload) // 2]
            announced = len(payload)
        resp = web.StreamResponse(status=status)
        for k, v in out_headers:
            resp.headers.add(k, v)
        resp.content_length = announced
        await resp.prepare(request)
        if request.method == "HEAD":
            await resp.write_eof()
            return resp
        with self._lock:
            self.bytes_out += len(payload)
        if fault == "truncate":
            await resp.write(payload[:len(payload) // 2])
            return self._reset(request)
        for i in range(0, len(payload), self.CHUNK):
            chunk = payload[i:i + self.CHUNK]
            if pipe is not None:
                await pipe.send(len(chunk))
            await resp.write(chunk)
        await resp.write_eof()
        return resp

    def _control(self, request):
        """``/__proxy__/{counts,reset,inject}``: drive a proxy in another process."""
        q = request.query
        op = request.path[len(CONTROL):]
        if op == "reset":
            self.reset(latency=float(q["latency"]) if "latency" in q else None,
                       bandwidth=(float(q["bandwidth"]) or None) if "bandwidth" in q else "keep")
        elif op == "inject":
            self.inject(q["fault"], int(q.get("times", 1)), method=q.get("method"),
                        kind=q.get("kind"), path_contains=q.get("path_contains"),
                        every=int(q.get("every", 1)))
        elif op != "counts":
            return web.Response(status=404)
        return web.json_response({"counts": dict(self.counts(q.get("path_contains", ""))),
                                  "max_in_flight": self.max_in_flight,
                                  "bytes_out": self.bytes_out,
                                  "faults_served": dict(self.faults_served)})

    def _error(self, seen, status, code, message):
        seen.status = status
        return web.Response(status=status, content_type="application/xml",
                            text=_ERROR_XML.format(code=code, message=message))

    @staticmethod
    def _reset(request):
        """Close the connection with a TCP reset, answering nothing (more)."""
        transport = request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            transport.abort()
        raise asyncio.CancelledError  # aiohttp drops the handler quietly; nothing more is sent


@dataclass
class ProxiedS3:
    """A proxy in front of a moto server, and the options to reach it: pylance's names
    (``pylance_options``) and fsspec's (``fsspec_options``)."""

    proxy: S3Proxy
    upstream: str
    extra: dict = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return self.proxy.endpoint

    def pylance_options(self, **more) -> dict:
        return {"aws_access_key_id": "testing", "aws_secret_access_key": "testing",
                "aws_region": "us-east-1", "aws_endpoint": self.endpoint, "allow_http": "true",
                **more}

    def fsspec_options(self, **more) -> dict:
        return {"key": "testing", "secret": "testing", "endpoint_url": self.endpoint,
                "client_kwargs": {"region_name": "us-east-1"}, **more}


def create_bucket(endpoint: str, name: str | None = None) -> str:
    """A new bucket on the S3 server at ``endpoint`` (boto3, straight, not counted)."""
    import uuid

    import boto3

    name = name or f"lancefmt-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                 aws_secret_access_key="testing", region_name="us-east-1").create_bucket(Bucket=name)
    return name


class RemoteProxy:
    """An :class:`S3Proxy` in a child process and its moto server in a grandchild, so that the
    client being measured, the proxy and the store each have their own interpreter (and GIL);
    the same ``counts``, ``reset``, ``inject`` and ``max_in_flight``, over the proxy's control
    path."""

    def __init__(self, latency: float = 0.0, bandwidth: float | None = None):
        import json
        import subprocess
        import sys

        self._proc = subprocess.Popen(
            [sys.executable, __file__, str(latency), str(bandwidth or 0)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        info = json.loads(self._proc.stdout.readline())
        self.endpoint, self.upstream = info["endpoint"], info["upstream"]
        self.port = int(self.endpoint.rsplit(":", 1)[1])
        self.max_in_flight = 0
        self.bytes_out = 0
        self.faults_served: Counter = Counter()

    def _call(self, op, **query):
        import json
        from urllib.parse import urlencode
        from urllib.request import urlopen

        q = urlencode({k: v for k, v in query.items() if v is not None})
        with urlopen(f"{self.endpoint}{CONTROL}{op}?{q}", timeout=30) as r:
            out = json.loads(r.read())
        self.max_in_flight = out["max_in_flight"]
        self.bytes_out = out["bytes_out"]
        self.faults_served = Counter(out["faults_served"])
        return out

    def counts(self, path_contains: str = "") -> Counter:
        return Counter(self._call("counts", path_contains=path_contains)["counts"])

    def reset(self, latency=None, bandwidth="keep") -> None:
        self._call("reset", latency=latency,
                   bandwidth=None if bandwidth == "keep" else (bandwidth or 0))

    def inject(self, fault, times=1, *, method=None, kind=None, path_contains=None,
               every=1) -> None:
        self._call("inject", fault=fault, times=times, method=method, kind=kind,
                   path_contains=path_contains, every=every)

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(10)
            except Exception:  # noqa: BLE001
                self._proc.kill()


def _moto_forever() -> None:  # pragma: no cover - a grandchild
    """moto alone in its own process: the proxy and moto each get an interpreter (and a GIL),
    as a remote store and the network in front of it would."""
    import json
    import sys

    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    print(json.dumps({"upstream": f"http://{host}:{port}"}), flush=True)
    sys.stdin.read()  # until the parent closes it (or dies)
    server.stop()


def _serve_forever(latency: float, bandwidth: float) -> None:  # pragma: no cover - a child
    import json
    import subprocess
    import sys

    moto = subprocess.Popen([sys.executable, __file__, "moto"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        upstream = json.loads(moto.stdout.readline())["upstream"]
        proxy = S3Proxy(upstream, latency=latency, bandwidth=bandwidth or None).start()
        print(json.dumps({"endpoint": proxy.endpoint, "upstream": upstream}), flush=True)
        sys.stdin.read()  # until the parent closes it (or dies)
        proxy.stop()
    finally:
        moto.stdin.close()
        try:
            moto.wait(10)
        except subprocess.TimeoutExpired:
            moto.kill()


if __name__ == "__main__":  # pragma: no cover
    import sys

    if sys.argv[1:] == ["moto"]:
        _moto_forever()
    else:
        _serve_forever(float(sys.argv[1]), float(sys.argv[2]))
