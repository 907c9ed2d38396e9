"""The local executor: every batch in this process, one after another, in plan order."""

from __future__ import annotations

import os

from adapath.bank.runner import BatchRunner, execute_batch


def set_numba_threads(threads: int) -> int:
    """Numba's thread count for this process, capped by its pool size; returns it."""
    import numba

    threads = max(1, min(threads, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(threads)
    return threads


class LocalExecutor:
    def __init__(self, threads: int = 0):
        """``threads`` (0 = every core) run Numba's PPR and the per-pair path search."""
        self.threads = threads or (os.cpu_count() or 1)
        self.runner: BatchRunner | None = None

    def prepare(self, graph, text, config) -> None:
        set_numba_threads(self.threads)
        self.runner = BatchRunner(graph, text, config, threads=self.threads)

    def run(self, store, batches, on_result) -> None:
        for batch in batches:
            on_result(execute_batch(self.runner, store, batch))

    def close(self) -> None:
        self.runner = None
