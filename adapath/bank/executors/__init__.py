"""Where a bank's batches run. One module per executor, each behind this small interface.

An executor is prepared once with the graph, its text index and the build's parameters
(it may refuse then, before anything is written), then runs batches: for each batch it
calls ``adapath.bank.runner.execute_batch`` somewhere (which writes the batch's part) and
hands the result to ``on_result`` in the driver, which commits it. Batches may finish in
any order; ``close`` releases what ``prepare`` took.

- ``local``: this process, batch after batch, with threads for the per-pair search;
- ``ray``: Ray tasks on a local or an existing Ray cluster (``pip install 'adapath[distributed]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from adapath.errors import InputError

EXECUTORS = ("local", "ray")


class Executor(Protocol):
    def prepare(self, graph, text, config) -> None:
        """Take the graph (KnowledgeGraph), its text index (GraphText) and the BankConfig."""

    def run(self, store, batches: list, on_result: Callable) -> None:
        """Run every batch (writing its part to ``store``); ``on_result(BatchResult)`` each."""

    def close(self) -> None:
        """Release workers and clusters this executor started."""


def make_executor(name: str, workers: int = 0, ray_address: str | None = None,
                  threads_per_worker: int = 1, pipeline: bool | None = None) -> Executor:
    """``local``: ``workers`` threads in this process (0 = every core), the next batch
    solved while this one's corridors run if ``pipeline`` (None: on the GPU). ``ray``:
    ``workers`` Ray tasks at once (0 = every CPU of the cluster), each with
    ``threads_per_worker`` threads, on the cluster at ``ray_address`` (None = a local
    cluster started here)."""
    if name == "local":
        if ray_address:
            raise InputError("--ray-address needs --executor ray")
        from adapath.bank.executors.local import LocalExecutor

        return LocalExecutor(threads=workers, pipeline=pipeline)
    if name == "ray":
        if pipeline:
            raise InputError("--pipeline needs --executor local (a Ray worker runs one batch at a time)")
        from adapath.bank.executors.ray import RayExecutor

        return RayExecutor(address=ray_address, workers=workers, threads_per_worker=threads_per_worker)
    raise InputError(f"--executor {name!r}: choose {' or '.join(EXECUTORS)}")
