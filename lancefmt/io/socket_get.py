"""Ranged GETs on blocking keep-alive sockets, each body received straight into its final bytes.

Why: moving a read's bytes is most of its client CPU on S3 (issue 37: 52 of 61 ms of a 2.0
full scan was aiohttp's event-loop thread). aiohttp receives a body in pieces, each through
its parser, stream reader and the loop's callbacks, and the pieces are joined again; here a
thread sends the request and ``recv_into`` fills the body's ``bytes`` at its announced length
(``_recv.recv_body``): measured on loopback, 0.46 ms of client CPU per MB against 0.9 for
aiohttp (``asv_bench/benchmarks/object_store.py --bytes``). On Linux a plain socket's body
wakes the thread once, not once per arriving segment (``_recv.recv_body_marked``: the receive
mark set to the rest of the body before each ``poll``): a one-column scan of 16 MB in ten GETs
had some 150 context switches and 12 ms of client CPU, now 70 and 9.5. The requests stay on the
store's event loop (its retries and presigned URLs), the exchange itself on a thread
(:meth:`SocketGets.get` through ``run_in_executor``), or on the reading thread itself for a
read's first attempt (``S3Store._fetch_one``).

The exchange is HTTP/1.1 as aiohttp sends it for a presigned URL (Host, Range, User-Agent;
the URL sent as signed). Connections are kept per host and reused; a request on a reused
connection that the server had closed meanwhile (no byte of an answer) is sent again once on a
new one, as aiohttp and urllib3 do for idempotent requests. A body cut short (the peer closes
or resets the connection) is a :class:`~.retry.ShortBody` carrying what arrived; a failure
before the answer is a ``ConnectionError`` or ``TimeoutError``, which :mod:`.retry` retries.
"""
from __future__ import annotations

import errno
import os
import socket
import struct
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from ._recv import recv_body, recv_body_marked
from .retry import ShortBody

MAX_HEAD = 64 * 1024      # bytes of status line and headers accepted
IDLE_PER_HOST = 64        # idle connections kept per host
RECV = 256 * 1024         # bytes asked of the socket at a time for headers and unsized bodies

_pool = None
_pool_lock = threading.Lock()


def executor() -> ThreadPoolExecutor:
    """The threads that run exchanges (at most this many in flight: the stores' semaphores
    keep fewer)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(128, thread_name_prefix="lancefmt-http")
    return _pool


def _forget_after_fork():  # a forked child (a Spark worker) has none of these threads
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


class _Stale(Exception):
    """A reused connection the server had closed: no byte of an answer came."""


class SocketGets:
    """One store's connections: ``get(url, headers)`` -> ``(status, headers, body)``."""

    def __init__(self, connect_timeout: float, read_timeout: float | None, ssl_context=None):
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._ssl = ssl_context
        self._idle: dict = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()
        # a body's wait on a plain socket (_recv.recv_body_marked), as SO_RCVTIMEO bounds recv
        self._wait_ms = int(float(read_timeout) * 1000) if read_timeout else -1

    def close(self) -> None:
        """Close the idle connections (the store is going away)."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for socks in idle.values():
            for sock in socks:
                sock.close()

    def _connect(self, scheme, host, port):
        sock = socket.create_connection((host, port), timeout=self._connect_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if scheme == "https":
                sock = self._ssl.wrap_socket(sock, server_hostname=host)
                sock.settimeout(self._read_timeout)
            else:
                # blocking, the read timeout kept by the kernel (SO_RCVTIMEO): a body is then
                # received by one MSG_WAITALL call instead of a poll and a recv per segment
                sock.settimeout(None)
                if self._read_timeout:
                    whole, frac = divmod(float(self._read_timeout), 1.0)
                    tv = struct.pack("ll", int(whole), int(frac * 1e6))
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
        except BaseException:
            sock.close()
            raise
        return sock

    def _checkout(self, key):
        with self._lock:
            if self._pid != os.getpid():  # sockets inherited by a forked child are not ours
                self._idle, self._pid = {}, os.getpid()
            idle = self._idle.get(key)
            return idle.pop() if idle else None

    def _checkin(self, key, sock):
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < IDLE_PER_HOST and self._pid == os.getpid():
                idle.append(sock)
                return
        sock.close()

    def get(self, url: str, headers: dict):
        """Send ``GET url`` (as signed, ``headers`` added) and read the whole answer."""
        parts = urlsplit(url)
        scheme = parts.scheme
        port = parts.port or (443 if scheme == "https" else 80)
        host = parts.hostname
        key = (scheme, host, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"GET {target} HTTP/1.1", f"Host: {parts.netloc}", "Accept: */*",
                 "Accept-Encoding: identity"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        sock = self._checkout(key)
        if sock is not None:
            try:
                return self._exchange(key, sock, request, reused=True)
            except _Stale:
                pass  # the server closed it while idle: once more on a new connection
        return self._exchange(key, self._connect(scheme, host, port), request, reused=False)

    def _exchange(self, key, sock, request, reused):
        keep = False
        try:
            try:
                sock.sendall(request)
            except OSError as e:
                e = _timeout(e)
                if reused and not isinstance(e, TimeoutError):
                    raise _Stale() from e
                raise e from None
            try:
                status, fields, rest = _read_head(sock)
            except _Stale:
                if reused:
                    raise
                raise ConnectionResetError("the connection closed before an answer") from None
            body, keep = _read_body(sock, status, fields, rest, self._wait_ms)
            return status, fields, body
        finally:
            if keep:
                self._checkin(key, sock)
            else:
                sock.close()


_WAITALL = getattr(socket, "MSG_WAITALL", 0)
# a plain socket's body received after one wake-up (a receive mark, Linux's semantics)
MARKED = sys.platform.startswith("linux") and hasattr(socket, "SO_RCVLOWAT")


def _timeout(e: OSError) -> OSError:
    """A read that ran past SO_RCVTIMEO (EAGAIN on a blocking socket) as a TimeoutError."""
    if isinstance(e, BlockingIOError) or e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
        return TimeoutError(errno.ETIMEDOUT, "timed out")
    return e


def _read_head(sock):
    """Status, lower-cased header fields, and the bytes after the head."""
    buf = b""
    while True:
        try:
            chunk = sock.recv(RECV)
        except OSError as e:
            e = _timeout(e)
            if not buf and not isinstance(e, TimeoutError):
                raise _Stale() from e
            raise e from None
        if not chunk:
            if not buf:
                raise _Stale()
            raise ConnectionResetError("the connection closed inside an answer's head")
        buf += chunk
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            break
        if len(buf) > MAX_HEAD:
            raise ConnectionResetError("an answer's head too long")
    head, rest = buf[:end].decode("latin-1"), buf[end + 4:]
    status_line, *field_lines = head.split("\r\n")
    try:
        version, code = status_line.split(" ", 2)[:2]
        status = int(code)
    except ValueError:
        raise ConnectionResetError(f"not an HTTP answer: {status_line[:80]!r}") from None
    fields = {}
    for line in field_lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    fields[":version"] = version
    return status, fields, rest


def _read_body(sock, status, fields, rest, wait_ms=-1):
    """The body and whether the connection can serve another request."""
    closing = fields.get("connection", "").lower() == "close" or fields[":version"] == "HTTP/1.0"
    length = fields.get("content-length")
    if "chunked" in fields.get("transfer-encoding", "").lower():
        return _read_chunked(sock, rest), not closing
    if length is None or not length.isdigit():
        if status in (204, 304) or 100 <= status < 200:
            return b"", not closing and not rest
        return _read_to_close(sock, rest), False
    n = int(length)
    if len(rest) > n:  # more than the answer: the connection's framing cannot be trusted
        return rest[:n], False
    ranged = status == 206  # what arrived of a 206 is a prefix of the range, kept
    # MSG_WAITALL or a receive mark on plain blocking sockets only (TLS sockets take no flags)
    plain = type(sock) is socket.socket and sock.gettimeout() is None
    try:
        if plain and MARKED:
            body, got = recv_body_marked(sock.fileno(), n, rest, wait_ms)
        else:
            body, got = recv_body(sock, n, rest, _WAITALL if plain else 0)
    except OSError as e:
        got = getattr(e, "received", b"")
        raise ShortBody(len(got), n, got if ranged else None) from _timeout(e)
    if got < n:
        raise ShortBody(got, n, body if ranged else None)
    return body, not closing


def _recv(sock) -> bytes:
    try:
        return sock.recv(RECV)
    except OSError as e:
        raise _timeout(e) from None


def _read_to_close(sock, rest):
    parts = [rest]
    while chunk := _recv(sock):
        parts.append(chunk)
    return b"".join(parts)


def _read_chunked(sock, rest):
    """A chunked body (error answers may come so; data answers carry their length)."""
    buf, out = rest, []

    def need(n):
        nonlocal buf
        while len(buf) < n:
            chunk = _recv(sock)
            if not chunk:
                raise ShortBody(sum(map(len, out)), None)
            buf += chunk

    while True:
        while b"\r\n" not in buf:
            need(len(buf) + 1)
        line, buf = buf.split(b"\r\n", 1)
        size = int(line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while not (buf.startswith(b"\r\n") or b"\r\n\r\n" in buf):
                need(len(buf) + 1)
            return b"".join(out)
        need(size + 2)
        out.append(buf[:size])
        buf = buf[size + 2:]
