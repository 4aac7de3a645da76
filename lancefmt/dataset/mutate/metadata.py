"""Config and metadata changes as UpdateConfig operations (pylance's ``update_config``,
``update_schema_metadata``, ``update_field_metadata``, ...). Values are checked here, before
anything is committed: keys and values are strings (pylance raises TypeError otherwise) and
metadata must be valid UTF-8.
"""
from __future__ import annotations

from ...errors import InvalidArgumentError, LanceError
from ...table.transaction import UpdateConfig, UpdateMap


class MetadataTypeError(LanceError, TypeError):
    """A metadata or config key/value that is not a string."""


def _checked(values: dict, what: str) -> dict:
    if not isinstance(values, dict):
        raise MetadataTypeError(f"{what} updates must be a dict, not {type(values).__name__}")
    out = {}
    for k, v in values.items():
        if not isinstance(k, str) or not (v is None or isinstance(v, str)):
            raise MetadataTypeError(f"{what} keys and values must be str (or None to delete), "
                                    f"got {k!r}: {v!r}")
        out[k] = v
    return out


def config_update(values: dict, replace: bool) -> UpdateConfig:
    return UpdateConfig(config_updates=UpdateMap(_checked(values, "config"), replace))


def table_metadata_update(values: dict, replace: bool) -> UpdateConfig:
    return UpdateConfig(table_metadata_updates=UpdateMap(_checked(values, "table metadata"), replace))


def schema_metadata_update(values: dict, replace: bool) -> UpdateConfig:
    return UpdateConfig(schema_metadata_updates=UpdateMap(_checked(values, "schema metadata"), replace))


def field_id(fields, key) -> int:
    """The id of the field named by a dotted path (or given by id)."""
    if isinstance(key, int) and not isinstance(key, bool):
        if any(f.id == key for f in fields):
            return key
        raise InvalidArgumentError(f"no field with id {key}")
    parts = str(key).split(".")
    parent = -1
    found = None
    for part in parts:
        found = next((f for f in fields if f.parent_id == parent and f.name == part), None)
        if found is None:
            raise InvalidArgumentError(f"no field {key!r} in the schema")
        parent = found.id
    return found.id


def field_metadata_update(fields, field_updates: dict, replace: bool) -> UpdateConfig:
    if not isinstance(field_updates, dict):
        raise MetadataTypeError("field metadata updates must be {field: {key: value}}")
    updates = {}
    for key, values in field_updates.items():
        updates[field_id(fields, key)] = UpdateMap(_checked(values, "field metadata"), replace)
    return UpdateConfig(field_metadata_updates=updates)


def decoded_metadata(metadata) -> dict:
    return {k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
            for k, v in metadata.items()}
