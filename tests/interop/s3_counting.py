"""A moto S3 server on loopback that counts the requests it serves (server side) and the most
that were in flight at once: for request-economy and parallelism assertions."""
from __future__ import annotations

import threading
import uuid
from collections import Counter

from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication, MotoRequestHandler, create_backend_app,
)
from werkzeug.serving import make_server


class RequestLog:
    """Every request as ``(method, path, query)``; ``max_in_flight`` since the last reset."""

    def __init__(self):
        self._lock = threading.Lock()
        self.requests: list[tuple[str, str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.latency = 0.0  # seconds added to every request (to model a remote store)

    def reset(self):
        with self._lock:
            self.requests = []
            self.max_in_flight = self.in_flight

    def enter(self, method, path, query):
        with self._lock:
            self.requests.append((method, path, query))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self):
        with self._lock:
            self.in_flight -= 1

    def counts(self, path_contains: str = "") -> Counter:
        """Requests by kind: ``LIST``, ``GET``, ``HEAD``, ``PUT``, ``DELETE``, ``COPY``..."""
        from urllib.parse import unquote

        out = Counter()
        for method, path, query in list(self.requests):
            if path_contains not in path + "?" + unquote(query).replace("prefix=", "/"):
                continue
            if method == "GET" and ("list-type" in query or path.count("/") <= 1):
                out["LIST"] += 1
            else:
                out[method] += 1
        return out


class _Counting:
    def __init__(self, app, log: RequestLog):
        self.app, self.log = app, log

    def __call__(self, environ, start_response):
        self.log.enter(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""),
                       environ.get("QUERY_STRING", ""))
        try:
            if self.log.latency:
                import time

                time.sleep(self.log.latency)
            return list(self.app(environ, start_response))
        finally:
            self.log.leave()


class CountingMotoServer(ThreadedMotoServer):
    def __init__(self):
        super().__init__(ip_address="127.0.0.1", port=0, verbose=False)
        self.log = RequestLog()

    def _server_entry(self) -> None:
        app = _Counting(DomainDispatcherApplication(create_backend_app), self.log)
        self._server = make_server(self._ip_address, self._port, app, True,
                                   request_handler=MotoRequestHandler)
        self._server_ready_event.set()
        self._server.serve_forever()


def new_bucket(options) -> str:
    import boto3

    bucket = f"lancefmt-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=options["endpoint_url"], aws_access_key_id="testing",
                 aws_secret_access_key="testing", region_name="us-east-1").create_bucket(Bucket=bucket)
    return bucket
