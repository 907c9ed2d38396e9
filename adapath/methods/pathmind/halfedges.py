"""A subgraph's half-edges as sparse operators, and the two products PathMind's network runs
over them with hand-written backward passes.

Subgraphs of 400 nodes carry 10^4-10^5 half-edges. Gathering one hidden vector per
half-edge and scattering it back (``h[src]``, ``index_add``) made E x hidden intermediates
and dominated training; these products read each half-edge once, without intermediates:

- :func:`slot_sum` sums node vectors into (target, relation) slots: the relational messages;
- :func:`edge_dot` gives one dot product per half-edge (a sampled dense-dense product): the
  triple weights;
- :func:`soft_min_relax` runs the soft shortest-path relaxations from the topics: the
  cumulative cost.

The first two run as CSR products in torch (MKL on the CPU; a row's entries are summed in
order, so results do not depend on the thread count); the relaxation is NumPy in float64,
its backward the softmax weights it keeps.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch


def _csr(indptr, cols, values, shape) -> torch.Tensor:
    with warnings.catch_warnings():  # "sparse CSR support is in beta": the ops used here are tested
        warnings.simplefilter("ignore")
        return torch.sparse_csr_tensor(indptr, cols, values, size=shape, check_invariants=False)


class HalfEdges:
    """The half-edges of a graph (one subgraph, or several as one disjoint graph), built once per batch.

    ``key = dst * R + rel`` names a (node, relation) slot. ``by_key`` (slots x nodes) has one
    entry per half-edge at (key, src); ``by_src`` (nodes x slots) is its transpose. The
    permutations ``key_order`` / ``src_order`` put per-half-edge values in the entry order of
    each. Half-edges grouped by source in ascending order, with their order by key given
    (as :class:`~adapath.methods.pathmind.subgraph.QuerySubgraph` stores them), need no
    sorting here; otherwise they are sorted.
    """

    def __init__(self, src, dst, rel, num_nodes: int, num_relations: int, in_order=None):
        src, dst, rel = (np.asarray(x, dtype=np.int64) for x in (src, dst, rel))
        self.src, self.dst, self.rel = (torch.as_tensor(x) for x in (src, dst, rel))
        self.num_nodes, self.num_relations = num_nodes, num_relations
        self.slots = num_nodes * num_relations
        key = dst * num_relations + rel
        self.key = torch.as_tensor(key)
        if in_order is None:
            self.src_order = torch.as_tensor(np.lexsort((key, src)))
            self.key_order = torch.as_tensor(np.lexsort((src, key)))
        else:  # grouped by source already; ``in_order`` sorts by key
            self.src_order = None
            self.key_order = torch.as_tensor(np.asarray(in_order, dtype=np.int64))
        index = torch.int32 if max(self.slots, len(src)) < 2 ** 31 else torch.int64
        self.key_indptr = torch.zeros(self.slots + 1, dtype=index)
        torch.cumsum(torch.bincount(self.key, minlength=self.slots), 0, out=self.key_indptr[1:])
        self.src_indptr = torch.zeros(num_nodes + 1, dtype=index)
        torch.cumsum(torch.bincount(self.src, minlength=num_nodes), 0, out=self.src_indptr[1:])
        self.key_cols = self.src.index_select(0, self.key_order).to(index)
        self.src_cols = self.in_src_order(self.key).to(index)
        self.in_degree = torch.bincount(self.dst, minlength=num_nodes).to(torch.float32).clamp(min=1)
        self._ones: dict = {}
        self._runs = None

    def runs(self):
        """(key order, sources in key order, targets with in-edges, where each target's run of
        in-edges starts in key order, run lengths): NumPy views for the relaxation."""
        if self._runs is None:
            order = self.key_order.numpy()
            counts = np.bincount(self.dst.numpy(), minlength=self.num_nodes)
            targets = np.flatnonzero(counts)
            starts = self.key_indptr[:-1:self.num_relations].numpy().astype(np.int64)
            self._runs = (order, self.src.numpy()[order].astype(np.int32), targets, starts[targets], counts[targets])
        return self._runs

    def in_src_order(self, values: torch.Tensor) -> torch.Tensor:
        return values if self.src_order is None else values.index_select(0, self.src_order)

    def from_src_order(self, values: torch.Tensor) -> torch.Tensor:
        """Per-half-edge values in the entry order of ``by_src`` back to half-edge order."""
        if self.src_order is None:
            return values
        return torch.empty_like(values).index_copy_(0, self.src_order, values)

    def by_key(self, values: torch.Tensor) -> torch.Tensor:
        """slots x nodes; ``values`` per half-edge, in half-edge order."""
        return _csr(self.key_indptr, self.key_cols, values.index_select(0, self.key_order),
                    (self.slots, self.num_nodes))

    def by_src(self, values: torch.Tensor) -> torch.Tensor:
        """nodes x slots, the transpose layout of :meth:`by_key`."""
        return _csr(self.src_indptr, self.src_cols, self.in_src_order(values), (self.num_nodes, self.slots))

    def ones(self, dtype, layout: str) -> torch.Tensor:
        """:meth:`by_key` or :meth:`by_src` with every entry 1 (kept: used every layer)."""
        if (dtype, layout) not in self._ones:
            ones = torch.ones(len(self.src), dtype=dtype)
            self._ones[dtype, layout] = self.by_key(ones) if layout == "key" else self.by_src(ones)
        return self._ones[dtype, layout]


class _SlotSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, edges):
        ctx.edges = edges
        return edges.ones(x.dtype, "key") @ x

    @staticmethod
    def backward(ctx, grad):
        return ctx.edges.ones(grad.dtype, "src") @ grad.contiguous(), None


class _EdgeDot(torch.autograd.Function):
    @staticmethod
    def forward(ctx, left, right, edges):
        ctx.save_for_backward(left, right)
        ctx.edges = edges
        pattern = edges.ones(left.dtype, "src")
        sampled = torch.sparse.sampled_addmm(pattern, left, right.T, beta=0.0).values()
        return edges.from_src_order(sampled)

    @staticmethod
    def backward(ctx, grad):
        left, right = ctx.saved_tensors
        edges, grad = ctx.edges, grad.contiguous()
        return edges.by_src(grad) @ right, edges.by_key(grad) @ left, None


def slot_sum(x: torch.Tensor, edges: HalfEdges) -> torch.Tensor:
    """(slots x H): for each (node v, relation r), the sum of x[u] over half-edges u -r-> v."""
    return _SlotSum.apply(x, edges)


def edge_dot(left: torch.Tensor, right: torch.Tensor, edges: HalfEdges) -> torch.Tensor:
    """(E,): left[src_e] . right[key_e] for every half-edge e (``left`` nodes x H, ``right`` slots x H)."""
    return _EdgeDot.apply(left, right, edges)


class _SoftMinRelax(torch.autograd.Function):
    """d <- -tau log(exp(-d/tau) + sum over in-edges (u, v) of exp(-(d_u + c_uv)/tau)), ``rounds``
    times. Runs over the half-edges in key order, where each target's in-edges are one run
    (reductions by ``reduceat``, no scatter). The gradient of a round is its softmax weights
    (the shift by each node's minimum cancels out, so it carries none)."""

    @staticmethod
    def forward(ctx, cost, start, edges, rounds, tau):
        dtype = cost.detach().numpy().dtype
        order, src, targets, runs, counts = edges.runs()
        c = cost.detach().numpy()[order]
        d = start.detach().numpy().astype(dtype)
        scale = dtype.type(1.0 / tau)
        weights = []
        for _ in range(rounds):
            x = d[src] + c
            low = d.copy()
            if len(targets):
                low[targets] = np.minimum(low[targets], np.minimum.reduceat(x, runs))
            through = np.exp((np.repeat(low[targets], counts) - x) * scale)
            stay = np.exp((low - d) * scale)
            total = stay.copy()
            if len(targets):
                total[targets] += np.add.reduceat(through, runs)
            through /= np.repeat(total[targets], counts)
            weights.append((through, stay / total))
            d = low - dtype.type(tau) * np.log(total)
        ctx.edges, ctx.weights = edges, weights
        return torch.from_numpy(d)

    @staticmethod
    def backward(ctx, grad):
        order, src, targets, runs, counts = ctx.edges.runs()
        g = grad.detach().numpy()
        dtype = g.dtype
        grad_cost = np.zeros(len(src), dtype=dtype)
        for through, stay in reversed(ctx.weights):
            g_edge = np.repeat(g[targets], counts) * through
            grad_cost += g_edge
            g = np.bincount(src, weights=g_edge, minlength=len(g)).astype(dtype) + g * stay
        out = np.empty_like(grad_cost)
        out[order] = grad_cost
        return torch.from_numpy(out), None, None, None, None


def soft_min_relax(cost: torch.Tensor, start: torch.Tensor, edges: HalfEdges, rounds: int, tau: float) -> torch.Tensor:
    """Soft shortest-path cost per node after ``rounds`` relaxations over the half-edges
    (``cost`` per half-edge, ``start`` the initial cost per node; differentiable in ``cost``)."""
    return _SoftMinRelax.apply(cost, start, edges, rounds, tau)
