"""Relational message passing over the global CSR with per-relation vectors (Numba).

PathMind's path representations are sums over walks of products of query-conditioned
relation vectors. One layer is ``y[v] = sum over half-edges (v, u) of x[u] * rho[code]``:
a sparse product whose entries are vectors, one per relation code, shared by every edge of
that code. Written as one pass over the CSR, it needs no per-edge tensor of hidden width
(the design card's decomposition: the relation vectors stay R x W, the edges stay indices).

``x`` is ``places x W`` with ``W = questions x hidden`` (several questions side by side), so a
pass reads each half-edge once for a whole batch. The places are a subset of the nodes (the
ones a batch can reach), read through a global-to-place map; masks skip what is known to be
zero: rows outside the layer's reach and sources not yet reached. Sources are marked per
question: a bit per question (question j in bit j, ``int64``, at most 63 questions), and a
source's values for a question whose bit is clear are zero (no walk of it reaches there yet),
so their products are skipped: a batch's pass costs the sum of its questions' reaches, not
its union times the batch. Every sum runs in a fixed order
(rows in parallel, each row's half-edges in storage order; the relation gradient in fixed
row blocks summed in block order), so results do not depend on the thread count.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

BLOCKS = 128  # row blocks of the relation gradient: its partial sums, added in block order


# Row helpers over 1-D contiguous views: LLVM vectorizes these loops (it does not vectorize the
# same loops written with 2-D or 3-D indices, for want of proof that the rows do not overlap).
# Lane by lane they do the same operations in the same order, so the sums are unchanged.
@njit(inline="always")
def _add(out, a):
    for h in range(out.shape[0]):
        out[h] += a[h]


@njit(inline="always")
def _add_product(out, a, b):
    for h in range(out.shape[0]):
        out[h] += a[h] * b[h]


@njit(inline="always")
def _add_scaled_product(out, a, scale, b):
    """``out += a * scale * b``, evaluated as ``(a * scale) * b`` (the same as ``(scale * a) *
    b``: one multiplication commutes exactly; which pair goes first is what matters)."""
    for h in range(out.shape[0]):
        out[h] += a[h] * scale * b[h]


class Layer(NamedTuple):
    """What one relational pass reads of the graph: its CSR (``indptr``, ``indices``) with a
    relation-direction ``code`` per half-edge, the places it works on (``nodes``, global ids;
    ``local_of`` maps a global id to its place, -1 outside), the row places it writes
    (``rows``, a mask by place) and the questions' bits per source place (``sources``)."""

    indptr: np.ndarray
    indices: np.ndarray
    code: np.ndarray
    nodes: np.ndarray
    local_of: np.ndarray
    rows: np.ndarray
    sources: np.ndarray


@njit(parallel=True, cache=True, nogil=True)
def gather(layer, x, rho, segment, out):
    """Over the places of ``layer``: ``out[i] = sum_k x[local_of[u]] * rho[code[k]]`` over the
    half-edges k of node ``nodes[i]``, for every place i with ``rows[i]``; other rows are zero.
    ``x`` holds questions side by side, ``segment`` columns each: a source place u adds
    question s's columns only where bit s of ``sources[u]`` is set."""
    indptr, indices, code, nodes, local_of, rows, sources = layer
    width = x.shape[1]
    for i in prange(nodes.shape[0]):
        row = out[i]
        for j in range(width):
            row[j] = 0.0
        if not rows[i]:
            continue
        v = nodes[i]
        for k in range(indptr[v], indptr[v + 1]):
            at = local_of[indices[k]]
            if at < 0:
                continue
            bits = sources[at]
            if bits == 0:
                continue
            c = code[k]
            for s in range(width // segment):
                if (bits >> s) & 1:
                    lo, hi = s * segment, (s + 1) * segment
                    _add_product(row[lo:hi], x[at, lo:hi], rho[c, lo:hi])
    return out


@njit(parallel=True, cache=True, nogil=True)
def scatter_backward(layer, x, grad, rho, segment, dx, drho_parts):
    """The gradient of :func:`gather` (``layer`` with the scatter codes: a half-edge's code as
    seen from its other end). For every source place i, ``dx[i] = sum_k grad[at] * rho[code[k]]``
    over the half-edges k of ``nodes[i]`` to row places ``at``; ``drho_parts[b, c] = sum
    x[i] * grad[at]`` over the half-edges of code c whose source place lies in block b (fixed
    blocks of places, summed in block order by the caller), question by question where the
    source's bit is set. Elsewhere zero: exact wherever the forward's sources can be nonzero."""
    indptr, indices, code, nodes, local_of, rows, sources = layer
    n = nodes.shape[0]
    width = x.shape[1]
    blocks = drho_parts.shape[0]
    step = (n + blocks - 1) // blocks
    for b in prange(blocks):
        part = drho_parts[b]
        part[:] = 0.0
        for i in range(b * step, min(n, (b + 1) * step)):
            dx_row = dx[i]
            for j in range(width):
                dx_row[j] = 0.0
            bits = sources[i]
            if bits == 0:
                continue
            u = nodes[i]
            for k in range(indptr[u], indptr[u + 1]):
                at = local_of[indices[k]]
                if at < 0 or not rows[at]:
                    continue
                c = code[k]
                for s in range(width // segment):
                    if (bits >> s) & 1:
                        lo, hi = s * segment, (s + 1) * segment
                        _add_product(dx_row[lo:hi], grad[at, lo:hi], rho[c, lo:hi])
                        _add_product(part[c, lo:hi], x[i, lo:hi], grad[at, lo:hi])
    return dx, drho_parts


@njit(cache=True, nogil=True)
def neighbour_max_at(indptr, indices, previous, inside, nodes, out):
    """One step of a look-ahead at ``nodes`` only: ``out[v] = max(previous[v], max over
    neighbours u of previous[u])`` where ``inside[v]``, ``-inf`` elsewhere. ``previous`` must
    be known at each node and its neighbours, ``-inf`` outside the subgraph (so a neighbour
    outside never counts). The work is the nodes' degrees, not the graph's edges."""
    for i in range(nodes.shape[0]):
        v = nodes[i]
        if not inside[v]:
            out[v] = -np.inf
            continue
        best = previous[v]
        for k in range(indptr[v], indptr[v + 1]):
            best = max(best, previous[indices[k]])
        out[v] = best
    return out


@njit(cache=True, nogil=True)
def frontier(indptr, indices, seeds, inside, taken, reached_from, buffer):
    """One selection round's candidates: the neighbours of ``seeds`` that are ``inside`` and
    not ``taken``, each once, in the order first met (seeds in their order, each seed's
    neighbours in storage order): the first ``count`` entries of ``buffer`` (returned), with
    ``reached_from[v]`` the first seed that met v. ``reached_from`` is -1 everywhere on entry;
    the caller resets the candidates' entries after the round."""
    count = 0
    for i in range(seeds.shape[0]):
        s = seeds[i]
        for k in range(indptr[s], indptr[s + 1]):
            v = indices[k]
            if inside[v] and not taken[v] and reached_from[v] < 0:
                reached_from[v] = s
                buffer[count] = v
                count += 1
    return count


@njit(cache=True, nogil=True)
def closed_neighbourhood(indptr, indices, nodes, inside, seen, buffer):
    """The nodes of ``nodes`` and their neighbours that are ``inside``, each once, in the
    order first met: the first ``count`` entries of ``buffer`` (returned). ``seen`` is all
    False on entry and again on return."""
    count = 0
    for i in range(nodes.shape[0]):
        v = nodes[i]
        if inside[v] and not seen[v]:
            seen[v] = True
            buffer[count] = v
            count += 1
        for k in range(indptr[v], indptr[v + 1]):
            u = indices[k]
            if inside[u] and not seen[u]:
                seen[u] = True
                buffer[count] = u
                count += 1
    for i in range(count):
        seen[buffer[i]] = False
    return count


@njit(cache=True, nogil=True)
def mark_neighbours(indptr, indices, mask, out):
    """``out[v]`` True where v or one of its neighbours is marked in ``mask``."""
    n = indptr.shape[0] - 1
    for v in range(n):
        out[v] = mask[v]
    for u in range(n):
        if mask[u]:
            for k in range(indptr[u], indptr[u + 1]):
                out[indices[k]] = True
    return out


@njit(parallel=True, cache=True, nogil=True)
def walk_sum_step(layer, total, count, gates, rho, total_out, count_out, message):
    """One step of the additive path cost for B questions side by side, over the places of
    ``layer`` as in :func:`gather`: for every place i marked in ``rows`` (node v) and its
    half-edges k from a source place u,

    - ``count_out[i, j] = sum_k count[u, j]`` (walks of one more step),
    - ``message[i, j] = sum_k rho[code[k], j] * count[u, j] * gates[u, j]`` (the new steps'
      triple factors before the end's; places x B x H),
    - ``total_out[i, j] = sum_k total[u, j] + reduce(gates[i, j] * message[i, j])`` with
      ``reduce`` the identity when ``total`` has H channels per question (the vector
      reading) and the sum over them when it has 1 (the scalar reading).

    ``total`` is places x B x C, ``count`` places x B, ``gates`` places x G x H with G = 1
    (shared by the questions) or B, ``rho`` codes x B x H; ``sources`` the questions' bits per
    place, as in :func:`gather`. Other rows are zero."""
    indptr, indices, code, nodes, local_of, rows, sources = layer
    batch, channels = total.shape[1], total.shape[2]
    hidden = message.shape[2]
    shared = gates.shape[1] == 1
    for i in prange(nodes.shape[0]):
        for j in range(batch):
            count_out[i, j] = 0.0
            for c in range(channels):
                total_out[i, j, c] = 0.0
            for h in range(hidden):
                message[i, j, h] = 0.0
        if not rows[i]:
            continue
        v = nodes[i]
        for k in range(indptr[v], indptr[v + 1]):
            at = local_of[indices[k]]
            if at < 0:
                continue
            bits = sources[at]
            if bits == 0:
                continue
            r = code[k]
            for j in range(batch):
                if not (bits >> j) & 1:
                    continue
                walks = count[at, j]
                count_out[i, j] += walks
                for c in range(channels):
                    total_out[i, j, c] += total[at, j, c]
                if walks != 0.0:
                    g = 0 if shared else j
                    for h in range(hidden):
                        message[i, j, h] += rho[r, j, h] * walks * gates[at, g, h]
        for j in range(batch):
            g = 0 if shared else j
            if channels == hidden:
                for h in range(hidden):
                    total_out[i, j, h] += gates[i, g, h] * message[i, j, h]
            else:
                acc = 0.0
                for h in range(hidden):
                    acc += gates[i, g, h] * message[i, j, h]
                total_out[i, j, 0] += acc
    return total_out


@njit(parallel=True, cache=True, nogil=True)
def walk_sum_rows_backward(gates, message, rows, grad_total, grad_message, grad_gates_rows):
    """The row side of :func:`walk_sum_step`'s gradient: per row place i, the gradient
    reaching its message (``grad_message``, places x B x H) and its own gates
    (``grad_gates_rows``, places x G x H), from ``grad_total``."""
    batch, channels = grad_total.shape[1], grad_total.shape[2]
    hidden = message.shape[2]
    shared = gates.shape[1] == 1
    for i in prange(gates.shape[0]):
        for g in range(gates.shape[1]):
            for h in range(hidden):
                grad_gates_rows[i, g, h] = 0.0
        for j in range(batch):
            for h in range(hidden):
                grad_message[i, j, h] = 0.0
        if not rows[i]:
            continue
        for j in range(batch):
            g = 0 if shared else j
            for h in range(hidden):
                upstream = grad_total[i, j, h if channels == hidden else 0]
                grad_message[i, j, h] = gates[i, g, h] * upstream
                grad_gates_rows[i, g, h] += message[i, j, h] * upstream
    return grad_message


@njit(parallel=True, cache=True, nogil=True)
def walk_sum_sources_backward(layer, count, gates, rho, grad_total, grad_count, grad_message, d_total, d_count,
                              d_gates, d_rho_parts):
    """The source side of :func:`walk_sum_step`'s gradient (``layer`` with the scatter codes,
    a half-edge's code seen from its other end): for every source place i (node u) and its
    half-edges to row places ``at``, the gradients of ``total``, ``count`` and the source's
    gates; the relation gradient in fixed blocks of places (summed in block order by the
    caller), question by question where the source's bit is set. Elsewhere zero: exact
    wherever the forward's sources can be nonzero."""
    indptr, indices, code, nodes, local_of, rows, sources = layer
    n = nodes.shape[0]
    batch, channels = grad_total.shape[1], grad_total.shape[2]
    hidden = gates.shape[2]
    shared = gates.shape[1] == 1
    blocks = d_rho_parts.shape[0]
    step = (n + blocks - 1) // blocks
    for b in prange(blocks):
        part = d_rho_parts[b]
        for r in range(part.shape[0]):
            for j in range(batch):
                for h in range(hidden):
                    part[r, j, h] = 0.0
        for i in range(b * step, min(n, (b + 1) * step)):
            for j in range(batch):
                d_count[i, j] = 0.0
                for c in range(channels):
                    d_total[i, j, c] = 0.0
            for g in range(gates.shape[1]):
                for h in range(hidden):
                    d_gates[i, g, h] = 0.0
            bits = sources[i]
            if bits == 0:
                continue
            u = nodes[i]
            for k in range(indptr[u], indptr[u + 1]):
                at = local_of[indices[k]]
                if at < 0 or not rows[at]:
                    continue
                r = code[k]
                for j in range(batch):
                    if not (bits >> j) & 1:
                        continue
                    g = 0 if shared else j
                    d_count[i, j] += grad_count[at, j]
                    _add(d_total[i, j], grad_total[at, j])
                    walks = count[i, j]
                    relation, gate, upstream = rho[r, j], gates[i, g], grad_message[at, j]
                    acc = 0.0  # a sum over h: its own scalar loop, in h order
                    for h in range(hidden):
                        acc += relation[h] * gate[h] * upstream[h]
                    _add_scaled_product(d_gates[i, g], relation, walks, upstream)
                    _add_scaled_product(part[r, j], gate, walks, upstream)
                    d_count[i, j] += acc
    return d_total


@njit(parallel=True, cache=True, nogil=True)
def spread_bits(indptr, indices, bits, out):
    """``out[v] = bits[v] | OR over v's neighbours u of bits[u]``: one step of every question's
    reach at once (question j in bit j)."""
    for v in prange(indptr.shape[0] - 1):
        acc = bits[v]
        for k in range(indptr[v], indptr[v + 1]):
            acc |= bits[indices[k]]
        out[v] = acc
    return out
