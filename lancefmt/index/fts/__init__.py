"""Full-text search: the INVERTED index and its queries. Importing this package registers
the INVERTED index type."""
from . import inverted  # noqa: F401
