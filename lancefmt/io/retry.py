"""Retries for remote stores, as Rust ``object_store`` (under pylance) does them, and the one place
that turns a client library's exception into a :class:`~lancefmt.errors.StorageError`.

What is retried (``object_store`` ``client/retry.rs``): 5xx answers, 429, 408, S3's ``SlowDown``
and ``RequestTimeout`` codes, connection errors (refused, reset, closed mid-response) and
timeouts. Not retried: other 4xx answers (403, 404, 412...), which no second attempt changes.

Budgets, as in Lance: a request is retried at most ``client_max_retries`` times and not after
``client_retry_timeout`` seconds from its first attempt. A ranged read whose *body* came back cut
short (reset mid-body, fewer bytes than it announced or than the range asked for) keeps the
bytes it got and asks for the rest, up to ``body_resumes`` times (``object_store``'s streaming
retry: pylance re-requests ``bytes=received-end``); then the range starts over, at most
``download_retry_count`` times (lance-io ``CloudObjectReader``'s outer loop). Other reads start
over at once. Every range has its own counts. Sleeps are exponential with decorrelated jitter
(``object_store``'s ``BackoffConfig``: a random time between 100 ms and twice the previous one,
capped at 15 s); unlike ``object_store``, the first sleep is jittered too (50-150 ms), so ranges
cut by one fault do not all come back at the same instant.
"""
from __future__ import annotations

import asyncio
import errno as _errno
import random
import time
from collections import Counter

from ..errors import (
    StorageError, StorageNotFoundError, StoragePermissionError, storage_error,
)
from .options import StoreSettings

INIT_BACKOFF = 0.1
MAX_BACKOFF = 15.0
BACKOFF_BASE = 2.0

_RETRY_CODES = {"SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable",
                "Throttling", "ThrottlingException", "RequestLimitExceeded",
                "TooManyRequestsException", "ProvisionedThroughputExceededException"}
_NOT_FOUND_CODES = {"NoSuchKey", "NoSuchBucket", "NotFound", "404", "NoSuchUpload"}
_DENIED_CODES = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
                 "InvalidToken", "AllAccessDisabled", "403", "401"}


class ShortBody(Exception):
    """A response body shorter than announced or than the range asked for (never returned as
    such); ``data``: the bytes that did arrive, when they are a prefix of what was asked."""

    def __init__(self, got: int, expected: int | None, data: bytes | None = None):
        of = f" of {expected}" if expected is not None else ""
        super().__init__(f"short read: the response held {got}{of} bytes")
        self.got, self.expected, self.data = got, expected, data


class Backoff:
    """``object_store``'s decorrelated-jitter backoff, its first sleep jittered too."""

    def __init__(self, init=INIT_BACKOFF, cap=MAX_BACKOFF, base=BACKOFF_BASE, rng=None):
        self.init, self.cap, self.base = init, cap, base
        self._next = None
        self._rng = rng or random

    def next(self) -> float:
        current = self._next
        if current is None:  # the first sleep: init +- 50%
            current = self._rng.uniform(0.5 * self.init, 1.5 * self.init)
        self._next = min(self.cap, self._rng.uniform(self.init, max(self.init, current * self.base)))
        return current


def http_status(exc) -> int | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return None


def error_code(exc) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code") or "") or None
    return None


def _module_of(exc) -> str:
    return type(exc).__module__.split(".", 1)[0]


def classify(exc: BaseException) -> str | None:
    """``"request"`` (retry the request), ``"body"`` (the body came back short: fetch again,
    within the download budget) or None (final)."""
    if isinstance(exc, ShortBody):
        return "body"
    name = type(exc).__name__
    if name in ("ResponseStreamingError", "IncompleteReadError", "ClientPayloadError",
                "ContentLengthError", "TransferEncodingError"):
        return "body"
    status = http_status(exc)
    if status is not None:
        code = error_code(exc)
        if status >= 500 or status in (408, 429) or code in _RETRY_CODES:
            return "request"
        return None
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
        return "request"
    if _module_of(exc) == "botocore":
        from botocore import exceptions as bx

        from botocore.parsers import ResponseParserError  # a throttled answer's broken XML

        if isinstance(exc, (bx.ConnectionError, bx.HTTPClientError, ResponseParserError)):
            return "request"
        return None
    if _module_of(exc) == "aiohttp":
        import aiohttp

        if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ServerTimeoutError)):
            return "request"
        return None
    if isinstance(exc, OSError) and exc.errno in (_errno.ECONNRESET, _errno.ECONNREFUSED,
                                                  _errno.ECONNABORTED, _errno.EPIPE,
                                                  _errno.ETIMEDOUT):
        return "request"
    return None


def is_dependency_error(exc: BaseException) -> bool:
    """An exception raised by a storage client library (as opposed to a bug of ours)."""
    if isinstance(exc, (OSError, asyncio.TimeoutError, ShortBody)) or http_status(exc) is not None:
        return True
    mod = _module_of(exc)
    if mod in ("botocore", "aiobotocore", "aiohttp", "s3fs", "fsspec", "gcsfs", "adlfs", "azure",
               "google", "urllib3", "requests"):
        return True
    return False


def as_storage_error(exc: BaseException, operation: str, uri: str | None,
                     attempts: int = 1, what: str | None = None) -> StorageError:
    """The :class:`StorageError` (of the matching subclass) reporting ``exc`` for ``operation``
    on ``uri`` (``what``: the part of it, e.g. a byte range); the caller raises it ``from exc``."""
    if isinstance(exc, StorageError):
        return exc
    status, code = http_status(exc), error_code(exc)
    reason = _reason(exc)
    if attempts > 1:
        reason = f"gave up after {attempts} attempts: {reason}"
    if what:
        reason = f"{what}: {reason}"
    if status == 404 or code in _NOT_FOUND_CODES:
        return StorageNotFoundError(operation, uri, reason, _errno.ENOENT)
    if status in (401, 403) or code in _DENIED_CODES or type(exc).__name__ in (
            "NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError"):
        return StoragePermissionError(operation, uri, reason, _errno.EACCES)
    if isinstance(exc, OSError) and not _module_of(exc) in ("botocore", "aiohttp"):
        err = storage_error(exc, operation, uri)
        if attempts > 1:
            err = type(err)(operation, uri, reason, err.errno)
        return err
    return StorageError(operation, uri, reason, getattr(exc, "errno", None)
                        if isinstance(getattr(exc, "errno", None), int) else None)


def _reason(exc: BaseException) -> str:
    status, code = http_status(exc), error_code(exc)
    text = str(exc) or type(exc).__name__
    if isinstance(exc, asyncio.TimeoutError) and not str(exc):
        text = "timed out"
    if status is not None and code:
        return f"HTTP {status} {code}: {text}"
    return f"{type(exc).__name__}: {text}" if _module_of(exc) != "builtins" else text


class RetryStats:
    """Counts of attempts and retries by reason, per store (tests and benchmarks read them)."""

    def __init__(self):
        self.counts: Counter = Counter()

    def add(self, key: str, n: int = 1) -> None:
        self.counts[key] += n

    def reset(self) -> None:
        self.counts = Counter()


async def with_retries(attempt, operation: str, uri: str | None, settings: StoreSettings,
                       stats: RetryStats | None = None, slot=None, on_retry=None,
                       retry_statuses: tuple = (), resume=None, what: str | None = None,
                       first: BaseException | None = None):
    """``await attempt()`` until it succeeds or a failure is final or a budget is spent; then a
    :class:`StorageError` naming ``operation``, ``uri`` and ``what`` (e.g. the byte range;
    ``__cause__``: the last error). ``slot`` is an async context manager held during each
    attempt (a concurrency limit), not during the sleeps; ``retry_statuses`` adds HTTP statuses
    retried for this operation (409 for a conditional put); ``on_retry(exc)`` is called before
    each retry. ``resume``: the read resumes a body cut short (``attempt`` keeps the bytes a
    :class:`ShortBody` carries and asks for the rest); ``resume()`` is called when it must start
    over instead (the resumes of this download are spent), to drop what it kept.
    ``first``: how a first attempt made elsewhere (a scan thread's own GET) failed; it counts
    and is handled as this loop's first attempt, so the budgets and sleeps are the same."""
    start = time.monotonic()
    backoff = Backoff()
    retries = body_retries = resumes = 0
    attempts = 0
    while True:
        attempts += 1
        if stats is not None:
            stats.add("attempts")
        try:
            if first is not None:
                failed, first = first, None
                raise failed
            if slot is not None:
                async with slot():
                    return await _timed(attempt, settings.request_timeout)
            return await _timed(attempt, settings.request_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised as StorageError
            kind = classify(exc)
            if kind is None and http_status(exc) in retry_statuses:
                kind = "request"
            if kind is None:
                if is_dependency_error(exc):
                    raise as_storage_error(exc, operation, uri, attempts, what) from exc
                raise
            resuming = kind == "body" and resume is not None and resumes < settings.body_resumes
            if resuming:
                spent = False
            elif kind == "body":
                spent = body_retries >= settings.download_retries
            else:
                spent = (retries >= settings.max_retries
                         or time.monotonic() - start > settings.retry_timeout)
            if spent:
                if stats is not None:
                    stats.add("gave_up")
                raise as_storage_error(exc, operation, uri, attempts, what) from exc
            if resuming:
                resumes += 1
            elif kind == "body":
                body_retries += 1
                resumes = 0
                if resume is not None:
                    resume()  # start the range over
            else:
                retries += 1
            if stats is not None:
                stats.add("retries")
                stats.add(f"retry:{_label(exc)}")
            if on_retry is not None:
                on_retry(exc)
            await asyncio.sleep(backoff.next())


async def _timed(attempt, timeout):
    if timeout:
        return await asyncio.wait_for(attempt(), timeout)
    return await attempt()


def _label(exc) -> str:
    status = http_status(exc)
    if status is not None:
        return str(error_code(exc) or status)
    if isinstance(exc, ShortBody):
        return "short_body"
    return type(exc).__name__

