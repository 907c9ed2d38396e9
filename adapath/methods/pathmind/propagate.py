"""The graph as PathMind's network reads it, and one relational layer as a torch operation.

The whole graph's CSR serves every question: the query subgraph (the union of the topics'
k-hop balls) is where a question's path sums are non-zero, so it needs no copy of its own.
Each half-edge carries a relation-direction code, ``2 * relation + direction``: the walk
from u to v along an edge stored u -> v is code ``2r + 1``, against it ``2r``. A half-edge at
row v (pointing to u) is read in the gather as the step u -> v, and in the backward pass as
the step v -> u; the two code arrays say which code each reading has.
"""

from __future__ import annotations

import numpy as np
import torch

from adapath.engine.graph import KnowledgeGraph
from adapath.kernels.relational import BLOCKS, gather, scatter_backward


class RelationalGraph:
    """CSR arrays and relation-direction codes of a graph, built once per graph."""

    def __init__(self, graph: KnowledgeGraph):
        self.indptr = np.asarray(graph.indptr)
        self.indices = np.asarray(graph.indices)
        rel = np.asarray(graph.rel).astype(np.int32)
        fwd = np.asarray(graph.fwd).astype(np.int32)
        # the half-edge at row v points to u: fwd there means the edge is stored v -> u, so
        # the step u -> v goes against it (code 2r); its twin at row u has the other flag
        self.gather_code = (2 * rel + (1 - fwd)).astype(np.int32)
        self.scatter_code = (2 * rel + fwd).astype(np.int32)
        self.num_nodes = graph.num_nodes
        self.num_codes = 2 * graph.num_relations

    def reach(self, seeds: np.ndarray, hops: int) -> list[np.ndarray]:
        """Masks of the nodes within 0..hops steps of ``seeds`` (a boolean mask)."""
        from adapath.kernels.relational import mark_neighbours

        out = [np.asarray(seeds, dtype=np.bool_)]
        for _ in range(hops):
            out.append(mark_neighbours(self.indptr, self.indices, out[-1], np.empty(self.num_nodes, np.bool_)))
        return out


class Places:
    """The nodes a batch works on (global ids, sorted) and the map from a global id to its
    place among them (-1 outside)."""

    def __init__(self, nodes: np.ndarray, num_nodes: int):
        self.nodes = np.asarray(nodes, dtype=np.int64)
        self.local_of = np.full(num_nodes, -1, dtype=np.int64)
        self.local_of[self.nodes] = np.arange(len(self.nodes))

    def __len__(self) -> int:
        return len(self.nodes)

    def mask(self, global_mask: np.ndarray) -> np.ndarray:
        """A global node mask read at the places."""
        return np.ascontiguousarray(global_mask[self.nodes])


class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, rho, graph: RelationalGraph, places: Places, rows: np.ndarray, sources: np.ndarray):
        xs, rs = x.detach().contiguous().numpy(), rho.detach().contiguous().numpy()
        out = np.empty_like(xs)
        gather(graph.indptr, graph.indices, graph.gather_code, places.nodes, places.local_of, xs, rs, rows, sources,
               out)
        ctx.save_for_backward(x, rho)
        ctx.graph, ctx.places, ctx.rows, ctx.sources = graph, places, rows, sources
        return torch.from_numpy(out)

    @staticmethod
    def backward(ctx, grad):
        x, rho = ctx.saved_tensors
        graph, places = ctx.graph, ctx.places
        xs, rs = x.detach().contiguous().numpy(), rho.detach().contiguous().numpy()
        g = grad.detach().contiguous().numpy()
        dx = np.empty_like(xs)
        parts = np.empty((BLOCKS,) + rs.shape, dtype=xs.dtype)
        scatter_backward(graph.indptr, graph.indices, graph.scatter_code, places.nodes, places.local_of, xs, g, rs,
                         ctx.rows, ctx.sources, dx, parts)
        drho = parts.sum(0, dtype=np.float64).astype(xs.dtype)  # block order: the same sum on any thread count
        return torch.from_numpy(dx), torch.from_numpy(drho), None, None, None, None


def relational_gather(x: torch.Tensor, rho: torch.Tensor, graph: RelationalGraph, places: Places, rows: np.ndarray,
                      sources: np.ndarray) -> torch.Tensor:
    """``y[i] = sum over half-edges (u -> v) of x[place of u] * rho[code]`` for the places i of
    ``rows`` (v = ``places.nodes[i]``) and sources u at places marked in ``sources`` (places x
    W; zero elsewhere); differentiable in ``x`` and ``rho``."""
    return _Gather.apply(x, rho, graph, places, rows, sources)
