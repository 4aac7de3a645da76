"""The S3 store: s3fs builds the client (credentials, region, endpoint, botocore config), and the
requests lancefmt depends on are made here, on that client, under one retry policy
(:mod:`.retry`) with Lance's limits, so that every failure is retried or reported the same way.

Why not s3fs's own methods for reads and writes: s3fs retries a different set of errors (not a
500, not a refused connection) with its own counts, botocore retries under it again, and neither
checks that a ranged read came back whole; a conditional PUT whose response was lost is then
retried into ``412 Precondition Failed`` and reported as "somebody else committed".

Ranged GETs, the bulk of a scan's or take's requests, skip the client's request pipeline where
that sends the same request (:mod:`.s3_ranged_get`: a URL presigned by the client, sent on a
blocking socket that receives the body into its final bytes, :mod:`.socket_get`): about a
third less client CPU per request than the client, and half aiohttp's per MB.

Concurrency: every request of a store runs on fsspec's event loop (one thread, shared by every
s3fs file system of the process), but for the first attempt of a read that is one request,
which the reading thread sends itself (:meth:`S3Store._fetch_one`); :meth:`S3Store.read_many`
sends a whole batch of ranges at once, at most ``io_parallelism`` (64, ``LANCE_IO_THREADS``)
requests of the store in flight and ``LANCE_PROCESS_IO_THREADS_LIMIT`` (128) in the process,
counted by :class:`.permits.Permits` for the loop and those threads together.

Why s3fs's async client rather than ``pyarrow.fs.S3FileSystem`` (``asv_bench/
s3_client_compare.py``: moto behind the proxy at 20 ms per request, in a child process, one
request per range, two shared cores): wall times are within about 25% either way (64 x 4 KiB:
711 vs 544 ms; 256 x 16 KiB: 2.67 vs 2.28 s; 8 x 1 MiB: 98 vs 125 ms; 1 x 12 MiB: 85 vs
104 ms), the server being the bottleneck, but pyarrow spends about a third of the CPU per request
(0.8 vs 2.4 ms). It was not chosen because it cannot do the rest: no ``If-None-Match`` PUT (the
commit), its own retry policy without a deadline or short-body checks, its own option names and
errors; two clients would mean two mappings and two retry layers. If the event-loop thread ever
becomes the limit (some hundreds of requests per second), ``read_many`` is the one place to
move ranged GETs to pyarrow.fs.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import os
import threading
import time
from datetime import datetime, timezone

from ..errors import (
    ConditionalPutUnsupportedError, InvalidArgumentError, LanceError, StorageNotFoundError,
    StoragePermissionError,
)
from .options import DEFAULT_PROCESS_IO_LIMIT, Resolved
from .permits import Permits
from .ranges import plan_reads
from .s3_ranged_get import NOT_HANDLED, RangedGets, usable
from .retry import (
    RetryStats, ShortBody, as_storage_error, classify, error_code, http_status, with_retries,
)
from .store import FileInfo, FsspecStore, ObjectStore, register_family_store
from . import uploads

MIN_PART_SIZE = 5 * 1024 * 1024         # S3's smallest part (but the last)
PARTS_PER_STEP = 100                    # part size doubles every 100 parts (10,000 at most)
MAX_PARTS_IN_FLIGHT = 4                 # uploads of one writer running while it fills the next
DELETE_BATCH = 1000                     # keys per DeleteObjects request

_loop_limits: dict = {}
_loop_limits_lock = threading.Lock()


def _process_limit(loop) -> Permits | None:
    """The process-wide cap on requests in flight (on this event loop, and threads sending
    their own GETs beside it)."""
    sem = _loop_limits.get(id(loop))
    if sem is None:
        with _loop_limits_lock:
            sem = _loop_limits.get(id(loop))
            if sem is None:
                try:
                    n = int(os.environ.get("LANCE_PROCESS_IO_THREADS_LIMIT", DEFAULT_PROCESS_IO_LIMIT))
                except ValueError:
                    n = DEFAULT_PROCESS_IO_LIMIT
                sem = Permits(n) if n > 0 else None
                _loop_limits.clear()  # one loop per process (fsspec's); after a fork, a new one
                _loop_limits[id(loop)] = sem
    return sem


def _content_total(resp) -> int | None:
    """The object's size from a ranged answer's ``Content-Range: bytes a-b/total``."""
    return _total_of(resp.get("ContentRange"))


def _total_of(cr: str | None) -> int | None:
    if cr and "/" in cr:
        total = cr.rsplit("/", 1)[1]
        if total.isdigit():
            return int(total)
    return None


_BODY_CHUNK = 1 << 20


async def _read_body(resp) -> bytes:
    """The whole body of a GetObject answer, as long as it announced; a body cut short is a
    :class:`ShortBody` carrying the bytes that did arrive."""
    body = resp["Body"]
    announced = resp.get("ContentLength")
    chunks = []
    try:
        while chunk := await body.read(_BODY_CHUNK):
            chunks.append(chunk)
    except Exception as e:  # noqa: BLE001 - a transport failure mid-body is a short body
        if classify(e) is None:
            raise
        got = b"".join(chunks)
        raise ShortBody(len(got), announced, got) from e
    finally:
        body.close()
    data = b"".join(chunks)
    if announced is not None and len(data) != announced:
        raise ShortBody(len(data), announced, data if len(data) < announced else None)
    return data


def _lean_answer(got):
    """:meth:`S3Store._ranged_get`'s answer from the lean path's ``(status, body, range)``."""
    status, data, content_range = got
    if status == 416:
        return None
    return data, None if status == 200 else _total_of(content_range)


def _range_data(got, at: int, end: int, kept: list) -> bytes:
    """The bytes ``[start, end)`` of a ranged read from the answer to ``bytes=at-(end-1)``
    (``kept``: what earlier answers cut short gave, ``start`` to ``at``); a short answer is
    a :class:`ShortBody`, its bytes added to ``kept``."""
    if got is None:
        if kept:  # the object ended before the bytes already received
            raise ShortBody(0, end - at)
        return b""  # starts at or past the end, as pread
    data, total = got
    if total is None:  # the server ignored Range: the whole object came back
        data = data[at:end]
    elif len(data) < (expected := max(0, min(end, total) - at)):
        if data:
            kept.append(data)
        raise ShortBody(len(data), expected)
    else:
        data = _exactly(data, expected)
    return b"".join(kept) + data if kept else data


def _range_answer(got, start: int, end: int, kept: list) -> bytes:
    """:func:`_range_data` of a lean answer taken on a thread (:meth:`S3Store._fetch_one`)."""
    return _range_data(_lean_answer(got), start, end, kept)


def _exactly(data: bytes, expected: int) -> bytes:
    """``data``, which must be ``expected`` bytes long (a short body is retried, never used)."""
    if len(data) != expected:
        raise ShortBody(len(data), expected)
    return data


def fix_user_agent(client) -> str:
    """Compute the client's User-Agent header once instead of twice per request.

    botocore rebuilds the string from its components (sanitising each) for every request and
    again just before sending it: about 2 ms of CPU per request, half of what a small ranged GET
    costs us. The string only changes with botocore's per-feature usage metrics, which a store
    that makes the same few calls does not need fresh. Left alone where botocore's internals
    differ from what this expects. Returns the string (ranged GETs sent past the client carry
    it too)."""
    creator = getattr(client, "_user_agent_creator", None)
    build = getattr(creator, "to_string", None)
    fallback = getattr(getattr(client, "meta", None), "config", None)
    fallback = getattr(fallback, "user_agent", None) or "botocore"
    if build is None:
        return fallback
    try:
        fixed = build()
    except Exception:  # noqa: BLE001 - an unexpected botocore: keep its own behaviour
        return fallback
    if isinstance(fixed, str):
        creator.to_string = lambda: fixed
        return fixed
    return fallback


class S3Store(FsspecStore):
    """``s3://`` through s3fs's client; see the module docstring."""

    def __init__(self, protocol: str, storage_options: dict | None, resolved: Resolved):
        ObjectStore.__init__(self, protocol, storage_options)
        self.settings = resolved.settings
        self._fs_kwargs = resolved.fs_kwargs
        self._fs = None
        self._pid = None
        self._fs_lock = threading.Lock()
        self._tuned_client = None
        self._user_agent = "botocore"
        self._slots: dict = {}
        self.stats = RetryStats()
        self._read_kw = dict(self.settings.read_kwargs)
        self._write_kw = dict(self.settings.write_kwargs)
        config = self._fs_kwargs.get("config_kwargs") or {}
        self._ranged = RangedGets(self.settings.connect_timeout, config.get("read_timeout"),
                                  config.get("connector_args")) \
            if usable(self._fs_kwargs, self._read_kw) else None
        self.fs  # build the client now: bad arguments fail at open, not at the first read

    # -- the client ----------------------------------------------------------------------------
    @property
    def fs(self):
        """This process's s3fs file system (a forked child builds its own)."""
        if self._fs is None or self._pid != os.getpid():
            with self._fs_lock:
                if self._fs is None or self._pid != os.getpid():
                    import s3fs

                    try:
                        fs = s3fs.S3FileSystem(skip_instance_cache=True, **self._fs_kwargs)
                    except (TypeError, ValueError, KeyError) as e:
                        raise InvalidArgumentError(
                            f"storage options for {self.protocol}:// refused by s3fs: {e}") from e
                    fs.retries = 1  # the store retries (see .retry); s3fs would multiply it
                    self._fs, self._pid, self._slots = fs, os.getpid(), {}
        return self._fs

    def _run(self, coro_fn, *args):
        from fsspec.asyn import sync

        fs = self.fs
        return sync(fs.loop, coro_fn, *args)

    async def _client(self):
        client = await self.fs.set_session()
        if client is not self._tuned_client:
            self._user_agent = fix_user_agent(client)
            self._tuned_client = client
        return client

    def _permits(self, loop) -> Permits:
        sem = self._slots.get(id(loop))
        if sem is None:
            sem = self._slots.setdefault(id(loop), Permits(self.settings.io_parallelism))
        return sem

    def _slot(self):
        """An async context manager for one request: the store's and the process's caps."""
        loop = asyncio.get_running_loop()
        sem = self._permits(loop)
        proc = _process_limit(loop)

        @contextlib.asynccontextmanager
        async def held():
            await sem.acquire()
            try:
                if proc is None:
                    yield
                else:
                    await proc.acquire()
                    try:
                        yield
                    finally:
                        proc.release()
            finally:
                sem.release()

        return held()

    def _check_credentials(self, operation, uri):
        expires = self.settings.expires_at
        if expires is not None and time.time() >= expires:
            when = datetime.fromtimestamp(expires, timezone.utc).isoformat(timespec="seconds")
            raise StoragePermissionError(
                operation, uri, f"the credentials in storage_options expired at {when} "
                "(expires_at_millis); open it again with fresh storage_options")

    async def _call(self, operation, uri, attempt, **kw):
        self._check_credentials(operation, uri)
        return await with_retries(attempt, operation, uri, self.settings, self.stats,
                                  slot=self._slot, **kw)

    def _bucket_key(self, uri: str) -> tuple[str, str]:
        path = self._path(uri)
        bucket, _, key = path.partition("/")
        return bucket, key

    # -- reads -----------------------------------------------------------------------------------
    def read(self, uri):
        uploads.settle([uri])
        return self._run(self._read_whole, uri)

    async def _read_whole(self, uri):
        bucket, key = self._bucket_key(uri)

        async def attempt():
            s3 = await self._client()
            resp = await s3.get_object(Bucket=bucket, Key=key, **self._read_kw)
            return await _read_body(resp)

        return await self._call("read", uri, attempt)

    def read_range(self, uri, start, length):
        if start < 0 or length < 0:
            raise ValueError("negative range")
        if length == 0:
            return b""
        return self.read_many([(uri, start, length)])[0]

    def read_ranges(self, uri, ranges):
        return self.read_many([(uri, s, n) for s, n in ranges])

    def read_many(self, requests):
        """The bytes of each ``(uri, start, length)``, in the order asked, fetched concurrently
        (see :meth:`ObjectStore.read_many`)."""
        requests = list(requests)
        if not requests:
            return []
        uploads.settle({r[0] for r in requests})
        plan = plan_reads(requests, self.settings.coalesce_gap, self.settings.max_iop_size)
        if not plan.fetches:
            return [b""] * len(requests)
        if len(plan.fetches) == 1:
            fetched = [self._fetch_one(plan.fetches[0])]
        else:
            fetched = self._run(self._fetch_all, plan.fetches)
        return plan.assemble(fetched)

    def _fetch_one(self, f):
        """One range, its first attempt sent by the calling thread itself where it can be.

        Why: through the event loop a GET wakes four threads (the caller, the loop, a socket
        thread, the loop again, then the caller), the GIL handed between them: on a one-column
        scan that was a third of the client's CPU. The same request goes out here on the
        blocking keep-alive socket, under the same caps (:class:`.permits.Permits`, never
        waited for: without a free permit the read goes to the loop, which queues). A first
        failure goes to the loop as that range's first attempt (:func:`.retry.with_retries`
        ``first``): the same retries, sleeps, resumes and errors as a read sent from there.
        Sent from the loop instead: no fresh presigned URL yet (the loop presigns), the
        aiohttp client, or a call made on the loop's own thread."""
        ranged = self._ranged
        if ranged is None:
            return self._run(self._get_range, f.uri, f.start, f.end)
        loop = self.fs.loop
        bucket, key = self._bucket_key(f.uri)
        url = ranged.url_now(bucket, key)
        if url is None or asyncio._get_running_loop() is not None:
            return self._run(self._get_range, f.uri, f.start, f.end)
        self._check_credentials("read_range", f.uri)
        sem, proc = self._permits(loop), _process_limit(loop)
        if not sem.try_acquire():
            return self._run(self._get_range, f.uri, f.start, f.end)
        if proc is not None and not proc.try_acquire():
            sem.release()
            return self._run(self._get_range, f.uri, f.start, f.end)
        kept = []
        began = time.monotonic()
        try:
            try:
                got = ranged.get_now(url, bucket, key, f"bytes={f.start}-{f.end - 1}",
                                     self._user_agent)
            finally:
                if proc is not None:
                    proc.release()
                sem.release()
            if got is NOT_HANDLED:  # an answer the full client gives (403, 404, a redirect)
                return self._run(self._get_range, f.uri, f.start, f.end, None, None, False)
            timeout = self.settings.request_timeout
            if timeout and time.monotonic() - began > timeout:  # as wait_for on the loop
                raise asyncio.TimeoutError()
            data = _range_answer(got, f.start, f.end, kept)
        except ShortBody as e:
            if e.data:
                kept.append(e.data)
            return self._run(self._get_range, f.uri, f.start, f.end, e, kept)
        except Exception as e:  # noqa: BLE001 - the loop's retry policy judges it
            return self._run(self._get_range, f.uri, f.start, f.end, e, kept)
        self.stats.add("attempts")
        return data

    async def _fetch_all(self, fetches):
        if len(fetches) == 1:
            f = fetches[0]
            return [await self._get_range(f.uri, f.start, f.end)]
        return await asyncio.gather(*(self._get_range(f.uri, f.start, f.end) for f in fetches))

    async def _ranged_get(self, s3, bucket, key, range_header, lean=True):
        """One ranged GET (the lean path where it applies and ``lean``, else the client):
        ``(body, object size)``, the size None when the server ignored Range and sent the whole
        object; None when the range starts at or past the end (416)."""
        if self._ranged is not None and lean:
            got = await self._ranged.get(s3, bucket, key, range_header, self._user_agent)
            if got is not NOT_HANDLED:
                return _lean_answer(got)
        try:
            resp = await s3.get_object(Bucket=bucket, Key=key, Range=range_header,
                                       **self._read_kw)
        except Exception as e:  # noqa: BLE001
            if http_status(e) == 416 or error_code(e) == "InvalidRange":
                return None
            raise
        total = _content_total(resp)
        return await _read_body(resp), total

    async def _get_range(self, uri, start, end, first=None, kept=None, lean=True):
        """Bytes ``[start, end)`` (fewer only where the object ends first); a body shorter than
        that is resumed from the bytes received (then started over: :mod:`.retry`) and then an
        error naming the range, never returned. ``first``, ``kept``: how the first attempt,
        made by the caller's thread (:meth:`_fetch_one`), failed and the bytes it kept;
        ``lean=False``: it had an answer for the full client, which the next attempt asks."""
        bucket, key = self._bucket_key(uri)
        kept = [] if kept is None else kept  # the range's first bytes, from answers cut short
        client_next = [not lean]

        async def attempt():
            at = start + sum(map(len, kept))
            lean_now, client_next[0] = not client_next[0], False
            try:
                got = await self._ranged_get(await self._client(), bucket, key,
                                             f"bytes={at}-{end - 1}", lean_now)
            except ShortBody as e:
                if e.data:
                    kept.append(e.data)
                raise
            return _range_data(got, at, end, kept)

        return await self._call("read_range", uri, attempt, resume=kept.clear,
                                what=f"bytes {start}-{end - 1}", first=first)

    def read_tail(self, uri, n, size=None):
        if size is not None or n <= 0:
            return super().read_tail(uri, n, size)
        uploads.settle([uri])
        return self._run(self._tail, uri, n)

    async def _tail(self, uri, n):
        """The last ``n`` bytes and the size, from one suffix-range request."""
        bucket, key = self._bucket_key(uri)

        async def attempt():
            got = await self._ranged_get(await self._client(), bucket, key, f"bytes=-{n}")
            if got is None:
                return None  # an empty object
            data, total = got
            if total is None:
                return data[-n:], len(data)
            return _exactly(data, min(n, total)), total

        out = await self._call("read_tail", uri, attempt)
        if out is None:
            return b"", await self._size(uri)
        return out

    async def _head(self, uri):
        bucket, key = self._bucket_key(uri)

        async def attempt():
            s3 = await self._client()
            return await s3.head_object(Bucket=bucket, Key=key, **self._read_kw)

        return await self._call("head", uri, attempt)

    async def _size(self, uri):
        return int((await self._head(uri))["ContentLength"])

    def size(self, uri):
        uploads.settle([uri])
        return self._run(self._size, uri)

    def exists(self, uri):
        uploads.settle([uri])
        try:
            self._run(self._head, uri)
        except StorageNotFoundError:
            return False
        return True

    # -- listing ----------------------------------------------------------------------------------
    async def _list_pages(self, operation, uri, prefix_key, bucket, delimiter, limit=None):
        token = None
        while True:
            kw = {"Bucket": bucket, "Prefix": prefix_key}
            if delimiter:
                kw["Delimiter"] = delimiter
            if limit:
                kw["MaxKeys"] = int(limit)
            if token:
                kw["ContinuationToken"] = token

            async def attempt(kw=kw):
                s3 = await self._client()
                return await s3.list_objects_v2(**kw)

            resp = await self._call(operation, uri, attempt)
            yield resp
            token = resp.get("NextContinuationToken")
            if not resp.get("IsTruncated") or not token or limit:
                return

    def list(self, uri):
        bucket, key = self._bucket_key(uri)
        prefix = key.rstrip("/") + "/" if key.strip("/") else ""

        async def collect():
            out = []
            async for resp in self._list_pages("list", uri, prefix, bucket, "/"):
                for p in resp.get("CommonPrefixes", []):
                    name = p["Prefix"][len(prefix):].rstrip("/")
                    if name:
                        out.append(FileInfo(self._uri(f"{bucket}/{p['Prefix'].rstrip('/')}"),
                                            name, 0, True, None))
                for o in resp.get("Contents", []):
                    name = o["Key"][len(prefix):]
                    if not name or name.endswith("/"):
                        continue
                    out.append(_info(self, bucket, o, name))
            return out

        return self._run(collect)

    def list_sorted_page(self, uri, limit=1000):
        bucket, key = self._bucket_key(uri)
        prefix = key.rstrip("/") + "/"

        async def one():
            async for resp in self._list_pages("list", uri, prefix, bucket, "/", limit):
                return resp

        resp = self._run(one)
        out = [_info(self, bucket, o, o["Key"][len(prefix):]) for o in resp.get("Contents", [])
               if o["Key"][len(prefix):]]
        return out, not resp.get("IsTruncated", False)

    def walk(self, uri):
        bucket, key = self._bucket_key(uri)
        prefix = key.rstrip("/") + "/" if key.strip("/") else ""

        async def collect():
            out = []
            async for resp in self._list_pages("walk", uri, prefix, bucket, None):
                for o in resp.get("Contents", []):
                    if o["Key"].endswith("/"):
                        continue
                    out.append(_info(self, bucket, o, o["Key"].rsplit("/", 1)[-1]))
            return out

        yield from self._run(collect)

    # -- writes ----------------------------------------------------------------------------------
    async def _put(self, uri, data, **extra):
        bucket, key = self._bucket_key(uri)

        async def attempt():
            s3 = await self._client()
            return await s3.put_object(Bucket=bucket, Key=key, Body=data, **self._write_kw, **extra)

        return await self._call("put", uri, attempt)

    def put(self, uri, data):
        self._run(self._put, uri, bytes(data))

    def put_if_absent(self, uri, data):
        if not self.settings.conditional_put:
            raise ConditionalPutUnsupportedError(
                f"conditional puts are disabled for {uri} (storage option conditional_put="
                "disabled); commit through an external manifest store")
        return self._run(self._put_if_absent, uri, bytes(data))

    async def _put_if_absent(self, uri, data):
        """``PUT`` with ``If-None-Match: *``. A 412 may answer a retry of our own PUT whose first
        response was lost (a retry of ours, or aiohttp's own silent resend on a dropped
        keep-alive connection, which nothing above it can see): so the object is read back and
        compared, and a commit is never reported lost when it was made (nor made again by the
        caller at the next version). Manifests carry their transaction's UUID, so equal bytes
        mean ours; for identical tag or branch files two writers both "create" the same
        content, which leaves the same result."""
        bucket, key = self._bucket_key(uri)

        async def attempt():
            s3 = await self._client()
            try:
                await s3.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*",
                                    **self._write_kw)
                return True
            except Exception as e:  # noqa: BLE001
                if http_status(e) == 412 or error_code(e) == "PreconditionFailed":
                    return False
                raise

        # 409 ConditionalRequestConflict: a concurrent conditional write to the key; S3 asks
        # for a retry, which then sees who won
        if await self._call("put_if_absent", uri, attempt, retry_statuses=(409,)):
            return True
        self.stats.add("put_if_absent_readback")
        try:
            current = await self._read_whole(uri)
        except StorageNotFoundError:
            return False
        if current == data:
            self.stats.add("put_if_absent_recognised")
            return True
        return False

    def put_durable(self, uri, data):
        self.put(uri, data)

    def delete(self, uri, missing_ok=True):
        if not missing_ok and not self.exists(uri):
            raise StorageNotFoundError("delete", uri, "no such object")
        uploads.settle([uri])  # an upload finishing after the delete would leave an orphan
        bucket, key = self._bucket_key(uri)

        async def run():
            async def attempt():
                s3 = await self._client()
                try:
                    return await s3.delete_object(Bucket=bucket, Key=key)
                except Exception as e:  # noqa: BLE001
                    if http_status(e) == 404:
                        return None
                    raise

            return await self._call("delete", uri, attempt)

        self._run(run)
        uploads.forget([uri])

    def delete_many(self, uris):
        uris = [u for u in uris]
        if not uris:
            return
        uploads.settle(uris)
        if not self.settings.bulk_delete:
            async def each():
                await asyncio.gather(*(self._delete_one(u) for u in uris))

            self._run(each)
            uploads.forget(uris)
            return
        by_bucket: dict = {}
        for u in uris:
            b, k = self._bucket_key(u)
            by_bucket.setdefault(b, []).append(k)

        async def batch(bucket, keys):
            async def attempt():
                s3 = await self._client()
                return await s3.delete_objects(
                    Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True})

            first = self._uri(f"{bucket}/{keys[0]}")
            resp = await self._call("delete_many", first, attempt)
            errors = [e for e in resp.get("Errors", []) if e.get("Code") != "NoSuchKey"]
            if errors:
                e = errors[0]
                raise as_storage_error(_S3Answer(e.get("Code"), e.get("Message")), "delete_many",
                                       self._uri(f"{bucket}/{e.get('Key')}"))

        async def run():
            await asyncio.gather(*(batch(b, keys[i:i + DELETE_BATCH])
                                   for b, keys in by_bucket.items()
                                   for i in range(0, len(keys), DELETE_BATCH)))

        self._run(run)
        uploads.forget(uris)

    async def _delete_one(self, uri):
        bucket, key = self._bucket_key(uri)

        async def attempt():
            s3 = await self._client()
            return await s3.delete_object(Bucket=bucket, Key=key)

        await self._call("delete", uri, attempt)

    def abort_stale_uploads(self, uri, before, dry_run=False):
        bucket, key = self._bucket_key(uri)
        prefix = key.rstrip("/") + "/" if key.strip("/") else ""

        async def collect():
            out, kw = [], {"Bucket": bucket, "Prefix": prefix}
            while True:
                async def attempt(kw=dict(kw)):
                    s3 = await self._client()
                    return await s3.list_multipart_uploads(**kw)

                resp = await self._call("list", uri, attempt)
                out += [(u["Key"], u["UploadId"]) for u in resp.get("Uploads", [])
                        if u["Initiated"].timestamp() < before]
                if not resp.get("IsTruncated"):
                    return out
                kw.update(KeyMarker=resp["NextKeyMarker"], UploadIdMarker=resp["NextUploadIdMarker"])

        stale = self._run(collect)
        if not dry_run:
            async def abort(k, upload_id):
                async def attempt():
                    s3 = await self._client()
                    return await s3.abort_multipart_upload(Bucket=bucket, Key=k, UploadId=upload_id)

                return await self._call("abort", self._uri(f"{bucket}/{k}"), attempt)

            for k, upload_id in stale:
                self._run(abort, k, upload_id)
        return [self._uri(f"{bucket}/{k}") for k, _ in stale]

    def copy(self, src, dst):
        uploads.settle([src, dst])
        sb, sk = self._bucket_key(src)
        db, dk = self._bucket_key(dst)
        source_kw = {f"CopySource{k}": v for k, v in self._read_kw.items()
                     if k.startswith("SSECustomer")}

        async def run():
            async def attempt():
                s3 = await self._client()
                return await s3.copy_object(Bucket=db, Key=dk, CopySource={"Bucket": sb, "Key": sk},
                                            **self._write_kw, **source_kw)

            try:
                return await self._call("copy", src, attempt)
            except Exception as e:  # noqa: BLE001 - over 5 GiB: s3fs's managed multipart copy
                if "larger than the maximum" not in str(e):
                    raise

                async def managed():
                    return await self.fs._copy(self._path(src), self._path(dst))

                return await self._call("copy", src, managed)

        self._run(run)

    def open_output(self, uri):
        return _S3Writer(self, uri)

    def open_input(self, uri):
        """A buffered, seekable reader whose reads are this store's ranged reads (so retried
        and checked like every other read)."""
        return io.BufferedReader(_S3Input(self, uri, self.size(uri)), buffer_size=1 << 20)


class _S3Input(io.RawIOBase):
    def __init__(self, store: S3Store, uri: str, size: int):
        super().__init__()
        self.store, self.uri, self._size, self._pos = store, uri, size, 0
        self.name = uri

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buf):
        n = min(len(buf), max(0, self._size - self._pos))
        if n == 0:
            return 0
        data = self.store.read_range(self.uri, self._pos, n)
        buf[:len(data)] = data
        self._pos += len(data)
        return len(data)


class _S3Answer(Exception):
    """An error reported inside a successful answer (a key DeleteObjects could not delete)."""

    def __init__(self, code, message):
        super().__init__(message or code)
        self.response = {"Error": {"Code": code, "Message": message},
                         "ResponseMetadata": {"HTTPStatusCode": 403 if code == "AccessDenied" else 500}}


def _info(store, bucket, o, name) -> FileInfo:
    modified = o.get("LastModified")
    return FileInfo(store._uri(f"{bucket}/{o['Key']}"), name, int(o.get("Size") or 0), False,
                    modified.timestamp() if modified is not None else None)


def _multipart_etag(part_etags: list[str]) -> str:
    digest = hashlib.md5(b"".join(bytes.fromhex(e.strip('"')) for e in part_etags))
    return f'"{digest.hexdigest()}-{len(part_etags)}"'


class _S3Writer:
    """A data file being written: buffered, sent as one PUT if it stays under a part, else as a
    multipart upload whose parts go out while the next one fills (at most
    ``MAX_PARTS_IN_FLIGHT``); every request under the store's retries. The object appears whole
    at :meth:`close`, or once the last request :meth:`close_later` starts in the background has
    finished (see :mod:`.uploads`), or not at all (:meth:`abort`, or a failed upload)."""

    def __init__(self, store: S3Store, uri: str):
        self.store, self.uri = store, uri
        self.bucket, self.key = store._bucket_key(uri)
        self._buf = bytearray()
        self._pos = 0
        self._upload_id = None
        self._create = None             # future of CreateMultipartUpload (not waited for)
        self._parts: list = []          # futures of (PartNumber, ETag), in order
        self.closed = False
        self._started = time.time()

    def _part_size(self) -> int:
        return MIN_PART_SIZE << (len(self._parts) // PARTS_PER_STEP)

    def write(self, data) -> int:
        if self.closed:
            raise ValueError("write to a closed writer")
        n = len(data)
        self._buf += data
        self._pos += n
        while len(self._buf) >= self._part_size():
            size = self._part_size()
            self._send_part(bytes(self._buf[:size]))
            del self._buf[:size]
        return n

    def tell(self) -> int:
        return self._pos

    def _send_part(self, chunk: bytes) -> None:
        store = self.store
        if self._create is None:  # the first part waits for it on the loop, not the writer
            async def create():
                async def attempt():
                    s3 = await store._client()
                    return await s3.create_multipart_upload(Bucket=self.bucket, Key=self.key,
                                                            **store._write_kw)

                return await store._call("open_output", self.uri, attempt)

            self._create = asyncio.run_coroutine_threadsafe(create(), store.fs.loop)
        in_flight = [f for f in self._parts if not f.done()]
        if len(in_flight) >= MAX_PARTS_IN_FLIGHT:
            in_flight[0].result()
        number = len(self._parts) + 1
        part_kw = {k: v for k, v in store._write_kw.items()
                   if k.startswith("SSECustomer") or k in ("ChecksumAlgorithm", "RequestPayer")}

        async def upload():
            upload_id = await self._await_upload_id()

            async def attempt():
                s3 = await store._client()
                return await s3.upload_part(Bucket=self.bucket, Key=self.key,
                                            UploadId=upload_id, PartNumber=number,
                                            Body=chunk, **part_kw)

            resp = await store._call("write", self.uri, attempt)
            return {"PartNumber": number, "ETag": resp["ETag"]}

        self._parts.append(asyncio.run_coroutine_threadsafe(upload(), store.fs.loop))

    async def _await_upload_id(self) -> str:
        if self._upload_id is None:
            self._upload_id = (await asyncio.wrap_future(self._create))["UploadId"]
        return self._upload_id

    def close(self) -> None:
        """Finish the upload; the object is in place when this returns."""
        if self.closed:
            return
        self.close_later()
        uploads.finish(self.uri)

    def close_later(self) -> None:
        """Hand the last request(s) to the event loop and return: the object appears when they
        finish, which :func:`.uploads.wait_uploads` (every commit's barrier) waits for. For
        data files of a write that commits (or hands them to a committer) after a barrier."""
        if self.closed:
            return
        try:
            if self._create is not None and (self._buf or not self._parts):
                self._send_part(bytes(self._buf))
        except BaseException:
            self.abort()
            raise
        data = bytes(self._buf) if self._create is None else None
        self._buf = bytearray()
        self.closed = True
        future = asyncio.run_coroutine_threadsafe(self._finish(data), self.store.fs.loop)
        uploads.start(self.uri, future)

    async def _finish(self, data):
        try:
            if self._create is None:
                await self.store._put(self.uri, data)
            else:
                parts = [await asyncio.wrap_future(f) for f in self._parts]
                await self._complete(parts)
        except BaseException:
            for f in self._parts:
                f.cancel()
            await self._abort_upload()
            raise

    async def _complete(self, parts):
        store = self.store
        await self._await_upload_id()
        tries = [0]

        async def attempt():
            tries[0] += 1
            s3 = await store._client()
            try:
                return await s3.complete_multipart_upload(
                    Bucket=self.bucket, Key=self.key, UploadId=self._upload_id,
                    MultipartUpload={"Parts": parts})
            except Exception as e:  # noqa: BLE001
                if tries[0] > 1 and (http_status(e) == 404 or error_code(e) == "NoSuchUpload"):
                    return "check"  # an earlier attempt may have completed it (lost response)
                raise

        out = await store._call("close", self.uri, attempt)
        if out != "check":
            return
        head = await store._head(self.uri)
        if head.get("ETag") == _multipart_etag([p["ETag"] for p in parts]):
            return
        modified = head.get("LastModified")
        if (int(head.get("ContentLength", -1)) == self._pos and modified is not None
                and modified.timestamp() >= self._started - 1):
            return
        raise StorageNotFoundError("close", self.uri, "the multipart upload vanished before "
                                   "it was completed")

    def abort(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._buf = bytearray()
        if self._create is None:
            return
        for f in self._parts:
            f.cancel()
        self.store._run(self._abort_upload)

    async def _abort_upload(self):
        """Abort the multipart upload, if one was created (best effort: a lifecycle rule
        removes stale uploads)."""
        if self._create is None:
            return
        try:
            await self._await_upload_id()
        except Exception:  # noqa: BLE001 - never created: nothing to abort
            return
        store = self.store

        async def attempt():
            s3 = await store._client()
            return await s3.abort_multipart_upload(Bucket=self.bucket, Key=self.key,
                                                   UploadId=self._upload_id)

        try:
            await store._call("abort", self.uri, attempt)
        except (OSError, LanceError):
            pass

    discard = abort

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()


register_family_store("s3", S3Store)
