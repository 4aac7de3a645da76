"""``RestNamespace``: a ``LanceNamespace`` that talks the Lance REST namespace protocol (to our
:class:`~lancefmt.namespace.RestAdapter`, pylance's, or any conforming server) with urllib3.

Properties as pylance's ``lance.namespace.RestNamespace``: ``uri`` (required), ``delimiter``
(default ``$``), ``header.<Name>`` (sent as HTTP headers). A request's ``context`` entries named
``header.<Name>`` are sent as headers too. Error responses become the matching lancefmt
namespace error (:mod:`.errors`).
"""
from __future__ import annotations

import json
from urllib.parse import quote, urlencode

import lance_namespace as ln
import urllib3
from lance_namespace import LanceNamespace

from .errors import InternalError, InvalidInputError, error_for_code
from .rest_routes import ROUTES

_RESPONSES = {"list_all_tables": ln.ListTablesResponse}


def _query_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


class RestNamespace(LanceNamespace):
    """Client of a Lance REST namespace server."""

    def __init__(self, **properties):
        uri = properties.get("uri")
        if not uri:
            raise InvalidInputError("RestNamespace needs the 'uri' property")
        self.uri = str(uri).rstrip("/")
        self.delimiter = str(properties.get("delimiter") or "$")
        self.headers = {k[len("header."):]: str(v) for k, v in properties.items()
                        if k.startswith("header.")}
        self._http = urllib3.PoolManager(num_pools=4, maxsize=8)

    def namespace_id(self) -> str:
        return (f"lancefmt.RestNamespace {{ endpoint: {json.dumps(str(self.uri))}, "
                f"delimiter: {json.dumps(str(self.delimiter))} }}")

    def __repr__(self):
        return f"RestNamespace({self.uri!r})"

    def _call(self, route, request, data: bytes | None = None):
        if not isinstance(request, route.request):
            if isinstance(request, dict):
                request = route.request.from_dict(request)
            else:
                raise InvalidInputError(f"{route.op} takes a {route.request.__name__}")
        fields = request.to_dict()
        path = route.path
        if "{id}" in path:
            ids = list(request.id or [])
            raw = self.delimiter.join(ids) if ids else self.delimiter
            path = path.replace("{id}", quote(raw, safe=""))
        query = {"delimiter": self.delimiter} if self.delimiter != "$" else {}
        for name in route.query:
            value = getattr(request, name, None)
            if value is not None:
                query[name] = list(value) if name == "on" else _query_text(value)
        headers = dict(self.headers)
        for k, v in (request.context or {}).items():
            if k.startswith("header."):
                headers[k[len("header."):]] = v
        body = None
        if route.kind == "json":
            fields.pop("id", None)
            body = json.dumps(fields).encode()
            headers["Content-Type"] = "application/json"
        elif route.kind == "arrow":
            body = bytes(data or b"")
            headers["Content-Type"] = "application/vnd.apache.arrow.stream"
        url = self.uri + path + ("?" + urlencode(query, doseq=True) if query else "")
        resp = self._http.request(route.method, url, body=body, headers=headers)
        if resp.status >= 400:
            try:
                err = json.loads(resp.data)
                code, message = int(err.get("code", 18)), str(err.get("error") or err)
            except (ValueError, TypeError, AttributeError):
                raise InternalError(f"HTTP {resp.status} from {url}: {resp.data[:200]!r}") from None
            raise error_for_code(code, message)
        if route.op in ("namespace_exists", "table_exists"):
            return getattr(ln, route.request.__name__.replace("Request", "Response"))()
        if route.op == "count_table_rows":
            value = json.loads(resp.data)
            count = value["count"] if isinstance(value, dict) else value
            return ln.CountTableRowsResponse(count=int(count))
        cls = _RESPONSES.get(route.op) or getattr(ln, route.request.__name__.replace("Request",
                                                                                    "Response"))
        return cls.from_dict(json.loads(resp.data) if resp.data else {})


def _method(route):
    if route.kind == "arrow":
        def call(self, request, request_data: bytes):
            return self._call(route, request, request_data)
    else:
        def call(self, request):
            return self._call(route, request)
    call.__name__ = route.op
    call.__doc__ = f"{route.method} {route.path} (Lance REST namespace protocol)."
    return call


for _route in ROUTES:
    setattr(RestNamespace, _route.op, _method(_route))
del _route
