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
from .read import index_info as _info

VECTOR_TYPES = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_RQ", "IVF_HNSW_FLAT", "IVF_HNSW_SQ",
                "IVF_HNSW_PQ")


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
                                          index_uuid=index_uuid, **kwargs)
        if fragment_ids is not None:
            return out
        self.adopt(out)
        return None

    def create_index(self, column, index_type, name=None, metric: str = "L2",
                     replace: bool = False, *args, train: bool = True, fragment_ids=None,
                     index_uuid=None, **kwargs):
        """Scalar types (and ``IndexConfig``) as :meth:`create_scalar_index`; vector types are
        not built by lancefmt yet."""
        kind = getattr(index_type, "index_type", index_type)
        if isinstance(column, (list, tuple)):
            if len(column) != 1:
                raise InvalidArgumentError("indices cover exactly one column")
            column = column[0]
        if isinstance(kind, str) and kind.upper() in VECTOR_TYPES:
            raise NotSupportedError(f"lancefmt does not build {kind.upper()} vector indices yet")
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
        return _create.create_scalar_index(self.snapshot, column, index_type, name,
                                           train=train, fragment_ids=fragment_ids,
                                           index_uuid=index_uuid, **kwargs)

    def merge_index_metadata(self, index_uuid: str, index_type: str, batch_readhead=None,
                             progress_callback=None):
        """Join the parts a distributed INVERTED build staged under ``index_uuid`` (not
        committed: commit a ``LanceOperation.CreateIndex`` afterwards, as with pylance)."""
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

    @property
    def has_index(self) -> bool:
        return len(self.describe_indices()) > 0

    # -- managing ----------------------------------------------------------------------------
    def drop_index(self, name: str):
        self.adopt(_manage.drop_index(self.snapshot, name))

    def prewarm_index(self, name: str, *, with_position: bool = False, index_segments=None):
        _manage.prewarm_index(self.snapshot, name, index_segments)


def index_from_metadata(pb):
    """pylance's ``Index`` for an ``IndexMetadata`` entry."""
    return from_pb(pb)
