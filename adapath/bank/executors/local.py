"""The local executor: every batch in this process, in plan order.

Pipelined, the next batch's text, weights and PPR solve (``solve_batch``) run on a second
thread while this batch's corridors and paths (``finish_batch``) run on the others: on
the GPU the solve then costs the build almost nothing. Results and parts are the same
either way; only the overlap differs.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from adapath.bank.runner import BatchRunner, execute_batch, finish_batch, solve_batch


def set_numba_threads(threads: int) -> int:
    """Numba's thread count for this process, capped by its pool size; returns it."""
    import numba

    threads = max(1, min(threads, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(threads)
    return threads


class LocalExecutor:
    def __init__(self, threads: int = 0, pipeline: bool | None = None):
        """``threads`` (0 = every core) run Numba's PPR and the per-pair path search.
        ``pipeline``: solve the next batch while this one's corridors run (None: when the
        solve runs on the GPU, where it leaves the cores free)."""
        self.threads = threads or (os.cpu_count() or 1)
        self.pipeline = pipeline
        self.pipelined = False  # what ``prepare`` decided for this build
        self.runner: BatchRunner | None = None

    def prepare(self, graph, text, config) -> None:
        """A runner for this build. One from an earlier build of this executor on the same
        graph, text index and configuration is kept: its PPR operators and work arrays
        are ready (fresh memory faults page by page on first use)."""
        set_numba_threads(self.threads)
        kept = self.runner
        if kept is None or kept.graph is not graph or kept.text is not text or kept.config != config:
            self.runner = BatchRunner(graph, text, config, threads=self.threads)
        self.pipelined = config.device == "cuda" if self.pipeline is None else self.pipeline

    def run(self, store, batches, on_result) -> None:
        if not self.pipelined:
            for batch in batches:
                on_result(execute_batch(self.runner, store, batch))
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="adapath-solve") as ahead:
            pending = None
            for batch in batches:
                solving = ahead.submit(solve_batch, self.runner, batch)
                if pending is not None:
                    on_result(finish_batch(self.runner, store, pending.result()))
                pending = solving
            if pending is not None:
                on_result(finish_batch(self.runner, store, pending.result()))

    def close(self) -> None:
        self.runner = None
