"""Lance namespaces: the directory namespace (V1 listing, V2 ``__manifest``) and the Lance REST
namespace protocol (server adapter and client), all behind the ``lance_namespace`` interface.

Importing this package registers ``"lancefmt-dir"`` so that
``lance_namespace.connect("lancefmt-dir", {"root": ...})`` returns a
:class:`DirectoryNamespace`.
"""
import lance_namespace as _ln

from .directory import DirectoryNamespace
from .errors import (
    ConcurrentModificationError, InvalidInputError, NamespaceAlreadyExistsError,
    NamespaceNotEmptyError, NamespaceNotFoundError, TableAlreadyExistsError, TableNotFoundError,
    UnsupportedOperationError,
)

_ln.register_namespace_impl("lancefmt-dir", "lancefmt.namespace.DirectoryNamespace")


def __getattr__(name):  # the REST pieces import werkzeug/urllib3 only when used
    if name == "RestAdapter":
        from .rest_server import RestAdapter

        return RestAdapter
    if name == "RestNamespace":
        from .rest_client import RestNamespace

        return RestNamespace
    raise AttributeError(name)


__all__ = [
    "DirectoryNamespace", "RestAdapter", "RestNamespace", "ConcurrentModificationError",
    "InvalidInputError", "NamespaceAlreadyExistsError", "NamespaceNotEmptyError",
    "NamespaceNotFoundError", "TableAlreadyExistsError", "TableNotFoundError",
    "UnsupportedOperationError",
]
