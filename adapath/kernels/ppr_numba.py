"""Batched personalized PageRank with on-the-fly query weights (Numba, CPU).

PPR is summed as its series ``pi = eta * sum_k (1 - eta)^k P^k s``: ``x_0 = s``,
``x_{k+1} = P x_k``. P preserves mass, so after K terms the L1 error is exactly the
mass left, ``(1 - eta)^(K+1)``; the term count follows from the tolerance alone.

A weight column j gives ``w = a[r, j] + b[u, j] + b[v, j]``. Seed column c walks with weight
column ``weight_of[c]``, so columns of one query (the two directions of a pair, the pairs
of one record) share theirs and its out-weights, computed once. The CSR lists every edge
in both directions, so the in-edges of v are its row:

    y[v, c] = sum over half-edges (v, r, u) of (a[r, j] + b[v, j] + b[u, j]) * xt[u, c]

with ``xt = x / out`` (``out`` = out-weights). Rows are sorted by relation, so
``a[r] + b[v]`` is formed once per run of equal relations.

Two kernels share the work of a term:

- push (sparse): while a column's support is a few hops around its seed, it scatters from
  its nonzero entries, one column per thread, in column-major ``(S, N)`` storage;
- dense: a block has ``m`` weight slots and one or two halves of ``m`` lanes; lane
  ``h * m + j`` is a seed column walking with slot j's weights, so the two directions of a
  pair sit in the two halves of one slot. A node's row holds ``xt`` of every lane, then
  ``b`` of every slot (constant across terms), so one gather of contiguous values per
  half-edge serves a block, and a pair's shared ``b`` is read once. Those gathers are
  random and bound the kernel; the row of the half-edge ``PREFETCH`` places ahead is
  prefetched so that many are in flight at once. Each run of equal relations is summed by
  a small kernel written in LLVM IR that keeps the accumulators in vector registers; rows
  are cut into chunks of equal work for the threads.

The first two terms always push; from the third on, a column switches to dense once its
own push would touch more than ``push_fraction`` of the half-edges. A dense term is one
fused sweep: each row's y is formed in cache, added to pi and turned into the row's next
``xt``, so y never travels to memory. Every lane computes ``(a[r] + b[v] + b[u]) * xt`` in
the same order whatever its block, half or neighbours, and nothing is contracted into
FMAs, so every column gets the same bits in any batch. Dense terms (the third on, at most
(1-eta)^3 of the mass) run in float32, or read their rows from binary16 (``half``). Their
share of pi is summed in float32 too, lane by lane (one float32 rounding per term on at most
(1-eta)^3 of the mass: under 2e-9 in L1 over ten terms, and half the bytes each sweep
writes), and joins the float64 pi of the push terms when its column stops. The result is
column-major ``(S, N)``, so that each column the caller reads is contiguous.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from adapath.kernels.certify import (
    LastTerms,
    Rule,
    Shortlist,
    SolveState,
    certify_fused,
    certify_listed,
    last_term_peaks,
)
from adapath.kernels.csr import CSR
from adapath.kernels.half import HALF, half_scales
from adapath.kernels.half import encoded as _encoded
from adapath.kernels.series import Certification, Series
from adapath.kernels.workspace import work_array

LANES = 32  # seed columns per dense block (measured best with prefetching)
HALF_LANES = 64  # ... when stored in half precision: paired, a row is the same 3 cache lines
VECTOR = 8  # lanes per block come in multiples of this (8 float32 = one AVX2 register)
PREFETCH = 16  # half-edges ahead whose gathered row is prefetched
LINE = 64  # bytes per cache line
CHUNKS = 256  # row chunks of equal work per block
ROWS = 512  # rows per chunk where every row costs the same


def work_chunks(indptr: np.ndarray, chunks: int = CHUNKS) -> np.ndarray:
    """Row boundaries cutting the CSR into chunks of about equal work (edges + row cost)."""
    n = indptr.shape[0] - 1
    cost = np.cumsum(np.diff(indptr) + 4)
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    cuts = np.searchsorted(cost, np.linspace(0, cost[-1], chunks + 1)[1:-1])
    return np.unique(np.concatenate([[0], cuts, [n]])).astype(np.int64)


def block_layout(columns: int, capacity: int = LANES) -> tuple[int, int]:
    """(blocks, lanes per block): blocks of at most ``capacity`` lanes, as even as possible,
    lanes a multiple of VECTOR (the segment kernels work in whole vectors; spare lanes are 0)."""
    blocks = max(1, -(-columns // capacity))
    per_block = max(1, -(-columns // blocks))
    return blocks, VECTOR * -(-per_block // VECTOR)


def weight_columns(weight_of, seeds: int, weights: int) -> np.ndarray:
    """The weight column of every seed column, checked; default ``c % W`` (the seed count a
    multiple of the W weight columns)."""
    if weight_of is None:
        if weights == 0 or seeds % weights:
            raise ValueError(f"{seeds} seeds do not share {weights} weight columns evenly")
        return np.arange(seeds, dtype=np.int64) % weights
    weight_of = np.ascontiguousarray(weight_of, dtype=np.int64)
    if weight_of.shape != (seeds,) or (seeds and (weight_of.min() < 0 or weight_of.max() >= weights)):
        raise ValueError("weight_of must give a weight column for every seed")
    return weight_of


@njit(parallel=True, cache=True, nogil=True)
def _transpose(source, out, row_chunks):
    """out (W, N) = source (N, W), a chunk of rows at a time (its rows stay in cache)."""
    for chunk in prange(row_chunks.shape[0] - 1):
        for w in range(source.shape[1]):
            for v in range(row_chunks[chunk], row_chunks[chunk + 1]):
                out[w, v] = source[v, w]


def to_blocks(matrix: np.ndarray, lanes: int, columns: np.ndarray | None = None,
              dtype=np.float64, out: np.ndarray | None = None) -> np.ndarray:
    """(rows, B) -> (blocks, rows, lanes), zero-padded lanes; ``columns`` picks (and may
    repeat) the columns that fill the lanes in order, -1 for an empty lane."""
    matrix = np.ascontiguousarray(matrix, dtype=np.float64)
    columns = np.arange(matrix.shape[1]) if columns is None else np.asarray(columns, dtype=np.int64)
    if out is None:
        out = np.empty((max(1, -(-len(columns) // lanes)), matrix.shape[0], lanes), dtype=dtype)
    _gather_blocks(matrix, columns, out)
    return out


@njit(parallel=True, cache=True, nogil=True)
def _gather_blocks(matrix, columns, out):
    blocks, rows, lanes = out.shape
    for u in prange(rows):
        for t in range(blocks):
            for j in range(lanes):
                c = t * lanes + j
                out[t, u, j] = matrix[u, columns[c]] if c < columns.shape[0] and columns[c] >= 0 else 0.0


def _segment_kernel(slots: int, halves: int = 1, weighted: bool = True):
    """An intrinsic ``segment(rows, indices, lo, hi, t, cf, y)`` summing the half-edges k in
    [lo, hi) of one run, with ``row = rows[t, indices[k]]``:

    - weighted: row = xt of ``halves * slots`` lanes, then b of ``slots`` slots;
      ``y[h * slots + j] += (cf[j] + row_b[j]) * row_xt[h * slots + j]``;
    - not weighted: ``y[j] += row[j]`` for ``slots`` lanes (cf unused).

    Rows hold float32 or float64 (cf and y of the same type), or binary16 bits (uint16, cf
    and y float32: each row is widened as it is read). The row of half-edge k + PREFETCH is
    prefetched. Written in LLVM IR so that y stays in vector registers across the run
    (Numba's loop keeps it in memory and re-checks aliasing at every half-edge)."""
    lanes = halves * slots if weighted else slots

    @intrinsic
    def segment(typingctx, rows, indices, lo, hi, t, cf, y):
        arrays = (rows, indices, cf, y)
        if not all(isinstance(x, types.Array) and x.layout == "C" for x in arrays) or rows.ndim != 3:
            return None
        if rows.dtype == types.uint16:
            if cf.dtype != types.float32 or y.dtype != types.float32:
                return None
        elif rows.dtype not in (types.float32, types.float64) or cf.dtype != rows.dtype \
                or y.dtype != rows.dtype:
            return None

        def codegen(context, builder, signature, args):
            rows_a, idx_a, cf_a, y_a = (context.make_array(signature.args[i])(context, builder, args[i])
                                        for i in (0, 1, 5, 6))
            lo, hi, t = args[2], args[3], args[4]
            i64, i32, byte_ptr = ir.IntType(64), ir.IntType(32), ir.IntType(8).as_pointer()
            scalar = context.get_value_type(signature.args[5].dtype)
            itemsize = context.get_abi_sizeof(scalar)
            half = signature.args[0].dtype == types.uint16
            stored_size = 2 if half else itemsize
            width = 32 // itemsize  # one 256-bit vector of the accumulated type
            vector = ir.VectorType(scalar, width)
            _, n, row_len = cgutils.unpack_tuple(builder, rows_a.shape, 3)
            count = cgutils.unpack_tuple(builder, idx_a.shape, 1)[0]
            base = builder.mul(builder.mul(t, n), row_len)

            def load(pointer, offset):
                address = builder.bitcast(builder.gep(pointer, [ir.Constant(i64, offset)]), vector.as_pointer())
                return builder.load(address, align=itemsize)

            def load_row(pointer, offset):
                if not half:
                    return load(pointer, offset)
                bits = ir.VectorType(ir.IntType(16), width)
                address = builder.bitcast(builder.gep(pointer, [ir.Constant(i64, offset)]), bits.as_pointer())
                raw = builder.load(address, align=2)
                return builder.fpext(builder.bitcast(raw, ir.VectorType(ir.HalfType(), width)), vector)

            def row_at(k):
                u = builder.sext(builder.load(builder.gep(idx_a.data, [k])), i64)
                return builder.gep(rows_a.data, [builder.add(base, builder.mul(u, row_len))])

            prefetch = builder.module.declare_intrinsic(
                "llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]))
            slot_vectors = range(0, slots, width)
            lane_vectors = range(0, lanes, width)
            coef = [load(cf_a.data, i) for i in slot_vectors] if weighted else []
            start = [load(y_a.data, i) for i in lane_vectors]
            entry = builder.basic_block
            head = builder.append_basic_block("segment.head")
            body = builder.append_basic_block("segment.body")
            done = builder.append_basic_block("segment.done")
            builder.branch(head)
            builder.position_at_end(head)
            k = builder.phi(i64)
            acc = [builder.phi(vector) for _ in lane_vectors]
            k.add_incoming(lo, entry)
            for phi, value in zip(acc, start):
                phi.add_incoming(value, entry)
            builder.cbranch(builder.icmp_signed("<", k, hi), body, done)
            builder.position_at_end(body)
            ahead = builder.add(k, ir.Constant(i64, PREFETCH))
            with builder.if_then(builder.icmp_signed("<", ahead, count)):
                later = builder.bitcast(row_at(ahead), byte_ptr)
                for offset in range(0, (lanes + (slots if weighted else 0)) * stored_size, LINE):
                    builder.call(prefetch, [builder.gep(later, [ir.Constant(i64, offset)]),
                                            ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
            row = row_at(k)
            if weighted:
                w = [builder.fadd(c, load_row(row, lanes + i)) for c, i in zip(coef, slot_vectors)]
                new = [builder.fadd(acc[h * len(w) + v], builder.fmul(w[v], load_row(row, h * slots + i)))
                       for h in range(halves) for v, i in enumerate(slot_vectors)]
            else:
                new = [builder.fadd(phi, load_row(row, i)) for phi, i in zip(acc, lane_vectors)]
            end = builder.basic_block
            k.add_incoming(builder.add(k, ir.Constant(i64, 1)), end)
            for phi, value in zip(acc, new):
                phi.add_incoming(value, end)
            builder.branch(head)
            builder.position_at_end(done)
            for phi, i in zip(acc, lane_vectors):
                address = builder.bitcast(builder.gep(y_a.data, [ir.Constant(i64, i)]), vector.as_pointer())
                builder.store(phi, address, align=itemsize)
            return context.get_dummy_value()

        return types.void(rows, indices, types.int64, types.int64, types.int64, cf, y), codegen

    return segment


# every block shape the layouts below produce (slots a multiple of VECTOR; lanes <= LANES,
# or HALF_LANES paired in half precision)
_single8, _single16, _single24, _single32 = (_segment_kernel(m) for m in (8, 16, 24, 32))
_paired8, _paired16, _paired24, _paired32 = (_segment_kernel(m, halves=2) for m in (8, 16, 24, 32))
_rows8, _rows16, _rows24, _rows32 = (_segment_kernel(m, weighted=False) for m in (8, 16, 24, 32))
assert LANES == 32 and HALF_LANES == 64 and VECTOR == 8


@njit(cache=True, nogil=True, inline="always")
def _run_end(rel, k, hi):
    """End of the run of equal relations that starts at half-edge k (rows are sorted by
    relation)."""
    end = k + 1
    while end < hi and rel[end] == rel[k]:
        end += 1
    return end


@njit(parallel=True, cache=True, nogil=True)
def _inverse_out_weights(csr, a, b, bounds, inv, scratch):
    """inv[t, u, j] = 1 / out (0 where out is 0), out = the sum of w over u's half-edges =
    sum b[v] + sum a[r] + deg(u) * b[u]."""
    indptr, indices, rel = csr
    blocks, n, lanes = inv.shape
    chunks = bounds.shape[0] - 1
    for job in prange(blocks * chunks):
        t, c = job // chunks, job % chunks
        y = scratch[job]
        for u in range(bounds[c], bounds[c + 1]):
            for j in range(lanes):
                y[j] = 0.0
            k, hi = indptr[u], indptr[u + 1]
            while k < hi:  # one run of equal relations at a time
                r, end = rel[k], _run_end(rel, k, hi)
                if lanes == 32:
                    _rows32(b, indices, k, end, t, y, y)
                elif lanes == 24:
                    _rows24(b, indices, k, end, t, y, y)
                elif lanes == 16:
                    _rows16(b, indices, k, end, t, y, y)
                else:
                    _rows8(b, indices, k, end, t, y, y)
                for j in range(lanes):
                    y[j] += (end - k) * a[t, r, j]
                k = end
            deg = indptr[u + 1] - indptr[u]
            for j in range(lanes):
                out = y[j] + deg * b[t, u, j]
                inv[t, u, j] = 1.0 / out if out > 0.0 else 0.0


@njit(parallel=True, cache=True, nogil=True)
def _step(csr, a, b, inv_out, xb, xb_next, pi, gain, bounds, scratch, active, last):
    """One dense term for the lanes of every active block: y = P x from xb (xt | b), then
    pi += gain[t, lane] * y and, unless ``last``, the xt part of xb_next = y * inv_out of the
    lane's slot (stored as xb stores it: a lane holds its column's xt times the column's
    fixed power-of-two scale, which ``gain`` divides back out). y lives one row at a time
    in ``scratch``; xb is read while xb_next is written."""
    indptr, indices, rel = csr
    blocks, n, lanes = pi.shape
    slots = a.shape[2]
    halves = lanes // slots
    chunks = bounds.shape[0] - 1
    for job in prange(blocks * chunks):
        t, c = job // chunks, job % chunks
        if not active[t]:
            continue
        cf, y = scratch[job, 0], scratch[job, 1]
        for v in range(bounds[c], bounds[c + 1]):
            for j in range(lanes):
                y[j] = 0.0
            k, hi = indptr[v], indptr[v + 1]
            while k < hi:  # one run of equal relations at a time
                r, end = rel[k], _run_end(rel, k, hi)
                for j in range(slots):
                    cf[j] = a[t, r, j] + b[t, v, j]
                if halves == 2:
                    if slots == 32:
                        _paired32(xb, indices, k, end, t, cf, y)
                    elif slots == 24:
                        _paired24(xb, indices, k, end, t, cf, y)
                    elif slots == 16:
                        _paired16(xb, indices, k, end, t, cf, y)
                    else:
                        _paired8(xb, indices, k, end, t, cf, y)
                elif slots == 32:
                    _single32(xb, indices, k, end, t, cf, y)
                elif slots == 24:
                    _single24(xb, indices, k, end, t, cf, y)
                elif slots == 16:
                    _single16(xb, indices, k, end, t, cf, y)
                else:
                    _single8(xb, indices, k, end, t, cf, y)
                k = end
            for j in range(lanes):
                pi[t, v, j] += gain[t, j] * y[j]
            if not last:
                for h in range(halves):
                    for j in range(slots):
                        xb_next[t, v, h * slots + j] = _encoded(y[h * slots + j] * inv_out[t, v, j], xb_next)


@njit(parallel=True, cache=True, nogil=True)
def _push_work(indptr, x, columns):
    """Half-edges a push from each listed column's nonzero entries would touch."""
    n = x.shape[1]
    work = np.zeros(columns.shape[0], dtype=np.int64)
    for i in prange(columns.shape[0]):
        c = columns[i]
        w = 0
        for u in range(n):
            if x[c, u] != 0.0:
                w += indptr[u + 1] - indptr[u]
        work[i] = w
    return work


@njit(parallel=True, cache=True, nogil=True)
def _push(csr, a, b, inv_out, weight_of, x, y, pi, scale, columns):
    """For each listed column c: y[c] = P x[c] by scattering from x[c]'s nonzero entries,
    then pi[c] += scale * y[c]. No mass reaches a node without out-weight (its edges all
    weigh 0) unless it starts there, and such seeds never come here.
    ``a`` (R x W) and ``b`` (W x N, column-major so that one column's scattered reads stay
    in cache) are per weight column; ``inv_out`` is in weight blocks."""
    indptr, indices, rel = csr
    n = x.shape[1]
    lanes = inv_out.shape[2]
    for i in prange(columns.shape[0]):
        c = columns[i]
        w = weight_of[c]
        t, j = w // lanes, w % lanes
        for v in range(n):
            y[c, v] = 0.0
        for u in range(n):
            if x[c, u] == 0.0:
                continue
            xt = x[c, u] * inv_out[t, u, j]
            bu = b[w, u]
            for k in range(indptr[u], indptr[u + 1]):
                v = indices[k]
                y[c, v] += (a[rel[k], w] + bu + b[w, v]) * xt
        for v in range(n):
            pi[c, v] += scale * y[c, v]


@njit(parallel=True, cache=True, nogil=True)
def _to_lanes(x, inv_out, block, lane, columns, scale, xb, bounds):
    """Load the listed columns of x (column-major) into their lanes of xb as xt times the
    column's ``scale``."""
    slots = inv_out.shape[2]
    for chunk in prange(bounds.shape[0] - 1):  # column by column inside a chunk: a transpose in cache
        for i in range(columns.shape[0]):
            c = columns[i]
            t, at = block[c], lane[c]
            j = at % slots
            for u in range(bounds[chunk], bounds[chunk + 1]):
                xb[t, u, at] = _encoded(x[c, u] * inv_out[t, u, j] * scale[c], xb)


@njit(parallel=True, cache=True, nogil=True)
def _add_blocks(pi, blocked, block, lane, columns, bounds):
    """pi (S, N) += blocked (blocks, N, lanes) at each listed column's block and lane (the
    dense terms join the column-major result once, at the end); column by column inside a
    chunk of rows, a transpose in cache."""
    for chunk in prange(bounds.shape[0] - 1):
        for i in range(columns.shape[0]):
            c = columns[i]
            t, at = block[c], lane[c]
            for v in range(bounds[chunk], bounds[chunk + 1]):
                pi[c, v] += blocked[t, v, at]


@njit(parallel=True, cache=True, nogil=True)
def _move_lanes(source, source_block, source_lane, target, target_block, target_lane, columns, bounds):
    """Copy each listed column's lane from one block layout to another, row chunk by chunk."""
    for chunk in prange(bounds.shape[0] - 1):
        for i in range(columns.shape[0]):
            c = columns[i]
            t, at, u, to = source_block[c], source_lane[c], target_block[c], target_lane[c]
            for v in range(bounds[chunk], bounds[chunk + 1]):
                target[u, v, to] = source[t, v, at]


@njit(parallel=True, cache=True, nogil=True)
def _zero_lanes(xb, block, lane, columns, bounds):
    """Zero each listed column's lane, row chunk by chunk."""
    for chunk in prange(bounds.shape[0] - 1):
        for i in range(columns.shape[0]):
            t, at = block[columns[i]], lane[columns[i]]
            for v in range(bounds[chunk], bounds[chunk + 1]):
                xb[t, v, at] = 0


@njit(parallel=True, cache=True, nogil=True)
def _reset_blocks(xb, b_low, bounds):
    """xb (blocks, N, lanes + slots) = zero xt lanes, then ``b_low`` (blocks, N, slots): a
    dense layout before its first term, row chunk by row chunk."""
    blocks, _, width = xb.shape
    slots = b_low.shape[2]
    lanes = width - slots
    for chunk in prange(bounds.shape[0] - 1):
        for t in range(blocks):
            for v in range(bounds[chunk], bounds[chunk + 1]):
                for j in range(lanes):
                    xb[t, v, j] = 0
                for j in range(slots):
                    xb[t, v, lanes + j] = _encoded(b_low[t, v, j], xb)


def inverse_out_weights(csr: CSR, a, b, bounds=None, workspace=None) -> np.ndarray:
    """1 / out-weight of every node for every weight column (0 where a node has none), in
    blocks: weight column w at ``[w // lanes, :, w % lanes]``."""
    blocks, lanes = block_layout(a.shape[1])
    shape = (blocks, np.asarray(b).shape[0], lanes)
    b_blocks = to_blocks(np.asarray(b), lanes, out=work_array(workspace, "b_blocks", shape))
    inv = work_array(workspace, "inv_out", shape)
    bounds = work_chunks(csr.indptr) if bounds is None else bounds
    scratch = np.empty((b_blocks.shape[0] * (bounds.shape[0] - 1), lanes))
    _inverse_out_weights(csr, to_blocks(np.asarray(a), lanes), b_blocks, bounds, inv, scratch)
    return inv


@njit(parallel=True, cache=True, nogil=True)
def _regroup(source, columns, out):
    """out[t, u, j] = source's column ``columns[t * lanes + j]`` (source in blocks too; -1 or
    past the end: 0)."""
    blocks, rows, lanes = out.shape
    source_lanes = source.shape[2]
    for u in prange(rows):
        for t in range(blocks):
            for j in range(lanes):
                c = t * lanes + j
                if c < columns.shape[0] and columns[c] >= 0:
                    w = columns[c]
                    out[t, u, j] = source[w // source_lanes, u, w % source_lanes]
                else:
                    out[t, u, j] = 0.0


class DenseLayout(NamedTuple):
    """Where the dense terms keep the seed columns: ``blocks`` blocks of ``halves`` halves of
    ``slots`` lanes (lane ``h * slots + j`` walks with slot j's weights); slot s of the whole
    layout holds weight column ``slot_weight[s]`` (-1: empty); column c sits in block
    ``block[c]``, lane ``lane[c]``."""

    halves: int
    slots: int
    blocks: int
    slot_weight: np.ndarray
    block: np.ndarray
    lane: np.ndarray

    @property
    def lanes(self) -> int:
        return self.halves * self.slots


def dense_layout(weight_of: np.ndarray, weights: int, capacity: int = LANES) -> DenseLayout:
    """Place seed columns in dense blocks.

    Columns that share a weight column go two to a slot (one per half) when that moves
    fewer bytes per half-edge than a slot each (3 values per slot against 2 per column):
    the directions of a bank pair always do."""
    users: dict[int, list[int]] = {}
    for c, w in enumerate(weight_of.tolist()):
        users.setdefault(w, []).append(c)
    count = len(weight_of)
    halves = 2 if 3 * sum(-(-len(cols) // 2) for cols in users.values()) < 2 * count else 1
    slot_list = [(w, cols[i:i + halves]) for w, cols in users.items() for i in range(0, len(cols), halves)]
    # a block of paired lanes holds up to ``capacity`` of them; unpaired lanes stay within
    # LANES, the accumulators a segment keeps in vector registers
    blocks, slots = block_layout(len(slot_list), capacity // halves if halves == 2 else min(capacity, LANES))
    slot_weight = np.full(blocks * slots, -1, dtype=np.int64)
    block = np.zeros(count, dtype=np.int64)
    lane = np.zeros(count, dtype=np.int64)
    for s, (w, cols) in enumerate(slot_list):
        slot_weight[s] = w
        for h, c in enumerate(cols):
            block[c], lane[c] = s // slots, h * slots + s % slots
    return DenseLayout(halves, slots, blocks, slot_weight, block, lane)


class DenseTerms(NamedTuple):
    """How the dense terms run: in float32 (``mixed_precision``; float64 without), their xt
    and b stored in binary16 (``half``); a column turns dense once its push would touch more
    than ``push_fraction`` of the half-edges."""

    mixed_precision: bool = True
    half: bool = False
    push_fraction: float = 0.05

    @property
    def stored(self):
        """The type xb stores: binary16 bits, float32 or float64."""
        return HALF if self.half else np.float32 if self.mixed_precision else np.float64

    @property
    def accumulated(self):
        """The type of the segment kernels' y and coefficients, and of the dense sums."""
        return np.float32 if self.half else self.stored

    @property
    def capacity(self) -> int:
        """Lanes a block may hold."""
        return HALF_LANES if self.half else LANES


@dataclass
class _DenseBlocks:
    """The dense terms' arrays in one layout: each slot's ``a``, ``b`` and ``inv`` (1 /
    out-weight) in the accumulated type, ``xb`` (a row: xt of every lane as stored, then b
    of every slot) and ``xb_next`` (the term being written), the lanes' partial sums
    ``pi``, the sweep's ``scratch`` and the ``active`` blocks (with a lane still running)."""

    layout: DenseLayout
    a: np.ndarray
    b: np.ndarray
    inv: np.ndarray
    xb: np.ndarray
    xb_next: np.ndarray
    pi: np.ndarray
    scratch: np.ndarray
    active: np.ndarray


class _Certifier:
    """The certified early exit across the terms of a solve (``adapath.kernels.certify``):
    which pairs have stopped and at which term, when each is checked next, and the shortlist
    each pair's last full check left."""

    def __init__(self, certification: Certification, n: int, series: Series, half: bool):
        self.pairs = np.ascontiguousarray(certification.pairs, dtype=np.int64).reshape(-1, 2)
        self.ladder = np.ascontiguousarray(certification.ladder, dtype=np.int64)
        self.slack, self.first = certification.slack, certification.certify_from
        self.eta, self.terms, self.half = series.eta, series.terms, half
        count = len(self.pairs)
        self.done = np.zeros(count, dtype=bool)
        self.stopped = np.full(count, self.terms, dtype=np.int64)  # the term each pair stopped at
        self.next_check = np.zeros(count)  # the term of each pair's next full check
        self.listed = np.zeros(count, dtype=bool)  # whether its shortlist is current
        size = min(n, max(certification.shortlist, 4 * int(self.ladder[-1])))
        self.shortlist = Shortlist(np.full((count, size), -1, dtype=np.int64), np.full(count, np.inf))

    def due(self, term: int) -> bool:
        """Whether any pair is checked after ``term``: a listed one every term, another at
        its next full check, from term ``certify_from`` to the last but one."""
        return (self.first <= term < self.terms
                and bool(np.any(~self.done & (self.listed | (self.next_check <= term)))))

    def check(self, term: int, state: SolveState, row_chunks: np.ndarray) -> np.ndarray:
        """Check the pairs due after ``term``; returns which seed columns a pair that has not
        stopped still needs."""
        full = np.flatnonzero(~self.done & ~self.listed & (self.next_check <= term))
        short = np.flatnonzero(~self.done & self.listed)  # cheap: every term
        todo = np.union1d(full, short)
        # half storage: each stored value, and the b a term reads, may be 2^-11 off, so a
        # later term's xt may exceed the stored maximum by that much per term
        residual = (1.0 - self.eta) ** (term + 1) * ((1.0 + 2.0 ** -10) ** (self.terms - term) if self.half else 1.0)
        rule = Rule(residual, self.ladder, self.slack)
        need = np.full(len(self.pairs), np.nan)
        if len(short):
            need[short] = certify_listed(state, short, rule, row_chunks, self.shortlist)[short]
            stale = short[need[short] < 0.0]  # the list's outside bound is too loose
            self.listed[stale] = False
            self.next_check[stale] = term + 1
        if len(full):
            need[full] = certify_fused(state, full, rule, row_chunks, self.shortlist)[full]
            self.listed[full] = need[full] >= 0.0  # -1: the list is too short yet
            # the residual shrinks by (1 - eta) a term (and the sums near the boundary grow):
            # check again a term before the residual alone would pass; a tie at a boundary
            # never passes
            wait = np.log(np.maximum(need[full], 1.0)) / -np.log(1.0 - self.eta)
            self.next_check[full] = term + np.maximum(1, np.floor(np.minimum(wait, self.terms)) - 1)
        ok = need == 0.0
        self.stopped[todo[ok[todo]]] = term
        self.done |= ok
        needed = np.zeros(state.pi.shape[0], dtype=bool)
        needed[self.pairs[~self.done].ravel()] = True
        return needed


class _Iteration:
    """One call of ``power_iteration``: its fixed inputs, the state that changes term by
    term, and a method for each piece of a term."""

    def __init__(self, csr: CSR, a, b, seeds, weight_of, series: Series, dense: DenseTerms, bounds,
                 workspace: dict | None, keep: bool):
        n = csr.indptr.shape[0] - 1
        self.csr, self.series, self.dense, self.workspace = csr, series, dense, workspace
        self.weights = a.shape[1]
        seeds = np.ascontiguousarray(seeds, dtype=np.int64)
        count = seeds.shape[0]
        self.weight_of = weight_columns(weight_of, count, self.weights)
        self.bounds = work_chunks(csr.indptr) if bounds is None else bounds
        self.row_chunks = np.append(np.arange(0, n, ROWS), n)  # equal rows, for row-wise transposes
        self.a = np.ascontiguousarray(a, dtype=np.float64)
        self.b_rows = np.ascontiguousarray(b, dtype=np.float64)
        self.b_cols = work_array(workspace, "b_cols", self.b_rows.T.shape)
        _transpose(self.b_rows, self.b_cols, self.row_chunks)
        self.inv_weights = inverse_out_weights(csr, self.a, b, self.bounds, workspace)  # once per weight column
        self.layout = dense_layout(self.weight_of, self.weights, dense.capacity)
        self.blocks: _DenseBlocks | None = None  # made when the first column turns dense
        # each column's scale in the dense layout (1 unless stored in half), fixed when it
        # leaves the push phase; a stored value means xt * scale
        self.column_scale = np.ones(count)
        columns = np.arange(count)
        self.x = work_array(workspace, "x0", (count, n), zero=True)  # push phase, column-major
        self.x[columns, seeds] = 1.0
        self.spare = "x1"  # the push terms alternate between two arrays
        # A seed without out-weight (isolated, or all its edges weigh 0) keeps all its mass:
        # its PPR is exactly its indicator.
        weight_lanes = self.inv_weights.shape[2]
        self.stuck = self.inv_weights[self.weight_of // weight_lanes, seeds, self.weight_of % weight_lanes] == 0.0
        self.pi = np.zeros((count, n)) if keep else work_array(workspace, "pi", (count, n), zero=True)
        self.pi[columns, seeds] = np.where(self.stuck, 1.0, series.eta)
        self.sparse = ~self.stuck
        self.finished = np.zeros(count, dtype=bool)  # columns stopped by the certificate
        self.laid_out = np.ones(count, dtype=bool)  # columns with a lane in the current dense blocks
        self.relayouts = 0

    def run(self, certifier: _Certifier | None) -> np.ndarray:
        """Every term; returns pi (S x N) with the dense terms' share added."""
        eta, terms = self.series.eta, self.series.terms
        scale = eta
        limit = self.dense.push_fraction * self.csr.indices.shape[0]
        for term in range(1, terms + 1):
            scale *= 1.0 - eta
            pushing = np.flatnonzero(self.sparse & ~self.finished)
            leaving = pushing[:0]
            if term >= 3 and len(pushing):  # the first two terms always push: a dense pass costs more
                leaving = pushing[_push_work(self.csr.indptr, self.x, pushing) >= limit]
            if len(leaving):
                self._enter_dense(leaving)
                pushing = np.flatnonzero(self.sparse & ~self.finished)
            if len(pushing):
                self._push_term(pushing, scale)
            if self.blocks is not None and self.blocks.active.any():
                self._dense_term(scale, last=term == terms)
            if certifier is not None and certifier.due(term):
                needed = certifier.check(term, self._state(certifier.pairs), self.row_chunks)
                newly = np.flatnonzero(~needed & ~self.finished)
                if len(newly):
                    self._stop(newly)
        if self.blocks is not None:
            _add_blocks(self.pi, self.blocks.pi, self.layout.block, self.layout.lane, np.flatnonzero(self.laid_out),
                        self.row_chunks)
        return self.pi

    def _dense_blocks(self, layout: DenseLayout, xb_name: str, pi_name: str) -> _DenseBlocks:
        """The dense arrays of ``layout``, taken from the workspace: xb (and its next term) and
        pi under the names given, each slot's b and 1 / out-weight under fixed names (the
        layout they replace reads neither again); xb and xb_next hold zero lanes and b."""
        n, ws = self.b_rows.shape[0], self.workspace
        stored, accumulated = self.dense.stored, self.dense.accumulated
        shape = (layout.blocks, n, layout.slots)
        a_low = to_blocks(self.a, layout.slots, layout.slot_weight, accumulated)
        b_low = to_blocks(self.b_rows, layout.slots, layout.slot_weight, accumulated,
                          out=work_array(ws, "b_low", shape, accumulated))
        inv_low = work_array(ws, "inv_low", shape, accumulated)
        _regroup(self.inv_weights, layout.slot_weight, inv_low)
        pi_blocks = work_array(ws, pi_name, (layout.blocks, n, layout.lanes), accumulated, zero=True)
        xb = work_array(ws, xb_name, (layout.blocks, n, layout.lanes + layout.slots), stored)
        xb_next = work_array(ws, xb_name + "_next", xb.shape, stored)
        for target in (xb, xb_next):  # b: constant across terms
            _reset_blocks(target, b_low, self.row_chunks)
        scratch = np.empty((layout.blocks * (self.bounds.shape[0] - 1), 2, layout.lanes), dtype=accumulated)
        return _DenseBlocks(layout, a_low, b_low, inv_low, xb, xb_next, pi_blocks, scratch,
                            np.zeros(layout.blocks, dtype=bool))

    def _last_terms(self) -> LastTerms:
        xb = self.blocks.xb if self.blocks is not None else np.zeros((1, 1, 1), dtype=self.dense.stored)
        return LastTerms(self.x, xb, 1.0 / self.column_scale, self.inv_weights, ~self.sparse & ~self.stuck,
                         self.layout.block, self.layout.lane, self.weight_of)

    def _state(self, pairs: np.ndarray) -> SolveState:
        pi_blocks = self.blocks.pi if self.blocks is not None else np.zeros((1, 1, 1))
        return SolveState(self.pi, pi_blocks, pairs, self._last_terms())

    def _enter_dense(self, leaving: np.ndarray) -> None:
        """Move the ``leaving`` push columns into their lanes (x still holds their last
        term): in half precision, each with the scale that keeps its xt in range."""
        if self.blocks is None:
            self.blocks = self._dense_blocks(self.layout, "xb", "pi_blocks")
        if self.dense.half:
            partial = np.empty((self.row_chunks.shape[0] - 1, len(leaving)))
            # the leaving columns still push: their peak is that of x * inv
            last_term_peaks(self._last_terms(), leaving, self.row_chunks, partial)
            self.column_scale[leaving] = half_scales(partial.max(axis=0))
        layout = self.layout
        _to_lanes(self.x, self.blocks.inv, layout.block, layout.lane, leaving, self.column_scale, self.blocks.xb,
                  self.row_chunks)
        self.sparse[leaving] = False
        self.blocks.active[layout.block[leaving]] = True

    def _push_term(self, pushing: np.ndarray, scale: float) -> None:
        y_cols = work_array(self.workspace, self.spare, self.x.shape)
        self.spare = "x1" if self.spare == "x0" else "x0"
        _push(self.csr, self.a, self.b_cols, self.inv_weights, self.weight_of, self.x, y_cols, self.pi, scale,
              pushing)
        self.x = y_cols

    def _dense_term(self, scale: float, last: bool) -> None:
        blocks, layout = self.blocks, self.layout
        gain = np.full((layout.blocks, layout.lanes), scale)
        gain[layout.block, layout.lane] = scale / self.column_scale  # exact: the scales are powers of two
        _step(self.csr, blocks.a, blocks.b, blocks.inv, blocks.xb, blocks.xb_next, blocks.pi, gain, self.bounds,
              blocks.scratch, blocks.active, last)
        blocks.xb, blocks.xb_next = blocks.xb_next, blocks.xb

    def _stop(self, newly: np.ndarray) -> None:
        """The columns ``newly`` stopped: their remaining terms are skipped, and the columns
        still running may be laid out again in fewer blocks."""
        self.finished[newly] = True
        is_dense = ~self.sparse & ~self.stuck
        if is_dense[newly].any():  # a stopped lane adds nothing more
            _zero_lanes(self.blocks.xb, self.layout.block, self.layout.lane, newly[is_dense[newly]], self.row_chunks)
        live = np.flatnonzero(is_dense & ~self.finished)
        if self.blocks is not None and len(live):
            self._relayout(np.flatnonzero(~self.finished & ~self.stuck), live)
        if self.blocks is not None:
            self.blocks.active = np.zeros(self.layout.blocks, dtype=bool)
            self.blocks.active[self.layout.block[live]] = True

    def _relayout(self, running: np.ndarray, live: np.ndarray) -> None:
        """The batch's work shrinks with it: lay the ``running`` columns out in fewer or
        narrower blocks when that cuts the bytes a sweep gathers. The stopped columns'
        dense terms join pi; the ``live`` (dense) ones' partial sums move with their lanes,
        so each lane's float32 sum adds its terms in the same order whatever its batch."""
        old, new = self.layout, dense_layout(self.weight_of[running], self.weights, self.dense.capacity)
        if 4 * new.blocks * (new.halves + 1) * new.slots > 3 * old.blocks * (old.lanes + old.slots):
            return
        _add_blocks(self.pi, self.blocks.pi, old.block, old.lane, np.flatnonzero(self.laid_out & self.finished),
                    self.row_chunks)
        block = np.zeros(len(self.finished), dtype=np.int64)
        lane = np.zeros(len(self.finished), dtype=np.int64)
        block[running], lane[running] = new.block, new.lane
        new = new._replace(block=block, lane=lane)
        # the old layout's xb and pi are read below only by _move_lanes; the moves' targets
        # come from the other of two pairs of names (the source may be one)
        self.relayouts += 1
        source = self.blocks
        moved = self._dense_blocks(new, f"xb_moved{self.relayouts % 2}", f"pi_blocks_moved{self.relayouts % 2}")
        _move_lanes(source.xb, old.block, old.lane, moved.xb, block, lane, live, self.row_chunks)
        _move_lanes(source.pi, old.block, old.lane, moved.pi, block, lane, live, self.row_chunks)
        self.layout, self.blocks = new, moved
        self.laid_out[:] = False
        self.laid_out[running] = True


def power_iteration(csr: CSR, a, b, seeds, weight_of=None, series: Series = Series(),
                    dense: DenseTerms = DenseTerms(), certification: Certification | None = None, bounds=None,
                    workspace: dict | None = None, keep: bool = True):
    """PPR for every seed with L1 error <= ``series.tol``. Returns (pi N x S, terms, error
    bound).

    Dense terms run in float32 (``dense.mixed_precision``; float64 without). ``dense.half``:
    their xt and b are stored in binary16 and widened to float32 as they are read, so a row
    of 32 paired columns is as long as one of 16 in float32 and a term gathers half the
    bytes; each column's xt is kept times a power of two (``half_scales``) that holds it in
    binary16's range. That adds a relative error of about 2^-11 per stored value to the
    dense terms (at most (1 - eta)^3 of the mass). The dense terms' share of pi is summed in
    float32 (float64 without ``mixed_precision``) and added to the float64 pi at the end.

    ``a`` (R x W) and ``b`` (N x W) are W weight columns; seed column c walks with weight
    column ``weight_of[c]`` (default ``c % W``, S a multiple of W). ``bounds`` (from
    ``work_chunks``) may be given to reuse them across calls.

    Certified early exit (``adapath.kernels.certify``): with a ``certification`` (pairs of
    seed columns, forward and backward, and a ladder of corridor sizes), after every term
    from ``certify_from`` a pair whose top-K of ``pi_f * pi_b`` is certified at every rung
    stops; a column stops when every pair it serves has. A stopped column's remaining terms
    are skipped (a push column is no longer pushed; a dense lane is zeroed, and a block
    whose lanes have all stopped leaves the sweep), so its result is its partial sum at the
    term it stopped, whatever else is in the batch. ``certification.stopped`` (length P),
    if given, receives the term at which each pair stopped (``terms`` if it ran to the
    end). The first check comes at term ``certify_from`` (5): before it the residual
    (1 - eta)^(t+1) still exceeds the scores at a corridor's boundary on PrimeKG-sized
    graphs, and no pair was ever certified there in measurements, so earlier checks only
    cost time. A pair's first check reads every node and keeps a shortlist of its
    ``shortlist`` (at least 4 x the top rung) most promising nodes with a bound on all
    others; its later checks, every term, read the shortlist only (``certify_listed``), and
    go back to a full check when that bound is too loose.

    ``workspace`` (a dict the caller keeps across calls, one call at a time): the solve's
    own arrays are taken from it (``work_array``), and pi too unless ``keep`` (the caller
    reads pi before the next call and keeps nothing of it).
    """
    iteration = _Iteration(csr, a, b, seeds, weight_of, series, dense, bounds, workspace, keep)
    certifier = None
    if certification is not None and certification.active:
        certifier = _Certifier(certification, csr.indptr.shape[0] - 1, series, dense.half)
    pi = iteration.run(certifier)
    if certifier is not None and certification.stopped is not None:
        certification.stopped[:] = certifier.stopped
    terms = series.terms
    return pi.T, terms, (1.0 - series.eta) ** (terms + 1)
