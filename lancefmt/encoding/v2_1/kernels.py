"""The Cython kernels of 2.1/2.2 page decoding that code outside this package calls directly
(the compaction fast path decodes mini-block chunks of small files itself)."""
from ._fastlanes import decode_inline_chunks
from ._fsst import fsst_decode
from ._gather import decode_variable_chunks

__all__ = ["decode_inline_chunks", "decode_variable_chunks", "fsst_decode"]
