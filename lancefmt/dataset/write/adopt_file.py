"""pylance's ``LanceFragment.create_from_file``: a fragment for a Lance file someone wrote
into the dataset's ``data/`` directory with the file API (nothing is copied or committed).

The file's columns are matched to the dataset's fields by name (nested by path), and its
column allocation is recomputed with the writer's own rule for the file's version, so the
DataFile's ``fields``/``column_indices`` say what a lancefmt writer would have said."""
from __future__ import annotations

from ..._proto import table_pb2
from ...encoding import field_writers_for
from ...errors import InvalidArgumentError
from ...file.reader import LanceFileReader
from ...file.schema import field_tree
from ...table.fragment import FragmentMetadata


def _paths(fields) -> dict:
    """``{field id: dotted path}`` of Lance fields."""
    by_id = {f.id: f for f in fields}
    out = {}
    for f in fields:
        parts, node = [f.name], f
        while node.parent_id != -1:
            node = by_id[node.parent_id]
            parts.append(node.name)
        out[f.id] = ".".join(reversed(parts))
    return out


def fragment_from_file(snapshot, filename: str, fragment_id: int = 0) -> FragmentMetadata:
    """A fragment whose only data file is ``data/<filename>`` of ``snapshot``'s dataset."""
    uri = snapshot.ctx.resolver.data_file_uri(filename, None)
    reader = LanceFileReader(uri, snapshot.storage_options)
    major, minor = reader.version
    file_fields = reader.fields
    dataset_ids = {path: fid for fid, path in _paths(snapshot.lance_fields).items()}
    file_paths = _paths(file_fields)
    missing = [p for p in file_paths.values() if p not in dataset_ids]
    if missing:
        raise InvalidArgumentError(f"{filename}: columns {missing} are not in the dataset")
    allocation = field_writers_for((major, minor)).column_allocation(field_tree(file_fields))
    df = table_pb2.DataFile(path=filename, file_major_version=major, file_minor_version=minor,
                            file_size_bytes=reader.file_size)
    df.fields.extend(dataset_ids[file_paths[fid]] for fid, _ in allocation)
    df.column_indices.extend(col for _, col in allocation)
    return FragmentMetadata.new([df], reader.num_rows, id=int(fragment_id))
