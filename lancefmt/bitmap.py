"""pylance's ``lance.bitmap``: the set of fragment ids index segments report."""
from .table.bitmap import Bitmap

__all__ = ["Bitmap"]
