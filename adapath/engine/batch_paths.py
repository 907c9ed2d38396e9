"""A batch's corridors and paths in one compiled call, without the GIL.

``PairStage.run`` takes a batch's weights and ranked PPR solve (each pair's rho and its best
nodes) and returns every pair's binned paths as arrays (``BatchPaths``): the per-pair path
of ``adapath.engine.corridor`` and ``adapath.engine.paths`` (corridor with the K ladder,
Eq. 5 corridor graph, Yen or the hop-bounded search, relation sequences, hop bins) for all
pairs at once, in parallel over pairs (``adapath.kernels.pair_stage``). Python handles the
batch, never a pair, so threads do not queue for the GIL, and the result is the same for
any thread count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from adapath.engine.corridor import LADDER
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.paths import ALPHA, HOP_POOL, RELATION_SEQUENCES
from adapath.kernels.pair_stage import FALLBACKS, pair_stage

SEARCHES = ("yen", "hop-bounded")


@dataclass(frozen=True)
class PathSearch:
    """What the per-pair stage does for each pair (the bank's parameters of it)."""

    ladder: tuple[int, ...] = LADDER
    max_hop: int = 5
    alpha: float = ALPHA
    search: str = "yen"  # or "hop-bounded"
    k_paths: int = 60  # Yen's node paths before binning
    per_hop: int = 5
    relation_sequences: int = RELATION_SEQUENCES
    pool: int = HOP_POOL  # hop-bounded: walks per hop count at most


@dataclass
class BatchPaths:
    """Every pair's binned paths, one slot per pair, rows hop by hop then by rank."""

    count: np.ndarray  # P: rows of each pair
    hop: np.ndarray  # P x per_hop*max_hop
    rank: np.ndarray
    cost: np.ndarray
    nodes: np.ndarray  # P x rows x max_hop+1: global node indices (the first hop+1 used)
    relations: np.ndarray  # P x rows x max_hop: relation codes (the first hop used)
    corridor_k: np.ndarray  # P: the rung used (0: bounded search or unreachable)
    fallback: np.ndarray  # P: code into FALLBACKS
    climbed: np.ndarray  # P: the corridor left the first rung (only when asked to stop there)
    seconds: np.ndarray  # P x 2: thread-seconds in the corridor and in the search

    @classmethod
    def empty(cls, pairs: int, search: PathSearch) -> BatchPaths:
        rows = search.per_hop * search.max_hop
        return cls(np.zeros(pairs, dtype=np.int64), np.zeros((pairs, rows), dtype=np.int64),
                   np.zeros((pairs, rows), dtype=np.int64), np.zeros((pairs, rows)),
                   np.zeros((pairs, rows, search.max_hop + 1), dtype=np.int64),
                   np.zeros((pairs, rows, search.max_hop), dtype=np.int64),
                   np.zeros(pairs, dtype=np.int64), np.zeros(pairs, dtype=np.int64),
                   np.zeros(pairs, dtype=np.bool_), np.zeros((pairs, 2)))

    def fallback_names(self) -> list[str]:
        return [FALLBACKS[f] for f in self.fallback.tolist()]

    def flat(self) -> dict[str, np.ndarray]:
        """The rows as flat columns: ``pair`` (each row's slot), ``hop``, ``rank``, ``cost``,
        ``node_offsets`` and ``nodes`` (row r: nodes[node_offsets[r]:node_offsets[r + 1]]),
        ``relation_offsets`` and ``relations``."""
        used = np.arange(self.hop.shape[1])[None, :] < self.count[:, None]
        pair = np.nonzero(used)[0]
        hop = self.hop[used]
        width = self.nodes.shape[2]
        node_offsets = np.zeros(len(hop) + 1, dtype=np.int64)
        np.cumsum(hop + 1, out=node_offsets[1:])
        relation_offsets = node_offsets - np.arange(len(hop) + 1)
        nodes = self.nodes[used][np.arange(width)[None, :] < (hop + 1)[:, None]]
        relations = self.relations[used][np.arange(width - 1)[None, :] < hop[:, None]]
        return {"pair": pair, "hop": hop, "rank": self.rank[used], "cost": self.cost[used],
                "node_offsets": node_offsets, "nodes": nodes, "relation_offsets": relation_offsets,
                "relations": relations}


def name_keys(names) -> np.ndarray:
    """Each code's first code of the same name: signatures compare names, not codes."""
    first: dict[str, int] = {}
    return np.array([first.setdefault(name, code) for code, name in enumerate(names)], dtype=np.int64)


class PairStage:
    """The per-pair stage of one graph and one search, with its per-worker scratch (a node
    map and BFS arrays of the graph's size) allocated once and reused by every batch.
    Run one batch at a time: the scratch is shared by its calls."""

    def __init__(self, graph: KnowledgeGraph, search: PathSearch, workers: int = 1):
        if search.search not in SEARCHES:
            raise ValueError(f"search {search.search!r}: choose {' or '.join(SEARCHES)}")
        self.graph, self.search = graph, search
        self.workers = max(1, min(workers, numba.config.NUMBA_NUM_THREADS))
        g = graph
        self._graph = (np.asarray(g.indptr), np.asarray(g.indices), np.asarray(g.rel), np.asarray(g.node_type),
                       name_keys(g.type_names), name_keys(g.relation_names))
        n = g.num_nodes
        self._scratch = (np.full((self.workers, n), -1, dtype=np.int64),
                         np.empty((self.workers, n), dtype=np.int32), np.empty((self.workers, n), dtype=np.int32),
                         np.empty((self.workers, n), dtype=np.int64), np.empty((self.workers, n), dtype=np.int64))
        s = search
        self._search = (np.asarray(s.ladder, dtype=np.int64), int(s.max_hop), float(s.alpha),
                        s.search == "hop-bounded", int(s.k_paths), int(s.pool), int(s.per_hop),
                        int(s.relation_sequences))

    def run(self, a: np.ndarray, b: np.ndarray, columns, topics, answers, rho: np.ndarray, order: np.ndarray,
            first_rung_only: bool = False, into: BatchPaths | None = None, slots=None) -> BatchPaths:
        """Pair i: topic ``topics[i]``, answer ``answers[i]``, weight column ``columns[i]`` of
        ``a`` (R x B) and ``b`` (N x B), rho ``rho[i]`` (P x N) and its best nodes
        ``order[i]`` (P x T, rank order). ``first_rung_only``: a pair whose corridor climbs
        the ladder gets no paths and is flagged ``climbed`` (its solve was certified for the
        first rung only). ``into`` and ``slots``: write pair i into slot ``slots[i]`` of an
        earlier result (default: a new one, pair i in slot i)."""
        topics = np.ascontiguousarray(topics, dtype=np.int64)
        pairs = len(topics)
        into = BatchPaths.empty(pairs, self.search) if into is None else into
        slots = np.arange(pairs, dtype=np.int64) if slots is None else np.ascontiguousarray(slots, dtype=np.int64)
        if pairs == 0:
            return into
        # float64 throughout, as the per-pair path computes the costs
        weights = (np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64),
                   np.ascontiguousarray(columns, dtype=np.int64))
        ranking = (topics, np.ascontiguousarray(answers, dtype=np.int64),
                   np.ascontiguousarray(rho, dtype=np.float64), np.ascontiguousarray(order, dtype=np.int64), slots)
        out = (into.count, into.hop, into.rank, into.cost, into.nodes, into.relations, into.corridor_k,
               into.fallback, into.climbed, into.seconds)
        before = numba.get_num_threads()  # a per-thread setting: this call's, then back
        numba.set_num_threads(self.workers)
        try:
            pair_stage(self._graph, weights, ranking, (*self._search, bool(first_rung_only)), self._scratch, out,
                       self.workers)
        finally:
            numba.set_num_threads(before)
        return into
