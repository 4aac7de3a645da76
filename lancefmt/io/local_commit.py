"""Atomic no-replace publication of a local file when hard links are not available.

The local put-if-absent writes a whole temporary file and then makes it appear under its final
name only if that name is free. ``os.link`` does that everywhere hard links work; some FUSE and
SMB mounts refuse them (EPERM/ENOTSUP). There, Linux's ``renameat2(..., RENAME_NOREPLACE)``
does the same in one step. If the file system supports neither, committing safely is impossible
without outside help, so we refuse with :class:`~lancefmt.errors.ConditionalPutUnsupportedError`
(naming ``manifest_store=``) rather than create the final name and fill it afterwards, which a
crash in between would leave as an empty "latest" manifest nobody can open.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform

from ..errors import ConditionalPutUnsupportedError

AT_FDCWD = -100
RENAME_NOREPLACE = 1
# renameat2 syscall numbers, for a libc without the wrapper (glibc < 2.28, some musl builds).
_SYSCALL_RENAMEAT2 = {"x86_64": 316, "aarch64": 276, "i686": 353, "i386": 353, "armv7l": 382,
                      "ppc64le": 357, "s390x": 347, "riscv64": 276}

_renameat2 = None
_loaded = False


def _load():
    """The ``renameat2`` entry point as ``f(old: bytes, new: bytes) -> int`` (or None)."""
    global _renameat2, _loaded
    if _loaded:
        return _renameat2
    _loaded = True
    if not os.uname().sysname == "Linux":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    fn = getattr(libc, "renameat2", None)
    if fn is not None:
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        fn.restype = ctypes.c_int
        _renameat2 = lambda old, new: fn(AT_FDCWD, old, AT_FDCWD, new, RENAME_NOREPLACE)  # noqa: E731
        return _renameat2
    number = _SYSCALL_RENAMEAT2.get(platform.machine())
    if number is None:
        return None
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    _renameat2 = lambda old, new: syscall(  # noqa: E731
        ctypes.c_long(number), ctypes.c_int(AT_FDCWD), ctypes.c_char_p(old),
        ctypes.c_int(AT_FDCWD), ctypes.c_char_p(new), ctypes.c_uint(RENAME_NOREPLACE))
    return _renameat2


def unsupported(path: str, why: str) -> ConditionalPutUnsupportedError:
    return ConditionalPutUnsupportedError(
        f"cannot create {path} atomically: {why}. This file system supports neither hard links "
        "nor renameat2(RENAME_NOREPLACE); commit through an external manifest store, e.g. "
        "manifest_store=lancefmt.SqliteManifestStore('/path/on/a/local/disk/manifests.db')")


def rename_noreplace(src: str, dst: str) -> bool:
    """Rename ``src`` to ``dst`` unless ``dst`` exists (atomically); False if it exists.
    :class:`ConditionalPutUnsupportedError` where the kernel or file system cannot."""
    fn = _load()
    if fn is None:
        raise unsupported(dst, "renameat2 is not available on this system")
    if fn(os.fsencode(src), os.fsencode(dst)) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.EEXIST:
        return False
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        raise unsupported(dst, f"renameat2 failed: {os.strerror(err)}")
    raise OSError(err, os.strerror(err), dst)


def fsync_dir(path: str) -> None:
    """Make a just-created or renamed directory entry durable (no-op where directories cannot be
    opened, e.g. some network file systems)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


SYNC_FILE_RANGE_WRITE = 2
_sync_file_range = None
_sfr_loaded = False


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to start writing a just-written range to disk without waiting (Linux
    ``sync_file_range(SYNC_FILE_RANGE_WRITE)``), so the fsync at close finds little left to
    do. Only a hint: a no-op where the call is missing or fails."""
    global _sync_file_range, _sfr_loaded
    if not _sfr_loaded:
        _sfr_loaded = True
        if platform.system() == "Linux":
            try:
                fn = ctypes.CDLL(None, use_errno=True).sync_file_range
                fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
                fn.restype = ctypes.c_int
                _sync_file_range = fn
            except (OSError, AttributeError):
                _sync_file_range = None
    if _sync_file_range is not None and length > 0:
        _sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE)
