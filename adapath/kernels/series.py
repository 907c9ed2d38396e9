"""What a personalized PageRank solve sums, shared by its kernels (Numba and array namespace).

PPR is summed as its series ``pi = eta * sum_k (1 - eta)^k P^k s``. P preserves mass, so
after K terms the L1 error is exactly the mass left, ``(1 - eta)^(K+1)``; the term count
follows from the tolerance alone (``series_terms``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class Series(NamedTuple):
    """Teleport ``eta``, the L1 tolerance ``tol`` and at most ``max_iter`` terms."""

    eta: float = 0.85
    tol: float = 1e-8
    max_iter: int = 200

    @property
    def terms(self) -> int:
        """The terms x_1 .. x_K a solve sums after x_0."""
        return min(series_terms(self.eta, self.tol), self.max_iter)


class Certification(NamedTuple):
    """The certified early exit (``adapath.kernels.certify``): each pair of seed columns
    (``pairs``, P x 2: forward, backward) stops once the top K of ``pi_f * pi_b`` is
    certified at every rung of ``ladder`` (corridor sizes, increasing), with ``slack``;
    checks start at term ``certify_from``; a full check keeps a shortlist of ``shortlist``
    (at least 4 x the top rung) nodes (the Numba kernel); ``stopped`` (length P), if
    given, receives the term at which each pair stopped."""

    pairs: np.ndarray
    ladder: np.ndarray
    slack: float = 0.0
    certify_from: int = 5
    shortlist: int = 512
    stopped: np.ndarray | None = None

    @property
    def active(self) -> bool:
        """Whether there is anything to certify (a pair list and at least one rung)."""
        return self.pairs is not None and self.ladder is not None and len(self.ladder) > 0


def series_terms(eta: float, tol: float) -> int:
    """Smallest K with (1 - eta)^(K + 1) <= tol: the terms x_0 .. x_K to sum."""
    if tol >= 1.0:
        return 0
    return max(0, math.ceil(math.log(tol) / math.log(1.0 - eta)) - 1)
