"""Writing blob columns the way pylance 14 does at storage 2.2 (blob v2).

A top-level ``large_binary`` field marked ``lance-encoding:blob`` becomes, in the manifest, a
``lance.blob.v2`` struct<data, uri>; each data file stores one descriptor per row (see
:data:`lancefmt.file.schema.BLOB_V2_DESCRIPTOR`). lancefmt keeps every non-empty blob of a
data file's column in one packed sidecar (kind 1) next to the data file, written as one
contiguous copy of the batch's value buffer; empty blobs are inline with size 0. pylance
itself also inlines small blobs and gives very large ones their own sidecar; readers follow
the descriptors either way.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import UnsupportedFeatureError
from ...file.schema import (BLOB_META_KEY, BLOB_V2_DESCRIPTOR, BLOB_V2_EXT_NAME, EXT_NAME_KEY,
                           field_tree)
from ..core.blob_layout import KIND_INLINE, KIND_PACKED, blob_sidecar_uri

BLOB_V2_STORAGE = pa.struct([pa.field("data", pa.large_binary()), pa.field("uri", pa.string())])


def _marked_blob(f: pa.Field) -> bool:
    md = f.metadata or {}
    return md.get(BLOB_META_KEY.encode()) == b"true"


def blob_v2_schema(schema: pa.Schema, version: str) -> pa.Schema:
    """The dataset schema to record: at 2.2 top-level blob columns become ``lance.blob.v2``."""
    if version != "2.2":
        return schema
    out = []
    for f in schema:
        if _marked_blob(f) and pa.types.is_large_binary(f.type):
            f = pa.field(f.name, BLOB_V2_STORAGE, f.nullable, {EXT_NAME_KEY: BLOB_V2_EXT_NAME})
        out.append(f)
    return pa.schema(out, metadata=schema.metadata)


def blob_v2_columns(fields) -> list[str]:
    """Names of the top-level blob v2 columns of a Lance field list."""
    return [r.name for r in field_tree(fields) if r.is_blob_v2()]


def input_schema(ds_schema: pa.Schema, blob_columns) -> pa.Schema:
    """What callers write into a blob v2 dataset: large_binary blob columns."""
    out = [pa.field(f.name, pa.large_binary(), f.nullable, {BLOB_META_KEY: "true"})
           if f.name in blob_columns else f for f in ds_schema]
    return pa.schema(out, metadata=ds_schema.metadata)


def _zero_strings(n: int) -> pa.Array:
    offsets = pa.py_buffer(np.zeros(n + 1, dtype=np.int32))
    return pa.Array.from_buffers(pa.string(), n, [None, offsets, pa.py_buffer(b"")])


class BlobSidecars:
    """The packed sidecar files of one data file (one per blob column, ids 1, 2, ...)."""

    def __init__(self, store, data_uri: str, columns: list[str]):
        self.store, self.data_uri = store, data_uri
        self.ids = {name: i + 1 for i, name in enumerate(columns)}
        self.outputs: dict = {}
        self.sizes: dict = {}
        self.uris: list[str] = []

    def _output(self, name):
        out = self.outputs.get(name)
        if out is None:
            uri = blob_sidecar_uri(self.data_uri, self.ids[name])
            out = self.outputs[name] = self.store.open_output(uri)
            self.sizes[name] = 0
            self.uris.append(uri)
        return out

    def descriptors(self, name: str, arr: pa.Array) -> pa.StructArray:
        """Descriptor array for a large_binary chunk, its bytes appended to the sidecar."""
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if not pa.types.is_large_binary(arr.type):
            raise UnsupportedFeatureError(f"blob column {name!r} needs large_binary values, "
                                          f"not {arr.type}")
        n = len(arr)
        offsets = np.frombuffer(arr.buffers()[1], dtype="<i8")[arr.offset:arr.offset + n + 1] \
            if n else np.zeros(1, dtype=np.int64)
        sizes = np.diff(offsets).astype(np.uint64)
        valid = np.ones(n, dtype=bool) if arr.null_count == 0 else \
            arr.is_valid().to_numpy(zero_copy_only=False)
        sizes[~valid] = 0
        stored = sizes > 0
        kind = np.where(stored, KIND_PACKED, KIND_INLINE).astype(np.uint8)
        position = np.zeros(n, dtype=np.uint64)
        blob_id = np.zeros(n, dtype=np.uint32)
        if stored.any():
            out = self._output(name)
            base = self.sizes[name]
            start, stop = int(offsets[0]), int(offsets[-1])
            out.write(memoryview(arr.buffers()[2])[start:stop])
            self.sizes[name] = base + (stop - start)
            position[stored] = (offsets[:-1][stored] - start).astype(np.uint64) + np.uint64(base)
            blob_id[stored] = self.ids[name]
        children = [pa.array(kind), pa.array(position), pa.array(sizes), pa.array(blob_id),
                    _zero_strings(n)]
        mask = None if arr.null_count == 0 else pa.array(~valid)
        return pa.StructArray.from_arrays(children, fields=list(BLOB_V2_DESCRIPTOR), mask=mask)

    def convert(self, batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
        cols = [self.descriptors(f.name, batch.column(i)) if f.name in self.ids
                else batch.column(i) for i, f in enumerate(batch.schema)]
        return pa.RecordBatch.from_arrays(cols, schema=schema)

    def close(self, wait: bool = True) -> list[str]:
        """Closes (publishes) the sidecars; their URIs. ``wait=False``: an object-store upload
        may still be finishing in the background (the commit's barrier waits for it), as for
        the data file beside them."""
        for out in self.outputs.values():
            if not wait and hasattr(out, "close_later"):
                out.close_later()
            else:
                out.close()
        self.outputs = {}
        return list(self.uris)

    def abort(self) -> None:
        for out in self.outputs.values():
            try:
                (getattr(out, "abort", None) or out.close)()
            except Exception:  # noqa: BLE001 - best effort, the files are deleted next
                pass
        self.outputs = {}
