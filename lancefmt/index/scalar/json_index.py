"""JSON: another scalar index over the values at one JSONPath of a JSON column (pylance's
``IndexConfig("json", {"target_index_type": "btree", "path": "x"})``).

What pylance 14 writes: the target type's own files (a BTREE's ``page_data.lance`` and
``page_lookup.lance``...) over the extracted values, and details
``lance.index.pb.JsonIndexDetails {path, target_details}`` with ``index_version`` 0. The values'
type is that of the first non-null value (JSON null counts as null): a JSON integer is
``Int64``, a float (or an integer beyond i64) ``Float64``, a string ``Utf8``, a boolean
``Boolean``; every other value must have the same type (a ``Float64`` index takes integers
too), and an object or array is refused. No value at all: ``Utf8``. A BTREE target on a
dataset with stable row ids is refused, as pylance refuses it.

It answers ``json_get_<type>(column, 'key') <op> literal`` (:class:`~lancefmt.sql.sargable.
JsonPath`) when the json_get function reads exactly what the index holds: ``key`` is the
index's path and a plain member name (``json_get_*`` looks a key up literally, a JSONPath like
``a.b`` or ``$.a`` selects something else), and the function's result type is the values'
(``json_get_int`` on an ``Int64`` index...). pylance also uses the index when they differ and
then answers differently from its own scan; lancefmt scans instead. Plans print
``[Json(<query>-><path>)]@name(<target type>)``.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from ..._proto import index_pb2
from ...errors import CorruptFileError, InvalidArgumentError, NotSupportedError, UnsupportedFeatureError
from ...jsonb import extract as jx
from ...jsonb.path import JsonPathError, Member, parse_path
from ...sql.sargable import JSON_GETS, JsonPath
from ..core.registry import ROW_ADDRESS, ROW_ID, VALUE, IndexType, LoadedIndex, TrainingData, by_details, by_name, register
from ..core.store import IndexStore

TARGETS = ("BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER", "NGRAM")
TYPE_NAMES = {pa.int64(): "Int64", pa.float64(): "Float64", pa.string(): "Utf8", pa.bool_(): "Boolean"}
_KINDS_OF = {"Int64": {jx.INT}, "Float64": {jx.INT, jx.FLOAT}, "Utf8": {jx.STRING},
             "Boolean": {jx.FALSE, jx.TRUE}}
_TYPE_OF_KIND = {jx.INT: pa.int64(), jx.FLOAT: pa.float64(), jx.STRING: pa.string(),
                 jx.FALSE: pa.bool_(), jx.TRUE: pa.bool_()}


def target_type(name) -> IndexType:
    """The index type a JSON index wraps, by the name its parameters give."""
    upper = str(name).upper()
    if upper in ("INVERTED", "FTS"):
        raise NotSupportedError(f"JSON-path indexes do not support target index type '{name}'; "
                                f"create an INVERTED index directly on the JSON column instead")
    if upper not in TARGETS:
        raise InvalidArgumentError(f"No scalar index plugin found for name '{name}'")
    return by_name(upper)


def _request(params: dict) -> tuple[str, IndexType, dict]:
    """(path, target type, target parameters) of a build's parameters."""
    for key in ("target_index_type", "path"):
        if key not in params:
            raise InvalidArgumentError(f"JSON index parameters need {key!r}")
    path = params["path"]
    if not isinstance(path, str):
        raise InvalidArgumentError("the JSON index path must be a string")
    target = target_type(params["target_index_type"])
    extra = params.get("target_index_parameters") or {}
    if isinstance(extra, str):
        try:
            extra = json.loads(extra)
        except ValueError as e:
            raise InvalidArgumentError(f"target_index_parameters is not JSON ({e})") from None
    if not isinstance(extra, dict):
        raise InvalidArgumentError("target_index_parameters must be a JSON object")
    return path, target, extra


def _inferred(data: TrainingData, path: str) -> pa.DataType:
    """The values' type: that of the first non-null value the path selects (Utf8 when none)."""
    for batch in data.batches():
        got = jx.extract_path(batch.column(VALUE), path)
        present = np.flatnonzero(got.kinds >= jx.FALSE)
        if present.size:
            kind = int(got.kinds[present[0]])
            if kind in (jx.ARRAY, jx.OBJECT):
                raise InvalidArgumentError(
                    f"Cannot create a JSON index for JSON path '{path}' with JSON type "
                    f"{jx.KIND_NAMES[kind]}; only scalar values are supported")
            return _TYPE_OF_KIND[kind]
    return pa.string()


def typed_values(docs, path: str, value_type: pa.DataType, where=None) -> pa.Array:
    """The values at ``path`` of JSONB documents ``docs`` as ``value_type`` (null where the
    path selects nothing or JSON null); a value of another JSON type is refused."""
    got = jx.extract_path(docs, path, where)
    name = TYPE_NAMES[value_type]
    allowed = _KINDS_OF[name]
    present = got.kinds >= jx.FALSE
    bad = present & ~np.isin(got.kinds, list(allowed))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InvalidArgumentError(f"JSON path '{path}' expected {name}, but batch row {row} has "
                                   f"JSON type {jx.KIND_NAMES[int(got.kinds[row])]}")
    if name == "Utf8":
        return got.string_array(present)
    mask = ~present
    if name == "Int64":
        return pa.array(got.ints, pa.int64(), mask=mask)
    if name == "Float64":
        return pa.array(np.where(got.kinds == jx.INT, got.ints.astype(np.float64), got.floats),
                        pa.float64(), mask=mask)
    return pa.array(got.kinds == jx.TRUE, pa.bool_(), mask=mask)


def typed_training(data: TrainingData, path: str, value_type: pa.DataType, where=None) -> TrainingData:
    """``data`` (JSONB documents) with the values at ``path`` in place of the documents."""
    schema = pa.schema([pa.field(VALUE, value_type), pa.field(ROW_ID, pa.uint64()),
                        pa.field(ROW_ADDRESS, pa.uint64())])

    def convert(batches):
        for b in batches:
            values = typed_values(b.column(VALUE), path, value_type, where)
            yield pa.RecordBatch.from_arrays([values, b.column(ROW_ID), b.column(ROW_ADDRESS)],
                                             schema=schema)

    return TrainingData(data.field.with_type(value_type), data.fragments,
                        lambda fid: convert(data.fragment_batches(fid)), data.stable_row_ids,
                        lambda: convert(data.batches()))


def plain_key(path: str) -> bool:
    """Whether ``json_get_*(column, path)`` reads what the JSONPath ``path`` selects: a single
    member name, spelled as is (not digits, which json_get reads as an array index)."""
    try:
        steps = parse_path(path)
    except JsonPathError:
        return False
    return len(steps) == 1 and isinstance(steps[0], Member) and steps[0].name == path \
        and not path.isdigit()


def _wrap(path: str, target: IndexType, details) -> index_pb2.JsonIndexDetails:
    return index_pb2.JsonIndexDetails(path=path, target_details=target.pack_details(details))


class JsonType(IndexType):
    name = "JSON"
    type_name = "Json"
    stats_type_name = "BTree"  # what pylance 14's index_stats says for every JSON index
    details_type_url = "/lance.index.pb.JsonIndexDetails"
    details_class = index_pb2.JsonIndexDetails
    index_version = 0
    queries = (JsonPath,)
    exact = True

    def check_field(self, field: pa.Field) -> None:
        t = field.type
        if not (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
            raise InvalidArgumentError("A JSON index can only be created on a JSON, Binary or "
                                       "LargeBinary field.")

    def train(self, data: TrainingData, store: IndexStore, params: dict):
        path, target, extra = _request(params)
        if data.stable_row_ids and target.name == "BTREE":
            raise NotSupportedError(
                "a JSON-wrapped BTREE index is not yet supported on a dataset with stable row ids "
                "enabled -- create a plain BTREE index on this column instead, or disable stable "
                "row ids for this dataset")
        parse_path(path)  # an invalid JSONPath is refused before any data is read
        typed = typed_training(data, path, _inferred(data, path), store.dir_uri)
        target.check_field(typed.field)
        details = target.train(typed, store, {**target.default_params(), **extra})
        return _wrap(path, target, details)

    def load(self, store: IndexStore, details) -> "JsonIndex":
        target = by_details(details.target_details)
        if target is None or target.name not in TARGETS:
            raise UnsupportedFeatureError(f"a JSON index over {details.target_details.type_url!r}",
                                          store.dir_uri)
        inner = target.unpack_details(details.target_details, store.dir_uri)
        return JsonIndex(target, target.load(store, inner), details.path)

    def merge(self, segments: list, dest: IndexStore):
        first = segments[0]
        if any((s.target.name, s.path, s.value_type) != (first.target.name, first.path, first.value_type)
               for s in segments):
            raise NotImplementedError("JSON segments of different targets, paths or value types")
        return _wrap(first.path, first.target, first.target.merge([s.inner for s in segments], dest))

    # -- what the index answers ------------------------------------------------------------------
    def _details(self, segment):
        return self.unpack_details(segment.meta.index_details, segment.store.dir_uri)

    def serves_index(self, segments: list, query) -> bool:
        if not isinstance(query, JsonPath) or not segments:
            return False
        return all(seg.load().answers(query) for seg in segments)

    def exact_for(self, segments: list) -> bool:
        targets = [by_details(self._details(s).target_details) for s in segments]
        return all(t is not None and t.exact for t in targets)

    def plan_type_name(self, segments: list) -> str:
        target = by_details(self._details(segments[0]).target_details) if segments else None
        return target.type_name if target is not None else self.type_name


class JsonIndex(LoadedIndex):
    def __init__(self, target: IndexType, inner: LoadedIndex, path: str):
        self.target = target
        self.inner = inner
        self.path = path
        self.value_type = inner.value_type

    def answers(self, query: JsonPath) -> bool:
        """See module docstring."""
        return (query.key == self.path and plain_key(self.path)
                and self.value_type is not None and JSON_GETS[query.function] == self.value_type
                and self.target.serves(query.query))

    def search(self, query):
        if not isinstance(query, JsonPath):
            raise InvalidArgumentError(f"a JSON index cannot answer {type(query).__name__}")
        return self.inner.search(query.query)

    def statistics(self) -> dict:
        return self.inner.statistics()

    def prewarm(self) -> None:
        self.inner.prewarm()

    def params(self) -> dict:
        return {"target_index_type": self.target.name, "path": self.path,
                "target_index_parameters": self.inner.params()}

    def update(self, new_data: TrainingData, dest: IndexStore, keep=None):
        if self.value_type not in TYPE_NAMES:
            raise CorruptFileError(f"a JSON index holding {self.value_type} values", dest.dir_uri)
        typed = typed_training(new_data, self.path, self.value_type, dest.dir_uri)
        return _wrap(self.path, self.target, self.inner.update(typed, dest, keep))

    def remap(self, mapping, dest: IndexStore):
        return _wrap(self.path, self.target, self.inner.remap(mapping, dest))


JSON = register(JsonType())
