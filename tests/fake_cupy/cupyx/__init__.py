"""The stand-in's cupyx: pinned host memory is ordinary NumPy memory here."""

import numpy


def empty_pinned(shape, dtype=float, order="C"):
    return numpy.empty(shape, dtype=dtype, order=order)
