"""Process memory settings for loops over large temporary arrays.

glibc serves a block of 32 MiB or more with a fresh ``mmap`` and returns it to the system
when freed, so a loop that allocates and frees the same large tensors (PathMind's passes over
the graph, a batch after a batch) faults every page in again each time: on the benchmark
graph about 160,000 minor page faults per question, with system time as large as user time.
:func:`keep_freed_memory` serves large blocks from the heap instead and keeps freed heap
memory for reuse; the process's peak memory is unchanged, it is only not handed back early.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h)
_done = False


def keep_freed_memory() -> bool:
    """Keep freed large blocks for reuse (glibc only; elsewhere nothing changes). Returns
    whether the setting took. Idempotent."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other C libraries have no mallopt
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    _done = bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))
    return _done
