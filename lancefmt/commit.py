"""pylance's ``lance.commit``: the error a commit raises when a concurrent one wins."""
from .errors import CommitConflictError, RetryableCommitConflictError

__all__ = ["CommitConflictError", "RetryableCommitConflictError"]
