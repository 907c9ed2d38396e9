"""Path-Bank construction (AdaPath §3.1): plan the batches, run them, commit them.

For every training query: text similarity -> Eq. 1 weights -> bidirectional PPR ->
corridor -> Yen's k-shortest paths (Eq. 5 costs) -> paths binned by hop, n per hop.

A build is three steps, so that any worker can run any batch:

- ``plan_batches``: the queries not yet finished, cut into batches of consecutive queries;
  a batch is named by the places of its queries, so its part's name needs no counter;
- ``BatchRunner.run_batch`` (``adapath.bank.runner``): a batch of (topic, answer) pairs -> rows; ``execute_batch``
  runs one and writes its part (what a worker does);
- ``commit``: the driver records a finished batch in the manifest (progress, stage seconds).

``build_bank`` drives them through an executor (``adapath.executors``; the bank's worker
and tasks: ``adapath.bank.worker``). Per-query
results do not depend on batch composition (PPR columns are independent) nor on which
worker ran them, so a resumed or distributed bank equals an uninterrupted local one.

Records with two topics give two pairs, as in the AdaPath reference: the *chain* pair joins
the two ends of the query's path (topic to topic through the answer) and the *direct* pair
joins the first topic and the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import adapath
from adapath.bank.config import PPR_SOLVES, BankConfig  # noqa: F401  (the build's public names)
from adapath.bank.query import TrainingQuery
from adapath.bank.runner import (  # noqa: F401  (the build's public names, kept importable here)
    STAGES,
    Batch,
    BatchResult,
    BatchRunner,
    Pair,
    execute_batch,
)
from adapath.bank.store import (
    FORMAT,
    BankStore,
    describe_mismatch,
    ids_checksum,
    queries_table,
)
from adapath.bank.worker import BankTask, bank_worker_spec
from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError, stop_if_interrupted
from adapath.executors import Executor, LocalExecutor
from adapath.retrieval.bm25 import GraphText


@dataclass
class Progress:
    total: int
    done: int
    resumed_at: int = 0  # queries already done when this run started
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))



# ------------------------------------------------------------------------ plan
def query_pairs(graph: KnowledgeGraph, query: TrainingQuery, level: str, order: int) -> list[Pair]:
    """A query's (topic, answer) pairs as internal indices: chain (if any), then direct."""
    text = query.text(level)
    if text is None:
        raise InputError(f"query {query.id}: no question text at level {level!r}")
    if not query.topic_ids:
        raise InputError(f"query {query.id}: no topic entity")
    index = graph.index_of([query.answer_id, *query.topic_ids], missing="ignore")
    if np.any(index < 0):
        raise InputError(f"query {query.id}: topic or answer id not in the graph")
    answer, topics = int(index[0]), [int(i) for i in index[1:]]
    pairs = [Pair(query.id, order, "direct", topics[0], answer, text)]
    if len(topics) > 1 and query.path_ids:
        path = graph.index_of(list(query.path_ids), missing="ignore")
        if np.all(path >= 0) and path[0] != path[-1]:
            pairs.insert(0, Pair(query.id, order, "chain", int(path[0]), int(path[-1]), text))
    return pairs


def plan_batches(graph: KnowledgeGraph, queries: list[TrainingQuery], level: str, size: int,
                 done: set[str] = frozenset()) -> list[Batch]:
    """The unfinished queries as batches of up to ``size`` consecutive queries; a batch never
    spans a finished query, so batch names (their places) never collide with a part on disk."""
    batches: list[Batch] = []
    run: list[int] = []

    def close_run() -> None:
        for i in range(0, len(run), size):
            chunk = run[i:i + size]
            pairs = [p for place in chunk for p in query_pairs(graph, queries[place], level, place)]
            batches.append(Batch(chunk[0], chunk[-1] + 1, pairs))
        run.clear()

    for place, query in enumerate(queries):
        if query.id in done:
            close_run()
        else:
            run.append(place)
    close_run()
    return batches


# ------------------------------------------------------------------------ commit
class Committer:
    """The driver's record of a build: progress and the manifest."""

    def __init__(self, store: BankStore, config: BankConfig, checksum: str, ids: list[str],
                 progress: Progress):
        self.store, self.config, self.checksum, self.ids, self.progress = store, config, checksum, ids, progress

    def commit(self, result: BatchResult) -> None:
        self.progress.done += len(result.finished)
        for stage, value in result.seconds.items():
            self.progress.seconds[stage] = self.progress.seconds.get(stage, 0.0) + value
        self.write_manifest(complete=False)

    def write_manifest(self, complete: bool) -> None:
        self.store.write_manifest({
            "format": FORMAT,
            "version": adapath.__version__,
            "parameters": self.config.signature(),
            "device": self.config.device,
            "graph_checksum": self.checksum,
            "query_ids_checksum": ids_checksum(self.ids),
            "queries_total": self.progress.total,
            "queries_done": self.progress.done,
            "complete": complete,
            "stage_seconds": {k: round(v, 4) for k, v in self.progress.seconds.items()},
        })


# ------------------------------------------------------------------------ the whole bank
def build_bank(graph: KnowledgeGraph, queries: list[TrainingQuery], out: str | Path, config: BankConfig,
               executor: Executor | None = None, graph_dir: str | Path | None = None, force: bool = False,
               on_progress: Callable[[Progress], None] | None = None,
               graph_checksum: str | None = None, text: GraphText | None = None) -> Progress:
    """Build (or resume) the bank of ``queries`` in ``out`` through ``executor`` (default:
    this process, every core). Every check runs before the disk is touched, and a build that
    fails before its first part leaves no folder behind. ``text``: the graph's BM25 index,
    when the caller already holds it (else loaded from the graph's cache or built)."""
    config.check()
    executor = executor or LocalExecutor()
    store = BankStore(Path(out))
    ids = [q.id for q in queries]
    if not ids:
        raise InputError("no training queries")
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        duplicate = next(i for i in ids if i in seen or seen.add(i))
        raise InputError(f"query id {duplicate!r} occurs twice")
    checksum = graph_checksum or graph.checksum()
    old = None if force else store.read_manifest()
    if old is not None:
        problem = describe_mismatch(store, old, config.signature(), checksum, ids)
        if problem:
            raise InputError(problem)
    if not force and old is None and store.root.exists() and any(store.root.iterdir()):
        raise InputError(f"{store.root}: exists and is not a Path-Bank; choose a new --out or pass --force")
    done = store.finished_queries() & set(ids) if old is not None else set()
    batches = plan_batches(graph, queries, config.level, config.batch, done)  # checks every query
    if text is None:
        text = GraphText.for_graph(graph, graph_dir, k1=config.bm25_k1, b=config.bm25_b)
    executor.start(bank_worker_spec(graph, text, config))  # device, cluster: may refuse before any write

    if force and store.root.exists():
        store.remove()
    fresh = not store.root.exists()
    progress = Progress(total=len(ids), done=len(done), resumed_at=len(done))
    if old is not None:
        progress.seconds.update(old.get("stage_seconds", {}))
    committer = Committer(store, config, checksum, ids, progress)
    try:
        store.create()
        store.clear_strays()
        store.write_queries(queries_table(queries))
        committer.write_manifest(complete=False)

        def on_result(_: int, result: BatchResult) -> None:  # batches commit in any order
            committer.commit(result)
            if on_progress is not None:
                on_progress(progress)
            stop_if_interrupted()  # the batch is committed: a safe point for a Ctrl-C noted meanwhile

        executor.run([BankTask(store, batch) for batch in batches], on_result)
    except BaseException:
        if fresh and not store.part_files():
            store.remove()
        raise
    store.merge(ids)
    committer.write_manifest(complete=True)
    return progress
