"""Work arrays kept across solves (and batches) in a dict, so their pages stay mapped.

Fresh memory costs a page fault per page on first touch, which on a virtual machine with
transparent huge pages can cost more than the sweep that fills it; reused pages are already
mapped. A workspace is a plain dict from a name to a flat array; ``work_array`` hands out a
shaped view of the named array, growing it when it is too small.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True, nogil=True)
def _zero(flat, chunk):
    for i in prange(-(-flat.shape[0] // chunk)):
        flat[i * chunk:min(flat.shape[0], (i + 1) * chunk)] = 0


def work_array(workspace: dict | None, name: str, shape, dtype=np.float64, zero: bool = False,
               empty=np.empty) -> np.ndarray:
    """An array of ``shape`` for one solve's own use, taken from ``workspace`` (a dict kept
    across solves) when it holds one big enough, else allocated there. ``zero``: cleared
    first. Without a workspace: a new array. ``empty(size, dtype=)`` allocates (pinned host
    memory for the GPU's copies: ``cupyx.empty_pinned``)."""
    if workspace is None:
        array = empty(math.prod(shape), dtype=dtype).reshape(shape)
        if zero:
            array[...] = 0
        return array
    size = math.prod(shape)
    flat = workspace.get(name)
    if flat is None or flat.dtype != np.dtype(dtype) or flat.size < size:
        flat = workspace[name] = empty(size, dtype=dtype)
    if zero:
        _zero(flat[:size], 1 << 16)  # both cores: one memset is slower than the sweep it precedes
    return flat[:size].reshape(shape)
