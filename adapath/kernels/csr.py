"""A graph's half-edges as the kernels take them: one argument instead of three."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class CSR(NamedTuple):
    """A graph's half-edges by source row: ``indptr[N+1]``, the neighbour ``indices[2E]``
    and relation ``rel[2E]`` of each (rows sorted by relation). One argument of the kernels
    (Numba takes a NamedTuple as a typed tuple)."""

    indptr: np.ndarray
    indices: np.ndarray
    rel: np.ndarray
