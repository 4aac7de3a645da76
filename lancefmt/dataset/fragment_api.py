"""pylance's ``LanceFragment`` surface for :class:`~lancefmt.dataset.fragment.Fragment`:
``scanner()``, ``create()``, ``DataFile``-like ``data_files()``.

A fragment scanner is a :class:`~lancefmt.dataset.scanner.LanceScanner` over a one-fragment
view (:class:`FragmentSource`), so fragment reads take the same projections, SQL filters,
limits and metadata columns as dataset reads.
"""
from __future__ import annotations

from ..io.uri import normalize_uri


class FragmentSource:
    """What a LanceScanner needs of a dataset, for one fragment."""

    def __init__(self, fragment):
        self._fragment = fragment
        self._ctx = fragment._ctx

    @property
    def schema(self):
        return self._ctx.schema

    @property
    def uri(self):
        return self._ctx.uri

    @property
    def version(self):
        return self._ctx.version

    def _fragment_pbs(self):
        return [self._fragment._pb]

    def _select_fragments(self, fragments):
        if fragments is not None:
            from ..errors import InvalidArgumentError

            raise InvalidArgumentError("a fragment scanner scans its own fragment")
        return [self._fragment._pb]

    def count_rows(self, filter=None):
        return self._fragment.count_rows(filter)

    def __repr__(self):
        return f"Fragment({self._fragment.id} of {self.uri!r} v{self.version})"


def fragment_scanner(fragment, columns=None, batch_size=None, filter=None, limit=None, offset=None,
                     with_row_id=False, with_row_address=False, **kwargs):
    from .scanner import LanceScanner

    return LanceScanner(FragmentSource(fragment), columns=columns, batch_size=batch_size,
                        filter=filter, limit=limit, offset=offset, with_row_id=with_row_id,
                        with_row_address=with_row_address, **kwargs)


class DataFileUri(str):
    """A data file's resolved URI (a ``str``, as lancefmt always returned) that also carries
    pylance's ``DataFile`` attributes (``path``, ``fields``, ``column_indices``, versions...)."""

    def __new__(cls, uri: str, pb):
        obj = super().__new__(cls, uri)
        obj.path = pb.path
        obj.fields = list(pb.fields)
        obj.column_indices = list(pb.column_indices)
        obj.file_major_version = pb.file_major_version
        obj.file_minor_version = pb.file_minor_version
        obj.file_size_bytes = pb.file_size_bytes or None
        obj.base_id = pb.base_id if pb.HasField("base_id") else None
        return obj


def create_fragment(dataset_uri, data, fragment_id=None, schema=None, max_rows_per_group=1024,
                    progress=None, mode="append", *, data_storage_version=None,
                    use_legacy_format=None, storage_options=None, **kwargs):
    """pylance's ``LanceFragment.create``: write ``data`` as ONE fragment of ``dataset_uri``
    (not committed; pass it to ``LanceOperation.Append/Overwrite``)."""
    from ..errors import InvalidArgumentError
    from .write import write_fragments

    if hasattr(dataset_uri, "uri") and storage_options is None:
        storage_options = getattr(dataset_uri, "storage_options", None)
    uri = dataset_uri if hasattr(dataset_uri, "uri") else normalize_uri(dataset_uri)
    frags = write_fragments(data, uri, schema=schema, mode=mode, max_rows_per_file=1 << 62,
                            max_bytes_per_file=1 << 62, data_storage_version=data_storage_version,
                            storage_options=storage_options)
    if not frags:
        raise InvalidArgumentError("LanceFragment.create needs at least one row")
    (frag,) = frags
    if fragment_id is not None:
        frag.id = int(fragment_id)
    return frag
