"""Conflict resolution: may my transaction still commit after theirs?

One function, :func:`check_conflict`, encodes the matrix of lance_facts.md §9 (from Lance's
``conflict_resolver.rs``): for every transaction committed after my read version it answers
COMPATIBLE (rebuild my manifest on top of theirs), RETRYABLE (redo the operation on the new
version) or INCOMPATIBLE. Unknown or unreadable transactions count as conflicts, as the table
format spec requires ("be conservative").

Where Lance can rebase row-level deletes of two writers on one fragment, lancefmt reports
RETRYABLE instead; the high-level operations (``Dataset.delete``) then redo themselves.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .transaction import (
    Append, Clone, CreateIndex, DataReplacement, Delete, Merge, Opaque, Overwrite, Project,
    ReserveFragments, Restore, Rewrite, Transaction, Update, UpdateBases, UpdateConfig,
)

FRAG_REUSE_INDEX_NAME = "__lance_frag_reuse"


class Verdict(enum.Enum):
    COMPATIBLE = "compatible"
    RETRYABLE = "retryable"
    INCOMPATIBLE = "incompatible"


@dataclass(frozen=True)
class ConflictResult:
    verdict: Verdict
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict is Verdict.COMPATIBLE


OK = ConflictResult(Verdict.COMPATIBLE)


def _retry(reason):
    return ConflictResult(Verdict.RETRYABLE, reason)


def _incompatible(reason):
    return ConflictResult(Verdict.INCOMPATIBLE, reason)


# Column order of the matrix ("theirs").
_KINDS = ["append", "delete", "overwrite", "create_index", "rewrite", "merge", "restore",
          "reserve_fragments", "update", "project", "update_config", "data_replacement",
          "update_mem_wal_state", "clone", "update_bases"]

# Rows ("mine"): one letter per column. c = compatible, r = retryable, i = incompatible,
# ? = conditional (decided by _conditional).
_MATRIX = {
    "append":            "ccicccicccccicc",
    "delete":            "c?ic?ric?cc?icc",
    "update":            "c?ic?ric?cc??cc",
    "overwrite":         "cc?ccccccc?cicc",
    "create_index":      "cci??cic?cc?icc",
    "rewrite":           "c?i??ric?cc?ccc",
    "merge":             "rricrricricricc",
    "restore":           "ccccccccccccicc",
    "reserve_fragments": "ccicccicccccccc",
    "project":           "cciccriccrccicc",
    "update_config":     "cc?ccccccc?cccc",
    "data_replacement":  "cci??cicccc?icc",
    "clone":             "ccccccccccccccc",
    "update_bases":      "cccccccccccccc?",
}
for _row, _cells in _MATRIX.items():
    assert len(_cells) == len(_KINDS), (_row, len(_cells))


def _frag_ids(fragments) -> set:
    return {f.id for f in fragments}


def _modified_ids(op) -> set:
    """Fragments an operation rewrites, updates or removes (not the ones it adds)."""
    if isinstance(op, Delete):
        return _frag_ids(op.updated_fragments) | set(op.deleted_fragment_ids)
    if isinstance(op, Update):
        return _frag_ids(op.updated_fragments) | set(op.removed_fragment_ids)
    if isinstance(op, Rewrite):
        return {f.id for g in op.groups for f in g.old_fragments}
    if isinstance(op, DataReplacement):
        return {g.fragment_id for g in op.replacements}
    return set()


def _index_bitmap_ids(index) -> set | None:
    if not index.fragment_bitmap:
        return None
    from pyroaring import BitMap

    return set(BitMap.deserialize(index.fragment_bitmap))


def _indices_cover(indices, fragment_ids: set) -> bool:
    for idx in indices:
        ids = _index_bitmap_ids(idx)
        if ids is None or ids & fragment_ids:
            return True
    return False


def _meta_keys(op: UpdateConfig):
    table = set(op.table_metadata_updates.updates) if op.table_metadata_updates else set()
    schema = set(op.schema_metadata_updates.updates) if op.schema_metadata_updates else set()
    if op.table_metadata_updates and op.table_metadata_updates.replace:
        table.add("*")
    if op.schema_metadata_updates and op.schema_metadata_updates.replace:
        schema.add("*")
    return table, schema, set(op.field_metadata_updates)


def _overlap(a: set, b: set) -> bool:
    return bool(a & b) or ("*" in a and b) or ("*" in b and bool(a))


def _conditional(mine, theirs) -> ConflictResult:
    # C1: row-level edits of the same fragments.
    if isinstance(mine, (Delete, Update)) and isinstance(theirs, (Delete, Update)):
        both = _modified_ids(mine) & _modified_ids(theirs)
        if both:
            return _retry(f"{theirs.name} also modified fragments {sorted(both)}")
        return OK
    # C2 / C9: a rewrite (compaction) of fragments the other side edits.
    if isinstance(theirs, Rewrite) and isinstance(mine, (Delete, Update)):
        both = _modified_ids(mine) & _modified_ids(theirs)
        return _retry(f"fragments {sorted(both)} were rewritten") if both else OK
    if isinstance(mine, Rewrite) and isinstance(theirs, (Delete, Update)):
        both = _modified_ids(mine) & _modified_ids(theirs)
        return _retry(f"fragments {sorted(both)} were modified") if both else OK
    # C11: two rewrites.
    if isinstance(mine, Rewrite) and isinstance(theirs, Rewrite):
        both = _modified_ids(mine) & _modified_ids(theirs)
        return _retry(f"fragments {sorted(both)} were rewritten twice") if both else OK
    # C3 / C14: data replacement touching the same fragments (and fields).
    if isinstance(mine, DataReplacement) and isinstance(theirs, DataReplacement):
        for g in mine.replacements:
            for h in theirs.replacements:
                if g.fragment_id == h.fragment_id and set(g.new_file.fields) & set(h.new_file.fields):
                    return _retry(f"fragment {g.fragment_id} columns were replaced concurrently")
        return OK
    if isinstance(mine, DataReplacement) or isinstance(theirs, DataReplacement):
        both = _modified_ids(mine) & _modified_ids(theirs)
        return _retry(f"fragments {sorted(both)} changed concurrently") if both else OK
    # C5: two overwrites (or overwrite vs config) upserting the same config key.
    if isinstance(mine, Overwrite) and isinstance(theirs, (Overwrite, UpdateConfig)):
        mine_keys = set(mine.config_upsert_values or {})
        theirs_keys = (set(theirs.config_upsert_values or {}) if isinstance(theirs, Overwrite)
                       else theirs.config_keys())
        both = mine_keys & theirs_keys
        return _incompatible(f"config keys {sorted(both)} set concurrently") if both else OK
    # C12: my config update vs their overwrite.
    if isinstance(mine, UpdateConfig) and isinstance(theirs, Overwrite):
        table, schema, fields = _meta_keys(mine)
        if schema or fields:
            return _incompatible("schema or field metadata changed under an overwrite")
        both = mine.config_keys() & set(theirs.config_upsert_values or {})
        return _incompatible(f"config keys {sorted(both)} set concurrently") if both else OK
    # C13: two config updates.
    if isinstance(mine, UpdateConfig) and isinstance(theirs, UpdateConfig):
        if mine.config_keys() & theirs.config_keys():
            return _incompatible("the same config keys were updated concurrently")
        for a, b in zip(_meta_keys(mine), _meta_keys(theirs)):
            if _overlap(a, b):
                return _incompatible("the same metadata keys were updated concurrently")
        return OK
    # C6: two index commits touching one index name are redone on the new version when one
    # of them adds segments to it (a replace or drop would miss the other's new segments, a
    # delta would stack on a replaced index). Two drops of it are compatible: the second
    # removes what is already gone (pylance 14 lets both succeed).
    if isinstance(mine, CreateIndex) and isinstance(theirs, CreateIndex):
        mine_new, theirs_new = ({i.name for i in op.new_indices} for op in (mine, theirs))
        mine_all = mine_new | {i.name for i in mine.removed_indices}
        theirs_all = theirs_new | {i.name for i in theirs.removed_indices}
        both = (mine_new & theirs_all) | (mine_all & theirs_new)
        return _retry(f"index {sorted(both)[0]!r} changed concurrently") if both else OK
    # An index built from columns a concurrent update rewrote in place would answer with the
    # old values for those fragments.
    if isinstance(mine, CreateIndex) and isinstance(theirs, Update):
        idx_fields = {f for i in mine.new_indices for f in i.fields}
        if theirs.fields_modified and idx_fields & set(theirs.fields_modified) and \
                _indices_cover(mine.new_indices, _frag_ids(theirs.updated_fragments)):
            return _retry("indexed columns of indexed fragments were updated concurrently")
        return OK
    # C7 / C10: indices vs compaction.
    if isinstance(mine, CreateIndex) and isinstance(theirs, Rewrite):
        if _indices_cover(mine.new_indices, _modified_ids(theirs)):
            return _retry("indexed fragments were rewritten")
        return OK
    if isinstance(mine, Rewrite) and isinstance(theirs, CreateIndex):
        if _indices_cover(theirs.new_indices, _modified_ids(mine)):
            return _retry("rewritten fragments were indexed concurrently")
        return OK
    # C8: column replacement vs index creation on those columns.
    if isinstance(mine, CreateIndex) and isinstance(theirs, DataReplacement) or \
            isinstance(mine, DataReplacement) and isinstance(theirs, CreateIndex):
        idx_op, rep_op = (mine, theirs) if isinstance(mine, CreateIndex) else (theirs, mine)
        idx_fields = {f for i in idx_op.new_indices for f in i.fields}
        rep_fields = {f for g in rep_op.replacements for f in g.new_file.fields}
        return _retry("indexed columns were replaced") if idx_fields & rep_fields else OK
    # C17: two base-path updates.
    if isinstance(mine, UpdateBases) and isinstance(theirs, UpdateBases):
        relocating = mine.relocate or theirs.relocate
        for a in mine.new_bases:
            for b in theirs.new_bases:
                same_id = a.id == b.id and (a.id != 0 or relocating)
                if same_id or _same_name(a, b) or a.path == b.path:
                    return _incompatible(f"base path {a.path!r} collides with a concurrent update")
        return OK
    return _incompatible(f"{mine.name} cannot be checked against {theirs.name}")


def _same_name(a, b) -> bool:
    """Lance's conflict check compares names only when set (its manifest build, which runs
    afterwards, also refuses two unnamed bases)."""
    return a.HasField("name") and b.HasField("name") and a.name == b.name


def _base_ids_written(op) -> set:
    """Base ids of the data and deletion files an operation adds or rewrites."""
    frags = []
    if isinstance(op, (Append, Overwrite)):
        frags = op.fragments
    elif isinstance(op, Delete):
        frags = op.updated_fragments
    elif isinstance(op, Update):
        frags = list(op.updated_fragments) + list(op.new_fragments)
    elif isinstance(op, Rewrite):
        frags = [f for g in op.groups for f in g.new_fragments]
    elif isinstance(op, Merge):
        frags = op.fragments
    ids = set()
    for f in frags:
        pb = f.pb if hasattr(f, "pb") else f
        ids.update(df.base_id for df in pb.files if df.HasField("base_id"))
        if pb.HasField("deletion_file") and pb.deletion_file.HasField("base_id"):
            ids.add(pb.deletion_file.base_id)
    if isinstance(op, DataReplacement):
        ids.update(g.new_file.base_id for g in op.replacements if g.new_file.HasField("base_id"))
    return ids


def _relocation_conflict(m, t) -> ConflictResult | None:
    """lancefmt's extra rule for relocations: files written concurrently into a base that the
    other side relocates would be resolved under the new path, where they do not exist."""
    for reloc, other in ((m, t), (t, m)):
        if isinstance(reloc, UpdateBases) and reloc.relocate and not isinstance(other, UpdateBases):
            moved = {b.id for b in reloc.new_bases} & _base_ids_written(other)
            if moved:
                return _retry(f"{other.name} wrote files into base(s) {sorted(moved)} that were "
                              f"relocated concurrently")
    return None


def _inserted_keys_conflict(mine, theirs) -> ConflictResult | None:
    """Lance's rule for a merge insert on the primary key (it carries ``inserted_rows``): an
    append, or an update that inserted keys that may be the same (or whose keys are unknown),
    committed since it read must make it retry, or a key would be inserted twice."""
    if not isinstance(mine, Update) or mine.inserted_rows is None:
        return None
    if isinstance(theirs, Append):
        return _retry("rows were appended concurrently with a merge insert on the primary key")
    if isinstance(theirs, Update):
        if theirs.inserted_rows is None:
            return _retry("a concurrent update does not say which keys it inserted")
        if mine.inserted_rows.intersects(theirs.inserted_rows):
            return _retry("a concurrent merge insert inserted some of the same keys")
    return None


def check_conflict(mine: Transaction, theirs: Transaction | None) -> ConflictResult:
    """May ``mine`` commit after ``theirs`` (committed since my read version)?"""
    if theirs is None:
        return _incompatible("a concurrent version has no readable transaction")
    m, t = mine.operation, theirs.operation
    if not isinstance(t, Opaque):
        moved = _relocation_conflict(m, t)
        if moved is not None:
            return moved
    if isinstance(t, Opaque) or t.name not in _KINDS:
        return _incompatible(f"concurrent transaction of unknown kind {t.name!r}")
    keys = _inserted_keys_conflict(m, t)
    if keys is not None:
        return keys
    row = _MATRIX.get(m.name)
    if row is None:
        return _incompatible(f"{m.name} transactions cannot be rebased")
    cell = row[_KINDS.index(t.name)]
    if cell == "c":
        return OK
    if cell == "r":
        return _retry(f"{t.name} committed concurrently with {m.name}")
    if cell == "i":
        return _incompatible(f"{t.name} committed concurrently with {m.name}")
    return _conditional(m, t)
