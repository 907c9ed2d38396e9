"""Path-Bank construction (AdaPath §3.1): plan the batches, run them, commit them.

For every training query: text similarity -> Eq. 1 weights -> bidirectional PPR ->
corridor -> Yen's k-shortest paths (Eq. 5 costs) -> paths binned by hop, n per hop.

A build is three steps, so that any worker can run any batch:

- ``plan_batches``: the queries not yet finished, cut into batches of consecutive queries;
  a batch is named by the places of its queries, so its part's name needs no counter;
- ``BatchRunner.run_batch``: a batch of (topic, answer) pairs -> rows; ``execute_batch``
  runs one and writes its part (what a worker does);
- ``commit``: the driver records a finished batch in the manifest (progress, stage seconds).

``build_bank`` drives them through an executor (``adapath.bank.executors``). Per-query
results do not depend on batch composition (PPR columns are independent) nor on which
worker ran them, so a resumed or distributed bank equals an uninterrupted local one.

Records with two topics give two pairs, as in the AdaPath reference: the *chain* pair joins
the two ends of the query's path (topic to topic through the answer) and the *direct* pair
joins the first topic and the answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

import adapath
from adapath.bank.query import TrainingQuery
from adapath.bank.store import (
    FORMAT,
    BankStore,
    describe_mismatch,
    ids_checksum,
    part_name,
    queries_table,
)
from adapath.engine.corridor import LADDER, CorridorBuilder
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.paths import (
    ALPHA,
    RELATION_SEQUENCES,
    bin_by_hop,
    corridor_graph,
    hop_bounded,
    k_shortest,
)
from adapath.engine.ppr import ETA, TOL, PPREngine
from adapath.engine.weights import BETA, EPS, query_weights
from adapath.errors import InputError
from adapath.retrieval.bm25 import GraphText

STAGES = ("text", "weights", "ppr", "corridor", "paths")
SEARCHES = ("yen", "hop-bounded")


@dataclass
class BankConfig:
    level: str = "explicit"
    beta: float = BETA
    eps: float = EPS
    eta: float = ETA
    tol: float = TOL
    ladder: tuple[int, ...] = LADDER
    alpha: float = ALPHA
    per_hop: int = 5
    max_hop: int = 5
    k_paths: int = 60  # Yen's pool of node paths before binning by hop
    relation_sequences: int = RELATION_SEQUENCES  # per node path, cheapest first
    search: str = "yen"  # or "hop-bounded": the best paths of each exact hop count
    bm25_k1: float = 1.5
    bm25_b: float = 0.0  # length-agnostic, as the AdaPath reference
    batch: int = 32
    device: str = "cpu"

    def signature(self) -> dict:
        """The parameters that change results (batch size and device do not)."""
        d = asdict(self)
        d.pop("batch")
        d.pop("device")
        d["ladder"] = list(self.ladder)
        return d

    def check(self) -> None:
        """One line for the first parameter out of range."""
        if not 0.0 <= self.beta <= 1.0:
            raise InputError(f"beta {self.beta}: must lie in [0, 1]")
        if not 0.0 < self.eta < 1.0:
            raise InputError(f"eta {self.eta}: the teleport probability must lie in (0, 1)")
        if not 0.0 <= self.alpha <= 1.0:
            raise InputError(f"alpha {self.alpha}: must lie in [0, 1]")
        if not self.ladder or any(k < 1 for k in self.ladder) or list(self.ladder) != sorted(set(self.ladder)):
            raise InputError(f"ladder {','.join(map(str, self.ladder))}: give increasing corridor sizes, "
                             "each at least 1 (e.g. 150,300,500,1000)")
        for name in ("per_hop", "max_hop", "k_paths", "relation_sequences", "batch"):
            if getattr(self, name) < 1:
                raise InputError(f"{name.replace('_', '-')} must be at least 1")
        if not 0.0 < self.tol < 1.0:
            raise InputError(f"tol {self.tol}: must lie in (0, 1)")
        if self.search not in SEARCHES:
            raise InputError(f"search {self.search!r}: choose {' or '.join(SEARCHES)}")


@dataclass
class Pair:
    query_id: str
    order: int  # the query's place in the query file
    kind: str  # "direct" or "chain"
    topic: int  # internal index
    answer: int
    text: str


@dataclass
class Batch:
    start: int  # places in the query file: start..stop-1
    stop: int
    pairs: list[Pair]

    @property
    def name(self) -> str:
        return part_name(self.start, self.stop)

    @property
    def query_ids(self) -> list[str]:
        return list(dict.fromkeys(p.query_id for p in self.pairs))


@dataclass
class BatchResult:
    """What a worker reports after writing a batch's part."""

    name: str
    finished: list[str]
    rows: int
    seconds: dict[str, float]
    started: float  # wall clock (time.time) on the worker
    ended: float


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


# ------------------------------------------------------------------------ run
class BatchRunner:
    def __init__(self, graph: KnowledgeGraph, text: GraphText, config: BankConfig, threads: int = 1):
        """``threads`` run the per-pair corridor and path search (their kernels release the
        GIL); results do not depend on it."""
        self.graph, self.text, self.config, self.threads = graph, text, config, max(1, threads)
        self.ppr = PPREngine(graph, device=config.device, eta=config.eta, tol=config.tol)
        self._local = threading.local()

    def run_batch(self, pairs: list[Pair], seconds: dict[str, float]) -> list[dict]:
        """Paths of a batch of pairs, as row dicts; adds stage times to ``seconds``."""
        c = self.config
        clock = time.perf_counter()
        texts = sorted({p.text for p in pairs})
        column = {t: i for i, t in enumerate(texts)}
        s_node, s_rel = self.text.similarity(texts)
        seconds["text"] += time.perf_counter() - clock

        clock = time.perf_counter()
        weights = query_weights(s_node, s_rel, beta=c.beta, eps=c.eps)  # one column per text
        cols = np.array([column[p.text] for p in pairs])
        seconds["weights"] += time.perf_counter() - clock

        clock = time.perf_counter()
        result = self.ppr.bidirectional(weights, [p.topic for p in pairs], [p.answer for p in pairs], cols)
        seconds["ppr"] += time.perf_counter() - clock

        def one(j: int) -> tuple[list[dict], float, float]:
            return self._pair_rows(pairs[j], weights.a[:, cols[j]], weights.b[:, cols[j]],
                                   result.forward[:, j] * result.backward[:, j])

        if self.threads > 1 and len(pairs) > 1:
            with ThreadPoolExecutor(max_workers=self.threads) as pool:
                outputs = list(pool.map(one, range(len(pairs))))
        else:
            outputs = [one(j) for j in range(len(pairs))]
        rows = []
        for pair_rows, corridor_s, paths_s in outputs:
            rows += pair_rows
            seconds["corridor"] += corridor_s
            seconds["paths"] += paths_s
        return rows

    def _corridor_builder(self) -> CorridorBuilder:
        """One builder per thread: a builder keeps a scratch array."""
        builder = getattr(self._local, "corridors", None)
        if builder is None:
            builder = self._local.corridors = CorridorBuilder(self.graph, self.config.ladder, self.config.max_hop)
        return builder

    def _pair_rows(self, pair: Pair, a: np.ndarray, b: np.ndarray, rho: np.ndarray):
        """Corridor, path search and rows of one pair; its corridor and path seconds."""
        g, c = self.graph, self.config
        corridors = self._corridor_builder()
        clock = time.perf_counter()
        corridor = corridors.build(rho, pair.topic, pair.answer)
        local = corridor_graph(g, corridors, corridor, a, b, rho, c.alpha)
        corridor_s = time.perf_counter() - clock
        clock = time.perf_counter()
        if corridor.fallback == "unreachable":
            found = []
        elif c.search == "hop-bounded":
            found = hop_bounded(local, pair.topic, pair.answer, c.max_hop, c.per_hop, g,
                                relation_sequences=c.relation_sequences)
        else:
            found = k_shortest(local, pair.topic, pair.answer, c.k_paths, c.relation_sequences)
        rows = []
        for hop, paths in bin_by_hop(g, found, c.per_hop, c.max_hop).items():
            for rank, path in enumerate(paths):
                mp = path.metapath(g)
                rows.append({
                    "query_id": pair.query_id, "pair": pair.kind,
                    "topic_id": int(g.node_id[pair.topic]), "answer_id": int(g.node_id[pair.answer]),
                    "hop": hop, "rank": rank, "cost": float(path.cost),
                    "node_ids": g.node_id[path.nodes].tolist(),
                    "relations": list(mp.relations), "node_types": list(mp.types),
                    "metapath": str(mp), "corridor_k": corridor.k, "fallback": corridor.fallback,
                    "order": pair.order,
                })
        return rows, corridor_s, time.perf_counter() - clock


def execute_batch(runner: BatchRunner, store: BankStore, batch: Batch) -> BatchResult:
    """Run one batch and write its part: what a worker does."""
    started = time.time()
    seconds = dict.fromkeys(STAGES, 0.0)
    rows = runner.run_batch(batch.pairs, seconds)
    finished = batch.query_ids
    store.write_part(batch.name, rows, finished)
    return BatchResult(batch.name, finished, len(rows), seconds, started, time.time())


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
               executor=None, graph_dir: str | Path | None = None, force: bool = False,
               on_progress: Callable[[Progress], None] | None = None,
               graph_checksum: str | None = None, text: GraphText | None = None) -> Progress:
    """Build (or resume) the bank of ``queries`` in ``out`` through ``executor`` (default:
    this process, every core). Every check runs before the disk is touched, and a build that
    fails before its first part leaves no folder behind. ``text``: the graph's BM25 index,
    when the caller already holds it (else loaded from the graph's cache or built)."""
    from adapath.bank.executors.local import LocalExecutor

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
    executor.prepare(graph, text, config)  # device, cluster: may refuse before any write

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

        def on_result(result: BatchResult) -> None:
            committer.commit(result)
            if on_progress is not None:
                on_progress(progress)

        executor.run(store, batches, on_result)
    except BaseException:
        if fresh and not store.part_files():
            store.remove()
        raise
    store.merge(ids)
    committer.write_manifest(complete=True)
    return progress
