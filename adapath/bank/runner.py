"""Running one batch of a Path-Bank build: the batch runner and what a worker does.

A batch of (topic, answer) pairs -> text similarity -> Eq. 1 weights -> bidirectional PPR
-> corridor -> path search -> rows. ``execute_batch`` runs one batch and writes its part.
This module holds what every executor needs and imports neither the build driver nor the
executors, so the imports run one way: build -> executors -> runner.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np

from adapath.bank.store import BankStore, part_name
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
from adapath.engine.ppr import DENSE_PRECISIONS, ETA, TOL, PPREngine
from adapath.engine.weights import BETA, EPS, QueryWeights, query_weights
from adapath.errors import InputError
from adapath.kernels.ppr_numba import work_array
from adapath.retrieval.bm25 import GraphText

STAGES = ("text", "weights", "ppr", "corridor", "paths")
SEARCHES = ("yen", "hop-bounded")
PPR_SOLVES = ("exact", "certified")


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
    ppr: str = "exact"  # or "certified": each pair stops once its corridor's top K is final
    certify_slack: float = 0.0  # certified: a node left out may end at most (1 + slack) x the last kept
    dense_precision: str = "float32"  # or "float16": the dense PPR terms stored in half precision

    def signature(self) -> dict:
        """The parameters that change results (batch size and device do not; an exact
        solve's signature is the one banks had before the certified solve existed)."""
        d = asdict(self)
        d.pop("batch")
        d.pop("device")
        if self.ppr == "exact":
            d.pop("ppr")
            d.pop("certify_slack")
        if self.dense_precision == "float32":  # the precision banks had before float16 existed
            d.pop("dense_precision")
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
        if self.ppr not in PPR_SOLVES:
            raise InputError(f"ppr {self.ppr!r}: choose {' or '.join(PPR_SOLVES)}")
        if not self.certify_slack >= 0.0:
            raise InputError(f"certify slack {self.certify_slack}: must be at least 0")
        if self.dense_precision not in DENSE_PRECISIONS:
            raise InputError(f"dense precision {self.dense_precision!r}: choose {' or '.join(DENSE_PRECISIONS)}")
        if self.dense_precision == "float16" and self.device != "cpu":
            raise InputError("dense precision float16 runs on the CPU only (--device cpu)")
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
class Solved:
    """A batch after its PPR solve: what ``BatchRunner.finish`` needs."""

    pairs: list[Pair]
    weights: QueryWeights
    cols: np.ndarray  # each pair's weight column
    rho: np.ndarray  # N x len(pairs), columns contiguous
    order: np.ndarray  # len(pairs) x T: each pair's best nodes by rho
    arrays: dict | None = None  # where rho and order live; the runner's again once finished


class BatchRunner:
    def __init__(self, graph: KnowledgeGraph, text: GraphText, config: BankConfig, threads: int = 1):
        """``threads`` run the per-pair corridor and path search (their kernels release the
        GIL); results do not depend on it."""
        self.graph, self.text, self.config, self.threads = graph, text, config, max(1, threads)
        self.ppr = PPREngine(graph, device=config.device, eta=config.eta, tol=config.tol,
                             dense_precision=config.dense_precision)
        self._local = threading.local()
        # arrays for the rankings of batches in flight (one, or two when pipelined), reused
        # by later batches: a batch's rho is several times the size of its ranking work
        self._spare_arrays: list[dict] = []
        self._spare_lock = threading.Lock()

    def run_batch(self, pairs: list[Pair], seconds: dict[str, float]) -> list[dict]:
        """Paths of a batch of pairs, as row dicts; adds stage times to ``seconds``."""
        return self.finish(self.solve(pairs, seconds), seconds)

    def solve(self, pairs: list[Pair], seconds: dict[str, float]) -> Solved:
        """A batch's first half: text similarity, weights and the ranked PPR solve (on the
        GPU when the device is cuda). A pipelined executor runs it for the next batch while
        ``finish`` runs this one's corridors."""
        c = self.config
        clock = time.perf_counter()
        texts = sorted({p.text for p in pairs})
        column = {t: i for i, t in enumerate(texts)}
        with self._spare_lock:
            arrays = self._spare_arrays.pop() if self._spare_arrays else {}
        # s_node and b go into this batch's arrays, whose pages later batches reuse
        shape = (self.graph.num_nodes, len(texts))
        s_node, s_rel = self.text.similarity(texts, node_out=work_array(arrays, "s_node", shape, np.float32))
        seconds["text"] += time.perf_counter() - clock

        clock = time.perf_counter()
        weights = query_weights(s_node, s_rel, beta=c.beta, eps=c.eps, out=work_array(arrays, "b", shape))  # a column per text
        cols = np.array([column[p.text] for p in pairs])
        seconds["weights"] += time.perf_counter() - clock

        clock = time.perf_counter()
        topics, answers = [p.topic for p in pairs], [p.answer for p in pairs]
        top = self._corridor_builder().ranked_size(self.graph.num_nodes)
        if c.ppr == "certified":
            # certify the first rung only: almost every corridor stops there
            ranking = self.ppr.ranked(weights, topics, answers, cols, ladder=c.ladder[:1],
                                      slack=c.certify_slack, top=top, out=arrays)
        else:
            ranking = self.ppr.ranked(weights, topics, answers, cols, top=top, out=arrays)
        seconds["ppr"] += time.perf_counter() - clock
        return Solved(pairs, weights, cols, ranking.rho, ranking.order, arrays)

    def finish(self, solved: Solved, seconds: dict[str, float]) -> list[dict]:
        """A batch's second half: corridors, path search and rows."""
        c = self.config
        pairs, weights, cols = solved.pairs, solved.weights, solved.cols
        rhos = [solved.rho[:, j] for j in range(len(pairs))]
        orders = [solved.order[j] for j in range(len(pairs))]
        corridors: list = [None] * len(pairs)
        if c.ppr == "certified":
            # a pair whose corridor climbs the ladder (or falls back to the bounded search,
            # which ranks by rho) is solved again, certified at every rung
            def corridor(j: int):
                clock = time.perf_counter()
                built = self._corridor_builder().build(rhos[j], pairs[j].topic, pairs[j].answer, orders[j])
                return built, time.perf_counter() - clock

            built = self._map(corridor, len(pairs))
            corridors = [cor for cor, _ in built]
            seconds["corridor"] += sum(s for _, s in built)  # per pair, as in _pair_rows
            climbed = [j for j, cor in enumerate(corridors)
                       if cor.k != c.ladder[0] and cor.fallback != "unreachable"]
            if climbed:
                clock = time.perf_counter()
                again = self.ppr.ranked(weights, [pairs[j].topic for j in climbed],
                                        [pairs[j].answer for j in climbed], cols[climbed], ladder=c.ladder,
                                        slack=c.certify_slack, top=solved.order.shape[1])
                for i, j in enumerate(climbed):
                    rhos[j], orders[j] = again.rho[:, i], again.order[i]
                    corridors[j] = None
                seconds["ppr"] += time.perf_counter() - clock

        def one(j: int) -> tuple[list[dict], float, float]:
            return self._pair_rows(pairs[j], weights.a[:, cols[j]], weights.b[:, cols[j]], rhos[j], orders[j],
                                   corridors[j])

        outputs = self._map(one, len(pairs))
        rows = []
        for pair_rows, corridor_s, paths_s in outputs:
            rows += pair_rows
            seconds["corridor"] += corridor_s
            seconds["paths"] += paths_s
        if solved.arrays is not None:  # this batch is done with its rho and ranking
            arrays, solved.arrays, solved.rho, solved.order = solved.arrays, None, None, None
            with self._spare_lock:
                self._spare_arrays.append(arrays)
        return rows

    def _map(self, work, count: int) -> list:
        """``work(j)`` for j in range(count), on the runner's threads."""
        if self.threads > 1 and count > 1:
            with ThreadPoolExecutor(max_workers=self.threads) as pool:
                return list(pool.map(work, range(count)))
        return [work(j) for j in range(count)]

    def _corridor_builder(self) -> CorridorBuilder:
        """One builder per thread: a builder keeps a scratch array."""
        builder = getattr(self._local, "corridors", None)
        if builder is None:
            builder = self._local.corridors = CorridorBuilder(self.graph, self.config.ladder, self.config.max_hop)
        return builder

    def _pair_rows(self, pair: Pair, a: np.ndarray, b: np.ndarray, rho: np.ndarray, order: np.ndarray,
                   corridor=None):
        """Corridor (unless given), path search and rows of one pair; its corridor and path
        seconds."""
        g, c = self.graph, self.config
        corridors = self._corridor_builder()
        clock = time.perf_counter()
        if corridor is None:
            corridor = corridors.build(rho, pair.topic, pair.answer, order)
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
    return finish_batch(runner, store, solve_batch(runner, batch))


@dataclass
class SolvedBatch:
    """A batch whose first half has run (``solve_batch``)."""

    batch: Batch
    solved: Solved
    seconds: dict[str, float]
    started: float  # wall clock (time.time)


def solve_batch(runner: BatchRunner, batch: Batch) -> SolvedBatch:
    """A batch's text, weights and PPR solve (``BatchRunner.solve``)."""
    started = time.time()
    seconds = dict.fromkeys(STAGES, 0.0)
    return SolvedBatch(batch, runner.solve(batch.pairs, seconds), seconds, started)


def finish_batch(runner: BatchRunner, store: BankStore, part: SolvedBatch) -> BatchResult:
    """A solved batch's corridors and paths, its part written."""
    rows = runner.finish(part.solved, part.seconds)
    finished = part.batch.query_ids
    store.write_part(part.batch.name, rows, finished)
    return BatchResult(part.batch.name, finished, len(rows), part.seconds, part.started, time.time())
