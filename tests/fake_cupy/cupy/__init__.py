"""A stand-in for CuPy on a machine without a GPU: NumPy under CuPy's name, so that the
project's GPU route (``--device cuda``: the array-namespace solve, ranking on the "device",
pinned host buffers, ``--gpu-batch auto``) runs end to end in tests. Everything is NumPy;
``cuda`` answers as one device with 8 GiB free. Put this folder first on PYTHONPATH."""

import types

import numpy

FREE_BYTES = 8 * 2**30


def __getattr__(name):  # every other name: NumPy's
    return getattr(numpy, name)


def asnumpy(array, stream=None, order="C", out=None, blocking=True):
    if out is None:
        return numpy.array(array, order=order)
    numpy.copyto(out, array)
    return out


class _Stream:
    def synchronize(self):
        pass


class _Device:
    def __init__(self, index=0):
        self.id = index

    def synchronize(self):
        pass


class _Pool:
    def free_bytes(self):
        return 0


def get_default_memory_pool():
    return _Pool()


cuda = types.SimpleNamespace(
    runtime=types.SimpleNamespace(getDeviceCount=lambda: 1, memGetInfo=lambda: (FREE_BYTES, 2 * FREE_BYTES)),
    Device=_Device,
    get_current_stream=lambda: _Stream(),
)
