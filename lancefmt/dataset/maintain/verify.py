"""``lancefmt verify``: every file a version references exists and opens, all reported at once
(``Dataset.validate`` stops at the first problem; this walks everything and lists it)."""
from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass, field

from ...errors import LanceError
from ...file.reader import LanceFileReader
from ...table.deletion import deletion_file_kind
from ...table.naming import deletion_file_name
from ..core.files import data_file_uri
from ..read.scan import load_deletions


@dataclass
class VerifyReport:
    checked_data_files: int = 0
    checked_deletion_files: int = 0
    checked_indices: int = 0
    missing: list = field(default_factory=list)     # URIs that do not exist
    unreadable: list = field(default_factory=list)  # [uri, reason]

    @property
    def ok(self) -> bool:
        return not self.missing and not self.unreadable

    def to_dict(self) -> dict:
        return {"ok": self.ok, "checked_data_files": self.checked_data_files,
                "checked_deletion_files": self.checked_deletion_files,
                "checked_indices": self.checked_indices, "missing": list(self.missing),
                "unreadable": [list(u) for u in self.unreadable]}


def verify_dataset(snapshot, *, progress: bool = False) -> VerifyReport:
    """Open every data file's footer (and check its row count), read every deletion file, and
    check every index directory of ``snapshot``'s version."""
    ctx = snapshot.ctx
    report = VerifyReport()
    pbs = snapshot.fragment_pbs()
    frags = pbs
    if progress:
        from tqdm import tqdm

        frags = tqdm(pbs, desc="verifying fragments", unit="fragment", leave=False)
    for pb in frags:
        for df in pb.files:
            report.checked_data_files += 1
            try:
                uri = data_file_uri(ctx.resolver, df)
            except LanceError as e:
                report.unreadable.append([df.path, str(e)])
                continue
            store = ctx.store_for(uri)
            try:
                reader = LanceFileReader(uri, store=store)
            except (LanceError, OSError) as e:
                if not store.exists(uri):
                    report.missing.append(uri)
                else:
                    report.unreadable.append([uri, str(e)])
                continue
            if reader.num_rows != pb.physical_rows:
                report.unreadable.append([uri, f"has {reader.num_rows} rows, fragment {pb.id} "
                                               f"has {pb.physical_rows}"])
        if pb.HasField("deletion_file"):
            report.checked_deletion_files += 1
            try:
                load_deletions(ctx, pb)
            except (LanceError, OSError) as e:
                d = pb.deletion_file
                name = deletion_file_name(pb.id, d.read_version, d.id, deletion_file_kind(d))
                uri = ctx.resolver.deletion_file_uri(name, d.base_id if d.HasField("base_id") else None)
                if not ctx.store_for(uri).exists(uri):
                    report.missing.append(uri)
                else:
                    report.unreadable.append([uri, str(e)])
    for idx in snapshot.manifest_file.indices:
        report.checked_indices += 1
        name = str(_uuid.UUID(bytes=bytes(idx.uuid.uuid)))
        d = ctx.resolver.index_dir_uri(name, idx.base_id if idx.HasField("base_id") else None)
        if not ctx.store_for(d).list(d):
            report.missing.append(d)
    return report
