"""Distributed INVERTED builds, as pylance 14 lays them out.

Each worker builds the fragments it is given into the shared index directory's ``staging/``:
the partition files ``part_{id}_tokens/docs/invert.lance`` and ``part_{id}_metadata.lance`` (no
columns; its schema metadata holds the parameters), the partition id being the first
fragment's id shifted left by 32 bits, so workers never collide. ``merge_index_metadata``
then unites every staged partition into one (smallest partition first, as pylance 14 orders
them by the bytes of their files; tokens numbered by first appearance), writes it and ``metadata.lance`` at the directory's root and removes the
staging files. The index is committed afterwards by the caller (``LanceOperation.CreateIndex``),
often without index details: :func:`recognizes` tells an INVERTED directory by its files.
"""
from __future__ import annotations

import json
import re

import pyarrow as pa

from ...errors import CorruptFileError, InvalidArgumentError
from ..core.registry import TrainingData
from ..core.store import IndexStore
from . import format as fmt
from .build import build_partition, write_metadata, write_partition
from .json_tokenizer import is_json_field
from .partition import PartitionReader, details_of, text_metadata, unite
from .tokenizer import Tokenizer, normalize_params, params_json

STAGING = "staging"
_PART = re.compile(r"^part_(\d+)_metadata\.lance$")


def staging_store(store: IndexStore) -> IndexStore:
    return IndexStore(store.uri(STAGING), store.storage_options)


def stage_partition(data: TrainingData, store: IndexStore, params: dict, granularity: str) -> int:
    """Build ``data`` (one worker's fragments) into ``store``'s staging area; returns the
    partition id."""
    params = normalize_params({k: v for k, v in params.items() if k != "document_granularity"})
    if not data.fragments:
        raise InvalidArgumentError("a distributed INVERTED build needs at least one fragment")
    pid = int(data.fragments[0][0]) << 32
    staging = staging_store(store)
    part = build_partition(data, Tokenizer(params), granularity)
    write_partition(staging, part, pid, params["with_position"])
    meta = {"params": params_json(params), **fmt.invert_metadata(params["with_position"]),
            "token_set_format": "fst"}
    staging.write_table(f"part_{pid}_metadata.lance", pa.table({}), meta)
    store.written.extend((f"{STAGING}/{n}", s) for n, s in staging.written)
    return pid


def staged_partitions(store: IndexStore) -> list:
    """Ids of the partitions in ``store``'s staging area, ascending."""
    staging = staging_store(store)
    return sorted(int(m.group(1)) for name, _ in staging.list_files()
                  if (m := _PART.match(name)) is not None)


def merge_staged(store: IndexStore, field: pa.Field | None = None):
    """Unite the staged partitions into the index (see module docstring); returns the details
    message (``field``: the indexed column, when known). Staging files are removed."""
    staging = staging_store(store)
    pids = staged_partitions(store)
    if not pids:
        raise InvalidArgumentError(f"no staged INVERTED partitions under {staging.dir_uri}")
    meta = text_metadata(staging, f"part_{pids[0]}_metadata.lance")
    try:
        stored = json.loads(meta["params"])
    except (KeyError, ValueError) as e:
        raise CorruptFileError(f"bad staged parameters ({e})",
                               staging.uri(f"part_{pids[0]}_metadata.lance")) from None
    params = normalize_params({k: v for k, v in stored.items() if k in fmt_params()})
    # pylance 14 unites the staged partitions smallest first (by the bytes of their files)
    sizes = dict(staging.list_files())
    pids.sort(key=lambda p: (sum(sizes.get(n, 0) for n in (fmt.docs_file(p), fmt.invert_file(p),
                                                           fmt.tokens_file(p))), p))
    parts = [PartitionReader(staging, pid).content(params["with_position"]) for pid in pids]
    merged = unite(parts)
    write_partition(store, merged, 0, params["with_position"])
    write_metadata(store, params, [0])
    for name, _ in staging.list_files():
        staging.store.delete(staging.uri(name))
    list_column = field is not None and (pa.types.is_list(field.type) or pa.types.is_large_list(field.type)
                                         or is_json_field(field))
    return details_of(params, merged.doc_index is not None, list_column)


def fmt_params() -> set:
    from .tokenizer import DEFAULTS

    return set(DEFAULTS)


def recognizes(store: IndexStore) -> bool:
    """Whether ``store`` holds an INVERTED index (its ``metadata.lance`` names its tokenizer
    parameters and partitions)."""
    try:
        if not store.exists(fmt.METADATA_FILE):
            return False
        meta = text_metadata(store, fmt.METADATA_FILE)
    except (OSError, CorruptFileError):
        return False
    return "params" in meta and "partitions" in meta
