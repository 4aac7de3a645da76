"""What adding, casting and merging columns share: one new data file per fragment, written
for every physical row, and the Lance field bookkeeping around it.

As Lance does it (checked against pylance 14): new columns get field ids from
``max(id) + 1``; each fragment gets **one** new data file holding only them (its ``fields`` =
the new ids), written for every *physical* row (deleted rows too, so offsets stay aligned);
one Merge transaction commits the new fragment list and schema. A rewritten column's old id
becomes a tombstone (-2) in the old files.
"""
from __future__ import annotations

import pyarrow as pa

from ..._proto import file_pb2, table_pb2
from ...errors import InvalidArgumentError
from ...file.schema import fields_from_arrow
from ...file.writer import LanceFileWriter
from ...io import open_store
from ...table.fragment import FragmentMetadata
from ...table.naming import data_file_name
from ...table.transaction import Merge
from ..core.files import delete_files
from ..core.plan import CommitPlan
from ..read.scan import FragmentScan, ScanSpec
from ..write.files import data_file_pb, targets_for
from ..write.plan import check_storage_version
from ..write.staging import stage_file

TOMBSTONE = -2


def max_field_id(fields) -> int:
    """The highest field id in use (-1 for none): new fields start after it."""
    return max((f.id for f in fields), default=-1)


def physical_batches(snapshot, pb, columns, batch_size=None):
    """Every physical row (deleted ones too) of fragment ``pb``, for ``columns``."""
    bare = table_pb2.DataFragment()
    bare.CopyFrom(pb)
    bare.ClearField("deletion_file")
    spec = ScanSpec.build(snapshot.schema, list(columns), batch_size=batch_size)
    scan = FragmentScan(snapshot.ctx, bare, spec)
    if not columns:
        yield pa.table({"__n": pa.nulls(pb.physical_rows, pa.bool_())}).drop_columns(["__n"])
        return
    yield from scan.windows()


def check_new_names(snapshot, names) -> None:
    """Refuse new column names the dataset already has, or repeated ones."""
    have = set(snapshot.schema.names)
    dup = [n for n in names if n in have]
    if dup:
        raise InvalidArgumentError(f"column(s) {dup} already exist in the dataset")
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"duplicate new column names {names}")


class FragmentFileWriter:
    """Writes one data file per fragment for the new columns, in the dataset root's data/;
    with ``staging``, each file is recorded there before it is created (distributed jobs)."""

    def __init__(self, snapshot, schema: pa.Schema, fields, staging: str | None = None,
                 staging_open: bool = False):
        self.version = check_storage_version(snapshot.data_storage_version)
        target = targets_for(snapshot.uri, list(snapshot.base_paths.values()), None, snapshot.storage_options,
                             snapshot.base_store_params)[0]
        self.data_dir, self.options = target.data_dir, target.storage_options
        self.schema, self.fields = schema, fields
        self.staging, self.staging_open = staging, staging_open
        self.written: list = []

    def write(self, tables) -> tuple[table_pb2.DataFile, int]:
        name = data_file_name()
        uri = self.data_dir.rstrip("/") + "/" + name
        if self.staging is not None:
            stage_file(self.staging, uri, self.options, require_open=self.staging_open)
        writer = LanceFileWriter(uri, self.schema, self.version, store=open_store(uri, self.options),
                                 fields=self.fields)
        try:
            for t in tables:
                for b in (t.to_batches() if isinstance(t, pa.Table) else [t]):
                    if b.num_rows:
                        writer.write_batch(pa.RecordBatch.from_arrays(b.columns, schema=self.schema))
            rows = writer.close()
        except BaseException:
            writer.abort()
            raise
        self.written.append((uri, self.options))
        return data_file_pb(name, writer, None), rows

    @staticmethod
    def options_of(snapshot):
        """The storage options new column files of ``snapshot`` are written with."""
        return targets_for(snapshot.uri, list(snapshot.base_paths.values()), None,
                           snapshot.storage_options, snapshot.base_store_params)[0].storage_options

    def abort(self):
        for uri, options in self.written:
            delete_files([uri], options)


def new_fields(snapshot, schema: pa.Schema) -> list:
    """Lance fields for new columns ``schema``, numbered after the snapshot's highest id."""
    return fields_from_arrow(schema, start_id=max_field_id(snapshot.lance_fields) + 1)


def write_column_files(snapshot, schema: pa.Schema, fields, tables_for, pbs,
                       staging: str | None = None, staging_open: bool = False) -> list:
    """One new data file per fragment of ``pbs`` for ``schema``'s columns (ids ``fields``),
    the rows coming from ``tables_for(fragment pb)`` (tables in physical row order):
    ``[(fragment metadata with the file added, file URI)]``. Nothing is committed; a failure
    removes the files written. The unit a distributed backfill runs on an executor."""
    writer = FragmentFileWriter(snapshot, schema, fields, staging, staging_open)
    out = []
    try:
        for pb in pbs:
            df, rows = writer.write(tables_for(pb))
            if rows != pb.physical_rows:
                raise InvalidArgumentError(f"fragment {pb.id} has {pb.physical_rows} rows, the "
                                           f"new columns {rows}")
            meta = FragmentMetadata.from_bytes(pb.SerializeToString())
            meta.pb.files.add().CopyFrom(df)
            out.append((meta, writer.written[-1][0]))
    except BaseException:
        writer.abort()
        raise
    return out


def merge_operation(snapshot, fragments, fields) -> Merge:
    """The Merge committing ``fragments`` (every fragment, new files added) with the new
    ``fields`` after the snapshot's."""
    return Merge(fragments, list(snapshot.lance_fields) + list(fields),
                 schema_metadata=dict(snapshot.manifest.schema_metadata))


def with_new_files(snapshot, new_schema: pa.Schema, tables_for, pbs=None):
    """Merge plan: every fragment (of ``pbs``, default all) gets one data file for
    ``new_schema``'s columns, the rows coming from ``tables_for(fragment pb)`` (an iterable of
    tables, physical row order)."""
    fields = new_fields(snapshot, new_schema)
    written = write_column_files(snapshot, new_schema, fields, tables_for,
                                 snapshot.fragment_pbs() if pbs is None else pbs)
    fragments = [meta for meta, _ in written]
    return CommitPlan(merge_operation(snapshot, fragments, fields),
                      [(uri, FragmentFileWriter.options_of(snapshot)) for _, uri in written])


def field_by_path(fields, path: str, quote: str = ""):
    """The Lance field at a dotted path (``quote``: around the path in the error, as the
    pylance call that asks words it)."""
    parent, found = -1, None
    for part in str(path).split("."):
        found = next((f for f in fields if f.parent_id == parent and f.name == part), None)
        if found is None:
            raise InvalidArgumentError(f"Column {quote}{path}{quote} does not exist in the dataset")
        parent = found.id
    return found


def descendants(fields, fid: int) -> set:
    """Ids of field ``fid`` and every field below it."""
    out = {fid}
    changed = True
    while changed:
        changed = False
        for f in fields:
            if f.parent_id in out and f.id not in out:
                out.add(f.id)
                changed = True
    return out


def copy_fields(fields) -> list:
    """Copies of Lance fields, to edit without touching the snapshot's."""
    out = []
    for f in fields:
        c = file_pb2.Field()
        c.CopyFrom(f)
        out.append(c)
    return out
