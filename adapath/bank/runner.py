"""Running one batch of a Path-Bank build: the batch runner and what a worker does.

A batch of (topic, answer) pairs -> text similarity -> Eq. 1 weights -> bidirectional PPR
-> corridor -> path search -> rows. ``execute_batch`` runs one batch and writes its part.
This module holds what every worker needs and imports neither the build driver nor the
executors, so the imports run one way: build -> worker -> runner (and worker -> executors).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from adapath.bank.config import BankConfig
from adapath.bank.store import PART_SCHEMA, BankStore, part_name
from adapath.engine.batch_paths import FALLBACKS, BatchPaths, PairStage, PathSearch
from adapath.engine.corridor import ranked_size
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.engine.ppr import PPREngine
from adapath.engine.weights import QueryWeights, query_weights
from adapath.errors import stop_if_interrupted
from adapath.retrieval.bm25 import GraphText

STAGES = ("text", "weights", "ppr", "corridor", "paths")


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


@dataclass
class PairStageTime:
    """Where a runner's per-pair stage spent its wall time, summed over batches: inside the
    compiled call (without the GIL) and in all of it (the rest holds the GIL: the batch's
    inputs, its rows). The certified re-solve of climbing pairs is PPR and not counted."""

    pairs: int = 0
    wall: float = 0.0
    compiled: float = 0.0

    @property
    def gil_share(self) -> float:
        return (self.wall - self.compiled) / self.wall if self.wall > 0 else 0.0


class BatchRunner:
    def __init__(self, graph: KnowledgeGraph, text: GraphText, config: BankConfig, threads: int = 1):
        """``threads``: the workers of the per-pair stage (corridors, paths), one compiled call
        per batch that releases the GIL; results do not depend on it."""
        self.graph, self.text, self.config, self.threads = graph, text, config, max(1, threads)
        self.ppr = PPREngine(graph, device=config.device, eta=config.eta, tol=config.tol,
                             dense_precision=config.dense_precision)
        c = config
        self.search = PathSearch(ladder=tuple(c.ladder), max_hop=c.max_hop, alpha=c.alpha, search=c.search,
                                 k_paths=c.k_paths, per_hop=c.per_hop, relation_sequences=c.relation_sequences)
        self._stage: PairStage | None = None  # made on first use: its scratch is a few arrays of N per worker
        self._stage_lock = threading.Lock()  # one batch at a time through the stage's scratch
        self.stage_time = PairStageTime()
        self._metapaths: dict[bytes, str] = {}  # a signature's text, kept across batches
        # arrays for the rankings of batches in flight (one, or two when pipelined), reused
        # by later batches: a batch's rho is several times the size of its ranking work
        self._spare_arrays: list[dict] = []
        self._spare_lock = threading.Lock()

    def run_batch(self, pairs: list[Pair], seconds: dict[str, float]) -> pa.Table:
        """Paths of a batch of pairs, as a table of ``PART_SCHEMA``; adds stage times to ``seconds``."""
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
        s_node, s_rel = self.text.similarity(texts, node_out=self.ppr.host_array(arrays, "s_node", shape, np.float32))
        seconds["text"] += time.perf_counter() - clock

        clock = time.perf_counter()
        # a column per text; pinned on the GPU, whose solve uploads it
        b_out = self.ppr.host_array(arrays, "b", shape, staged=True)
        weights = query_weights(s_node, s_rel, beta=c.beta, eps=c.eps, out=b_out)
        cols = np.array([column[p.text] for p in pairs])
        seconds["weights"] += time.perf_counter() - clock

        clock = time.perf_counter()
        topics, answers = [p.topic for p in pairs], [p.answer for p in pairs]
        top = ranked_size(c.ladder, self.graph.num_nodes)
        if c.ppr == "certified":
            # certify the first rung only: almost every corridor stops there
            ranking = self.ppr.ranked(weights, topics, answers, cols, ladder=c.ladder[:1],
                                      slack=c.certify_slack, top=top, out=arrays)
        else:
            ranking = self.ppr.ranked(weights, topics, answers, cols, top=top, out=arrays)
        seconds["ppr"] += time.perf_counter() - clock
        return Solved(pairs, weights, cols, ranking.rho, ranking.order, arrays)

    def finish(self, solved: Solved, seconds: dict[str, float]) -> pa.Table:
        """A batch's second half: corridors, path search and rows (``paths``); the batch's
        rho and ranking arrays then go to the batches after it."""
        table = self.paths(solved, seconds)
        if solved.arrays is not None:  # this batch is done with its rho and ranking
            arrays, solved.arrays, solved.rho, solved.order = solved.arrays, None, None, None
            with self._spare_lock:
                self._spare_arrays.append(arrays)
        return table

    def paths(self, solved: Solved, seconds: dict[str, float]) -> pa.Table:
        """Every pair's corridor, path search and hop bins in one compiled call over the
        batch (``PairStage``), then the rows column by column. A certified solve ranked the
        first rung only: a pair whose corridor climbs the ladder (or falls back to the
        bounded search, which ranks by rho) is solved again, certified at every rung, and
        runs through the stage again."""
        c = self.config
        clock = time.perf_counter()
        pairs, weights, cols = solved.pairs, solved.weights, solved.cols
        topics = np.array([p.topic for p in pairs], dtype=np.int64)
        answers = np.array([p.answer for p in pairs], dtype=np.int64)
        certified = c.ppr == "certified"
        compiled = resolve = 0.0
        # the stage may wait for a CPU solve of the next batch on another thread (a pipelined build)
        with self._stage_lock, self.ppr.parallel_section():
            stage = self.pair_stage()
            start = time.perf_counter()
            found = stage.run(weights.a, weights.b, cols, topics, answers, solved.rho.T, solved.order,
                              first_rung_only=certified)
            compiled += time.perf_counter() - start
            climbed = np.flatnonzero(found.climbed)
            if len(climbed):
                start = time.perf_counter()
                again = self.ppr.ranked(weights, topics[climbed], answers[climbed], cols[climbed], ladder=c.ladder,
                                        slack=c.certify_slack, top=solved.order.shape[1])
                resolve = time.perf_counter() - start
                seconds["ppr"] += resolve
                start = time.perf_counter()
                stage.run(weights.a, weights.b, cols[climbed], topics[climbed], answers[climbed], again.rho.T,
                          again.order, into=found, slots=climbed)
                compiled += time.perf_counter() - start
        seconds["corridor"] += float(found.seconds[:, 0].sum())  # thread-seconds, per pair
        rows = time.perf_counter()
        table = self._table(pairs, topics, answers, found)
        seconds["paths"] += float(found.seconds[:, 1].sum()) + time.perf_counter() - rows
        wall = time.perf_counter() - clock - resolve
        timing = self.stage_time
        timing.pairs += len(pairs)
        timing.wall += wall
        timing.compiled += compiled
        return table

    def pair_stage(self) -> PairStage:
        """The runner's per-pair stage (made on first use, then kept with its scratch)."""
        if self._stage is None:
            self._stage = PairStage(self.graph, self.search, workers=self.threads)
        return self._stage

    def _table(self, pairs: list[Pair], topics: np.ndarray, answers: np.ndarray, found: BatchPaths) -> pa.Table:
        """The batch's rows, column by column (``PART_SCHEMA``), from the stage's arrays."""
        g = self.graph
        flat = found.flat()
        pair = pa.array(flat["pair"])
        nodes, relations = flat["nodes"], flat["relations"]
        node_offsets = pa.array(flat["node_offsets"].astype(np.int32))
        relation_offsets = pa.array(flat["relation_offsets"].astype(np.int32))
        node_types = g.node_type[nodes].astype(np.int64)

        def per_pair(values, kind):
            return pa.array(values, kind).take(pair)

        columns = {
            "query_id": per_pair([p.query_id for p in pairs], pa.string()),
            "pair": per_pair([p.kind for p in pairs], pa.string()),
            "topic_id": pa.array(g.node_id[topics][flat["pair"]], pa.int64()),
            "answer_id": pa.array(g.node_id[answers][flat["pair"]], pa.int64()),
            "hop": pa.array(flat["hop"].astype(np.int32)),
            "rank": pa.array(flat["rank"].astype(np.int32)),
            "cost": pa.array(flat["cost"], pa.float64()),
            "node_ids": pa.ListArray.from_arrays(node_offsets, pa.array(g.node_id[nodes], pa.int64())),
            "relations": pa.ListArray.from_arrays(
                relation_offsets, pa.array(g.relation_names, pa.string()).take(pa.array(relations))),
            "node_types": pa.ListArray.from_arrays(
                node_offsets, pa.array(g.type_names, pa.string()).take(pa.array(node_types))),
            "metapath": self._metapath_texts(flat["hop"], node_types, relations),
            "corridor_k": pa.array(found.corridor_k[flat["pair"]].astype(np.int32)),
            "fallback": pa.array(FALLBACKS, pa.string()).take(pa.array(found.fallback[flat["pair"]])),
            "order": per_pair([p.order for p in pairs], pa.int64()),
        }
        return pa.Table.from_arrays([columns[f.name] for f in PART_SCHEMA], schema=PART_SCHEMA)

    def _metapath_texts(self, hop: np.ndarray, node_types: np.ndarray, relations: np.ndarray) -> pa.Array:
        """Each row's meta-path text: rows as (type, relation, type, ...) codes, each distinct
        one written once (``str(MetaPath)``, as ever) and kept for the batches after."""
        if len(hop) == 0:
            return pa.array([], pa.string())
        width = 2 * self.config.max_hop + 1
        codes = np.full((len(hop), width), -1, dtype=np.int64)
        node_row = np.repeat(np.arange(len(hop)), hop + 1)
        node_place = np.arange(len(node_row)) - np.repeat(np.cumsum(hop + 1) - (hop + 1), hop + 1)
        codes[node_row, 2 * node_place] = node_types
        relation_row = np.repeat(np.arange(len(hop)), hop)
        relation_place = np.arange(len(relation_row)) - np.repeat(np.cumsum(hop) - hop, hop)
        codes[relation_row, 2 * relation_place + 1] = relations
        distinct, inverse = np.unique(codes, axis=0, return_inverse=True)
        texts = []
        types, names = self.graph.type_names, self.graph.relation_names
        for row in distinct:
            key = row.tobytes()
            text = self._metapaths.get(key)
            if text is None:
                used = row[row >= 0].tolist()
                text = self._metapaths[key] = str(MetaPath(tuple(types[t] for t in used[0::2]),
                                                           tuple(names[r] for r in used[1::2])))
            texts.append(text)
        return pa.array(texts, pa.string()).take(pa.array(inverse.ravel()))


def execute_batch(runner: BatchRunner, store: BankStore, batch: Batch) -> BatchResult:
    """Run one batch and write its part: what a worker does."""
    solved = solve_batch(runner, batch)
    stop_if_interrupted()  # between the PPR solve and the corridors' kernels
    return finish_batch(runner, store, solved)


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
    return BatchResult(part.batch.name, finished, rows.num_rows, part.seconds, part.started, time.time())
