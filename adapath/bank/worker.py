"""The bank build as a workload of ``adapath.executors``: its worker, its tasks, its spec.

A worker is a ``BatchRunner`` made from the graph's and the BM25 index's arrays; a task is a
batch and the bank it writes its part to; its result is the ``BatchResult`` the driver
commits. The worker is a ``StagedWorker``: a batch's text, weights and PPR solve, then its
corridors, paths and part, so the local executor can solve the next batch meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapath.bank.runner import (
    BankConfig,
    Batch,
    BatchResult,
    BatchRunner,
    SolvedBatch,
    execute_batch,
    finish_batch,
    solve_batch,
)
from adapath.bank.store import BankStore
from adapath.engine.graph import KnowledgeGraph
from adapath.executors import WorkerSpec
from adapath.retrieval.bm25 import GraphText

TASK_NAME = "run_bank_batch"


@dataclass(frozen=True)
class BankTask:
    store: BankStore
    batch: Batch

    @property
    def name(self) -> str:
        """The batch's name (its part's), as messages name a task."""
        return self.batch.name


class BankWorker:
    def __init__(self, runner: BatchRunner):
        self.runner = runner

    def run(self, task: BankTask) -> BatchResult:
        return execute_batch(self.runner, task.store, task.batch)

    def begin(self, task: BankTask) -> tuple[BankStore, SolvedBatch]:
        return task.store, solve_batch(self.runner, task.batch)

    def end(self, begun: tuple[BankStore, SolvedBatch]) -> BatchResult:
        store, solved = begun
        return finish_batch(self.runner, store, solved)


def set_numba_threads(threads: int) -> int:
    """Numba's thread count for this process, capped by its pool size; returns it."""
    import numba

    threads = max(1, min(threads, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(threads)
    return threads


def make_bank_worker(arrays: dict, config: BankConfig, threads: int) -> BankWorker:
    """A worker for the build of ``config`` over the shipped graph and text index; Numba's
    PPR and the per-pair stage use ``threads`` CPUs."""
    set_numba_threads(threads)
    graph = KnowledgeGraph.from_arrays(arrays["graph"])
    text = GraphText.from_arrays(arrays["text"])
    return BankWorker(BatchRunner(graph, text, config, threads=threads))


def bank_worker_spec(graph: KnowledgeGraph, text: GraphText, config: BankConfig) -> WorkerSpec:
    return WorkerSpec(TASK_NAME, make_bank_worker, config,
                      arrays={"graph": graph.to_arrays(), "text": text.to_arrays()},
                      gpus=1 if config.device == "cuda" else 0)
