"""The Lance REST namespace protocol's routes (OpenAPI ``spec.yaml`` of lance-namespace, as the
generated ``lance_namespace_urllib3_client`` sends them): path, HTTP method, the interface
method, its request model, and how the request travels.

Kinds:
* ``json``: the request model as the JSON body; ``id`` from the path;
* ``query``: no body; the listed query parameters are request fields;
* ``arrow``: Arrow IPC stream body; the listed query parameters are request fields (maps arrive
  as one JSON-encoded parameter).
"""
from __future__ import annotations

from dataclasses import dataclass

import lance_namespace as ln


@dataclass(frozen=True)
class Route:
    method: str
    path: str              # with "{id}" for the delimiter-joined object id
    op: str                # LanceNamespace method name
    request: type
    kind: str = "json"
    query: tuple = ()       # query parameters copied into the request (kinds query/arrow)


_LIST = ("page_token", "limit")
ROUTES = [
    Route("POST", "/v1/namespace/{id}/create", "create_namespace", ln.CreateNamespaceRequest),
    Route("GET", "/v1/namespace/{id}/list", "list_namespaces", ln.ListNamespacesRequest,
          "query", _LIST),
    Route("POST", "/v1/namespace/{id}/describe", "describe_namespace", ln.DescribeNamespaceRequest),
    Route("POST", "/v1/namespace/{id}/drop", "drop_namespace", ln.DropNamespaceRequest),
    Route("POST", "/v1/namespace/{id}/exists", "namespace_exists", ln.NamespaceExistsRequest),
    Route("GET", "/v1/namespace/{id}/table/list", "list_tables", ln.ListTablesRequest, "query",
          _LIST + ("include_declared",)),
    Route("GET", "/v1/table", "list_all_tables", ln.ListTablesRequest, "query",
          _LIST + ("include_declared",)),
    Route("POST", "/v1/table/{id}/describe", "describe_table", ln.DescribeTableRequest),
    Route("POST", "/v1/table/{id}/exists", "table_exists", ln.TableExistsRequest),
    Route("POST", "/v1/table/{id}/register", "register_table", ln.RegisterTableRequest),
    Route("POST", "/v1/table/{id}/deregister", "deregister_table", ln.DeregisterTableRequest),
    Route("POST", "/v1/table/{id}/declare", "declare_table", ln.DeclareTableRequest),
    Route("POST", "/v1/table/{id}/drop", "drop_table", ln.DropTableRequest, "query"),
    Route("POST", "/v1/table/{id}/rename", "rename_table", ln.RenameTableRequest),
    Route("POST", "/v1/table/{id}/restore", "restore_table", ln.RestoreTableRequest),
    Route("POST", "/v1/table/{id}/count_rows", "count_table_rows", ln.CountTableRowsRequest),
    Route("POST", "/v1/table/{id}/delete", "delete_from_table", ln.DeleteFromTableRequest),
    Route("POST", "/v1/table/{id}/create", "create_table", ln.CreateTableRequest, "arrow",
          ("mode", "properties", "storage_options")),
    Route("POST", "/v1/table/{id}/insert", "insert_into_table", ln.InsertIntoTableRequest,
          "arrow", ("mode", "branch")),
    Route("POST", "/v1/table/{id}/merge_insert", "merge_insert_into_table",
          ln.MergeInsertIntoTableRequest, "arrow",
          ("branch", "on", "when_matched_update_all", "when_matched_update_all_filt",
           "when_not_matched_insert_all", "when_not_matched_by_source_delete",
           "when_not_matched_by_source_delete_filt", "timeout", "use_index")),
    Route("POST", "/v1/table/{id}/version/list", "list_table_versions",
          ln.ListTableVersionsRequest, "query", ("branch",) + _LIST + ("descending",)),
    Route("POST", "/v1/table/{id}/tags/list", "list_table_tags", ln.ListTableTagsRequest,
          "query", _LIST),
    Route("POST", "/v1/table/{id}/tags/version", "get_table_tag_version",
          ln.GetTableTagVersionRequest),
    Route("POST", "/v1/table/{id}/tags/create", "create_table_tag", ln.CreateTableTagRequest),
    Route("POST", "/v1/table/{id}/tags/delete", "delete_table_tag", ln.DeleteTableTagRequest),
    Route("POST", "/v1/table/{id}/tags/update", "update_table_tag", ln.UpdateTableTagRequest),
]

# Interface error code -> HTTP status, as the REST spec lists them per operation.
HTTP_STATUS = {
    0: 406,                                  # unsupported
    1: 404, 4: 404, 6: 404, 8: 404, 10: 404, 11: 404, 12: 404, 22: 404,
    2: 409, 3: 409, 5: 409, 7: 409, 9: 409, 14: 409, 23: 409,
    13: 400, 20: 400, 15: 403, 16: 401, 17: 503, 21: 503, 19: 409,
}
