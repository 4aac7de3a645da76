"""Structured Streaming out of Lance: ``spark.readStream.format("lance").load(uri)``.

Offsets are dataset versions (``{"version": n}``: everything up to version ``n`` has been read).
A micro-batch from version ``s`` to ``e`` reads the rows that the ``Append`` transactions of
versions ``s+1 .. e`` added (the fragments each one created, as that version holds them). Offset 0
stands for "nothing yet": the first micro-batch of a query without ``startingVersion`` reads the
whole dataset as of its end version, then only appends. ``startingVersion = n`` starts with the
rows appended by version ``n`` (``latest``: only what is committed after the query starts).

Versions that do not change rows (compaction ``Rewrite``, indexes, config, base paths) are
passed over. Versions that change or remove rows (``Delete``, ``Update``, ``Overwrite``,
``Merge``, ``Restore``, ...) cannot be expressed as appended rows: the micro-batch fails with an
error naming the version and its operation, unless ``skip_change_commits`` is set (then their
rows are not read, as Delta's option of the same name does).

Spark keeps one reader object alive on the driver for ``initialOffset``/``latestOffset``/
``partitions``; ``read`` runs on the executors with a pickled copy (the batch reader's scan).
"""
from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from ..errors import DatasetNotFoundError, InvalidArgumentError, UnsupportedFeatureError
from .options import ReadOptions, parse_bool
from .reader import LanceReader, plan_partitions
from .schema import spark_type

# operations that leave every row where it was (their new version has the same rows)
ROW_PRESERVING = frozenset({"rewrite", "create_index", "update_config", "update_bases",
                            "reserve_fragments", "update_mem_wal_state"})
OFFSET_KEY = "version"


def _starting_version(options) -> int | str | None:
    opts = {str(k).lower(): v for k, v in dict(options).items()}
    value = opts.get("startingversion", opts.get("starting_version"))
    if value is None or str(value).strip() == "":
        return None
    text = str(value).strip().lower()
    if text == "latest":
        return "latest"
    if not text.isdigit() or int(text) < 1:
        raise InvalidArgumentError(f"option 'startingVersion' must be a version (>= 1) or "
                                   f"'latest', not {value!r}")
    return int(text)


class LanceStreamReader(LanceReader, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of the rows appended to a dataset, version range by version range."""

    def __init__(self, options: ReadOptions, raw_options, schema: StructType,
                 dataset_schema: pa.Schema, parallelism: int = 1):
        super().__init__(options, 0, schema, dataset_schema, parallelism)
        self.starting_version = _starting_version(raw_options)
        lowered = {str(k).lower(): v for k, v in dict(raw_options).items()}
        self.skip_change_commits = parse_bool("skip_change_commits", lowered.get("skip_change_commits"))
        self._available_now_target = None

    # -- driver: offsets ---------------------------------------------------------------------
    def _latest(self) -> int:
        from .history import version_numbers

        versions = version_numbers(self.options.uri, self.options.storage_options)
        if not versions:
            raise DatasetNotFoundError(f"no Lance dataset at {self.options.uri}")
        return versions[-1]

    def initialOffset(self) -> dict:
        start = self.starting_version
        if start is None:
            return {OFFSET_KEY: 0}
        if start == "latest":
            return {OFFSET_KEY: self._latest()}
        return {OFFSET_KEY: start - 1}

    def latestOffset(self, start: dict, limit) -> dict:
        latest = self._latest() if self._available_now_target is None else self._available_now_target
        return {OFFSET_KEY: max(latest, int(start[OFFSET_KEY]))}

    def reportLatestOffset(self):
        return {OFFSET_KEY: self._latest()}

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now_target = self._latest()

    # -- driver: planning ----------------------------------------------------------------------
    def partitions(self, start: dict, end: dict):
        first, last = int(start[OFFSET_KEY]), int(end[OFFSET_KEY])
        if last <= first:
            return []
        fragments = self._snapshot(last) if first == 0 else self._appended(first, last)
        return plan_partitions(fragments, self.options.rows_per_partition, self.parallelism)

    def _open(self, version: int):
        from ..dataset import dataset

        try:
            return dataset(self.options.uri, version, storage_options=self.options.storage_options)
        except DatasetNotFoundError:
            raise DatasetNotFoundError(
                f"version {version} of {self.options.uri} is gone (cleaned up?): the stream "
                f"cannot read what it appended; restart with a later startingVersion") from None

    def _check_schema(self, ds) -> None:
        for f in self.schema.fields:
            idx = ds.schema.get_field_index(f.name)
            if idx < 0:
                if f.name in ("_rowid", "_rowaddr"):
                    continue
                raise UnsupportedFeatureError(
                    f"version {ds.version} of {self.options.uri} has no column {f.name!r}: the "
                    f"stream's schema changed; restart the query with a new checkpoint")
            if spark_type(ds.schema.field(idx).type) != f.dataType:
                raise UnsupportedFeatureError(
                    f"version {ds.version} of {self.options.uri} changed the type of {f.name!r} "
                    f"to {ds.schema.field(idx).type}: restart the query with a new checkpoint")

    def _snapshot(self, version: int):
        ds = self._open(version)
        self._check_schema(ds)
        return ds.get_fragments()

    def _appended(self, first: int, last: int):
        from .history import transaction

        out = []
        before = {f.id for f in self._open(first).get_fragments()}
        for version in range(first + 1, last + 1):
            ds = self._open(version)
            _, txn = transaction(self.options.uri, version, self.options.storage_options)
            fragments = ds.get_fragments()
            ids = {f.id for f in fragments}
            kind = txn.kind if txn is not None else None
            if kind == "append":
                self._check_schema(ds)
                out.extend(f for f in fragments if f.id not in before)
            elif kind in ROW_PRESERVING:
                pass
            elif not self.skip_change_commits:
                what = f"a {kind!r} transaction" if kind else "an unrecorded transaction"
                raise UnsupportedFeatureError(
                    f"version {version} of {self.options.uri} is {what}, which changes or removes "
                    f"rows: the lance streaming source reads appended rows only. Set "
                    f"option('skip_change_commits', 'true') to pass over such versions, or "
                    f"restart the query with startingVersion={version + 1} and a new checkpoint")
            before = ids
        return out


def stream_reader(source, schema: StructType) -> LanceStreamReader:
    """What ``LanceDataSource.streamReader`` returns (the latest version's schema)."""
    from ..dataset import dataset

    options = ReadOptions.parse(source.options)
    if options.version is not None:
        raise InvalidArgumentError("option 'version' does not apply to a stream: use startingVersion")
    ds = dataset(options.uri, storage_options=options.storage_options)
    return LanceStreamReader(options, source.options, schema, ds.schema, source._parallelism(options))
