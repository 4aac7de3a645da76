"""pylance's ``lance.util`` names that code imports. lancefmt writes no indexes."""
from .errors import NotSupportedError


def validate_vector_index(dataset, column: str, refine_factor: int = 5, sample_size=None,
                          pass_threshold: float = 1.0) -> None:
    """Vector indexes are out of lancefmt's scope: always NotSupportedError."""
    raise NotSupportedError("lancefmt does not build or read vector indexes")


__all__ = ["validate_vector_index"]
