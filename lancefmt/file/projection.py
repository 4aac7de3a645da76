"""Which fields a read returns, and which file columns hold them.

A :class:`Projection` is built once per (file, requested fields) and passed as ``columns=`` to
the read methods of :class:`~lancefmt.file.LanceFileReader`:

* ``reader.projection(["a", "b"])``: top-level fields by name, read with the file's own schema;
* ``reader.projection(fields=dataset_fields, field_ids=data_file.fields,
  column_indices=data_file.column_indices)``: the dataset layer's view. ``fields`` is the
  dataset's Lance Field list restricted to the wanted top-level fields (their whole subtrees,
  e.g. via :func:`lancefmt.file.schema.project_fields`); names and types come from it (so a
  renamed column reads under its new name), and every field id in it is looked up in the
  DataFile's ``fields`` -> ``column_indices`` map.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa

from ..errors import InvalidArgumentError
from .schema import FieldNode, restore_extensions


@dataclass(frozen=True)
class Projection:
    roots: tuple            # FieldNode per output column
    storage_schema: pa.Schema   # what the decoders produce (no extension types)
    schema: pa.Schema           # what the reader returns
    column_of: dict             # field id -> column index in the file

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.roots]

    @cached_property
    def restored(self) -> tuple:
        """(index, type) of the columns whose returned type is not the decoded storage type
        (extension types): known once per projection, not checked again for every read."""
        return tuple((i, t.type) for i, (s, t) in enumerate(zip(self.storage_schema, self.schema))
                     if not s.type.equals(t.type))


def make_projection(roots: list[FieldNode], column_of: dict, schema_metadata=None) -> Projection:
    fields = [r.arrow_field() for r in roots]
    storage = pa.schema(fields, metadata=schema_metadata or None)
    return Projection(tuple(roots), storage, restore_extensions(storage), dict(column_of))


def select_roots(roots: list[FieldNode], names) -> list[FieldNode]:
    """The named top-level nodes in the requested order (InvalidArgumentError if unknown)."""
    if names is None:
        return list(roots)
    if isinstance(names, str):
        raise InvalidArgumentError("columns must be a list of names, not a string")
    by_name = {r.name: r for r in roots}
    out = []
    for n in names:
        node = by_name.get(n)
        if node is None:
            raise InvalidArgumentError(
                f"no column {n!r} in the file (has: {', '.join(by_name) or 'none'})")
        out.append(node)
    return out


def data_file_column_map(field_ids, column_indices) -> dict[int, int]:
    """``DataFile.fields`` / ``column_indices`` as a dict (entries of -1 mean "no column")."""
    field_ids = list(field_ids)
    column_indices = list(column_indices)
    if len(field_ids) != len(column_indices):
        raise InvalidArgumentError(
            f"{len(field_ids)} field ids but {len(column_indices)} column indices")
    out = {int(f): int(c) for f, c in zip(field_ids, column_indices) if c >= 0}
    if len(set(out.values())) != len(out):
        # Two fields in one column would decode one column's pages as two kinds of array.
        from ..errors import CorruptFileError

        dup = next(c for c in out.values() if list(out.values()).count(c) > 1)
        raise CorruptFileError(f"column {dup} is claimed by more than one field "
                               f"(column_indices {column_indices})")
    return out
