"""The REST adapter and client on their own: routes, id encoding, error codes and statuses."""
import json

import lance_namespace as ln
import pyarrow as pa
import pytest
import urllib3

from lancefmt.namespace import DirectoryNamespace, RestAdapter, RestNamespace
from lancefmt.namespace import errors as nserr
from lancefmt.namespace.rest_routes import ROUTES
from namespace_bodies import ipc


@pytest.fixture
def server(tmp_path):
    with RestAdapter("lancefmt-dir", {"root": str(tmp_path / "root")}, host="127.0.0.1",
                     port=0) as adapter:
        yield adapter


def test_routes_match_the_published_client():
    """Every route is the path and method the generated lance_namespace client uses."""
    import inspect

    from lance_namespace_urllib3_client import api

    sources = "".join(inspect.getsource(m) for m in (api.namespace_api, api.table_api, api.tag_api))
    for r in ROUTES:
        assert f"method='{r.method}',\n            resource_path='{r.path}'" in sources, r.op
        assert hasattr(ln.LanceNamespace, r.op)


def test_adapter_lifecycle_and_raw_protocol(tmp_path):
    adapter = RestAdapter(DirectoryNamespace(root=str(tmp_path / "r")), port=0)
    assert adapter.port == 0
    with adapter:
        port = adapter.port
        assert port > 0 and adapter.host == "127.0.0.1"
        http = urllib3.PoolManager()
        base = f"http://127.0.0.1:{port}"
        r = http.request("POST", base + "/v1/namespace/a/create", body=b'{"properties": {"k": "v"}}',
                         headers={"Content-Type": "application/json"})
        assert r.status == 200 and json.loads(r.data)["properties"] == {"k": "v"}
        r = http.request("GET", base + "/v1/namespace/%24/list")
        assert json.loads(r.data)["namespaces"] == ["a"]
        r = http.request("POST", base + "/v1/table/a%24t/create?mode=create",
                         body=ipc(pa.table({"x": [1, 2]})))
        assert r.status == 200 and json.loads(r.data)["version"] == 1
        r = http.request("POST", base + "/v1/table/a.t/count_rows?delimiter=.", body=b"{}")
        assert r.status == 200 and json.loads(r.data) == 2
        r = http.request("POST", base + "/v1/table/a%24missing/describe", body=b"{}")
        assert r.status == 404 and json.loads(r.data)["code"] == 4
        r = http.request("POST", base + "/v1/namespace/a/create", body=b"{}")
        assert r.status == 409 and json.loads(r.data)["code"] == 2
        r = http.request("POST", base + "/v1/namespace/a/create", body=b"not json")
        assert r.status == 400 and json.loads(r.data)["code"] == 13
        r = http.request("GET", base + "/v1/nothing/here")
        assert r.status == 404
    assert adapter.port == 0
    with pytest.raises(urllib3.exceptions.HTTPError):
        urllib3.PoolManager(retries=False).request("GET", f"http://127.0.0.1:{port}/v1/table")


def test_client_errors_are_lancefmt_and_interface_errors(server):
    client = RestNamespace(uri=f"http://127.0.0.1:{server.port}")
    with pytest.raises(nserr.NamespaceNotFoundError) as e:
        client.describe_namespace(ln.DescribeNamespaceRequest(id=["nope"]))
    assert isinstance(e.value, ln.NamespaceNotFoundError)
    client.create_namespace(ln.CreateNamespaceRequest(id=["n"]))
    client.create_table(ln.CreateTableRequest(id=["n", "t"]), ipc(pa.table({"x": [1]})))
    with pytest.raises(nserr.NamespaceNotEmptyError):
        client.drop_namespace(ln.DropNamespaceRequest(id=["n"]))
    with pytest.raises(nserr.InvalidInputError):
        client.register_table(ln.RegisterTableRequest(id=["n", "r"], location="../escape"))
    with pytest.raises(nserr.TableNotFoundError):
        client.table_exists(ln.TableExistsRequest(id=["n", "zz"]))
    assert client.list_all_tables(ln.ListTablesRequest()).tables == ["n$t"]


def test_custom_delimiter_and_headers(server):
    client = RestNamespace(uri=f"http://127.0.0.1:{server.port}", delimiter=".",
                           **{"header.X-Test": "1"})
    client.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    client.create_namespace(ln.CreateNamespaceRequest(id=["a", "b"]))
    assert client.list_namespaces(ln.ListNamespacesRequest(id=["a"])).namespaces == ["b"]
    assert client.headers == {"X-Test": "1"}
    assert "delimiter" in client.namespace_id()
