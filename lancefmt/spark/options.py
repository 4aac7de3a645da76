"""Spark data source options (strings, case-insensitive keys) -> typed read/write settings.

Spark hands every ``.option(k, v)`` to the data source as a string in a case-insensitive dict.
This module is the one place that parses them, so the reader, the writer and the error messages
agree on names and defaults. Names follow lance-spark where it has one (``version``,
``batch_size``, ``max_row_per_file`` as an alias of ``max_rows_per_file``,
``data_storage_version``); object-store settings are ``storage.<key>`` options (or one JSON
``storage_options`` object), handed to ``lancefmt.io`` as fsspec keyword arguments.

No pyspark import here: the parsing is tested without a SparkSession.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

from ..errors import InvalidArgumentError
from ..io.uri import normalize_uri
from ..table.base_paths import BasePath

STORAGE_PREFIX = "storage."
# Arrow batches handed to Spark: the Python worker scans the next batch while the JVM turns the
# previous one into rows, so batches of a few MiB keep both busy (one huge batch per partition
# leaves each side waiting for the other); every batch also costs a round of IPC, so not tiny.
# Without a ``batch_size`` option the reader sizes batches to about TARGET_BATCH_BYTES from the
# row width (see reader.batch_rows), and max_batch_bytes bounds the memory of wide rows
# (vectors, blobs) on both sides of the socket whatever batch_size says.
TARGET_BATCH_BYTES = 4 << 20
DEFAULT_MAX_BATCH_BYTES = 64 << 20
DEFAULT_ROWS_PER_PARTITION = 1 << 20
READ_OPTIONS = ("path", "version", "columns", "batch_size", "max_batch_bytes", "with_row_id",
                "with_row_address", "filter", "rows_per_partition", "min_partitions",
                "whole_fragments", "fragment_ids", "storage_options", "manifest_store")
WRITE_OPTIONS = ("path", "max_rows_per_file", "max_row_per_file", "max_bytes_per_file",
                 "target_bases", "initial_bases", "data_storage_version", "enable_stable_row_ids",
                 "commit_message", "max_retries", "storage_options", "manifest_store")


def _lower(options: Mapping[str, str]) -> dict:
    return {str(k).lower(): v for k, v in dict(options).items()}


def parse_bool(name: str, value, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no", ""):
        return False
    raise InvalidArgumentError(f"option {name!r} must be true or false, not {value!r}")


def _positive_int(name: str, value, default: int | None, minimum: int = 1) -> int | None:
    if value is None or str(value).strip() == "":
        return default
    try:
        n = int(str(value).strip())
    except ValueError:
        raise InvalidArgumentError(f"option {name!r} must be an integer, not {value!r}") from None
    if n < minimum:
        raise InvalidArgumentError(f"option {name!r} must be at least {minimum}, not {n}")
    return n


def _storage_value(value):
    """Spark option values are strings; fsspec wants dicts/bools for some keys."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            raise InvalidArgumentError(f"storage option value {value!r} is not valid JSON") from None
    return value


def storage_options(options: Mapping[str, str]) -> dict | None:
    """``storage_options`` (a JSON object) merged with every ``storage.<key>`` option."""
    opts = _lower(options)
    out: dict = {}
    raw = opts.get("storage_options")
    if raw:
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except ValueError:
            raise InvalidArgumentError("option 'storage_options' must be a JSON object") from None
        if not isinstance(parsed, dict):
            raise InvalidArgumentError("option 'storage_options' must be a JSON object")
        out.update(parsed)
    for k, v in dict(options).items():  # keep the key's own case: fsspec arguments are case-sensitive
        if str(k).lower().startswith(STORAGE_PREFIX):
            out[str(k)[len(STORAGE_PREFIX):]] = _storage_value(v)
    return out or None


def manifest_store_uri(value) -> str | None:
    """The ``manifest_store`` option: an external manifest store URI (``sqlite:///path`` or
    ``dynamodb://table?endpoint_url=...``),
    checked here so a typo fails at planning time, opened where versions are resolved."""
    if value is None or str(value).strip() == "":
        return None
    value = str(value).strip()
    from ..table.manifest_stores import as_manifest_store

    if not value.startswith(("sqlite://", "dynamodb://")):
        raise InvalidArgumentError(f"option 'manifest_store' must be sqlite:///path or "
                                   f"dynamodb://table, not {value!r}")
    if value.startswith("dynamodb://"):
        as_manifest_store(value)  # checks the table name and options (no request is made)
    elif value.rstrip("/") == "sqlite:":
        raise InvalidArgumentError("option 'manifest_store' needs a file path: sqlite:///path")
    return value


def dataset_uri(options: Mapping[str, str]) -> str:
    path = _lower(options).get("path")
    if not path:
        raise InvalidArgumentError("the lance data source needs a dataset path: .load(uri) / .save(uri)")
    return normalize_uri(str(path))


def _version(value):
    """An int version, a tag name, or None (latest)."""
    if value is None or str(value).strip() == "":
        return None
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    return text


def _names(name: str, value) -> list[str] | None:
    """A column list given as ``a,b,c`` or as a JSON list."""
    if value is None or str(value).strip() == "":
        return None
    text = str(value).strip()
    if text.startswith("["):
        try:
            names = json.loads(text)
        except ValueError:
            raise InvalidArgumentError(f"option {name!r} is not a valid JSON list") from None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InvalidArgumentError(f"option {name!r} must be a list of names")
        return names
    return [n.strip() for n in text.split(",") if n.strip()]


@dataclass(frozen=True)
class ReadOptions:
    uri: str
    version: int | str | None = None
    columns: list | None = None
    batch_size: int | None = None  # None: sized by bytes
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    with_row_id: bool = False
    with_row_address: bool = False
    filter: str | None = None
    rows_per_partition: int = DEFAULT_ROWS_PER_PARTITION
    min_partitions: int | None = None  # None: the session's default parallelism
    # every partition holds whole fragments, in order (jobs writing one file per fragment)
    whole_fragments: bool = False
    fragment_ids: tuple | None = None  # only these fragments (None: all)
    storage_options: dict | None = field(default=None, hash=False)
    manifest_store: str | None = None  # external manifest store URI (sqlite:///path)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "ReadOptions":
        opts = _lower(options)
        return cls(
            uri=dataset_uri(options),
            version=_version(opts.get("version")),
            columns=_names("columns", opts.get("columns")),
            batch_size=_positive_int("batch_size", opts.get("batch_size"), None),
            max_batch_bytes=_positive_int("max_batch_bytes", opts.get("max_batch_bytes"),
                                          DEFAULT_MAX_BATCH_BYTES),
            with_row_id=parse_bool("with_row_id", opts.get("with_row_id")),
            with_row_address=parse_bool("with_row_address", opts.get("with_row_address")),
            filter=(opts.get("filter") or None),
            rows_per_partition=_positive_int("rows_per_partition", opts.get("rows_per_partition"),
                                             DEFAULT_ROWS_PER_PARTITION),
            min_partitions=_positive_int("min_partitions", opts.get("min_partitions"), None),
            whole_fragments=parse_bool("whole_fragments", opts.get("whole_fragments")),
            fragment_ids=_ids("fragment_ids", opts.get("fragment_ids")),
            storage_options=storage_options(options),
            manifest_store=manifest_store_uri(opts.get("manifest_store")),
        )


def _ids(name: str, value) -> tuple | None:
    """Fragment ids given as ``1,2,3`` or a JSON list."""
    names = _names(name, value if not isinstance(value, (list, tuple)) else json.dumps(value))
    if names is None:
        return None
    try:
        return tuple(int(n) for n in names)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"option {name!r} must list fragment ids, not {value!r}") from None


def _bases(value) -> list[BasePath] | None:
    """``initial_bases`` as JSON: ``[{"path": ..., "name": ..., "is_dataset_root": false}, ...]``."""
    if value is None or str(value).strip() == "":
        return None
    try:
        items = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        raise InvalidArgumentError("option 'initial_bases' must be a JSON list of "
                                   "{\"path\", \"name\", \"is_dataset_root\", \"id\"} objects") from None
    if not isinstance(items, list):
        raise InvalidArgumentError("option 'initial_bases' must be a JSON list")
    out = []
    for item in items:
        if isinstance(item, str):
            item = {"path": item}
        if not isinstance(item, dict) or "path" not in item:
            raise InvalidArgumentError(f"an initial base needs a path: {item!r}")
        unknown = set(item) - {"path", "name", "is_dataset_root", "id"}
        if unknown:
            raise InvalidArgumentError(f"unknown initial base key(s) {sorted(unknown)}")
        out.append(BasePath(item["path"], item.get("name"), bool(item.get("is_dataset_root", False)),
                            item.get("id")))
    return out


def _targets(value) -> list | None:
    """``target_bases`` as ``hot,cold`` or ``1,2`` (names or ids)."""
    names = _names("target_bases", value)
    if not names:
        return None
    return [int(n) if n.isdigit() else n for n in names]


@dataclass(frozen=True)
class WriteOptions:
    uri: str
    max_rows_per_file: int | None = None
    max_bytes_per_file: int | None = None
    target_bases: list | None = None
    initial_bases: list | None = None
    data_storage_version: str | None = None
    enable_stable_row_ids: bool = False
    commit_message: str | None = None
    max_retries: int = 20
    storage_options: dict | None = field(default=None, hash=False)
    manifest_store: str | None = None  # external manifest store URI (sqlite:///path)
    encode_threads: int | None = None  # threads encoding pages per task (None: the task's cores)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "WriteOptions":
        opts = _lower(options)
        rows = opts.get("max_rows_per_file", opts.get("max_row_per_file"))
        return cls(
            uri=dataset_uri(options),
            max_rows_per_file=_positive_int("max_rows_per_file", rows, None),
            max_bytes_per_file=_positive_int("max_bytes_per_file", opts.get("max_bytes_per_file"), None),
            target_bases=_targets(opts.get("target_bases")),
            initial_bases=_bases(opts.get("initial_bases")),
            data_storage_version=_storage_version(opts.get("data_storage_version")),
            enable_stable_row_ids=parse_bool("enable_stable_row_ids", opts.get("enable_stable_row_ids")),
            commit_message=(opts.get("commit_message") or None),
            max_retries=_positive_int("max_retries", opts.get("max_retries"), 20, minimum=0),
            storage_options=storage_options(options),
            manifest_store=manifest_store_uri(opts.get("manifest_store")),
            encode_threads=_positive_int("encode_threads", opts.get("encode_threads"), None),
        )

    def fragment_kwargs(self) -> dict:
        """Keyword arguments for ``write_fragments`` (only the ones the user set)."""
        kw = {}
        if self.max_rows_per_file is not None:
            kw["max_rows_per_file"] = self.max_rows_per_file
        if self.max_bytes_per_file is not None:
            kw["max_bytes_per_file"] = self.max_bytes_per_file
        if self.target_bases:
            kw["target_bases"] = list(self.target_bases)
        if self.data_storage_version:
            kw["data_storage_version"] = self.data_storage_version
        return kw


def _storage_version(value):
    """Checked when the options are parsed (on the driver), not when tasks write files."""
    if not value:
        return None
    from ..file.format import storage_version_name

    return storage_version_name(value)
