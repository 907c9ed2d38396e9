"""Dense PPR terms stored in half precision (IEEE binary16) on the CPU.

Numba has no float16 on the CPU, so a half-precision array is a uint16 array of binary16
bits, and two intrinsics convert one value at a time (F16C: ``vcvtph2ps`` and
``vcvtps2ph``, round to nearest even). The segment kernels of ``ppr_numba`` widen whole
rows themselves.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

HALF = np.uint16  # a dense layout stored in half precision holds IEEE binary16 bits


@intrinsic
def decoded(typingctx, value):
    """A stored value as the float it holds: binary16 bits (uint16) widen to float32;
    float32 and float64 come back as they are."""
    if value == types.uint16:
        def codegen(context, builder, signature, args):
            return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
        return types.float32(value), codegen
    if value in (types.float32, types.float64):
        return value(value), lambda context, builder, signature, args: args[0]
    return None


@intrinsic
def encoded(typingctx, value, array):
    """``value`` as ``array`` stores it: rounded to the nearest binary16 (as bits) for a
    uint16 array, else cast to its float type."""
    if not isinstance(array, types.Array) or not isinstance(value, types.Float):
        return None
    target = array.dtype

    def codegen(context, builder, signature, args):
        x = args[0]
        if target == types.uint16:
            if value == types.float64:  # through float32: F16C converts from float32 only
                x = builder.fptrunc(x, ir.FloatType())
            return builder.bitcast(builder.fptrunc(x, ir.HalfType()), ir.IntType(16))
        return context.cast(builder, x, value, target)

    if target not in (types.uint16, types.float32, types.float64):
        return None
    return target(value, array), codegen


def half_scales(peak: np.ndarray) -> np.ndarray:
    """Per column, the power of two that brings its largest xt to [2^13, 2^14): its later
    terms never exceed it (each term's xt is a weighted mean of the last one's: the walk is
    reversible), so they fit binary16 (largest 65504) with room for rounding, and values
    down to 2^27 times smaller keep full precision. Exact to apply and to undo."""
    peak = np.asarray(peak, dtype=np.float64)
    exponent = np.where(peak > 0.0, 13 - np.floor(np.log2(np.where(peak > 0.0, peak, 1.0))), 0.0)
    return np.ldexp(1.0, np.clip(exponent, -1000, 1000).astype(np.int64))
