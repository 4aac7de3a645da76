"""``Dataset.validate()``: every file the version references exists and its footer reads."""
from __future__ import annotations

from ...errors import CorruptFileError
from ...file.reader import LanceFileReader
from ..core.files import data_file_uri
from ..read.scan import load_deletions


def validate_dataset(snapshot) -> None:
    """Raise CorruptFileError naming the first missing or unreadable file."""
    ctx = snapshot.ctx
    seen_ids = set()
    for pb in snapshot.fragment_pbs():
        if pb.id in seen_ids:
            raise CorruptFileError(f"fragment id {pb.id} appears twice", snapshot.manifest_file.uri)
        seen_ids.add(pb.id)
        for df in pb.files:
            uri = data_file_uri(ctx.resolver, df)
            try:
                reader = LanceFileReader(uri, store=ctx.store_for(uri))
            except FileNotFoundError:
                raise CorruptFileError("data file is missing", uri) from None
            if reader.num_rows != pb.physical_rows:
                raise CorruptFileError(f"has {reader.num_rows} rows, fragment {pb.id} has "
                                       f"{pb.physical_rows}", uri)
        try:
            load_deletions(ctx, pb)
        except FileNotFoundError as e:
            raise CorruptFileError(f"deletion file of fragment {pb.id} is missing ({e})",
                                   snapshot.manifest_file.uri) from None
