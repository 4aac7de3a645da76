"""What lancefmt does to an old release's dataset in the compat checks (tests/compat and
``make compat``): delete rows, append rows, compact -- each read back by pylance 14, and by the
old release itself where it can (roundtrip.py)."""
from __future__ import annotations

import pyarrow as pa

import lancefmt


def append(uri: str, data: pa.Table) -> None:
    """Append ``data`` with lancefmt (in the dataset's own storage version, legacy included)."""
    lancefmt.write_dataset(data, uri, mode="append", max_rows_per_group=8)


def values(t: pa.Table) -> pa.Table:
    """Dictionary columns by value (how a release chunks its dictionaries is not data)."""
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in t.columns]
    return pa.table(cols, names=t.column_names).combine_chunks()
