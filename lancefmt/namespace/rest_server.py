"""``RestAdapter``: serve any lancefmt (or other ``LanceNamespace``) namespace over the Lance REST
namespace protocol, with werkzeug's threaded WSGI server.

    with RestAdapter("lancefmt-dir", {"root": "/data/lake"}, port=0) as adapter:
        client = RestNamespace(uri=f"http://127.0.0.1:{adapter.port}")

Requests and responses are the protocol's published models (``lance_namespace``); failures come
back as its ``ErrorResponse`` with the interface error code and the matching HTTP status.
"""
from __future__ import annotations

import json
import threading
from urllib.parse import unquote

from werkzeug.routing import Map, Rule
from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from lance_namespace import LanceNamespace
from lance_namespace_urllib3_client.models import ErrorResponse

from .errors import InvalidInputError, error_code
from .rest_routes import HTTP_STATUS, ROUTES

DEFAULT_DELIMITER = "$"
_BOOL_FIELDS = {"include_declared", "descending", "when_matched_update_all",
                "when_not_matched_insert_all", "when_not_matched_by_source_delete", "use_index"}
_INT_FIELDS = {"limit"}
_JSON_FIELDS = {"properties", "storage_options"}


def _object_id(raw: str | None, delimiter: str) -> list:
    if raw is None:
        return []
    raw = unquote(raw)
    if raw == delimiter or raw == "":
        return []
    return raw.split(delimiter)


def _query_value(name: str, text: str):
    if name in _BOOL_FIELDS:
        return text.strip().lower() == "true"
    if name in _INT_FIELDS:
        return int(text)
    if name in _JSON_FIELDS:
        return json.loads(text)
    return text


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr (the namespace is a library, not a service)."""

    def log_request(self, *args, **kwargs):
        pass


def _connect(impl, properties) -> LanceNamespace:
    if isinstance(impl, LanceNamespace):
        return impl
    import lance_namespace

    from . import DirectoryNamespace  # noqa: F401  (registers "lancefmt-dir")
    if impl in ("dir", "lancefmt-dir"):
        return DirectoryNamespace(**dict(properties or {}))
    return lance_namespace.connect(impl, dict(properties or {}))


class RestAdapter:
    """A REST server in a background thread in front of a namespace.

    ``impl``: a ``LanceNamespace`` instance, or a name (``"dir"``/``"lancefmt-dir"`` give a lancefmt
    :class:`DirectoryNamespace` from ``properties``; others go through
    ``lance_namespace.connect``). ``port=0`` picks a free port (see :attr:`port`)."""

    def __init__(self, impl, properties: dict | None = None, *, host: str = "127.0.0.1",
                 port: int = 0):
        self.namespace = _connect(impl, properties)
        self.host = host or "127.0.0.1"
        self._requested_port = 2333 if port is None else int(port)
        self._server = None
        self._thread = None
        self._rules = Map([Rule(r.path.replace("{id}", "<path:id>"), endpoint=r,
                                methods=[r.method]) for r in ROUTES])

    @property
    def port(self) -> int:
        return self._server.server_port if self._server is not None else 0

    def start(self) -> "RestAdapter":
        if self._server is None:
            self._server = make_server(self.host, self._requested_port, self._app, threaded=True,
                                       request_handler=_QuietHandler)
            self._thread = threading.Thread(target=self._server.serve_forever,
                                            name="lancefmt-rest-adapter", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._thread.join()
            self._server.server_close()
            self._server = self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def __repr__(self):
        return f"RestAdapter(host={self.host!r}, port={self.port})"

    # -- WSGI ---------------------------------------------------------------------------------
    def _app(self, environ, start_response):
        request = Request(environ)
        try:
            route, args = self._rules.bind_to_environ(environ).match()
        except Exception as e:  # werkzeug's NotFound / MethodNotAllowed
            return self._error(404, 0, f"no route {request.method} {request.path}: {e}")(
                environ, start_response)
        try:
            response = self._dispatch(route, args.get("id"), request)
        except Exception as e:  # every failure goes back as the protocol's ErrorResponse
            code = error_code(e)
            response = self._error(HTTP_STATUS.get(code, 500), code, str(e))
        return response(environ, start_response)

    @staticmethod
    def _error(status: int, code: int, message: str) -> Response:
        body = ErrorResponse(error=message, code=code).to_json()
        return Response(body, status=status, mimetype="application/json")

    def _dispatch(self, route, raw_id, request: Request) -> Response:
        delimiter = request.args.get("delimiter") or DEFAULT_DELIMITER
        fields = {}
        if route.kind == "json":
            body = request.get_data()
            try:
                fields = json.loads(body) if body else {}
            except ValueError:
                raise InvalidInputError("request body is not JSON") from None
            if not isinstance(fields, dict):
                raise InvalidInputError("request body must be a JSON object")
        for name in route.query:
            if name == "on" and "on" in request.args:  # a list: repeated parameter ("multi")
                fields["on"] = [v for raw in request.args.getlist("on") for v in raw.split(",")]
            elif name in request.args:
                try:
                    fields[name] = _query_value(name, request.args[name])
                except ValueError:
                    raise InvalidInputError(f"bad query parameter {name}") from None
        if "{id}" in route.path:
            fields["id"] = _object_id(raw_id, delimiter)
        req = route.request.from_dict(fields)
        method = getattr(self.namespace, route.op)
        if route.kind == "arrow":
            result = method(req, request.get_data())
        else:
            result = method(req)
        if route.op in ("namespace_exists", "table_exists"):
            return Response(b"", status=200)
        if route.op == "count_table_rows":
            return Response(json.dumps(int(result.count)), mimetype="application/json")
        return Response(result.to_json(), mimetype="application/json")
