"""An external manifest store on DynamoDB, sharing Lance's table layout, so lancefmt and pylance
(``s3+ddb://bucket/path?ddbTableName=...``) commit to one dataset through one table.

The table is keyed by ``base_uri`` (hash, string) and ``version`` (range, number); items carry
``path`` (the manifest's key inside the bucket), ``size`` and ``committer``. Like Lance, keys
and paths are bucket-relative (``ds``, ``ds/_versions/...manifest``); this class maps them to
and from lancefmt's full URIs (so, as in Lance, datasets at the same key in two buckets must not
share a table). Reads are strongly consistent; the commit point is a ``PutItem``
with an ``attribute_not_exists`` condition. Needs ``boto3``.
"""
from __future__ import annotations

from ..errors import InvalidArgumentError
from ..io.uri import split_uri
from .external_manifest import ExternalManifestStore, ManifestEntry

COMMITTER = "lancefmt"


def _split(uri: str) -> tuple[str, str, str]:
    """``(protocol, bucket, key)`` of a full URI (bucket empty for local paths)."""
    proto, path = split_uri(uri)
    path = path.lstrip("/")
    if proto == "file":
        return proto, "", path
    bucket, _, key = path.partition("/")
    return proto, bucket, key


class DynamoDBManifestStore(ExternalManifestStore):
    """``DynamoDBManifestStore("lance-manifests", endpoint_url=..., region_name=...)``; the keyword
    arguments go to ``boto3.client("dynamodb", ...)``."""

    def __init__(self, table_name: str, **client_kwargs):
        if not table_name:
            raise InvalidArgumentError("DynamoDBManifestStore needs a table name")
        self.table_name = table_name
        self.client_kwargs = dict(client_kwargs)
        self._client = None

    def __reduce__(self):
        return (_rebuild, (self.table_name, self.client_kwargs))

    def __repr__(self):
        return f"DynamoDBManifestStore({self.table_name!r})"

    @property
    def client(self):
        if self._client is None:
            import boto3

            self._client = boto3.client("dynamodb", **self.client_kwargs)
        return self._client

    # -- Lance's key layout <-> full URIs ------------------------------------------------------
    @staticmethod
    def _key(base_uri: str) -> str:
        return _split(base_uri)[2].rstrip("/")

    @staticmethod
    def _path(uri: str) -> str:
        return _split(uri)[2]

    @staticmethod
    def _uri(base_uri: str, path: str) -> str:
        proto, bucket, _ = _split(base_uri)
        if proto == "file":
            return "/" + path
        return f"{proto}://{bucket}/{path}"

    def _entry(self, base_uri, item) -> ManifestEntry:
        size = item.get("size", {}).get("N")
        e_tag = item.get("e_tag", {}).get("S")
        return ManifestEntry(int(item["version"]["N"]), self._uri(base_uri, item["path"]["S"]),
                             int(size) if size is not None else None, e_tag)

    def _item(self, base_uri, version, path, size, e_tag) -> dict:
        item = {"base_uri": {"S": self._key(base_uri)}, "version": {"N": str(int(version))},
                "path": {"S": self._path(path)}, "committer": {"S": COMMITTER}}
        if size is not None:
            item["size"] = {"N": str(int(size))}
        if e_tag is not None:
            item["e_tag"] = {"S": str(e_tag)}
        return item

    # -- the interface ---------------------------------------------------------------------------
    def get(self, base_uri, version):
        resp = self.client.get_item(
            TableName=self.table_name, ConsistentRead=True,
            Key={"base_uri": {"S": self._key(base_uri)}, "version": {"N": str(int(version))}})
        item = resp.get("Item")
        return None if item is None else self._entry(base_uri, item)

    def get_latest_version(self, base_uri):
        resp = self.client.query(
            TableName=self.table_name, ConsistentRead=True, ScanIndexForward=False, Limit=1,
            KeyConditionExpression="base_uri = :b",
            ExpressionAttributeValues={":b": {"S": self._key(base_uri)}})
        items = resp.get("Items") or []
        return self._entry(base_uri, items[0]) if items else None

    def _conditional_put(self, item, condition) -> bool:
        try:
            self.client.put_item(TableName=self.table_name, Item=item,
                                 ConditionExpression=condition)
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def put_if_not_exists(self, base_uri, version, path, size=None, e_tag=None):
        return self._conditional_put(self._item(base_uri, version, path, size, e_tag),
                                     "attribute_not_exists(base_uri) AND attribute_not_exists(version)")

    def put_if_exists(self, base_uri, version, path, size=None, e_tag=None):
        return self._conditional_put(self._item(base_uri, version, path, size, e_tag),
                                     "attribute_exists(base_uri) AND attribute_exists(version)")

    def delete(self, base_uri):
        key = self._key(base_uri)
        kwargs = {"TableName": self.table_name, "ConsistentRead": True,
                  "KeyConditionExpression": "base_uri = :b",
                  "ExpressionAttributeValues": {":b": {"S": key}},
                  "ProjectionExpression": "version"}
        while True:
            resp = self.client.query(**kwargs)
            for item in resp.get("Items") or []:
                self.client.delete_item(TableName=self.table_name,
                                        Key={"base_uri": {"S": key}, "version": item["version"]})
            if "LastEvaluatedKey" not in resp:
                break
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _rebuild(table_name, client_kwargs):
    return DynamoDBManifestStore(table_name, **client_kwargs)
