"""pylance's ``lance.indices``: index configuration and description types, the trained vector
models, and :class:`IndicesBuilder` (an IVF_PQ build one step at a time).

``IndexConfig(index_type, parameters)`` may be passed to ``create_index`` /
``create_scalar_index`` in place of a type name; the descriptions are what
``Dataset.describe_indices`` returns.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from enum import Enum

import pyarrow as pa

from .dataset.indices import vector_steps as _steps
from .dataset.read.index_info import IndexDescription, IndexSegmentDescription
from .dataset.read.vector_models import IvfModel, PqModel
from .table.index_entry import Index as IndexSegment

__all__ = ["IndexConfig", "IndexFileVersion", "IndexSegment", "IndexSegmentDescription",
           "IndexDescription", "SupportedDistributedIndices", "IvfModel", "PqModel",
           "IndicesBuilder"]

PARTITION_COLUMN = "__ivf_part_id"
PQ_COLUMN = "__pq_code"


@dataclass
class IndexConfig:
    """An index type and its parameters (pylance's ``lance.indices.IndexConfig``)."""
    index_type: str
    parameters: dict = field(default_factory=dict)


class IndexFileVersion(str, Enum):
    LEGACY = "Legacy"
    V3 = "V3"


class SupportedDistributedIndices(str, Enum):
    BTREE = "BTREE"
    INVERTED = "INVERTED"
    IVF_FLAT = "IVF_FLAT"
    IVF_PQ = "IVF_PQ"
    IVF_SQ = "IVF_SQ"
    VECTOR = "VECTOR"


def _vector_shape(t: pa.DataType):
    """(dimension, value type) of a vector column's type, or None."""
    if pa.types.is_fixed_size_list(t):
        return t.list_size, t.value_type
    if pa.types.is_list(t) and pa.types.is_fixed_size_list(t.value_type):
        return t.value_type.list_size, t.value_type.value_type
    if isinstance(t, pa.FixedShapeTensorType) and len(t.shape) == 1:
        return t.shape[0], t.value_type
    return None


class IndicesBuilder:
    """pylance's ``IndicesBuilder``: the steps of an IVF_PQ build on one vector column, each
    callable on its own (to checkpoint or spread a very large build); arguments are checked
    as pylance checks them, with its error types and messages."""

    def __init__(self, dataset, column: str):
        self.dataset = dataset
        self.column = self._normalize_column(column)
        self.dimension = _vector_shape(dataset.schema.field(self.column[0]).type)[0]

    # -- the steps -------------------------------------------------------------------------
    def train_ivf(self, num_partitions=None, *, distance_type="l2", accelerator=None,
                  sample_rate: int = 256, max_iters: int = 50, fragment_ids=None) -> IvfModel:
        """IVF centroids by k-means on ``sample_rate * num_partitions`` rows (by default the
        integer nearest the square root of the row count)."""
        rows = self._count_rows(fragment_ids)
        if num_partitions is None:
            num_partitions = round(math.sqrt(rows))
        self._check_sample_rate(sample_rate)
        if num_partitions * sample_rate > rows:
            raise ValueError(
                f"There are not enough rows in the dataset to create IVF centroids with "
                f"{num_partitions} partitions and a sample rate of {sample_rate}. "
                f"{sample_rate * num_partitions} rows needed and there are {rows}")
        distance_type = self._distance_type(distance_type)
        if isinstance(num_partitions, float):
            warnings.warn("num_partitions is float, converting to int", stacklevel=2)
            num_partitions = int(num_partitions)
        elif not isinstance(num_partitions, int):
            raise TypeError(f"num_partitions must be int, got {type(num_partitions)}")
        if accelerator is not None:
            if fragment_ids is not None:
                raise NotImplementedError("fragment_ids is not supported with accelerator IVF training")
        metric = "l2" if distance_type == "euclidean" else distance_type
        centroids = _steps.train_ivf(self.dataset.snapshot, self.column[0], num_partitions, metric,
                                     sample_rate, max_iters, fragment_ids, accelerator)
        return IvfModel(centroids, distance_type)

    def train_pq(self, ivf_model: IvfModel, num_subvectors=None, *, sample_rate: int = 256,
                 max_iters: int = 50, num_bits: int = 8, fragment_ids=None) -> PqModel:
        """A PQ codebook trained on ``sample_rate * 2^num_bits`` rows' residuals to the IVF
        centroids."""
        rows = self._count_rows(fragment_ids)
        num_subvectors = self._num_subvectors(num_subvectors)
        self._check_sample_rate(sample_rate)
        if (2 ** num_bits) * sample_rate > rows:
            raise ValueError(
                f"There are not enough rows in the dataset to create PQ codebook with a sample "
                f"rate of {sample_rate} and num_bits of {num_bits}.  "
                f"{(2 ** num_bits) * sample_rate} rows needed and there are {rows}")
        metric = self._distance_type(ivf_model.distance_type)
        codebook = _steps.train_pq(self.dataset.snapshot, self.column[0], ivf_model.centroids,
                                   "l2" if metric == "euclidean" else metric, num_subvectors,
                                   sample_rate, max_iters, num_bits, fragment_ids)
        return PqModel(num_subvectors, codebook, num_bits=num_bits)

    def prepare_global_ivf_pq(self, num_partitions, num_subvectors, *, distance_type: str = "l2",
                              accelerator=None, sample_rate: int = 256, max_iters: int = 50,
                              num_bits: int = 8, fragment_ids=None) -> dict:
        """Both models at once, as the parameters of a distributed build."""
        ivf = self.train_ivf(num_partitions, distance_type=distance_type, accelerator=accelerator,
                             sample_rate=sample_rate, max_iters=max_iters, fragment_ids=fragment_ids)
        pq = self.train_pq(ivf, num_subvectors, sample_rate=sample_rate, max_iters=max_iters,
                           num_bits=num_bits, fragment_ids=fragment_ids)
        return {"ivf_centroids": ivf.centroids, "pq_codebook": pq.codebook}

    def assign_ivf_partitions(self, ivf_model: IvfModel, accelerator, *, output_uri=None) -> str:
        """Every vector's nearest centroid, computed on ``accelerator`` (torch, as pylance
        does), written as a dataset of (``row_id`` uint64, ``partition`` uint32) at
        ``output_uri`` (a new temporary directory by default); returns its path."""
        import tempfile

        import numpy as np

        from .dataset import write_dataset
        from .index.vector.accelerator import assign_partitions
        from .index.vector.ivf_build import centroids_array

        schema = pa.schema([pa.field("row_id", pa.uint64()), pa.field("partition", pa.uint32())])
        cents = centroids_array(ivf_model.centroids, self.dimension)
        parts = assign_partitions(accelerator, cents, self._metric(ivf_model),
                                  _steps.vector_parts(self.dataset.snapshot, self.column[0]))
        batches = (pa.record_batch([pa.array(ids, pa.uint64()), pa.array(labels.astype(np.uint32))],
                                   schema=schema) for ids, labels in parts)
        uri = str(output_uri) if output_uri is not None else tempfile.mkdtemp()
        write_dataset(pa.RecordBatchReader.from_batches(schema, batches), uri, schema=schema,
                      mode="overwrite" if output_uri is None else "create")
        return uri

    def transform_vectors(self, ivf: IvfModel, pq: PqModel, dest_uri: str, fragments=None,
                          partition_ds_uri=None) -> None:
        """A file of (row id, partition, PQ code) for the rows of ``fragments`` (all by
        default); ``partition_ds_uri``: a dataset of (``row_id``, ``partition``) computed
        before."""
        if fragments is not None and len(fragments) == 0:
            raise ValueError("fragments must be a non-empty list or None")
        ids = None if fragments is None else [f.fragment_id for f in fragments]
        partitions = None
        if partition_ds_uri is not None:
            from .dataset import dataset as open_dataset
            t = open_dataset(partition_ds_uri).to_table(columns=["row_id", "partition"])
            partitions = (t.column("row_id").to_numpy(), t.column("partition").to_numpy())
        _steps.transform(self.dataset.snapshot, self.column[0], ivf.centroids, pq.codebook,
                         pq.num_subvectors, pq.num_bits, self._metric(ivf), dest_uri, ids, partitions)

    def shuffle_transformed_vectors(self, unsorted_filenames, dir_path: str, ivf: IvfModel,
                                    shuffle_output_root_filename="sorted") -> list:
        """The transformed files' rows sorted by partition; returns the new files' names."""
        if not isinstance(unsorted_filenames, list):
            raise ValueError("filenames must be a list of strings")
        return _steps.shuffle(unsorted_filenames, dir_path, ivf.num_partitions,
                              shuffle_output_root_filename or "sorted")

    def load_shuffled_vectors(self, filenames, dir_path: str, ivf: IvfModel, pq: PqModel,
                              index_name=None) -> None:
        """Commit the shuffled files as an IVF_PQ index (``{column}_idx`` by default) over
        every fragment; this dataset object stays at its version, as pylance's does."""
        if not isinstance(filenames, list):
            raise ValueError("filenames must be a list of strings")
        _steps.load_shuffled(self.dataset.snapshot, filenames, dir_path, self.column[0],
                             ivf.centroids, pq.codebook, pq.num_subvectors, pq.num_bits,
                             self._metric(ivf), index_name)

    # -- checks ------------------------------------------------------------------------------
    def _metric(self, ivf: IvfModel) -> str:
        d = self._distance_type(ivf.distance_type)
        return "l2" if d == "euclidean" else d

    def _count_rows(self, fragment_ids=None) -> int:
        if fragment_ids is None:
            return self.dataset.count_rows()
        rows = 0
        for fid in fragment_ids:
            frag = self.dataset.get_fragment(fid)
            if frag is None:
                raise ValueError(f"Fragment id does not exist: {fid}")
            rows += frag.count_rows()
        return rows

    def _num_subvectors(self, m) -> int:
        dim = self.dimension
        if m is None:
            for d in (16, 8):
                if dim % d == 0:
                    return dim // d
            raise ValueError(f"vector dimension {dim} is not divisible by 16 or 8. PQ performance "
                             f"will be poor.  Cowardly refusing to create PQ model.  Please "
                             f"specify num_subvectors manually.")
        if not isinstance(m, int):
            raise ValueError("num_subvectors must be an int")
        if m < 1:
            raise ValueError("num_subvectors must be greater than 0")
        if m > dim:
            raise ValueError("num_subvectors must be less than or equal to the dimension of the vectors")
        if dim % m:
            raise ValueError(f"dimension ({dim}) must be divisible by num_subvectors ({m}) "
                             f"without remainder")
        return m

    @staticmethod
    def _check_sample_rate(rate) -> None:
        if not isinstance(rate, int) or rate < 2:
            raise ValueError(f"The sample_rate must be an int greater than 1, got {rate}")

    @staticmethod
    def _distance_type(d) -> str:
        if not isinstance(d, str) or d.lower() not in ("l2", "cosine", "euclidean", "dot", "hamming"):
            raise ValueError(f"Distance type {d} not supported.")
        return d.lower()

    def _normalize_column(self, column) -> list:
        columns = [column] if isinstance(column, str) else list(column)
        for c in columns:
            if c not in self.dataset.schema.names:
                raise KeyError(f"{c} not found in schema")
            t = self.dataset.schema.field(c).type
            shape = _vector_shape(t)
            if shape is None:
                raise TypeError(f"Vector column {c} must be FixedSizeListArray, list<FixedSizeList> "
                                f"(multivector), or 1-dimensional FixedShapeTensorArray, got {t}")
            if not (pa.types.is_floating(shape[1]) or pa.types.is_unsigned_integer(shape[1])):
                raise TypeError(f"Vector column {c} must have floating or unsigned integer value "
                                f"type, got {shape[1]}")
        return columns
