"""Whether a command's compiled kernels are on disk yet: Numba compiles a cached kernel at its
first call and keeps it (``__pycache__`` beside the source, or Numba's user cache), so the first
run on a machine spends about two minutes compiling before any progress line."""

from __future__ import annotations

import importlib


def uncompiled(modules: tuple[str, ...]) -> list[str]:
    """The kernel modules among ``modules`` (``pair_stage``, ``walk_step``, ...) of which no
    kernel has compiled code on disk for its current source; helpers that compile into their
    callers never have their own, so one compiled kernel counts for the module. Empty when
    Numba's cache cannot be read (a notice is never worth failing a command)."""
    from numba.core.dispatcher import Dispatcher

    missing = []
    try:
        for name in modules:
            module = importlib.import_module(f"adapath.kernels.{name}")
            indexes = [kernel._cache._cache_file for kernel in vars(module).values()
                       if isinstance(kernel, Dispatcher) and kernel.__module__ == module.__name__
                       and hasattr(getattr(kernel, "_cache", None), "_cache_file")]
            if indexes and not any(index._load_index() for index in indexes):
                missing.append(name)
    except Exception:  # Numba's cache layout is its own
        return []
    return missing
