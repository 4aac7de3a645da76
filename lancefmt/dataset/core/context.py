"""ScanContext: everything a fragment scan needs besides the fragment itself, and nothing more.

A Spark executor receives a pickled ``Fragment`` = this context + one ``DataFragment``. The
context holds the dataset URI and version, the schema as Lance fields (the field ids map schema
columns to data-file columns), the base paths (to resolve file locations) and the storage
options. It never holds the manifest, so it pickles to a few hundred bytes.
"""
from __future__ import annotations

from functools import cached_property

import pyarrow as pa

from ..._proto import file_pb2, table_pb2
from ...file.schema import arrow_from_fields, field_tree
from ...io import open_store
from ...table.base_paths import BasePathResolver
from ...table.feature_flags import FLAG_STABLE_ROW_IDS
from .base_options import BaseOptions


class ScanContext:

    def __init__(self, uri: str, version: int, fields, schema_metadata=None, base_paths=None,
                 storage_options=None, stable_row_ids: bool = False, base_store_params=None):
        self.uri = uri
        self.version = int(version)
        self.fields = list(fields)
        self.schema_metadata = dict(schema_metadata or {})
        self.base_paths = list(base_paths or [])  # table_pb2.BasePath
        self.storage_options = dict(storage_options) if storage_options else None
        self.stable_row_ids = bool(stable_row_ids)
        # Per-base storage options (``{base uri | name | id: options}``, see :mod:`.base_options`).
        self.base_store_params = dict(base_store_params) if base_store_params else None

    @classmethod
    def from_manifest(cls, uri: str, manifest, storage_options=None,
                      base_store_params=None) -> "ScanContext":
        return cls(uri, manifest.version, manifest.fields, dict(manifest.schema_metadata),
                   list(manifest.base_paths), storage_options,
                   bool(manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS), base_store_params)

    # -- pickling: protobufs travel as bytes -----------------------------------------------
    def __reduce__(self):
        schema = file_pb2.Schema(fields=self.fields)
        for k, v in self.schema_metadata.items():
            schema.metadata[k] = v
        bases = [b.SerializeToString() for b in self.base_paths]
        return (_rebuild_context, (self.uri, self.version, schema.SerializeToString(), bases,
                                   self.storage_options, self.stable_row_ids,
                                   self.base_store_params))

    # -- derived ----------------------------------------------------------------------------
    @cached_property
    def schema(self) -> pa.Schema:
        return arrow_from_fields(self.fields, self.schema_metadata or None)

    @cached_property
    def resolver(self) -> BasePathResolver:
        return BasePathResolver(self.uri, self.base_paths)

    @cached_property
    def _base_options(self):
        return BaseOptions(self.resolver, self.storage_options, self.base_store_params)

    def options_for(self, uri: str) -> dict | None:
        """Storage options for a file URI: its base's own options (``base_store_params``) over
        the dataset's ``storage_options``."""
        if not self.base_store_params:
            return self.storage_options
        return self._base_options.for_uri(uri)

    def store_for(self, uri: str):
        return open_store(uri, self.options_for(uri))

    @cached_property
    def root_ids(self) -> dict:
        """Top-level field name -> ids of its whole subtree."""
        return {r.name: [n.id for n in r.walk()] for r in field_tree(self.fields)}


def _rebuild_context(uri, version, schema_bytes, bases, storage_options, stable_row_ids,
                     base_store_params=None):
    schema = file_pb2.Schema()
    schema.ParseFromString(schema_bytes)
    base_paths = []
    for b in bases:
        pb = table_pb2.BasePath()
        pb.ParseFromString(b)
        base_paths.append(pb)
    return ScanContext(uri, version, list(schema.fields), dict(schema.metadata), base_paths,
                       storage_options, stable_row_ids, base_store_params)
