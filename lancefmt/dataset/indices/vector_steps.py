"""The steps of an IVF_PQ build taken one at a time (pylance's ``IndicesBuilder``): train the
IVF centroids, train the PQ codebook, transform fragments into (row id, partition, PQ code)
files, shuffle those by partition, and load the shuffled files as an index and commit it.

Each step writes what pylance's writes, so the two can be mixed: a transform file has
``_rowid`` (uint64), ``__ivf_part_id`` (uint32) and ``__pq_code`` (fixed-size list of bytes)
in scan order with the ``_loss`` of the assignment as metadata; a shuffled file (Lance file
2.0) has one row per non-empty partition, ``partitions``: the list of that partition's
rows. Training and encoding are the ones ``create_index`` uses (:mod:`lancefmt.index.vector`).
The index ``load_shuffled`` commits is a V3 IVF_PQ segment over every fragment (pylance 14's
steps write its legacy single-file layout; both read either).
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError
from ...file import LanceFileReader, LanceFileWriter
from ...index.core.metadata import new_metadata, new_uuid
from ...index.core.registry import ROW_ID, VALUE
from ...index.vector.accelerator import device_for, train_ivf as accelerated_ivf
from ...index.vector.distance import COSINE, DOT, HAMMING, L2
from ...index.vector.ivf import IvfModel, nearest_centroids
from ...index.vector.ivf_build import (DEFAULT_SEED, Built, arrange, centroids_array, model_dtype,
                                       train_model, train_quantizer, vector_batches, write_segment)
from ...index.vector.quantizers import PQ_CODE, ProductQuantizer, codebook_array, normalize
from ...index.vector.vector_type import VECTOR, make_details
from ...table.transaction import CreateIndex
from ..core.commit import commit_retrying
from ..core.files import delete_files
from ..core.indices import index_store_for
from ..read.index_training import column_field, training_data
from ..read.scan import live_counts
from ..read.take import take_rows
from .create import column_field_id, segments_named

PART_ID = "__ivf_part_id"
PARTITIONS = "partitions"


def _pbs(snapshot, fragment_ids):
    pbs = snapshot.fragment_pbs()
    if fragment_ids is None:
        return pbs
    wanted = {int(f) for f in fragment_ids}
    chosen = [pb for pb in pbs if int(pb.id) in wanted]
    missing = wanted - {int(pb.id) for pb in chosen}
    if missing:
        raise InvalidArgumentError(f"Fragment id does not exist: {sorted(missing)[0]}")
    return chosen


def _value_type(snapshot, column: str) -> pa.DataType:
    t = column_field(snapshot.schema, column)[0].type
    if isinstance(t, pa.FixedShapeTensorType):
        t = t.storage_type
    t = t.value_type
    return t.value_type if pa.types.is_fixed_size_list(t) else t


def sample_vectors(snapshot, column: str, wanted: int, fragment_ids=None,
                   seed: int = DEFAULT_SEED) -> np.ndarray:
    """Up to ``wanted`` non-null vectors of ``column`` chosen at random: by random take when
    the sample is smaller than the rows (and holds no nulls), otherwise from a scan."""
    pbs = _pbs(snapshot, fragment_ids)
    rng = np.random.default_rng(seed)
    total = int(live_counts(snapshot.ctx, pbs).sum())
    if fragment_ids is None and wanted < total:
        picks = np.sort(rng.choice(total, wanted, replace=False))
        col = take_rows(snapshot, picks, [column]).column(column).combine_chunks()
        batch = pa.record_batch({VALUE: col, ROW_ID: pa.array(np.arange(len(col), dtype=np.uint64))})
        mats = [m for m, _ in vector_batches([batch])]
        if mats and mats[0].shape[0] == wanted:
            return mats[0]
    mats = [m for m, _ in vector_batches(training_data(snapshot, column, pbs).batches())]
    if not mats:
        raise InvalidArgumentError(f"no vectors in column {column} to train on")
    every = np.concatenate(mats) if len(mats) > 1 else mats[0]
    if every.shape[0] > wanted:
        every = every[np.sort(rng.choice(every.shape[0], wanted, replace=False))]
    return every


def _training(sample: np.ndarray, metric: str) -> np.ndarray:
    if metric == HAMMING:
        return sample
    return normalize(sample) if metric == COSINE else np.asarray(sample, np.float32)


def _fsl(matrix: np.ndarray, value_type: pa.DataType, metric: str) -> pa.FixedSizeListArray:
    values = np.ascontiguousarray(matrix).astype(model_dtype(value_type, metric)).reshape(-1)
    return pa.FixedSizeListArray.from_arrays(pa.array(values), matrix.shape[1])


def train_ivf(snapshot, column: str, num_partitions: int, metric: str, sample_rate: int,
              max_iters: int, fragment_ids=None, accelerator=None) -> pa.FixedSizeListArray:
    """IVF centroids trained by k-means on ``num_partitions * sample_rate`` vectors, in the
    column's value type; on ``accelerator`` (a torch device) if given."""
    if accelerator is not None:
        device_for(accelerator)  # a bad device fails before the sample is read
    sample = _training(sample_vectors(snapshot, column, num_partitions * sample_rate, fragment_ids),
                       metric)
    vt = _value_type(snapshot, column)
    params = {"num_partitions": num_partitions, "sample_rate": sample_rate,
              "max_iters": max_iters, "seed": DEFAULT_SEED, "_value_type": vt}
    if accelerator is not None:
        ivf = accelerated_ivf(accelerator, metric, sample, params)
    else:
        ivf, _ = train_model("IVF_FLAT", metric, sample, params, rows=sample.shape[0])
    return _fsl(ivf.centroids, vt, metric)


def vector_parts(snapshot, column: str):
    """(vectors, row ids) of every non-null vector of the column, batch by batch."""
    return vector_batches(training_data(snapshot, column, _pbs(snapshot, None)).batches())


def _dim(snapshot, column: str) -> int:
    t = column_field(snapshot.schema, column)[0].type
    if isinstance(t, pa.FixedShapeTensorType):
        return int(t.shape[0])
    return t.list_size if pa.types.is_fixed_size_list(t) else t.value_type.list_size


def train_pq(snapshot, column: str, centroids, metric: str, num_subvectors: int, sample_rate: int,
             max_iters: int, num_bits: int = 8, fragment_ids=None) -> pa.FixedSizeListArray:
    """A PQ codebook trained on ``sample_rate * 2^num_bits`` vectors (their residuals to
    ``centroids`` for l2 and cosine): ``2^num_bits`` rows of the vectors' dimension."""
    dim = _dim(snapshot, column)
    ivf = IvfModel(centroids_array(centroids, dim))
    sample = _training(sample_vectors(snapshot, column, sample_rate << num_bits, fragment_ids), metric)
    params = {"num_sub_vectors": num_subvectors, "num_bits": num_bits, "sample_rate": sample_rate,
              "max_iters": max_iters, "seed": DEFAULT_SEED}
    pq = train_quantizer("IVF_PQ", metric, ivf, sample, params)
    return _fsl(pq.codebook.reshape(pq.ncent, dim), _value_type(snapshot, column), metric)


def _quantizer(codebook, dim: int, num_subvectors: int, num_bits: int) -> ProductQuantizer:
    ProductQuantizer.check(dim, int(num_subvectors), int(num_bits))
    k = 1 << int(num_bits)
    return ProductQuantizer(dim, int(num_subvectors), int(num_bits),
                            codebook_array(codebook, int(num_subvectors), k, dim))


def _lookup(row_ids: np.ndarray, known_ids: np.ndarray, known_parts: np.ndarray):
    """Precomputed partition of each row id (-1 where the table has none); ``known_ids`` sorted."""
    out = np.full(row_ids.shape[0], -1, np.int64)
    if known_ids.size:
        at = np.minimum(np.searchsorted(known_ids, row_ids), known_ids.size - 1)
        hit = known_ids[at] == row_ids
        out[hit] = known_parts[at[hit]]
    return out


def transform(snapshot, column: str, centroids, codebook, num_subvectors: int, num_bits: int,
              metric: str, dest_uri: str, fragment_ids=None, partitions=None) -> None:
    """Write ``dest_uri``: every non-null vector of the fragments as (row id, partition, PQ
    code), in scan order (see module docstring). ``partitions``: (row ids, partition ids) a
    previous assignment computed, used instead of assigning those rows again."""
    dim = _dim(snapshot, column)
    ivf = IvfModel(centroids_array(centroids, dim))
    pq = _quantizer(codebook, dim, num_subvectors, num_bits)
    if partitions is not None:
        order = np.argsort(partitions[0], kind="stable")
        known = (np.asarray(partitions[0], np.uint64)[order], np.asarray(partitions[1], np.int64)[order])
    kmetric = DOT if metric == DOT else L2
    schema = pa.schema([pa.field(ROW_ID, pa.uint64()), pa.field(PART_ID, pa.uint32()),
                        pa.field(PQ_CODE, pa.list_(pa.field("item", pa.uint8()), pq.width),
                                 nullable=False)])
    loss = 0.0
    with LanceFileWriter(dest_uri, schema) as writer:
        for mat, ids in vector_batches(training_data(snapshot, column, _pbs(snapshot, fragment_ids)).batches()):
            x = normalize(mat) if metric == COSINE else np.asarray(mat, np.float32)
            labels = np.full(x.shape[0], -1, np.int64) if partitions is None else _lookup(ids, *known)
            todo = labels < 0
            if todo.any():
                labels[todo] = nearest_centroids(x[todo], ivf.centroids, kmetric)[0]
            assigned = ivf.centroids[labels]
            if kmetric == DOT:
                loss += float((1.0 - np.einsum("ij,ij->i", x, assigned, dtype=np.float64)).sum())
            else:
                loss += float(np.square(x - assigned, dtype=np.float64).sum())
            y = x - assigned if pq.use_residual(metric) else x
            codes = pq.pack(pq.codes(y))
            writer.write_batch(pa.table([pa.array(ids, pa.uint64()), pa.array(labels, pa.uint32()),
                                         pa.FixedSizeListArray.from_arrays(
                                             pa.array(codes.reshape(-1), pa.uint8()), pq.width)],
                                        schema=schema))
        writer.add_schema_metadata("_loss", repr(loss))


def _join(dir_path: str, name: str) -> str:
    if "://" in dir_path:
        return dir_path.rstrip("/") + "/" + name
    return os.path.join(dir_path, name)


def _read_rows(uri: str):
    """(row ids, partitions, codes table column) of a transform or shuffled file."""
    table = LanceFileReader(uri).read_all().to_table()
    if PARTITIONS in table.column_names:
        flat = table.column(PARTITIONS).combine_chunks().flatten()
        return flat.field(ROW_ID), flat.field(PART_ID), flat.field(PQ_CODE)
    for name in (ROW_ID, PART_ID, PQ_CODE):
        if name not in table.column_names:
            raise InvalidArgumentError(f"{uri} is not a transformed vector file (no {name} column)")
    return (table.column(ROW_ID).combine_chunks(), table.column(PART_ID).combine_chunks(),
            table.column(PQ_CODE).combine_chunks())


def shuffle(filenames, dir_path: str, num_partitions: int, root: str = "sorted") -> list:
    """Sort the rows of transform files ``filenames`` (in ``dir_path``) by partition into
    ``{root}_0.lance`` there: one row per non-empty partition (see module docstring)."""
    ids, parts, codes = [], [], []
    for name in filenames:
        i, p, c = _read_rows(_join(dir_path, name))
        ids.append(i)
        parts.append(p)
        codes.append(c)
    if not ids:
        raise InvalidArgumentError("shuffle_transformed_vectors needs at least one file")
    ids = pa.concat_arrays(ids)
    parts = pa.concat_arrays(parts)
    codes = pa.concat_arrays(codes)
    p = parts.to_numpy(zero_copy_only=False).astype(np.int64)
    if p.size and (p.max() >= num_partitions or p.min() < 0):
        raise InvalidArgumentError(f"partition id {int(p.max())} of {num_partitions} partitions")
    order = np.argsort(p, kind="stable")
    take = pa.array(order)
    rows = pa.StructArray.from_arrays([ids.take(take), parts.take(take), codes.take(take)],
                                      fields=[pa.field(ROW_ID, pa.uint64()), pa.field(PART_ID, pa.uint32()),
                                              pa.field(PQ_CODE, codes.type, nullable=False)])
    counts = np.bincount(p, minlength=num_partitions)
    counts = counts[counts > 0]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    lists = pa.ListArray.from_arrays(pa.array(offsets), rows)
    name = f"{root}_0.lance"
    schema = pa.schema([pa.field(PARTITIONS, lists.type)])
    with LanceFileWriter(_join(dir_path, name), schema, version="2.0") as writer:
        writer.write_batch(pa.table([lists], schema=schema))
    return [name]


def load_shuffled(snapshot, filenames, dir_path: str, column: str, centroids, codebook,
                  num_subvectors: int, num_bits: int, metric: str, name=None):
    """Write the rows of ``filenames`` as an IVF_PQ segment of ``centroids`` and ``codebook``
    over every fragment and commit it as index ``name`` (replacing one of that name)."""
    dim = _dim(snapshot, column)
    ivf = IvfModel(centroids_array(centroids, dim))
    pq = _quantizer(codebook, dim, num_subvectors, num_bits)
    ids, parts, codes = [], [], []
    for fname in filenames:
        i, p, c = _read_rows(_join(dir_path, fname))
        if not pa.types.is_fixed_size_list(c.type) or c.type.list_size != pq.width:
            raise InvalidArgumentError(f"{fname}: PQ codes of type {c.type}, expected {pq.width} bytes")
        ids.append(i.to_numpy(zero_copy_only=False).astype(np.uint64))
        parts.append(p.to_numpy(zero_copy_only=False).astype(np.int64))
        codes.append(c.values.slice(c.offset * pq.width, len(c) * pq.width)
                     .to_numpy(zero_copy_only=False).reshape(-1, pq.width))
    labels = np.concatenate(parts) if parts else np.empty(0, np.int64)
    if labels.size and (labels.max() >= ivf.num_partitions or labels.min() < 0):
        raise InvalidArgumentError(f"partition id {int(labels.max())} of {ivf.num_partitions} partitions")
    row_ids, stored, _ = arrange(ivf, labels, np.concatenate(ids) if ids else np.empty(0, np.uint64),
                                 np.concatenate(codes) if codes else np.empty((0, pq.width), np.uint8))
    field, path = column_field(snapshot.schema, column)
    col = ".".join(path)
    name = name or f"{col}_idx"
    params = {"num_sub_vectors": pq.m, "num_bits": pq.num_bits}
    built = Built(ivf, pq, row_ids, stored, _value_type(snapshot, column), params=params)

    def stage(snap):
        uid = new_uuid()
        store = index_store_for(snap, uid)
        try:
            write_segment(store, "IVF_PQ", metric, built)
        except BaseException:
            delete_files([store.uri(n) for n, _ in store.written], store.storage_options)
            raise
        entry = new_metadata(index_uuid=uid, name=name, field_ids=[column_field_id(snap, col)],
                             dataset_version=snap.version,
                             fragments=[int(pb.id) for pb in snap.fragment_pbs()],
                             details=VECTOR.pack_details(make_details("IVF_PQ", metric, params)),
                             index_version=VECTOR.index_version_for(snap.has_stable_row_ids),
                             files=store.written)
        undo = lambda: delete_files([store.uri(n) for n, _ in store.written], store.storage_options)  # noqa: E731
        return CreateIndex([entry], segments_named(snap, name)), entry, undo

    committed, _ = commit_retrying(snapshot, stage)
    return committed
