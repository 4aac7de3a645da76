"""pylance's index methods on :class:`~lancefmt.dataset.Dataset` (a base class of it).

Each method is one call into :mod:`.indices` (operations that commit) or
:mod:`.read.index_info` (descriptions); the ones that commit move the Dataset to the new
version, as pylance's do.
"""
from __future__ import annotations

import warnings

from ..errors import InvalidArgumentError, NotSupportedError
from ..table.index_entry import from_pb
from .indices import create as _create
from .indices import manage as _manage
from .indices import vector_create as _vector
from .read import index_info as _info

VECTOR_TYPES = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_RQ", "IVF_HNSW_FLAT", "IVF_HNSW_SQ",
                "IVF_HNSW_PQ")


# pylance's create_index parameters after ``replace``, in order
_CREATE_POSITIONAL = ("num_partitions", "ivf_centroids", "pq_codebook", "num_sub_vectors",
                      "accelerator", "index_cache_size", "shuffle_partition_batches",
                      "shuffle_partition_concurrency", "ivf_centroids_file",
                      "precomputed_partition_dataset", "storage_options", "filter_nan")


class DatasetIndexAPI:
    """Index methods of pylance's ``LanceDataset`` (see module docstring)."""

    # -- building ----------------------------------------------------------------------------
    def create_scalar_index(self, column: str, index_type, name=None, *, replace: bool = True,
                            train: bool = True, fragment_ids=None, index_uuid=None,
                            progress_callback=None, format_version=None,
                            document_granularity=None, **kwargs):
        """Build a scalar index (BTREE, BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER, NGRAM,
        INVERTED) on ``column`` and commit it; with ``fragment_ids``, build one segment over those
        fragments and return it uncommitted (pylance's distributed shape)."""
        if document_granularity is not None:
            kwargs["document_granularity"] = getattr(document_granularity, "value",
                                                     document_granularity)
        if format_version is not None:
            kwargs["format_version"] = format_version
        out = _create.create_scalar_index(self.snapshot, column, index_type, name, replace=replace,
                                          train=train, fragment_ids=fragment_ids,
                                          index_uuid=index_uuid, staged=True, **kwargs)
        if fragment_ids is not None:
            return out
        self.adopt(out)
        return None

    def create_index(self, column, index_type, name=None, metric: str = "L2",
                     replace: bool = False, *args, train: bool = True, fragment_ids=None,
                     index_uuid=None, **kwargs):
        """Scalar types (and ``IndexConfig``) as :meth:`create_scalar_index`; vector types
        (IVF_FLAT, IVF_PQ, IVF_SQ) with pylance's parameters (positional ones after
        ``replace`` in pylance's order). Returns the dataset, as pylance does."""
        kind = getattr(index_type, "index_type", index_type)
        if args:
            if len(args) > len(_CREATE_POSITIONAL):
                raise InvalidArgumentError("create_index() got too many positional arguments")
            for key, value in zip(_CREATE_POSITIONAL, args):
                if key in kwargs:
                    raise InvalidArgumentError(f"create_index() got multiple values for {key!r}")
                kwargs[key] = value
        if isinstance(column, (list, tuple)):
            if len(column) != 1:
                raise InvalidArgumentError("indices cover exactly one column")
            column = column[0]
        if isinstance(kind, str) and (kind.upper() in VECTOR_TYPES or kind.upper().startswith("IVF")):
            out = _vector.create_vector_index(self.snapshot, column, kind, name, metric,
                                              replace=replace, train=train,
                                              fragment_ids=fragment_ids, index_uuid=index_uuid,
                                              **_vector_params(index_type, kwargs))
            if fragment_ids is not None:
                return out
            self.adopt(out)
            return self
        return self.create_scalar_index(column, index_type, name, replace=replace, train=train,
                                        fragment_ids=fragment_ids, index_uuid=index_uuid, **kwargs)

    def create_index_uncommitted(self, column, index_type, name=None, metric: str = "L2",
                                 replace: bool = False, *args, train: bool = True,
                                 fragment_ids=None, index_uuid=None, **kwargs):
        """One segment over ``fragment_ids``, written but not committed (an ``Index``)."""
        if fragment_ids is None:
            raise InvalidArgumentError("create_index_uncommitted requires fragment_ids "
                                       "for distributed index build")
        if isinstance(column, (list, tuple)):
            column = column[0]
        kind = str(getattr(index_type, "index_type", index_type)).upper()
        if index_uuid is not None and kind in ("BTREE", "NGRAM"):
            # pylance 14: workers sharing a uuid would overwrite each other's segment
            label = {"BTREE": "BTree", "NGRAM": "NGram"}[kind]
            raise InvalidArgumentError(
                f"index_uuid is no longer accepted for {label} distributed index builds; segment "
                f"UUIDs are generated by Lance and returned in the index metadata")
        if kind in VECTOR_TYPES:
            return _vector.create_vector_index(self.snapshot, column, kind, name, metric,
                                               train=train, fragment_ids=fragment_ids,
                                               index_uuid=index_uuid,
                                               **_vector_params(index_type, kwargs))
        return _create.create_scalar_index(self.snapshot, column, index_type, name,
                                           train=train, fragment_ids=fragment_ids,
                                           index_uuid=index_uuid, **kwargs)

    def merge_index_metadata(self, index_uuid: str, index_type: str, batch_readhead=None,
                             progress_callback=None):
        """Join the parts a distributed build staged under ``index_uuid`` (INVERTED, and the
        older BTREE shape: each worker's ``create_scalar_index(..., fragment_ids=,
        index_uuid=)``); not committed: commit a ``LanceOperation.CreateIndex`` afterwards, as
        with pylance."""
        _create.merge_index_metadata(self.snapshot, index_uuid, index_type)
        return None

    def merge_existing_index_segments(self, segments):
        return _create.merge_segments(self.snapshot, segments)

    def commit_existing_index_segments(self, index_name: str, column: str, segments):
        self.adopt(_create.commit_segments(self.snapshot, index_name, column, segments))
        return self

    # -- describing --------------------------------------------------------------------------
    def describe_indices(self) -> list:
        return _info.describe_indices(self.snapshot)

    def list_indices(self) -> list:
        warnings.warn("The 'list_indices' method is deprecated. It may be removed in a future "
                      "version. Use describe_indices() instead.", DeprecationWarning, stacklevel=2)
        return _info.list_indices(self.snapshot)

    def index_statistics(self, index_name: str) -> dict:
        warnings.warn("LanceDataset.index_statistics() is deprecated, use "
                      "LanceDataset.stats.index_stats() instead", DeprecationWarning, stacklevel=2)
        return _info.index_stats(self.snapshot, index_name)

    def get_ivf_model(self, index_name: str):
        """The IVF model (centroids, distance type) of vector index ``index_name``."""
        return _info.ivf_model(self.snapshot, index_name)

    def centroids(self, *, index_name: str | None = None, column: str | None = None):
        """IVF centroids of an index (or of ``column``'s first IVF index)."""
        if index_name is None:
            if column is None:
                raise InvalidArgumentError("Must provide 'index_name' or 'column'.")
            index_name = _info.default_vector_index(self.snapshot, column)
        model = _info.ivf_model(self.snapshot, index_name)
        return None if model is None else model.centroids

    @property
    def has_index(self) -> bool:
        return len(self.describe_indices()) > 0

    # -- managing ----------------------------------------------------------------------------
    def drop_index(self, name: str):
        self.adopt(_manage.drop_index(self.snapshot, name))

    def prewarm_index(self, name: str, *, with_position: bool = False, index_segments=None):
        _manage.prewarm_index(self.snapshot, name, index_segments)


def _vector_params(index_type, kwargs: dict) -> dict:
    """pylance's create_index keywords (and an IndexConfig's parameters) for a vector build;
    positional-or-keyword options it accepts but that only tune its shuffle are dropped."""
    params = dict(getattr(index_type, "parameters", None) or {})
    params.update({k: v for k, v in kwargs.items() if v is not None})
    for ignored in ("index_cache_size", "shuffle_partition_batches", "shuffle_partition_concurrency",
                    "storage_options", "filter_nan", "skip_transpose", "progress_callback",
                    "streaming_sample_rate", "streaming_coreset_rate", "streaming_refine_passes",
                    "precomputed_partition_dataset", "ivf_centroids_file"):
        params.pop(ignored, None)
    return params


def index_from_metadata(pb):
    """pylance's ``Index`` for an ``IndexMetadata`` entry."""
    return from_pb(pb)
