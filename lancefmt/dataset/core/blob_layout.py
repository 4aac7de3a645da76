"""Where blob v2 bytes live: the descriptor kinds and the sidecar ``.blob`` file names.

A blob v2 column (pylance 14, storage 2.2) stores one descriptor per row: ``kind`` 0 keeps the
bytes inside the row's data file, 1 and 2 in sidecar files next to it
(``data/<data file stem>/<blob_id>.blob``, the id's 32 bits written lowest first), 3 points at
an external URI.
"""
from __future__ import annotations

from ...errors import CorruptFileError

KIND_INLINE, KIND_PACKED, KIND_DEDICATED, KIND_EXTERNAL = 0, 1, 2, 3


def blob_sidecar_uri(data_file_uri: str, blob_id: int) -> str:
    """The sidecar ``.blob`` file of ``blob_id`` belonging to a data file."""
    if not 0 <= blob_id < 1 << 32:
        raise CorruptFileError(f"blob id {blob_id} out of range", data_file_uri)
    stem = data_file_uri[:-len(".lance")] if data_file_uri.endswith(".lance") else data_file_uri
    return f"{stem}/{format(blob_id, '032b')[::-1]}.blob"
