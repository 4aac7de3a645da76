"""Dictionary values of legacy (v0.1) datasets, carried from manifest to manifest.

A legacy dataset keeps the values of each dictionary column *in the manifest file*: they are
written before the manifest protobuf (plain numbers, or string bytes followed by their
absolute positions) and ``Field.dictionary`` holds their offset and count. pylance reads them
from there for every scan, so a commit that copied the Field but not the values would point
pylance at whatever bytes the new file has at that offset. Each commit therefore reads the
values of the version it builds on (or, for a field no manifest holds yet, of the data file
that first stores it) and writes them again into the new file
(:func:`lancefmt.table.manifest.encode_manifest_file`).
"""
from __future__ import annotations

import pyarrow as pa

from ..errors import CorruptFileError

DICT_PREFIX = "dict:"


def dictionary_fields(fields) -> list:
    """The Fields of a Field list that are legacy dictionary columns."""
    return [f for f in fields if f.logical_type.startswith(DICT_PREFIX)]


def is_legacy(manifest) -> bool:
    """Whether a ``table_pb2.Manifest`` describes a legacy dataset (the only kind whose
    manifests carry dictionary values)."""
    if manifest.HasField("data_format"):
        return manifest.data_format.version in ("0.1", "legacy")
    for frag in manifest.fragments:
        for df in frag.files:
            return df.file_major_version == 0 and df.file_minor_version < 3
    return False


def read_values(read_range, field, data_end: int, path) -> pa.Array:
    """The dictionary values a Field points at, in the file ``read_range(start, n)`` reads."""
    from ..encoding.legacy.decode import read_dictionary_values
    from ..file.schema import arrow_type

    value_type = arrow_type(field.logical_type).value_type

    def fetch(start, length):
        data = read_range(start, length)
        if len(data) != length:
            raise CorruptFileError(f"short read of the dictionary of {field.name!r}", path)
        return pa.py_buffer(data)

    return read_dictionary_values(fetch, field, value_type, data_end, path)


def carried_dictionaries(manifest, previous, dataset_uri: str, store) -> dict:
    """{field id: values} for every dictionary field of the legacy ``manifest`` about to be
    written: from ``previous`` (a ManifestFile) when it has them, else from a data file."""
    if not is_legacy(manifest):
        return {}
    wanted = dictionary_fields(manifest.fields)
    if not wanted:
        return {}
    have = previous.dictionary_values() if previous is not None else {}
    out = {}
    for f in wanted:
        values = have.get(f.id)
        if values is None:
            values = _from_data_files(manifest, f, dataset_uri, store)
        if values is not None:
            out[f.id] = values
    return out


def _from_data_files(manifest, field, dataset_uri: str, store):
    """The values a legacy data file holding ``field`` keeps in its own schema (None if no
    fragment stores the field yet)."""
    from ..file.legacy.reader import LegacyFileReader
    from ..file.reader import LanceFileReader
    from ..io.uri import child

    for frag in manifest.fragments:
        for df in frag.files:
            if field.id in df.fields and not df.HasField("base_id"):
                reader = LanceFileReader(child(child(dataset_uri, "data"), df.path), store=store)
                if not isinstance(reader, LegacyFileReader):
                    return None
                return reader.dictionary_values(field.id)
    return None
