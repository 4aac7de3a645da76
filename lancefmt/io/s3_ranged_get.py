"""Ranged GETs of S3 objects sent past the full client, with URLs presigned by botocore: on
a blocking keep-alive socket that receives the body straight into its bytes (:mod:`.socket_get`,
half aiohttp's client CPU per MB), or through aiohttp where its connector was configured
(``connector_args``) or ``LANCEFMT_S3_HTTP=aiohttp`` asks for it.

Why: a ``GetObject`` through aiobotocore costs about 3 ms of client CPU besides moving its bytes
(endpoint rules, event hooks, parsing every header, the ``Last-Modified`` date). Ten 4 MB ranges
through the latency proxy took 86 ms of CPU that way and 53 ms this way; on two shared cores the
client's CPU is taken from the store's, so a scan or take waits for it.

The request is the same one: botocore presigns the URL (endpoint resolution, addressing style,
region, session token), the only header added is ``Range`` (a presigned URL signs the host
alone), and the answer is checked as before (a short body is never returned; the bytes that did
arrive go with the :class:`~.retry.ShortBody`, so the read can ask for the rest). A URL is reused for
:data:`URL_REUSE` seconds of its :data:`URL_LIFETIME`, inside botocore's refresh margin for
temporary credentials. Retryable failures (5xx, 429, 408, a reset, a body cut short) are raised
for the store's retry policy; any other answer (a redirect to another region, 403, 404...) is
left to the full client (:data:`NOT_HANDLED`), so errors read exactly as before.

Used only where this is the same request: no SSE-C or requester-pays arguments, no proxy (in
the options or the environment), certificates checked as the client checks them, and a SigV4
(or unsigned) URL. botocore presigns with SigV2 unless ``signature_version`` is set, so
:mod:`.options` sets it to ``s3v4`` (what every request was signed with anyway) unless S3
Express is asked for; the URL is sent exactly as signed.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
import weakref
from collections import OrderedDict

from yarl import URL

from .socket_get import SocketGets, executor

URL_LIFETIME = 900        # seconds a presigned URL is valid
URL_REUSE = 300           # seconds one is used for
URL_CACHE = 4096          # objects whose URL is kept
NOT_HANDLED = object()

_CODE = re.compile(rb"<Code>([^<]{1,100})</Code>")
_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
# aiobotocore's connector arguments that mean the same to aiohttp's TCPConnector
_CONNECTOR_ARGS = {"keepalive_timeout", "force_close", "resolver", "use_dns_cache",
                   "ttl_dns_cache"}


def usable(fs_kwargs: dict, read_kwargs) -> bool:
    """Whether a ranged GET may skip the full client for these store arguments."""
    if read_kwargs or fs_kwargs.get("session") is not None:
        return False
    config = fs_kwargs.get("config_kwargs") or {}
    client = fs_kwargs.get("client_kwargs") or {}
    if config.get("proxies") or "verify" in client or any(os.environ.get(v) for v in _PROXY_ENV):
        return False
    return set(config.get("connector_args") or ()) <= _CONNECTOR_ARGS


def _ssl_context(client):
    """Certificates checked against the client's bundle (``AWS_CA_BUNDLE``, the config file's
    ``ca_bundle`` or botocore's own), as the client checks them."""
    import ssl

    from botocore.httpsession import get_cert_path

    verify = getattr(getattr(getattr(client, "_endpoint", None), "http_session", None),
                     "_verify", True)
    if not isinstance(verify, str):
        verify = os.environ.get("AWS_CA_BUNDLE") or get_cert_path(True)
    return ssl.create_default_context(cafile=verify)


def _close(loop, session) -> None:
    """Close ``session`` at exit or when its store goes (as s3fs closes its client): on its
    loop while that runs, else by closing the sockets."""
    if session.closed:
        return
    if loop is not None and loop.is_running():
        if asyncio._get_running_loop() is loop:  # collected on the loop's own thread
            loop.create_task(session.close())
            return
        with contextlib.suppress(Exception):  # shutting down: close the sockets below
            asyncio.run_coroutine_threadsafe(session.close(), loop).result(0.1)
            return
    connector = getattr(session, "_connector", None)
    if connector is not None:
        connector._close()


class RangedGets:
    """One store's presigned URLs and its aiohttp session (one per event loop: a forked Spark
    worker gets its own)."""

    def __init__(self, connect_timeout: float, read_timeout: float | None,
                 connector_args: dict | None = None):
        self._timeouts = (connect_timeout, read_timeout)
        self._connector_args = dict(connector_args or {})
        self._urls: OrderedDict = OrderedDict()
        self._session = None
        self._loop = None
        self._sockets = None
        self.disabled = False
        # the body straight into its bytes on a blocking socket (.socket_get), unless aiohttp
        # is asked for (LANCEFMT_S3_HTTP=aiohttp) or its connector was configured
        self.use_sockets = not self._connector_args and \
            os.environ.get("LANCEFMT_S3_HTTP", "sockets") != "aiohttp"

    def _session_for_loop(self, client, url: str):
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            connect, read = self._timeouts
            ssl = _ssl_context(client) if url.startswith("https:") else None
            session = aiohttp.ClientSession(
                # the store's semaphores bound the requests in flight
                connector=aiohttp.TCPConnector(limit=0, ssl=ssl, **self._connector_args),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read),
                auto_decompress=False, skip_auto_headers={"Content-Type"})
            self._session, self._loop = session, loop
            weakref.finalize(self, _close, loop, session)
        return self._session

    async def _url(self, client, bucket: str, key: str) -> str:
        now = time.monotonic()
        hit = self._urls.get((bucket, key))
        if hit is not None and now - hit[1] < URL_REUSE:
            return hit[0]
        url = await client.generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=URL_LIFETIME)
        if "Signature=" in url and "X-Amz-Algorithm=AWS4-HMAC-SHA256" not in url:
            self.disabled = True  # an old signature scheme: leave every request to the client
            return None
        self._urls[(bucket, key)] = (url, now)
        self._urls.move_to_end((bucket, key))
        while len(self._urls) > URL_CACHE:
            self._urls.popitem(last=False)
        return url

    def _sockets_for(self, client, url: str):
        if self._sockets is None:
            ssl = _ssl_context(client) if url.startswith("https:") else None
            self._sockets = SocketGets(*self._timeouts, ssl)
            weakref.finalize(self, self._sockets.close)
        return self._sockets

    def url_now(self, bucket: str, key: str) -> str | None:
        """The object's presigned URL if one is cached and fresh and the blocking sockets are
        in use (a thread may then send the GET itself, :meth:`get_now`); else None (the GET
        goes through the event loop, which presigns)."""
        if self.disabled or not self.use_sockets or self._sockets is None:
            return None
        hit = self._urls.get((bucket, key))
        if hit is None or time.monotonic() - hit[1] >= URL_REUSE:
            return None
        return hit[0]

    def get_now(self, url: str, bucket: str, key: str, range_header: str, user_agent: str):
        """:meth:`get` on the calling thread, with a URL from :meth:`url_now`."""
        status, fields, body = self._sockets.get(
            url, {"Range": range_header, "User-Agent": user_agent})
        return self._answer(bucket, key, status, body, fields.get("content-range"))

    async def get(self, client, bucket: str, key: str, range_header: str, user_agent: str):
        """``(status, body, Content-Range)`` of a 206, 200 or 416 answer; :data:`NOT_HANDLED`
        for an answer the full client should give; botocore's ``ClientError`` for a retryable error
        answer (5xx, 429, 408), which :mod:`.retry` classifies as it does the client's."""
        url = None if self.disabled else await self._url(client, bucket, key)
        if url is None:
            return NOT_HANDLED
        headers = {"Range": range_header, "User-Agent": user_agent}
        if self.use_sockets:
            status, fields, body = await asyncio.get_running_loop().run_in_executor(
                executor(), self._sockets_for(client, url).get, url, headers)
            return self._answer(bucket, key, status, body, fields.get("content-range"))
        # sent as signed: requoting the path or query (yarl's default) could break the signature
        async with self._session_for_loop(client, url).get(URL(url, encoded=True), headers=headers,
                                                allow_redirects=False) as resp:
            status = resp.status
            if status in (200, 206):
                import aiohttp

                from .retry import ShortBody

                announced = resp.content_length
                chunks = []
                try:
                    async for chunk in resp.content.iter_any():
                        chunks.append(chunk)
                except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as e:
                    got = b"".join(chunks)  # a prefix of the range: kept, the rest asked again
                    raise ShortBody(len(got), announced, got if status == 206 else None) from e
                body = b"".join(chunks)
                if announced is not None and len(body) != announced:
                    raise ShortBody(len(body), announced,
                                    body if status == 206 and len(body) < announced else None)
                return status, body, resp.headers.get("Content-Range")
            body = await resp.read() if status >= 500 or status in (408, 429) else b""
            return self._answer(bucket, key, status, body, None)

    def _answer(self, bucket, key, status, body, content_range):
        """What an answer means for the store (see :meth:`get`)."""
        if status in (200, 206):
            return status, body, content_range
        if status == 416:
            return status, b"", None
        if status >= 500 or status in (408, 429):
            from botocore.exceptions import ClientError

            found = _CODE.search(body)
            code = found.group(1).decode("ascii", "replace") if found else str(status)
            raise ClientError({"Error": {"Code": code, "Message": f"HTTP {status}"},
                               "ResponseMetadata": {"HTTPStatusCode": status}}, "GetObject")
        if status == 403:
            self._urls.pop((bucket, key), None)  # perhaps expired: presign again next time
        return NOT_HANDLED
