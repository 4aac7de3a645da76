# cython: language_level=3
"""Bodies received straight into the ``bytes`` object handed to the caller.

A ranged GET's body is the bulk of a read's client CPU per MB: received in pieces, the
pieces kept, then joined into one ``bytes`` (a second copy of every byte). Here the body's
final ``bytes`` is allocated once at its announced length and the socket writes into it
(``recv_into`` on a writable view of it), which CPython allows for a bytes object nobody else
holds yet (its hash not computed); the view is released before the bytes is returned.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char* mem, Py_ssize_t size, int flags)
    int PyBUF_WRITE


def recv_body(sock, Py_ssize_t n, bytes head, int flags=0):
    """``(body, got)``: a new bytes object of ``n`` bytes starting with ``head`` (body bytes
    that came with the headers), the rest received from ``sock`` (``recv_into`` with
    ``flags``: ``MSG_WAITALL`` on a blocking socket receives the whole rest in one call, the
    kernel waking no thread for each segment); ``got`` < ``n`` when the peer closed first (the
    body is then cut to what arrived). Socket errors propagate with the bytes received so far
    in ``err.received`` (a prefix of the body)."""
    if n < 0:
        raise ValueError("negative body length")
    cdef Py_ssize_t h = min(len(head), n), got = h, k
    body = PyBytes_FromStringAndSize(NULL, n)
    view = PyMemoryView_FromMemory(PyBytes_AS_STRING(body), n, PyBUF_WRITE)
    try:
        view[:h] = head[:h]
        while got < n:
            try:
                k = sock.recv_into(view[got:], n - got, flags)
            except OSError as e:
                e.received = bytes(view[:got])
                raise
            if k <= 0:
                break
            got += k
    finally:
        view.release()
    if got < n:
        return body[:got], got
    return body, got
