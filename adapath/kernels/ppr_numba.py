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

import math

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from adapath.kernels.certify import certify_fused, certify_listed, last_term_peaks
from adapath.kernels.half import HALF, half_scales
from adapath.kernels.half import encoded as _encoded

LANES = 32  # seed columns per dense block (measured best with prefetching)
HALF_LANES = 64  # ... when stored in half precision: paired, a row is the same 3 cache lines
VECTOR = 8  # lanes per block come in multiples of this (8 float32 = one AVX2 register)
PREFETCH = 16  # half-edges ahead whose gathered row is prefetched
LINE = 64  # bytes per cache line
CHUNKS = 256  # row chunks of equal work per block
ROWS = 512  # rows per chunk where every row costs the same


def series_terms(eta: float, tol: float) -> int:
    """Smallest K with (1 - eta)^(K + 1) <= tol: the terms x_0 .. x_K to sum."""
    if tol >= 1.0:
        return 0
    return max(0, math.ceil(math.log(tol) / math.log(1.0 - eta)) - 1)


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
def _zero(flat, chunk):
    for i in prange(-(-flat.shape[0] // chunk)):
        flat[i * chunk:min(flat.shape[0], (i + 1) * chunk)] = 0


@njit(parallel=True, cache=True, nogil=True)
def _transpose(source, out, row_chunks):
    """out (W, N) = source (N, W), a chunk of rows at a time (its rows stay in cache)."""
    for chunk in prange(row_chunks.shape[0] - 1):
        for w in range(source.shape[1]):
            for v in range(row_chunks[chunk], row_chunks[chunk + 1]):
                out[w, v] = source[v, w]


def work_array(workspace: dict | None, name: str, shape, dtype=np.float64, zero: bool = False,
               empty=np.empty) -> np.ndarray:
    """An array of ``shape`` for one solve's own use, taken from ``workspace`` (a dict kept
    across solves) when it holds one big enough, else allocated there. Fresh memory costs a
    page fault per page on first touch, which on a virtual machine with transparent huge
    pages can cost more than the sweep that fills it; reused pages are already mapped.
    ``zero``: cleared first. Without a workspace: a new array. ``empty(size, dtype=)``
    allocates (pinned host memory for the GPU's copies: ``cupyx.empty_pinned``)."""
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
def _inverse_out_weights(indptr, indices, rel, a, b, bounds, inv, scratch):
    """inv[t, u, j] = 1 / out (0 where out is 0), out = the sum of w over u's half-edges =
    sum b[v] + sum a[r] + deg(u) * b[u]."""
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
def _step(indptr, indices, rel, a, b, inv_out, xb, xb_next, pi, gain, bounds, scratch, active, last):
    """One dense term for the lanes of every active block: y = P x from xb (xt | b), then
    pi += gain[t, lane] * y and, unless ``last``, the xt part of xb_next = y * inv_out of the
    lane's slot (stored as xb stores it: a lane holds its column's xt times the column's
    fixed power-of-two scale, which ``gain`` divides back out). y lives one row at a time
    in ``scratch``; xb is read while xb_next is written."""
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
def _push(indptr, indices, rel, a, b, inv_out, weight_of, x, y, pi, scale, columns):
    """For each listed column c: y[c] = P x[c] by scattering from x[c]'s nonzero entries,
    then pi[c] += scale * y[c]. No mass reaches a node without out-weight (its edges all
    weigh 0) unless it starts there, and such seeds never come here.
    ``a`` (R x W) and ``b`` (W x N, column-major so that one column's scattered reads stay
    in cache) are per weight column; ``inv_out`` is in weight blocks."""
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


def inverse_out_weights(indptr, indices, rel, a, b, bounds=None, workspace=None) -> np.ndarray:
    """1 / out-weight of every node for every weight column (0 where a node has none), in
    blocks: weight column w at ``[w // lanes, :, w % lanes]``."""
    blocks, lanes = block_layout(a.shape[1])
    shape = (blocks, np.asarray(b).shape[0], lanes)
    b_blocks = to_blocks(np.asarray(b), lanes, out=work_array(workspace, "b_blocks", shape))
    inv = work_array(workspace, "inv_out", shape)
    bounds = work_chunks(indptr) if bounds is None else bounds
    scratch = np.empty((b_blocks.shape[0] * (bounds.shape[0] - 1), lanes))
    _inverse_out_weights(indptr, indices, rel, to_blocks(np.asarray(a), lanes), b_blocks, bounds, inv, scratch)
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


def dense_layout(weight_of: np.ndarray, weights: int, capacity: int = LANES):
    """Place seed columns in dense blocks. Returns (halves, slots per block, blocks, weight
    column of each slot (-1 empty), block of each column, lane of each column).

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
    return halves, slots, blocks, slot_weight, block, lane


def power_iteration(indptr, indices, rel, a, b, seeds, eta=0.85, tol=1e-8, max_iter=200,
                    mixed_precision=True, push_fraction=0.05, bounds=None, weight_of=None,
                    pairs=None, ladder=None, slack=0.0, stopped=None, certify_from=5, shortlist=512,
                    workspace=None, keep=True, half=False):
    """PPR for every seed with L1 error <= tol. Returns (pi N x S, terms, error bound).

    Dense terms run in float32 (``mixed_precision``; float64 without). ``half``: their xt and
    b are stored in binary16 and widened to float32 as they are read, so a row of 32
    paired columns is as long as one of 16 in float32 and a term gathers half the bytes;
    each column's xt is kept times a power of two (``half_scales``) that holds it in
    binary16's range. That adds a relative error of about 2^-11 per stored value to the
    dense terms (at most (1 - eta)^3 of the mass). The dense terms' share of pi is summed in
    float32 (float64 without ``mixed_precision``) and added to the float64 pi at the end.

    ``a`` (R x W) and ``b`` (N x W) are W weight columns; seed column c walks with weight
    column ``weight_of[c]`` (default ``c % W``, S a multiple of W). ``bounds`` (from
    ``work_chunks``) may be given to reuse them across calls.

    Certified early exit (``adapath.kernels.certify``): with ``pairs`` (P x 2 seed columns,
    forward and backward) and ``ladder`` (corridor sizes), after every term from ``certify_from`` a
    pair whose top-K of ``pi_f * pi_b`` is certified at every rung stops; a column stops
    when every pair it serves has. A stopped column's remaining terms are skipped (a push
    column is no longer pushed; a dense lane is zeroed, and a block whose lanes have all
    stopped leaves the sweep), so its result is its partial sum at the term it stopped,
    whatever else is in the batch. ``stopped`` (length P), if given, receives the term at
    which each pair stopped (``terms`` if it ran to the end). The first check comes at term
    ``certify_from`` (5): before it the residual (1 - eta)^(t+1) still exceeds the scores at
    a corridor's boundary on PrimeKG-sized graphs, and no pair was ever certified there in
    measurements, so earlier checks only cost time. A pair's first check reads every node
    and keeps a shortlist of its ``shortlist`` (at least 4 x the top rung) most promising
    nodes with a bound on all others; its later checks, every term, read the shortlist only
    (``certify_listed``), and go back to a full check when that bound is too loose.

    ``workspace`` (a dict the caller keeps across calls, one call at a time): the solve's
    own arrays are taken from it (``work_array``), and pi too unless ``keep`` (the caller
    reads pi before the next call and keeps nothing of it).
    """
    n = indptr.shape[0] - 1
    weights = a.shape[1]
    seeds = np.ascontiguousarray(seeds, dtype=np.int64)
    count = seeds.shape[0]
    weight_of = weight_columns(weight_of, count, weights)
    bounds = work_chunks(indptr) if bounds is None else bounds
    chunks = bounds.shape[0] - 1
    row_chunks = np.append(np.arange(0, n, ROWS), n)  # equal rows, for row-wise transposes
    a = np.ascontiguousarray(a, dtype=np.float64)
    b_rows = np.ascontiguousarray(b, dtype=np.float64)
    b_cols = work_array(workspace, "b_cols", b_rows.T.shape)
    _transpose(b_rows, b_cols, row_chunks)
    inv_weights = inverse_out_weights(indptr, indices, rel, a, b, bounds, workspace)  # once per weight column
    columns = np.arange(count)
    terms = min(series_terms(eta, tol), max_iter)

    capacity = HALF_LANES if half else LANES
    halves, slots, blocks, slot_weight, block, lane = dense_layout(weight_of, weights, capacity)
    lanes = halves * slots
    dtype = HALF if half else np.float32 if mixed_precision else np.float64
    accumulate = np.float32 if half else dtype  # the segment kernels' y and coefficients
    # each column's scale in the dense layout (1 unless stored in half), fixed when it
    # leaves the push phase; a stored value means xt * scale
    column_scale = np.ones(count)
    x = work_array(workspace, "x0", (count, n), zero=True)  # push phase, column-major
    x[columns, seeds] = 1.0
    spare = "x1"  # the push terms alternate between two arrays
    # A seed without out-weight (isolated, or all its edges weigh 0) keeps all its mass:
    # its PPR is exactly its indicator.
    weight_lanes = inv_weights.shape[2]
    stuck = inv_weights[weight_of // weight_lanes, seeds, weight_of % weight_lanes] == 0.0
    pi = np.zeros((count, n)) if keep else work_array(workspace, "pi", (count, n), zero=True)
    pi[columns, seeds] = np.where(stuck, 1.0, eta)
    sparse = ~stuck
    dense = np.zeros(blocks, dtype=bool)  # blocks with at least one dense lane
    pi_blocks = xb = xb_next = scratch = low = None
    scale = eta
    limit = push_fraction * indices.shape[0]
    certifying = pairs is not None and ladder is not None and len(ladder) > 0
    finished = np.zeros(count, dtype=bool)  # columns stopped by the certificate
    laid_out = np.ones(count, dtype=bool)  # columns with a lane in the current dense blocks
    relayouts = 0
    if certifying:
        pairs = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2)
        ladder = np.ascontiguousarray(ladder, dtype=np.int64)
        pair_done = np.zeros(len(pairs), dtype=bool)
        pair_terms = np.full(len(pairs), terms, dtype=np.int64)
        next_check = np.zeros(len(pairs))
        # each pair's shortlist from its last full check (certify.py): later checks read it only
        listed = np.zeros(len(pairs), dtype=bool)
        candidates = np.full((len(pairs), min(n, max(shortlist, 4 * int(ladder[-1])))), -1, dtype=np.int64)
        outside = np.full(len(pairs), np.inf)
    for term in range(1, terms + 1):
        scale *= 1.0 - eta
        pushing = np.flatnonzero(sparse & ~finished)
        leaving = pushing[:0]
        if term >= 3 and len(pushing):  # the first two terms always push: a dense pass costs more
            leaving = pushing[_push_work(indptr, x, pushing) >= limit]
        if len(leaving) and xb is None:
            low = (to_blocks(a, slots, slot_weight, accumulate),
                   to_blocks(b_rows, slots, slot_weight, accumulate,
                             out=work_array(workspace, "b_low", (blocks, n, slots), accumulate)),
                   work_array(workspace, "inv_low", (blocks, n, slots), accumulate))
            _regroup(inv_weights, slot_weight, low[2])
            pi_blocks = work_array(workspace, "pi_blocks", (blocks, n, lanes), accumulate, zero=True)
            xb = work_array(workspace, "xb", (blocks, n, lanes + slots), dtype)
            xb_next = work_array(workspace, "xb_next", xb.shape, dtype)
            for target in (xb, xb_next):  # b: constant across terms
                _reset_blocks(target, low[1], row_chunks)
            scratch = np.empty((blocks * chunks, 2, lanes), dtype=accumulate)
        if len(leaving):
            # x (column-major) still holds x_{term-1} for these columns
            if half:
                partial = np.empty((row_chunks.shape[0] - 1, len(leaving)))
                # the leaving columns still push: their peak is that of x * inv
                last_term_peaks(x, xb, 1.0 / column_scale, inv_weights, ~sparse & ~stuck, block, lane,
                                weight_of, leaving, row_chunks, partial)
                column_scale[leaving] = half_scales(partial.max(axis=0))
            _to_lanes(x, low[2], block, lane, leaving, column_scale, xb, row_chunks)
            sparse[leaving] = False
            dense[block[leaving]] = True
            pushing = np.flatnonzero(sparse & ~finished)
        if len(pushing):
            y_cols = work_array(workspace, spare, x.shape)
            spare = "x1" if spare == "x0" else "x0"
            _push(indptr, indices, rel, a, b_cols, inv_weights, weight_of, x, y_cols, pi, scale, pushing)
            x = y_cols
        if dense.any():
            a_low, b_low, inv_low = low
            gain = np.full((blocks, lanes), scale)
            gain[block, lane] = scale / column_scale  # exact: the scales are powers of two
            _step(indptr, indices, rel, a_low, b_low, inv_low, xb, xb_next, pi_blocks, gain, bounds,
                  scratch, dense, term == terms)
            xb, xb_next = xb_next, xb
        if certifying and certify_from <= term < terms:
            full = np.flatnonzero(~pair_done & ~listed & (next_check <= term))
            short = np.flatnonzero(~pair_done & listed)  # cheap: every term
            todo = np.union1d(full, short)
            if len(todo):
                is_dense = ~sparse & ~stuck
                state = (pi, pi_blocks if pi_blocks is not None else np.zeros((1, 1, 1)),
                         x, xb if xb is not None else np.zeros((1, 1, 1), dtype=dtype),
                         1.0 / column_scale, inv_weights, is_dense, block, lane, weight_of, pairs)
                # half storage: each stored value, and the b a term reads, may be 2^-11 off,
                # so a later term's xt may exceed the stored maximum by that much per term
                residual = (1.0 - eta) ** (term + 1) * ((1.0 + 2.0 ** -10) ** (terms - term) if half else 1.0)
                need = np.full(len(pairs), np.nan)
                if len(short):
                    need[short] = certify_listed(*state, short, residual, ladder, slack, row_chunks,
                                                 candidates, outside)[short]
                    stale = short[need[short] < 0.0]  # the list's outside bound is too loose
                    listed[stale] = False
                    next_check[stale] = term + 1
                if len(full):
                    need[full] = certify_fused(*state, full, residual, ladder, slack, row_chunks,
                                               candidates, outside)[full]
                    listed[full] = need[full] >= 0.0  # -1: the list is too short yet
                    # the residual shrinks by (1 - eta) a term (and the sums near the boundary
                    # grow): check again a term before the residual alone would pass; a tie at
                    # a boundary never passes
                    wait = np.log(np.maximum(need[full], 1.0)) / -np.log(1.0 - eta)
                    next_check[full] = term + np.maximum(1, np.floor(np.minimum(wait, terms)) - 1)
                ok = need == 0.0
                pair_terms[todo[ok[todo]]] = term
                pair_done |= ok
                needed = np.zeros(count, dtype=bool)
                needed[pairs[~pair_done].ravel()] = True
                newly = np.flatnonzero(~needed & ~finished)
                if len(newly):
                    finished[newly] = True
                    if is_dense[newly].any():  # a stopped lane adds nothing more
                        _zero_lanes(xb, block, lane, newly[is_dense[newly]], row_chunks)
                    live = np.flatnonzero(is_dense & ~finished)
                    keep = np.flatnonzero(~finished & ~stuck)
                    if xb is not None and len(live):
                        # the batch's work shrinks with it: lay the columns still running out
                        # in fewer or narrower blocks when that cuts the bytes a sweep gathers
                        layout = dense_layout(weight_of[keep], weights, capacity)
                        h2, s2, b2 = layout[:3]
                        if 4 * b2 * (h2 + 1) * s2 <= 3 * blocks * (lanes + slots):
                            # the stopped columns' dense terms join pi; the running ones' partial
                            # sums move with their lanes, so each lane's float32 sum adds its terms
                            # in the same order whatever its batch
                            _add_blocks(pi, pi_blocks, block, lane, np.flatnonzero(laid_out & finished), row_chunks)
                            new_block = np.zeros(count, dtype=np.int64)
                            new_lane = np.zeros(count, dtype=np.int64)
                            new_block[keep], new_lane[keep] = layout[4], layout[5]
                            # the old layout's arrays are read below only by _move_lanes (xb and
                            # pi_blocks): b_low and inv_low are taken again from the workspace, the
                            # moves' targets from the other of two pairs (the source may be one)
                            relayouts += 1
                            moved_name = f"xb_moved{relayouts % 2}"
                            low = (to_blocks(a, s2, layout[3], accumulate),
                                   to_blocks(b_rows, s2, layout[3], accumulate,
                                             out=work_array(workspace, "b_low", (b2, n, s2), accumulate)),
                                   work_array(workspace, "inv_low", (b2, n, s2), accumulate))
                            _regroup(inv_weights, layout[3], low[2])
                            moved = work_array(workspace, moved_name, (b2, n, (h2 + 1) * s2), dtype)
                            moved_next = work_array(workspace, moved_name + "_next", moved.shape, dtype)
                            for target in (moved, moved_next):
                                _reset_blocks(target, low[1], row_chunks)
                            _move_lanes(xb, block, lane, moved, new_block, new_lane, live, row_chunks)
                            sums = work_array(workspace, f"pi_blocks_moved{relayouts % 2}", (b2, n, h2 * s2),
                                              accumulate, zero=True)
                            _move_lanes(pi_blocks, block, lane, sums, new_block, new_lane, live, row_chunks)
                            halves, slots, blocks, slot_weight = h2, s2, b2, layout[3]
                            block, lane, lanes = new_block, new_lane, h2 * s2
                            xb, xb_next, pi_blocks = moved, moved_next, sums
                            scratch = np.empty((blocks * chunks, 2, lanes), dtype=accumulate)
                            laid_out[:] = False
                            laid_out[keep] = True
                    dense = np.zeros(blocks, dtype=bool)
                    dense[block[live]] = True
    if certifying and stopped is not None:
        stopped[:] = pair_terms
    if pi_blocks is not None:
        _add_blocks(pi, pi_blocks, block, lane, np.flatnonzero(laid_out), row_chunks)
    return pi.T, terms, (1.0 - eta) ** (terms + 1)
