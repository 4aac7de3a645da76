# cython: language_level=3
"""Bodies received straight into the ``bytes`` object handed to the caller.

A ranged GET's body is the bulk of a read's client CPU per MB: received in pieces, the
pieces kept, then joined into one ``bytes`` (a second copy of every byte). Here the body's
final ``bytes`` is allocated once at its announced length and the socket writes into it
(``recv_into`` on a writable view of it), which CPython allows for a bytes object nobody else
holds yet (its hash not computed); the view is released before the bytes is returned.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.string cimport memcpy, strerror

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


cdef extern from "<sys/socket.h>" nogil:
    ssize_t c_recv "recv"(int fd, void* buf, size_t n, int flags)
    int setsockopt(int fd, int level, int name, const void* val, unsigned int size)
    int SOL_SOCKET
    int SO_RCVLOWAT
    int MSG_DONTWAIT

cdef extern from "<poll.h>" nogil:
    struct pollfd:
        int fd
        short events
        short revents
    int poll(pollfd* fds, unsigned long nfds, int timeout)
    short POLLIN

cdef extern from "<errno.h>" nogil:
    int errno
    int EINTR
    int EAGAIN
    int EWOULDBLOCK

cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1


cdef int _mark(int fd, Py_ssize_t want) noexcept nogil:
    cdef int v = <int>min(want, <Py_ssize_t>0x7fffffff)
    return setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(int))


def recv_body_marked(int fd, Py_ssize_t n, bytes head, int timeout_ms):
    """:func:`recv_body` on a plain blocking socket with one wake-up per body instead of one
    per arriving segment: the receive mark (``SO_RCVLOWAT``) is set to the bytes still to come
    before each ``poll`` (the kernel caps it at half its largest receive buffer), so the thread
    sleeps until all of them (or that cap) are in the socket's buffer, then takes them with one
    ``recv``. Nothing is received between setting the mark and ``poll``, so the mark is never
    above what is left to arrive (the hang ``MSG_WAITALL`` with a mark had: the kernel compares
    the mark with the bytes arrived since the last copy). The mark is set back to 1 before
    returning (the connection goes back to the pool). The GIL is released for the whole body.
    ``timeout_ms`` bounds each wait (the read timeout; < 0: none): then ``OSError(EAGAIN)``
    with ``err.received``, as a read past ``SO_RCVTIMEO``."""
    if n < 0:
        raise ValueError("negative body length")
    cdef Py_ssize_t h = min(len(head), n), got = h, k = 0
    cdef int err = 0, r = 0
    cdef pollfd pfd
    cdef char* buf
    body = PyBytes_FromStringAndSize(NULL, n)
    buf = PyBytes_AS_STRING(body)
    if h:
        memcpy(buf, PyBytes_AS_STRING(head), h)
    pfd.fd = fd
    pfd.events = POLLIN
    try:
        while got < n:
            with nogil:
                while got < n:
                    if _mark(fd, n - got) != 0:
                        err = errno
                        break
                    pfd.revents = 0
                    r = poll(&pfd, 1, timeout_ms)
                    if r == 0:
                        err = EAGAIN
                        break
                    if r < 0:
                        err = errno
                        break
                    k = c_recv(fd, buf + got, n - got, MSG_DONTWAIT)
                    if k > 0:
                        got += k
                    elif k == 0:
                        break  # the peer closed first
                    elif errno != EAGAIN and errno != EWOULDBLOCK and errno != EINTR:
                        err = errno
                        break
            if err == EINTR:  # a signal: let Python handle it (KeyboardInterrupt), then go on
                err = 0
                PyErr_CheckSignals()
                continue
            if err or k == 0:
                break
    finally:
        with nogil:
            _mark(fd, 1)
    if err:
        e = OSError(err, strerror(err))
        e.received = body[:got]
        raise e
    if got < n:
        return body[:got], got
    return body, got
