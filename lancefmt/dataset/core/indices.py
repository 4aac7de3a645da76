"""A version's indices as the read planner and index operations see them.

:func:`index_catalog` groups the manifest's index entries by name and column (built once per
snapshot, segments loaded on first use); :func:`index_store` opens one entry's directory under
the base it lives in (``_indices/{uuid}/`` of the dataset root, or of ``base_id``).
"""
from __future__ import annotations

from ...index.core.catalog import Segment, build_catalog
from ...index.core.legacy import inferred_type
from ...index.core.metadata import fragment_ids, uuid_text
from ...index.core.registry import by_details
from ...index.core.store import IndexStore


def index_store(snapshot, entry) -> IndexStore:
    """The directory of index entry ``entry`` (an ``IndexMetadata``)."""
    return index_store_for(snapshot, uuid_text(entry), entry.base_id if entry.HasField("base_id") else None)


def index_store_for(snapshot, index_uuid: str, base_id=None) -> IndexStore:
    ctx = snapshot.ctx
    uri = ctx.resolver.index_dir_uri(index_uuid, base_id)
    return IndexStore(uri, ctx.options_for(uri))


def field_paths(fields) -> dict:
    """Field id -> dotted path (``st.a``) for every field reached through structs only (the
    fields a filter can name, hence the ones an index on them can answer)."""
    by_id = {f.id: f for f in fields}
    out = {}
    for f in fields:
        names, cur, ok = [], f, True
        while True:
            names.append(cur.name)
            if cur.parent_id == -1:
                break
            parent = by_id.get(cur.parent_id)
            if parent is None or parent.logical_type != "struct":
                ok = False
                break
            cur = parent
        if ok:
            out[f.id] = ".".join(reversed(names))
    return out


def index_entries(snapshot) -> list:
    """The version's ``IndexMetadata`` entries (the index section is read on first use)."""
    return snapshot.memo("index entries", lambda: list(snapshot.manifest_file.indices))


def index_catalog(snapshot) -> dict:
    """``{column: [NamedIndex]}`` of the version's user indices (see :mod:`lancefmt.index.core.catalog`)."""
    def build():
        entries = index_entries(snapshot)
        if not entries:
            return {}
        return build_catalog(entries, field_paths(snapshot.ctx.fields).get,
                             lambda pb: index_store(snapshot, pb), snapshot.has_stable_row_ids,
                             snapshot.session.index_cache, lambda pb: entry_type(snapshot, pb))

    return snapshot.memo("index catalog", build)


def entry_type(snapshot, entry):
    """The type of manifest entry ``entry``: by its details, or, for an entry committed
    without them (old datasets, pylance's distributed builds, hand-made ``CreateIndex``
    commits), the one Lance infers from its column and its files (see
    :mod:`lancefmt.index.core.legacy`); None when lancefmt does not know it."""
    itype = by_details(entry.index_details)
    if itype is None and not entry.index_details.type_url and len(entry.fields) == 1:
        fields = {f.id: f for f in snapshot.ctx.fields}
        field = fields.get(int(entry.fields[0]))
        if field is not None:
            key = ("index type by files", uuid_text(entry))
            itype = snapshot.memo(key, lambda: inferred_type(field.logical_type, index_store(snapshot, entry)))
    return itype


def segment_of(snapshot, entry, itype=None) -> Segment | None:
    """Manifest entry ``entry`` as a segment of ``snapshot``'s session (None when lancefmt does
    not know its type)."""
    itype = itype or entry_type(snapshot, entry)
    if itype is None:
        return None
    return Segment(entry, itype, fragment_ids(entry), index_store(snapshot, entry),
                   snapshot.has_stable_row_ids, snapshot.session.index_cache)
