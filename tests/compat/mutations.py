"""What lancefmt does to an old release's dataset in the compat checks (tests/compat and
``make compat``): delete rows, append rows, compact -- each read back by pylance 14, and by the
old release itself where it can (roundtrip.py)."""
from __future__ import annotations

import uuid

import pyarrow as pa

import lancefmt
from lancefmt._proto import table_pb2
from lancefmt.file.writer import LanceFileWriter
from lancefmt.table.versions import latest_manifest, load_manifest


def append_legacy(uri: str, data: pa.Table, rows_per_group: int = 8) -> None:
    """One legacy data file written by lancefmt, committed as an Append: what lancefmt's
    dataset writer does for a legacy dataset once lancefmt/dataset accepts "0.1" (the file
    writer and the commit are the parts this exercises)."""
    mf = load_manifest(uri, latest_manifest(uri).version)
    name = f"{uuid.uuid4().hex}.lance"
    w = LanceFileWriter(f"{uri}/data/{name}", data.schema, "legacy", fields=list(mf.header.fields),
                        max_rows_per_group=rows_per_group)
    w.write_batch(data)
    w.close()
    df = table_pb2.DataFile(path=name, fields=w.field_ids, file_major_version=0,
                            file_minor_version=2, file_size_bytes=w.file_size)
    frag = lancefmt.FragmentMetadata.new([df], w.num_rows)
    lancefmt.commit(uri, lancefmt.Operation.Append([frag]))


def append(uri: str, data: pa.Table) -> None:
    """Append ``data`` with lancefmt, in the dataset's own storage version."""
    if lancefmt.dataset(uri).data_storage_version == "0.1":
        append_legacy(uri, data)
    else:
        lancefmt.write_dataset(data, uri, mode="append")


def values(t: pa.Table) -> pa.Table:
    """Dictionary columns by value (how a release chunks its dictionaries is not data)."""
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in t.columns]
    return pa.table(cols, names=t.column_names).combine_chunks()
