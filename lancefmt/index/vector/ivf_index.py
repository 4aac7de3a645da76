"""A loaded IVF index segment (IVF_FLAT, IVF_PQ, IVF_SQ, IVF_RQ), as pylance 14 writes it (V3).

``index.idx`` holds the sub-index (FLAT: no rows, ``__flat_marker``) and, in schema metadata,
``lance:index`` (``{"type", "distance_type"}``), ``lance:flat`` (one entry per partition) and
``lance:ivf`` (the global buffer holding the IVF model with its centroids).
``auxiliary.idx`` holds every indexed row, partition after partition: ``_rowid`` and the
quantizer's code column, with ``distance_type``, ``lance:ivf`` (partition offsets and lengths)
and ``storage_metadata`` (the quantizer's JSON) in schema metadata. Both are checked against
each other when loaded; anything inconsistent is a CorruptFileError naming the file.

A search ranks the partitions by their centroid's distance to the query, scores the rows of
the probed ones with the quantizer (:mod:`.quantizers`) and keeps the best ``k`` by (distance,
row id) in a Cython heap; a row mask (deleted rows, a prefilter) and a distance range are
applied as rows are scored.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, NotSupportedError
from ..core.registry import LoadedIndex
from ..core.store import IndexStore
from . import _ivf
from .distance import COSINE, DOT, parse_metric
from .ivf import IvfModel, probe_counts
from .ivf_build import Built, arrange, write_segment
from .layout import AUX_FILE, INDEX_FILE, ROW_ID
from .rabitq import RABIT_CODE, SUPPORTED_METRICS, RabitQuantizer, stored_rows
from .quantizers import (FLAT_COLUMN, PQ_CODE, SQ_CODE, FlatQuantizer, ProductQuantizer,
                         ScalarQuantizer, normalize, storage_metric)



@dataclass
class VectorHits:
    """What one segment found for one query: row ids (as recorded), distances (ranked), how
    many partitions were probed, and rows offered but refused by the mask (for statistics)."""
    ids: np.ndarray
    dists: np.ndarray
    probed: int


def metadata_json(meta: dict, key: str, path: str):
    raw = meta.get(key)
    if raw is None:
        raise CorruptFileError(f"schema metadata lacks {key!r}", path)
    try:
        return json.loads(raw)
    except ValueError as e:
        raise CorruptFileError(f"bad {key!r} metadata ({e})", path) from None


def _buffer_index(meta: dict, key: str, reader, path: str) -> int:
    try:
        idx = int(meta.get(key, ""))
    except ValueError:
        raise CorruptFileError(f"bad {key!r} metadata {meta.get(key)!r}", path) from None
    if not 0 < idx < len(reader.metadata.global_buffers):
        raise CorruptFileError(f"{key!r} names global buffer {idx}, the file has "
                               f"{len(reader.metadata.global_buffers)}", path)
    return idx


class IvfIndex(LoadedIndex):
    """One IVF segment in memory: centroids, row ids and codes in storage order."""

    def __init__(self, kind: str, metric: str, ivf: IvfModel, quantizer, row_ids: np.ndarray,
                 stored, value_type: pa.DataType, details=None):
        self.kind = kind                # IVF_FLAT, IVF_PQ, IVF_SQ
        self.metric = metric            # the index's distance type (l2, cosine, dot, hamming)
        self.ivf = ivf
        self.quantizer = quantizer
        self.row_ids = row_ids
        self.stored = stored
        self.value_type = value_type
        self.details = details
        self.uri = ""
        self.uuid = ""
        self.file_version = "V3"      # "Legacy": read from the single-file layout

    @property
    def num_rows(self) -> int:
        return int(self.row_ids.size)

    @property
    def dim(self) -> int:
        return self.ivf.dim

    # -- loading ------------------------------------------------------------------------------
    @classmethod
    def load(cls, store: IndexStore, details=None) -> "IvfIndex":
        idx = store.reader(INDEX_FILE)
        ipath = store.uri(INDEX_FILE)
        meta = idx.schema_metadata
        info = metadata_json(meta, "lance:index", ipath)
        if not isinstance(info, dict) or "type" not in info:
            raise CorruptFileError("lance:index names no type", ipath)
        kind = str(info["type"]).upper()
        metric = parse_metric(info.get("distance_type", "l2"))
        ivf = IvfModel.from_proto(IvfModel.parse(
            idx.read_global_buffer(_buffer_index(meta, "lance:ivf", idx, ipath)), ipath), ipath)
        sub_rows = (ivf.offsets.copy(), ivf.lengths.copy())  # the sub-index's rows in index.idx
        aux = store.reader(AUX_FILE)
        apath = store.uri(AUX_FILE)
        ameta = aux.schema_metadata
        parts = IvfModel.parse(aux.read_global_buffer(_buffer_index(ameta, "lance:ivf", aux, apath)), apath)
        offsets = np.asarray(parts.offsets, np.int64)
        lengths = np.asarray(parts.lengths, np.int64)
        if offsets.size != ivf.num_partitions:
            raise CorruptFileError(f"{offsets.size} partitions, index.idx has "
                                   f"{ivf.num_partitions} centroids", apath)
        expect = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if lengths.size else lengths
        if (lengths < 0).any() or not np.array_equal(offsets, expect) or \
                int(lengths.sum()) != aux.num_rows:
            raise CorruptFileError("partition offsets and lengths do not cover the file's "
                                   f"{aux.num_rows} rows", apath)
        ivf.offsets, ivf.lengths = offsets, lengths
        storage = metadata_json(ameta, "storage_metadata", apath)
        if not isinstance(storage, list) or len(storage) != 1:
            raise CorruptFileError("storage_metadata is not a list of one entry", apath)
        try:
            qmeta = json.loads(storage[0]) if isinstance(storage[0], str) else storage[0]
        except ValueError as e:
            raise CorruptFileError(f"bad storage_metadata ({e})", apath) from None
        schema = aux.schema
        if schema.get_field_index(ROW_ID) < 0:
            raise CorruptFileError("no _rowid column", apath)
        table = aux.read_all()
        row_ids = np.ascontiguousarray(table.column(ROW_ID).to_numpy(), np.uint64)
        try:
            quantizer, column, value_type = cls._quantizer(kind, qmeta, schema, aux, apath, ivf.dim)
            if isinstance(quantizer, RabitQuantizer):
                if metric not in SUPPORTED_METRICS:
                    raise NotSupportedError(f"{apath}: RQ index of metric {metric}: lancefmt "
                                            "searches l2 and cosine ones")
                stored = quantizer.stored_from_table(table, offsets, lengths, apath)
            else:
                codes = table.column(column)
                codes = codes.combine_chunks() if isinstance(codes, pa.ChunkedArray) else codes
                stored = quantizer.stored(codes, offsets, lengths)
        except CorruptFileError as e:
            raise CorruptFileError(e.reason, apath) from None
        if quantizer.dim != ivf.dim:
            raise CorruptFileError(f"vectors of dimension {quantizer.dim}, centroids of {ivf.dim}", apath)
        out = cls(kind, metric, ivf, quantizer, row_ids, stored, value_type, details)
        out.uri = ipath
        out.uuid = store.dir_uri.rstrip("/").rsplit("/", 1)[-1]
        out.attach_sub_index(idx, meta, sub_rows, ipath)
        return out

    def attach_sub_index(self, reader, meta: dict, rows, path: str) -> None:
        """Read what ``index.idx`` holds beyond the model (FLAT: nothing)."""

    @staticmethod
    def _quantizer(kind, qmeta, schema, aux, path, dim):
        names = schema.names
        if PQ_CODE in names:
            q = ProductQuantizer.from_metadata(qmeta, schema.field(PQ_CODE), path,
                                               read_buffer=lambda i: aux.read_global_buffer(
                                                   _checked_buffer(aux, i, path)))
            return q, PQ_CODE, pa.float32()
        if RABIT_CODE in names:
            return RabitQuantizer.from_metadata(qmeta, dim, path), RABIT_CODE, pa.float32()
        if SQ_CODE in names:
            return ScalarQuantizer.from_metadata(qmeta, schema.field(SQ_CODE), path), SQ_CODE, pa.float32()
        if FLAT_COLUMN in names:
            f = schema.field(FLAT_COLUMN)
            q = FlatQuantizer.from_metadata(qmeta, f, path)
            return q, FLAT_COLUMN, q.value_type
        raise CorruptFileError(f"no code column lancefmt knows in {names} ({kind})", path)

    # -- searching ----------------------------------------------------------------------------
    def prepare_query(self, query: np.ndarray) -> np.ndarray:
        q = np.asarray(query)
        if q.dtype != np.float64 and q.dtype != np.uint8:
            q = q.astype(np.float32)
        return normalize(q) if self.metric == COSINE else q

    def search_vectors(self, query: np.ndarray, k: int, *, minimum_nprobes: int = 1,
                       maximum_nprobes: int | None = None, mask: np.ndarray | None = None,
                       distance_range=None, allowed_total: int | None = None,
                       ef: int | None = None) -> VectorHits:
        """The ``k`` best rows for ``query`` (ranked by (distance, row id)); ``mask``: a
        uint8 per stored row, 0 = not a candidate; ``allowed_total``: how many rows the mask
        allows (pylance returns them all, unranked, when that is at most ``k``); ``ef``: the
        HNSW beam width (HNSW sub-indices only)."""
        q = self.prepare_query(query)
        parts, pdist = self.ivf.ranked_partitions(q, self.metric)
        lo, hi = probe_counts(pdist, k, minimum_nprobes, maximum_nprobes, self.metric)
        use_mask = mask is not None
        m = mask if use_mask else _EMPTY_MASK
        if use_mask and m.size < self.num_rows:
            raise ValueError("row mask shorter than the index")
        low = -np.inf if distance_range is None or distance_range[0] is None else distance_range[0]
        high = np.inf if distance_range is None or distance_range[1] is None else distance_range[1]
        probe = Probe(q, parts, lo, hi, k, m, use_mask, low, high, ef)
        self.probe_partitions(probe)
        return self._finish(probe.top, probe.found, probe.probed, k, m, use_mask, allowed_total)

    def probe_partitions(self, p: "Probe") -> None:
        """Score the probed partitions' rows into ``p.top`` (the flat sub-index: every row)."""
        residual = self.quantizer.use_residual(self.metric)
        offsets, lengths = self.ivf.offsets, self.ivf.lengths
        q_pq = self.quantizer
        if isinstance(q_pq, ProductQuantizer):  # the whole probe loop in one Cython call
            p.probed, p.found = _ivf.pq_search(
                np.ascontiguousarray(p.query, np.float32), np.ascontiguousarray(p.parts, np.int64),
                p.lo, p.hi, p.k, self._centroids32(), q_pq.codebook_t, q_pq.m, q_pq.num_bits,
                self.stored, offsets, lengths, self.row_ids, p.mask, p.use_mask, residual,
                storage_metric(self.metric) == DOT, p.low, p.high, p.top)
            return
        if isinstance(q_pq, RabitQuantizer):
            q_pq.search(self.stored, p, self.ivf.centroids, offsets, lengths, self.row_ids,
                        self.metric)
            return
        score = self.quantizer.scorer(self.stored, p.query, self.metric)
        cents = self.ivf.centroids
        for part, start, n in p.partitions(offsets, lengths):
            pq = (p.query - cents[part]).astype(np.float32) if residual else None
            d = score(start, n, pq)
            p.found += min(p.k, p.top.push(d, self.row_ids, start, p.mask, p.use_mask, p.low, p.high))

    def _centroids32(self) -> np.ndarray:
        c = getattr(self, "_c32", None)
        if c is None:
            c = self._c32 = np.ascontiguousarray(self.ivf.centroids, np.float32)
        return c

    def _finish(self, top, found, probed, k, m, use_mask, allowed_total) -> VectorHits:
        ids, dists, _ = top.result()
        if allowed_total is not None and found < allowed_total <= k and use_mask:
            # pylance's shortcut: every allowed row, those not found at +inf
            rest = np.flatnonzero(m[:self.num_rows].astype(bool))
            rest_ids = np.setdiff1d(self.row_ids[rest], ids)
            ids = np.concatenate([ids, rest_ids])
            dists = np.concatenate([dists, np.full(rest_ids.size, np.inf, np.float32)])
        return VectorHits(ids, dists, probed)

    # -- describing ---------------------------------------------------------------------------
    def statistics(self) -> dict:
        sub = {"metric_type": self.metric}
        q = self.quantizer
        if isinstance(q, ProductQuantizer):  # PQ reports the metric its codes are compared by
            sub["metric_type"] = storage_metric(self.metric)
            sub.update({"nbits": q.num_bits, "num_sub_vectors": q.m, "dimension": q.dim,
                        "index_type": "PQ", "transposed": True})
        elif isinstance(q, ScalarQuantizer):
            sub.update({"dim": q.dim, "num_bits": q.num_bits,
                        "bounds": {"start": q.start, "end": q.end}, "index_type": "SQ"})
        elif isinstance(q, RabitQuantizer):
            sub = {**q.statistics(), "metric_type": self.metric}
        else:
            sub.update({"dim": q.dim, "index_type": "FLAT"})
        out = {"index_type": self.kind, "uuid": self.uuid, "uri": self.uri,
               "metric_type": self.metric, "num_partitions": self.ivf.num_partitions,
               "sub_index": sub, "partitions": [{"size": int(n)} for n in self.ivf.lengths],
               "centroids": self.ivf.centroids.tolist()}
        if self.ivf.loss is not None:
            out["loss"] = float(self.ivf.loss)
        out["index_file_version"] = self.file_version
        return out

    def params(self) -> dict:
        """Build parameters and the trained model (centroids, codebook or bounds): a rebuild
        by ``optimize_indices`` encodes new rows with the same model, as pylance does."""
        out = {"index_type": self.kind, "metric": self.metric, **self.quantizer.params(),
               "ivf_centroids": self.ivf.centroids}
        q = self.quantizer
        if isinstance(q, ProductQuantizer):
            out["pq_codebook"] = q.codebook.reshape(q.m, q.ncent, q.dim // q.m)
        elif isinstance(q, ScalarQuantizer):
            out["sq_bounds"] = (q.start, q.end)
        d = self.details
        if d is not None:
            hints = dict(d.runtime_hints)
            for key, name in (("lance.ivf.sample_rate", "sample_rate"), ("lance.ivf.max_iters", "max_iters")):
                if key in hints and hints[key].isdigit():
                    out[name] = int(hints[key])
            if d.HasField("target_partition_size"):
                out["target_partition_size"] = int(d.target_partition_size)
        return out

    # -- maintenance --------------------------------------------------------------------------
    def rows(self):
        """(partition of every stored row, row ids, row-major codes) in storage order."""
        labels = np.repeat(np.arange(self.ivf.num_partitions), self.ivf.lengths)
        q = self.quantizer
        if isinstance(q, ProductQuantizer):
            codes = q.untranspose(self.stored, self.ivf.offsets, self.ivf.lengths)
        elif isinstance(q, RabitQuantizer):
            codes = stored_rows(self.stored, q.ex_bits)
        else:
            codes = self.stored
        return labels, self.row_ids, codes

    def remap(self, mapping, dest: IndexStore):
        """The same partitions and codes with row ids moved by ``mapping`` and dropped rows
        left out (compaction)."""
        labels, ids, codes = self.rows()
        new_ids, keep = mapping.apply(ids)
        ivf = IvfModel(self.ivf.centroids, loss=self.ivf.loss)
        out_ids, out_codes, _ = arrange(ivf, labels[keep], new_ids[keep], codes[keep])
        write_segment(dest, self.kind, self.metric, Built(ivf, self.quantizer, out_ids, out_codes,
                                                           self.value_type, params=self.params()))
        return self.details


_EMPTY_MASK = np.zeros(0, np.uint8)


class Probe:
    """One query's walk over the partitions: at least ``lo`` of ``parts`` (nearest first), more
    while fewer than ``k`` rows were found, at most ``hi``; rows go into ``top``."""

    def __init__(self, query, parts, lo, hi, k, mask, use_mask, low, high, ef=None):
        self.query, self.parts, self.lo, self.hi, self.k = query, parts, lo, hi, k
        self.mask, self.use_mask, self.low, self.high, self.ef = mask, use_mask, low, high, ef
        self.top = _ivf.TopK(k)
        self.found = 0
        self.probed = 0

    def partitions(self, offsets, lengths):
        """(partition, first row, rows) of each partition to score, in probing order."""
        for i in range(self.hi):
            if i >= self.lo and self.found >= self.k:
                return
            part = int(self.parts[i])
            self.probed += 1
            n = int(lengths[part])
            if n:
                yield part, int(offsets[part]), n


def _checked_buffer(reader, index: int, path: str) -> int:
    if not 0 < int(index) < len(reader.metadata.global_buffers):
        raise CorruptFileError(f"codebook_position {index} is not a global buffer of the file", path)
    return int(index)
