"""The graph as PathMind's network reads it, and one relational layer as a torch operation.

The whole graph's CSR serves every question: the query subgraph (the union of the topics'
k-hop balls) is where a question's path sums are non-zero, so it needs no copy of its own.

Two implementations of the same layer: the Numba kernels of :mod:`adapath.kernels.relational`
over NumPy views of CPU tensors (the reference), and torch's own ``index_add_`` over the
half-edges in chunks, which runs wherever the tensors live (a GPU: ``--device cuda``; the
tests run it on the CPU against the kernels). Tensors on a GPU take the torch path.
Each half-edge carries a relation-direction code, ``2 * relation + direction``: the walk
from u to v along an edge stored u -> v is code ``2r + 1``, against it ``2r``. A half-edge at
row v (pointing to u) is read in the gather as the step u -> v, and in the backward pass as
the step v -> u; the two code arrays say which code each reading has.
"""

from __future__ import annotations

import numpy as np
import torch

from adapath.engine.graph import KnowledgeGraph
from adapath.kernels.relational import (
    BLOCKS,
    Layer,
    gather,
    scatter_backward,
    walk_sum_rows_backward,
    walk_sum_sources_backward,
    walk_sum_step,
)

MAX_QUESTIONS = 63  # questions side by side: one bit each in an int64


class RelationalGraph:
    """CSR arrays and relation-direction codes of a graph, built once per graph.
    ``backend``: ``numba`` (the CPU kernels) or ``torch`` (any device)."""

    def __init__(self, graph: KnowledgeGraph, backend: str = "numba"):
        if backend not in BACKENDS:
            raise ValueError(f"backend {backend!r}: choose {', '.join(BACKENDS)}")
        self.backend = backend
        self._edges: dict = {}  # device -> (row node, neighbour, gather code) per half-edge
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

    def layer(self, side: str, places: Places, rows: np.ndarray, sources: np.ndarray) -> Layer:
        """The kernels' view of one pass: the CSR with the gather codes (a half-edge read as the
        step into its row) or the scatter codes (out of its row), the places, rows and
        sources."""
        code = self.gather_code if side == "gather" else self.scatter_code
        return Layer(self.indptr, self.indices, code, places.nodes, places.local_of, rows, sources)

    def edges(self, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per half-edge, on ``device``: its row node v, its neighbour u and its gather code
        (the step u -> v), as int64 tensors, made once per device."""
        key = str(device)
        if key not in self._edges:
            rows = np.repeat(np.arange(self.num_nodes, dtype=np.int64), np.diff(self.indptr))
            self._edges[key] = tuple(torch.as_tensor(a, dtype=torch.int64).to(device) for a in
                                     (rows, self.indices.astype(np.int64), self.gather_code.astype(np.int64)))
        return self._edges[key]

    def reach(self, seeds: np.ndarray, hops: int) -> list[np.ndarray]:
        """Masks of the nodes within 0..hops steps of ``seeds`` (a boolean mask)."""
        from adapath.kernels.relational import mark_neighbours

        out = [np.asarray(seeds, dtype=np.bool_)]
        for _ in range(hops):
            out.append(mark_neighbours(self.indptr, self.indices, out[-1], np.empty(self.num_nodes, np.bool_)))
        return out

    def reach_bits(self, topics: list[list[int]], hops: int) -> list[np.ndarray]:
        """Per node, the questions (bit j: question j, at most 63) that reach it within
        0..hops steps of their topics."""
        from adapath.kernels.relational import spread_bits

        if len(topics) > MAX_QUESTIONS:
            raise ValueError(f"{len(topics)} questions side by side: at most {MAX_QUESTIONS}")
        bits = np.zeros(self.num_nodes, dtype=np.int64)
        for j, ts in enumerate(topics):
            bits[np.asarray(list(ts), dtype=np.int64)] |= np.int64(1) << j
        out = [bits]
        for _ in range(hops):
            out.append(spread_bits(self.indptr, self.indices, out[-1], np.empty(self.num_nodes, np.int64)))
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

    def device_map(self, device) -> torch.Tensor:
        """``local_of`` as an int64 tensor on ``device`` (made once per device)."""
        cache = self.__dict__.setdefault("_maps", {})
        if str(device) not in cache:
            cache[str(device)] = torch.as_tensor(self.local_of).to(device)
        return cache[str(device)]

    def mask(self, global_mask: np.ndarray) -> np.ndarray:
        """A global node mask read at the places."""
        return np.ascontiguousarray(global_mask[self.nodes])


BACKENDS = ("numba", "torch")
CHUNK = 1 << 26  # values per temporary of the torch path (edges x width): 256 MiB in float32


class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, rho, graph: RelationalGraph, places: Places, rows: np.ndarray, sources: np.ndarray,
                segment: int):
        xs, rs = x.detach().contiguous().numpy(), rho.detach().contiguous().numpy()
        out = np.empty_like(xs)
        gather(graph.layer("gather", places, rows, sources), xs, rs, segment, out)
        ctx.save_for_backward(x, rho)
        ctx.graph, ctx.places, ctx.rows, ctx.sources, ctx.segment = graph, places, rows, sources, segment
        return torch.from_numpy(out)

    @staticmethod
    def backward(ctx, grad):
        x, rho = ctx.saved_tensors
        graph, places = ctx.graph, ctx.places
        xs, rs = x.detach().contiguous().numpy(), rho.detach().contiguous().numpy()
        g = grad.detach().contiguous().numpy()
        dx = np.empty_like(xs)
        parts = np.empty((BLOCKS,) + rs.shape, dtype=xs.dtype)
        scatter_backward(graph.layer("scatter", places, ctx.rows, ctx.sources), xs, g, rs, ctx.segment, dx, parts)
        drho = parts.sum(0, dtype=np.float64).astype(xs.dtype)  # block order: the same sum on any thread count
        return torch.from_numpy(dx), torch.from_numpy(drho), None, None, None, None, None


class _TorchGather(torch.autograd.Function):
    """The same layer over a list of half-edges (place of the row, place of the neighbour,
    code), with ``index_add_`` in chunks of edges; the backward recomputes each chunk's
    products instead of keeping an edges x width tensor."""

    @staticmethod
    def forward(ctx, x, rho, target, source, code):
        out = torch.zeros_like(x)
        step = max(1, CHUNK // max(x.shape[1], 1))
        for lo in range(0, len(target), step):
            part = slice(lo, lo + step)
            out.index_add_(0, target[part], x.index_select(0, source[part]) * rho.index_select(0, code[part]))
        ctx.save_for_backward(x, rho, target, source, code)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, rho, target, source, code = ctx.saved_tensors
        dx, drho = torch.zeros_like(x), torch.zeros_like(rho)
        step = max(1, CHUNK // max(x.shape[1], 1))
        for lo in range(0, len(target), step):
            part = slice(lo, lo + step)
            g = grad.index_select(0, target[part])
            dx.index_add_(0, source[part], g * rho.index_select(0, code[part]))
            drho.index_add_(0, code[part], g * x.index_select(0, source[part]))
        return dx, drho, None, None, None


def torch_edges(graph: RelationalGraph, places: Places, rows: np.ndarray, sources: np.ndarray, device):
    """The half-edges a layer reads, as places on ``device``: row place marked in ``rows``,
    neighbour place marked in ``sources`` (a mask, or questions' bits: any question's)."""
    target, source, code = graph.edges(device)
    local_of = places.device_map(device)
    at, of = local_of[target], local_of[source]
    keep = (at >= 0) & (of >= 0)
    at, of, code = at[keep], of[keep], code[keep]
    rows_t = torch.as_tensor(np.asarray(rows, dtype=np.bool_)).to(device)
    sources_t = torch.as_tensor(np.asarray(sources) != 0).to(device)
    keep = rows_t[at] & sources_t[of]
    return at[keep], of[keep], code[keep]


def as_bits(sources: np.ndarray) -> np.ndarray:
    """A source mask as bits (a marked source: every question's bit set); bits pass through."""
    sources = np.asarray(sources)
    return np.where(sources, np.int64(-1), np.int64(0)) if sources.dtype == np.bool_ else sources


def relational_gather(x: torch.Tensor, rho: torch.Tensor, graph: RelationalGraph, places: Places, rows: np.ndarray,
                      sources: np.ndarray, segment: int | None = None) -> torch.Tensor:
    """``y[i] = sum over half-edges (u -> v) of x[place of u] * rho[code]`` for the places i of
    ``rows`` (v = ``places.nodes[i]``) and sources u at places marked in ``sources`` (places x
    W; zero elsewhere); differentiable in ``x`` and ``rho``. ``sources``: a mask, or the
    questions' bits when ``x`` holds questions side by side, ``segment`` columns each (a
    source's columns of a question whose bit is clear are zero by construction and skipped).
    The Numba kernels on the CPU, torch's ops where the graph's backend says so or the tensors
    are on another device."""
    sources = np.asarray(sources)
    if graph.backend == "torch" or x.device.type != "cpu":
        return _TorchGather.apply(x, rho, *torch_edges(graph, places, rows, sources, x.device))
    bits = as_bits(sources)
    return _Gather.apply(x, rho, graph, places, np.asarray(rows, dtype=np.bool_), bits, segment or x.shape[1])


class _WalkSum(torch.autograd.Function):
    """One step of the additive path cost as one Numba pass (forward) and two (backward):
    see :func:`adapath.kernels.relational.walk_sum_step`."""

    @staticmethod
    def forward(ctx, total, count, gates, rho, graph: RelationalGraph, places: Places, rows: np.ndarray,
                sources: np.ndarray):
        t, c = total.detach().contiguous().numpy(), count.detach().contiguous().numpy()
        g, r = gates.detach().contiguous().numpy(), rho.detach().contiguous().numpy()
        n, batch, channels = t.shape
        total_out = np.empty_like(t)
        count_out = np.empty_like(c)
        message = np.empty((n, batch, g.shape[2]), dtype=t.dtype)
        walk_sum_step(graph.layer("gather", places, rows, sources), t, c, g, r, total_out, count_out, message)
        ctx.arrays, ctx.channels = (c, g, r, message), channels
        ctx.graph, ctx.places, ctx.rows, ctx.sources = graph, places, rows, sources
        return torch.from_numpy(total_out), torch.from_numpy(count_out)

    @staticmethod
    def backward(ctx, grad_total, grad_count):
        c, g, r, message = ctx.arrays
        graph, places = ctx.graph, ctx.places
        n, batch = c.shape
        grad_total = np.ascontiguousarray(grad_total.numpy()) if grad_total is not None else \
            np.zeros((n, batch, ctx.channels), dtype=c.dtype)
        grad_count = np.ascontiguousarray(grad_count.numpy()) if grad_count is not None else np.zeros_like(c)
        grad_message = np.empty_like(message)
        grad_gates_rows = np.empty_like(g)
        walk_sum_rows_backward(g, message, ctx.rows, grad_total, grad_message, grad_gates_rows)
        d_total = np.empty_like(grad_total)
        d_count = np.empty_like(c)
        d_gates = np.empty_like(g)
        parts = np.empty((BLOCKS,) + r.shape, dtype=c.dtype)
        walk_sum_sources_backward(graph.layer("scatter", places, ctx.rows, ctx.sources), c, g, r, grad_total,
                                  grad_count, grad_message, d_total, d_count, d_gates, parts)
        d_rho = parts.sum(0, dtype=np.float64).astype(c.dtype)  # block order: the same sum on any thread count
        return (torch.from_numpy(d_total), torch.from_numpy(d_count), torch.from_numpy(d_gates + grad_gates_rows),
                torch.from_numpy(d_rho), None, None, None, None)


def walk_sum(total: torch.Tensor, count: torch.Tensor, gates: torch.Tensor, rho: torch.Tensor,
             graph: RelationalGraph, places: Places, rows: np.ndarray, sources: np.ndarray):
    """One step of the additive path cost: (walk sums, walk counts) after one more step, from
    the walk sums ``total`` (places x B x C), the walk counts ``count`` (places x B), the node
    factors ``gates`` (places x G x H, G = 1 when the questions share them) and the relation
    factors ``rho`` (codes x B x H); C = H sums the triple vectors, C = 1 their channel sums.
    ``sources``: a mask, or the questions' bits (question j's inputs are zero where its bit is
    clear: walks of it reach no further).
    The Numba kernels on the CPU; torch's ops (:func:`relational_gather`) where the graph's
    backend says so or the tensors are on another device. Differentiable in all four."""
    if graph.backend == "numba" and total.device.type == "cpu":
        return _WalkSum.apply(total, count, gates, rho, graph, places, np.asarray(rows, dtype=np.bool_),
                              as_bits(sources))
    n, batch, channels = total.shape
    hidden = gates.shape[2]
    expanded = gates.expand(-1, batch, -1)
    x = torch.cat([total.reshape(n, -1), (count[..., None] * expanded).reshape(n, -1), count], dim=1)
    ones = torch.ones(rho.shape[0], batch * channels, dtype=rho.dtype, device=rho.device)
    factor = torch.cat([ones, rho.reshape(rho.shape[0], -1), ones[:, :batch]], dim=1)
    y = relational_gather(x, factor, graph, places, rows, sources)
    wide = batch * channels
    triples = expanded * y[:, wide:wide + batch * hidden].reshape(n, batch, hidden)
    if channels == 1:
        triples = triples.sum(-1, keepdim=True)
    return y[:, :wide].reshape(n, batch, channels) + triples, y[:, wide + batch * hidden:]
