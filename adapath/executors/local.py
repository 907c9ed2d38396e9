"""The local executor: the worker in this process, its tasks one after another in order.

The worker is kept: a later run whose spec would make the same worker (same function,
settings and arrays) reuses it, with what it holds ready (a bank runner's PPR operators and
work arrays: fresh memory faults page by page on first use).

Pipelined (a ``StagedWorker`` only), the next task's first half runs on a second thread
while this task's second half runs: a bank build on the GPU then solves the next batch's PPR
while this batch's corridors run. Results are the same either way; only the overlap differs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from adapath.executors.base import OnResult, StagedWorker, Worker, WorkerSpec


class LocalExecutor:
    def __init__(self, threads: int = 0, pipeline: bool | None = None):
        """``threads`` (0 = every core): the CPUs the worker may use. ``pipeline``: run the
        next task's first half while this one's second half runs (None: when the work runs
        on a GPU, where the first half leaves the cores free)."""
        self.threads = threads or (os.cpu_count() or 1)
        self.pipeline = pipeline
        self.pipelined = False  # what ``start`` decided for this run
        self.spec: WorkerSpec | None = None
        self.worker: Worker | None = None

    def start(self, spec: WorkerSpec) -> None:
        if self.worker is None or not spec.same_worker(self.spec):
            self.worker = None  # the old one's memory goes before the new one takes its own
            self.worker = spec.make(spec.arrays, spec.settings, self.threads)
        self.spec = spec
        wanted = spec.gpus > 0 if self.pipeline is None else self.pipeline
        self.pipelined = wanted and isinstance(self.worker, StagedWorker)

    def run(self, tasks: Sequence, on_result: OnResult) -> None:
        worker = self.worker
        if not self.pipelined:
            for index, task in enumerate(tasks):
                on_result(index, worker.run(task))
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="adapath-ahead") as ahead:
            pending = None
            for index, task in enumerate(tasks):
                beginning = ahead.submit(worker.begin, task)
                if pending is not None:
                    on_result(index - 1, worker.end(pending.result()))
                pending = beginning
            if pending is not None:
                on_result(len(tasks) - 1, worker.end(pending.result()))

    def close(self) -> None:
        self.spec = self.worker = None
