"""Dropping, optimizing and prewarming indices.

``optimize_indices`` brings indices up to date with fragments added since they were built:
``num_indices_to_merge=0`` adds a delta segment over the unindexed fragments; ``n >= 1`` (the
default is 1) replaces the newest ``n`` segments with one covering them and the unindexed
fragments; a rebuild keeps the segment's trained model (vector centroids and codebooks).
``retrain`` replaces every segment of a vector index with one whose model is trained anew on
every live fragment; it changes nothing for scalar indices (pylance 14 retrains only vector
models). A merged segment is rebuilt
from the column's current data (the same index one build over those fragments gives) and keeps
the oldest merged segment's ``dataset_version``, as pylance does. Everything is committed in
one ``CreateIndex``.
"""
from __future__ import annotations

from ...errors import InvalidArgumentError
from ...index.core.catalog import guarded
from ...index.core.metadata import fragment_ids, is_system, uuid_text
from ...table.transaction import CreateIndex
from ..core.commit import commit_retrying
from ..core.files import delete_files
from ..core.indices import entry_type, field_paths, index_entries, segment_of
from ..read.index_info import index_groups
from .create import BuildRequest, IndexNotFoundError, build_segment, segment_params


def drop_index(snapshot, name: str):
    segments = [e for e in index_entries(snapshot) if e.name == name and not is_system(e)]
    if not segments:
        raise IndexNotFoundError(f"Lance index not found: name={name}")
    return snapshot.commit(CreateIndex([], segments)).run_after_commit()


def prewarm_index(snapshot, name: str, index_segments=None) -> None:
    wanted = None if index_segments is None else {str(u) for u in index_segments}
    segments = [e for e in index_entries(snapshot) if e.name == name]
    if not segments:
        raise IndexNotFoundError(f"Lance index not found: name={name}")

    for pb in segments:
        if wanted is not None and uuid_text(pb) not in wanted:
            continue
        itype = entry_type(snapshot, pb)
        if itype is not None and len(fragment_ids(pb)):
            seg = segment_of(snapshot, pb, itype)
            guarded(seg, lambda: seg.load().prewarm())


def optimize_indices(snapshot, num_indices_to_merge=None, index_names=None, retrain: bool = False,
                     **_tuning):
    """See module docstring; returns the committed snapshot (or ``snapshot`` when every index
    is up to date)."""
    merge = 1 if num_indices_to_merge is None else int(num_indices_to_merge)
    if merge < 0:
        raise InvalidArgumentError("num_indices_to_merge must be >= 0")

    def stage(snap):
        live = [pb for pb in snap.fragment_pbs()]
        live_ids = {int(pb.id) for pb in live}
        paths = field_paths(snap.ctx.fields)
        new, removed, written = [], [], []
        for name, segments in index_groups(snap).items():
            if index_names is not None and name not in index_names:
                continue
            itype = entry_type(snap, segments[0])
            column = paths.get(int(segments[0].fields[0]))
            if itype is None or column is None or \
                    not all(itype.supports(s.index_details) for s in segments):
                continue
            covered = set()
            for s in segments:
                covered |= set(fragment_ids(s))
            unindexed = sorted(live_ids - covered)
            retraining = retrain and bool(itype.model_params)
            if retraining:  # a new model is trained on, and covers, every live fragment
                chosen, frags = list(segments), sorted(live_ids)
            elif merge == 0:
                if not unindexed:
                    continue
                chosen, frags = [], unindexed
            else:
                chosen = segments[-merge:]
                if not unindexed and len(chosen) <= 1 and all(
                        set(fragment_ids(s)) <= live_ids for s in chosen) and all(
                        len(fragment_ids(s)) for s in chosen):
                    continue
                keep = set()
                for s in chosen:
                    keep |= set(fragment_ids(s)) & live_ids
                frags = sorted(keep | set(unindexed))
            params = segment_params(snap, itype, segments[-1])
            if retraining:
                params = {k: v for k, v in params.items() if k not in itype.model_params}
            req = BuildRequest(column, itype, name, params)
            pbs = [pb for pb in live if int(pb.id) in set(frags)]
            entry, store = build_segment(snap, req, pbs, field_id=int(segments[0].fields[0]))
            if chosen:
                entry.dataset_version = min(int(s.dataset_version) for s in chosen)
            written.extend(store.uri(n) for n, _ in store.written)
            new.append(entry)
            removed.extend(chosen)
        if not new:
            return None, None, lambda: None
        return CreateIndex(new, removed), None, lambda: delete_files(written)

    committed, _ = commit_retrying(snapshot, stage)
    return committed
