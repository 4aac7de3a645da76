"""Namespace errors: each is both a :class:`lancefmt.LanceError` and the matching
``lance_namespace.errors`` class (what pylance's namespaces raise), so callers of either API
catch them; REST carries them as the interface's integer error code."""
from __future__ import annotations

from lance_namespace import errors as _ln

from ..errors import LanceError


def _make(base):
    return type(base.__name__, (LanceError, base), {"__module__": __name__,
                                                    "__doc__": base.__doc__})


UnsupportedOperationError = _make(_ln.UnsupportedOperationError)
NamespaceNotFoundError = _make(_ln.NamespaceNotFoundError)
NamespaceAlreadyExistsError = _make(_ln.NamespaceAlreadyExistsError)
NamespaceNotEmptyError = _make(_ln.NamespaceNotEmptyError)
TableNotFoundError = _make(_ln.TableNotFoundError)
TableAlreadyExistsError = _make(_ln.TableAlreadyExistsError)
TableTagNotFoundError = _make(_ln.TableTagNotFoundError)
TableTagAlreadyExistsError = _make(_ln.TableTagAlreadyExistsError)
TableVersionNotFoundError = _make(_ln.TableVersionNotFoundError)
class InvalidInputError(LanceError, _ln.InvalidInputError, ValueError):
    """Raised when the request contains invalid parameters (also a ValueError)."""
ConcurrentModificationError = _make(_ln.ConcurrentModificationError)
InternalError = _make(_ln.InternalError)

_BY_CODE = {cls.code: cls for cls in (
    UnsupportedOperationError, NamespaceNotFoundError, NamespaceAlreadyExistsError,
    NamespaceNotEmptyError, TableNotFoundError, TableAlreadyExistsError, TableTagNotFoundError,
    TableTagAlreadyExistsError, TableVersionNotFoundError, InvalidInputError,
    ConcurrentModificationError, InternalError)}


def error_for_code(code: int, message: str) -> Exception:
    """The lancefmt error class for an interface error code (other codes: the interface's own)."""
    cls = _BY_CODE.get(int(code))
    if cls is not None:
        return cls(message)
    return _ln.from_error_code(int(code), message) if hasattr(_ln, "from_error_code") \
        else _ln.LanceNamespaceError(message)


def error_code(exc: BaseException) -> int:
    """The interface error code that describes ``exc`` (lancefmt errors map by kind)."""
    from ..errors import DatasetNotFoundError, InvalidArgumentError, CommitConflictError

    if isinstance(exc, _ln.LanceNamespaceError):
        return int(exc.code)
    if isinstance(exc, DatasetNotFoundError):
        return int(_ln.ErrorCode.TABLE_NOT_FOUND)
    if isinstance(exc, CommitConflictError):
        return int(_ln.ErrorCode.CONCURRENT_MODIFICATION)
    if isinstance(exc, (InvalidArgumentError, ValueError)):
        return int(_ln.ErrorCode.INVALID_INPUT)
    if isinstance(exc, NotImplementedError):
        return int(_ln.ErrorCode.UNSUPPORTED)
    return int(_ln.ErrorCode.INTERNAL)
