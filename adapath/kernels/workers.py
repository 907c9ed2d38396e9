"""Two intrinsics for parallel loops whose items differ widely in cost (Numba, CPU).

- ``take_next(counter)``: atomically hands out 0, 1, 2, ... from a one-element int64 array.
  Workers of a ``prange`` over threads each take their next item from it, so a slow item
  does not hold up a fixed share of the range (a ``prange`` over the items is split into
  equal blocks up front under the OpenMP layer).
- ``monotonic_ns()``: the monotonic clock in nanoseconds (``clock_gettime``), so a compiled
  loop can time its own stages without coming back to Python. The symbol is bound by name
  when the code is loaded, so functions using it can be cached.

``threading_layer()`` says which layer runs Numba's parallel loops here.
"""

from __future__ import annotations

import sys

from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

# CLOCK_MONOTONIC's number in <time.h>
_CLOCK_MONOTONIC = 6 if sys.platform == "darwin" else 1


@intrinsic
def take_next(typingctx, counter):
    """The value of ``counter[0]`` before adding one to it, atomically."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.atomic_rmw("add", array.data, ir.Constant(ir.IntType(64), 1), "monotonic")

    return types.int64(counter), codegen


@intrinsic
def monotonic_ns(typingctx):
    """Nanoseconds on the monotonic clock (the clock of ``time.perf_counter`` on Linux)."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        timespec = ir.LiteralStructType([i64, i64])  # time_t seconds, long nanoseconds (LP64)
        clock_gettime = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(32), [ir.IntType(32), timespec.as_pointer()]),
            "clock_gettime")
        spec = cgutils.alloca_once(builder, timespec)
        builder.call(clock_gettime, [ir.Constant(ir.IntType(32), _CLOCK_MONOTONIC), spec])
        seconds = builder.load(cgutils.gep_inbounds(builder, spec, 0, 0))
        nanoseconds = builder.load(cgutils.gep_inbounds(builder, spec, 0, 1))
        return builder.add(builder.mul(seconds, ir.Constant(i64, 1_000_000_000)), nanoseconds)

    return types.int64(), codegen


@njit(parallel=True, cache=True)
def _one_parallel_loop(n):
    total = 0
    for i in prange(n):
        total += i
    return total


_layer: list[str] = []  # this process's, once known


def threading_layer() -> str:
    """The threading layer Numba's parallel loops run on in this process ("omp", "tbb" or
    "workqueue"; only "workqueue" cannot run two parallel loops from two threads at once)."""
    if not _layer:
        import numba

        _one_parallel_loop(2)  # Numba picks its layer at the first parallel loop
        _layer.append(numba.threading_layer())
    return _layer[0]
