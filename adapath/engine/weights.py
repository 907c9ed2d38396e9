"""Query-conditioned edge weights (AdaPath Eq. 1) in decomposed form.

``w_q(u, r, v) = beta * s_q(r) + (1 - beta) / 2 * (s_q(u) + s_q(v))`` is written as
``w = a[r] + b[u] + b[v]`` with ``a[r] = beta * s_q(r) + eps`` and
``b[u] = (1 - beta) / 2 * s_q(u)``. A batch of B queries is ``a`` (R x B) and ``b`` (N x B);
no per-query edge array is ever built, except by ``materialize`` (tests and references).
``eps`` keeps every weight positive, so every node with an edge has an out-weight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BETA = 0.3
EPS = 1e-3


@dataclass
class QueryWeights:
    a: np.ndarray  # R x B, per-relation term (eps included)
    b: np.ndarray  # N x B, per-node term

    @property
    def batch(self) -> int:
        return self.a.shape[1]

    def columns(self, index) -> QueryWeights:
        return QueryWeights(self.a[:, index], self.b[:, index])


def query_weights(s_node: np.ndarray, s_rel: np.ndarray, beta: float = BETA, eps: float = EPS,
                  xp=np, out: np.ndarray | None = None) -> QueryWeights:
    """Decomposed weights from normalized similarities (N x B nodes, R x B relations).
    ``out``: a float64 N x B array (of the same namespace) that receives ``b``, so that a
    caller solving batch after batch reuses its pages instead of faulting in fresh ones."""
    a = xp.asarray(s_rel, dtype=xp.float64) * beta + eps
    if out is None:
        b = xp.asarray(s_node, dtype=xp.float64) * ((1.0 - beta) / 2.0)
    else:
        b = xp.multiply(s_node, (1.0 - beta) / 2.0, out=out, dtype=xp.float64)  # in float64, as above
    return QueryWeights(a, b)


def materialize(graph, weights: QueryWeights, column: int = 0) -> np.ndarray:
    """The weight of every half-edge for one query (2E floats). For tests and references."""
    a = np.asarray(weights.a[:, column])
    b = np.asarray(weights.b[:, column])
    return a[graph.rel] + b[graph.src] + b[graph.indices]


def edge_weight(weights: QueryWeights, rel, u, v, column: int = 0):
    return weights.a[rel, column] + weights.b[u, column] + weights.b[v, column]
