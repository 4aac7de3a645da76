"""What a version's indices are: ``describe_indices``, ``list_indices``, ``stats.index_stats``.

Answers use pylance's shapes and words: an :class:`IndexDescription` per index name (its
segments as :class:`IndexSegmentDescription`), list entries as dicts, and the statistics dict
(type, segment statistics from each loaded segment, indexed and unindexed fragments and rows
of this version).
"""
from __future__ import annotations

import datetime as _dt

from ...errors import InvalidArgumentError
from ...index.core.catalog import guarded
from ...index.core.metadata import fragment_ids, is_system, uuid_text
from ...index.core.registry import by_details
from ...table.bitmap import Bitmap
from ..core.indices import entry_type, field_paths, index_entries, segment_of
from .scan import live_counts
from .vector_models import IvfModel


class IndexSegmentDescription:
    """One segment (pylance's ``lance.indices.IndexSegmentDescription``)."""

    def __init__(self, pb):
        self.uuid = uuid_text(pb)
        self.dataset_version_at_last_update = int(pb.dataset_version)
        self.fragment_ids = Bitmap.from_roaring(fragment_ids(pb))
        self.index_version = int(pb.index_version) if pb.HasField("index_version") else 0
        self.created_at = (_dt.datetime.fromtimestamp(pb.created_at / 1000, tz=_dt.timezone.utc)
                           if pb.HasField("created_at") else None)
        self.size_bytes = sum(int(f.size_bytes) for f in pb.files) if len(pb.files) else None
        self.base_id = pb.base_id if pb.HasField("base_id") else None
        self.covering_fields = list(pb.covering_fields)

    def __repr__(self):
        return (f"IndexSegmentDescription(uuid={self.uuid!r}, fragment_ids={self.fragment_ids!r}, "
                f"dataset_version_at_last_update={self.dataset_version_at_last_update}, "
                f"index_version={self.index_version}, size_bytes={self.size_bytes})")


class IndexDescription:
    """One index: every segment of one name (pylance's ``lance.indices.IndexDescription``)."""

    def __init__(self, name, type_url, index_type, num_rows_indexed, fields, field_names,
                 segments, total_size_bytes, details=None):
        self.name = name
        self.type_url = type_url
        self.index_type = index_type
        self.num_rows_indexed = num_rows_indexed
        self.fields = fields
        self.field_names = field_names
        self.segments = segments
        self.details = details or {}
        self.total_size_bytes = total_size_bytes

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    def __repr__(self):
        names = ", ".join(f'"{n}"' for n in self.field_names)
        return (f"IndexDescription(name={self.name!r}, type_url={self.type_url!r}, "
                f"num_rows_indexed={self.num_rows_indexed}, fields={self.fields}, "
                f"field_names=[{names}], num_segments={self.num_segments}, "
                f"total_size_bytes={self.total_size_bytes})")


def index_groups(snapshot) -> dict:
    """Index name -> its segments (user indices only), names sorted as pylance lists them."""
    out: dict = {}
    for pb in index_entries(snapshot):
        if not is_system(pb):
            out.setdefault(pb.name, []).append(pb)
    return dict(sorted(out.items()))


def type_name_of(pb, itype=None) -> str:
    itype = itype or by_details(pb.index_details)
    if itype is not None:
        return itype.type_name_for(pb.index_details)
    url = pb.index_details.type_url
    if url.endswith("VectorIndexDetails"):
        return "Vector"
    return url.rsplit(".", 1)[-1].replace("IndexDetails", "") or "Unknown"


def stats_type_name_of(pb, itype=None) -> str:
    """What ``stats.index_stats`` calls a segment's type (pylance: "BTree" for a JSON index;
    the inferred type for an entry without details)."""
    itype = itype or by_details(pb.index_details)
    if itype is not None and itype.stats_type_name:
        return itype.stats_type_name
    return type_name_of(pb, itype)


def _rows_of(snapshot) -> dict:
    pbs = snapshot.fragment_pbs()
    counts = live_counts(snapshot.ctx, pbs)
    return {int(pb.id): int(n) for pb, n in zip(pbs, counts)}


def describe_indices(snapshot) -> list:
    paths = field_paths(snapshot.ctx.fields)
    rows = _rows_of(snapshot)
    out = []
    for name, pbs in index_groups(snapshot).items():
        segments = [IndexSegmentDescription(pb) for pb in pbs]
        covered = set()
        for s in segments:
            covered |= set(s.fragment_ids)
        sizes = [s.size_bytes for s in segments]
        fields = list(pbs[0].fields)
        out.append(IndexDescription(
            name, pbs[0].index_details.type_url, type_name_of(pbs[0]),
            sum(rows.get(f, 0) for f in covered), fields, [paths.get(f, str(f)) for f in fields],
            segments, None if any(s is None for s in sizes) else sum(sizes)))
    return out


def list_indices(snapshot) -> list:
    return [{"name": d.name, "type": d.index_type, "uuid": s.uuid, "fields": d.field_names,
             "version": s.dataset_version_at_last_update, "fragment_ids": s.fragment_ids,
             "base_id": s.base_id}
            for d in describe_indices(snapshot) for s in d.segments]


class IndexNameNotFound(InvalidArgumentError, KeyError):
    """pylance raises KeyError from ``stats.index_stats`` for an unknown index name."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def index_stats(snapshot, name: str) -> dict:
    """pylance's ``stats.index_stats(name)``; KeyError when the version has no such index."""
    pbs = index_groups(snapshot).get(name)
    if not pbs:
        raise IndexNameNotFound(f'Index "{name}" not found')
    rows = _rows_of(snapshot)
    per_segment = []
    covered = set()
    for pb in pbs:
        frags = set(fragment_ids(pb)) & set(rows)
        covered |= frags
        per_segment.append(sum(rows[f] for f in frags))
    stats = []
    for pb in pbs:
        itype = entry_type(snapshot, pb)
        if itype is None or not len(fragment_ids(pb)) or not itype.supports(pb.index_details):
            stats.append({})
            continue
        seg = segment_of(snapshot, pb, itype)
        stats.append(guarded(seg, lambda: seg.load().statistics()))
    trained = [pb for pb in pbs if len(fragment_ids(pb))]
    kind = stats_type_name_of(trained[0], entry_type(snapshot, trained[0])) if trained else "N/A"
    unindexed = [f for f in rows if f not in covered]
    created = [int(pb.created_at) for pb in pbs if pb.HasField("created_at")]
    return {
        "index_type": kind, "name": name, "num_indices": len(pbs), "num_segments": len(pbs),
        "indices": stats, "segments": stats,
        "num_indexed_fragments": len(covered), "num_indexed_rows": sum(rows[f] for f in covered),
        "num_unindexed_fragments": len(unindexed),
        "num_unindexed_rows": sum(rows[f] for f in unindexed),
        "num_indexed_rows_per_delta": per_segment,
        "updated_at_timestamp_ms": max(created) if created else None,
    }


def ivf_model(snapshot, index_name: str):
    """The IVF model of vector index ``index_name`` (its first segment's); None when the index
    has no trained segment or is not an IVF index lancefmt reads."""
    import pyarrow as pa

    pbs = [pb for pb in index_groups(snapshot).get(index_name, []) if len(fragment_ids(pb))]
    if not index_groups(snapshot).get(index_name):
        raise IndexNameNotFound(f'Index "{index_name}" not found')
    for pb in pbs:
        itype = by_details(pb.index_details)
        if itype is None or not getattr(itype, "vector", False) or not itype.supports(pb.index_details):
            continue
        loaded = segment_of(snapshot, pb, itype).load()
        c = loaded.ivf.centroids
        values = pa.array(c.reshape(-1))
        return IvfModel(pa.FixedSizeListArray.from_arrays(values, c.shape[1]), loaded.metric)
    return None


def default_vector_index(snapshot, column: str) -> str:
    """The first index on ``column`` that is an IVF index (KeyError when there is none)."""
    for d in describe_indices(snapshot):
        if column in d.field_names and str(d.index_type).startswith("IVF"):
            return d.name
    raise IndexNameNotFound(f"No IVF index for column '{column}'")


def index_partition(snapshot, index_name: str, partition: int, with_vector: bool = False):
    """The rows of one IVF partition of ``index_name`` (its first segment): ``_rowid`` and,
    with ``with_vector``, the stored vectors or codes (PQ codes one row each)."""
    import pyarrow as pa

    from ...index.vector.quantizers import ProductQuantizer

    for pb in index_groups(snapshot).get(index_name, []):
        itype = by_details(pb.index_details)
        if itype is None or not getattr(itype, "vector", False) or not itype.supports(pb.index_details):
            continue
        loaded = segment_of(snapshot, pb, itype).load()
        start, n = int(loaded.ivf.offsets[partition]), int(loaded.ivf.lengths[partition])
        cols = {"_rowid": pa.array(loaded.row_ids[start:start + n], pa.uint64())}
        if with_vector:
            q = loaded.quantizer
            if isinstance(q, ProductQuantizer):
                codes = q.untranspose(loaded.stored, loaded.ivf.offsets, loaded.ivf.lengths)[start:start + n]
                cols[q.column] = pa.FixedSizeListArray.from_arrays(pa.array(codes.ravel(), pa.uint8()), q.width)
            else:
                block = loaded.stored[start:start + n]
                cols[q.column] = pa.FixedSizeListArray.from_arrays(pa.array(block.ravel()), block.shape[1])
        return pa.table(cols)
    raise IndexNameNotFound(f"Index {index_name} is not vector index")


class VectorIndexReader:
    """pylance's ``lance.dataset.VectorIndexReader``: a vector index's partitions."""

    def __init__(self, dataset, index_name: str):
        self.dataset = dataset
        self.index_name = index_name
        self.stats = dataset.stats.index_stats(index_name)
        try:
            self.num_partitions()
        except (KeyError, IndexError, TypeError):
            raise InvalidArgumentError(f"Index {index_name} is not vector index") from None

    def num_partitions(self) -> int:
        return self.stats["indices"][0]["num_partitions"]

    def read_partition(self, partition_id: int, *, with_vector: bool = False):
        if partition_id < 0 or partition_id >= self.num_partitions():
            raise IndexOutOfRange(f"Partition id {partition_id} is out of range, expected 0 <= "
                                  f"partition_id < {self.num_partitions()}")
        return index_partition(self.dataset.snapshot, self.index_name, partition_id, with_vector)


class IndexOutOfRange(InvalidArgumentError, IndexError):
    """pylance raises IndexError for a partition id past the last."""
