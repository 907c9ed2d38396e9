"""AdaPath's walk scorer: every walk along every surviving meta-path, weighted by the query.

For one query, each surviving meta-path ``M`` (retrieval score ``score_M``) is a lane of
``adapath.engine.walks`` from the topic. A walk's weight is the DWPC degree damping of its
edges times a potential per node it enters,

    phi(v) = exp(text * s_bm25(v) + embed * cos(v, q))

with ``s_bm25`` the node's BM25 similarity to the question min-max normalized over the
graph (Eq. 1's node term) and ``cos`` the sentence-embedding cosine of the node's text and
the question. Each lane's end masses are normalized to a distribution and the lanes mixed
with weights ``score_M / sum(score)`` (a candidate's share of the query's walk weight);
with two topics, the second topic walks one step (the junction relations the bank's
two-topic training queries show) and a candidate's share is multiplied by that walk's share
at it (the walks meet at the answer); finally a candidate's score is its share times
``exp(end * cos(v, q) + lexical * s_bm25(v) / max s_bm25 + focus * cos(v, wh(q)))``, since the
question describes its answer: rivals reached by the same walks (related entities at the last
step) share their walk mass, and what separates them is how the question's own words and
its wh-phrase ``wh(q)`` ("thiazide diuretic used", "disease involving impaired blood flow")
match each candidate's text, the BM25 taken relative to the best-matching candidate; and
times ``mentioned`` when the question names it (BioStrat-QA questions never name their
answer; they name the topic and, when explicit, the entities on the way).

What comes back per query: candidates of the walked type ranked by score, the heaviest
walks into the top ones (real edges), and per depth the nodes carrying the most walk weight
into the top candidates (``explored``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from adapath.config import setting
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.walks import (
    DAMPING,
    Lane,
    RelationLayers,
    heaviest_walks_through,
    propagate,
    sum_by_node,
    through,
)
from adapath.errors import InputError


@dataclass
class WalkConfig:
    """The walk scorer's weights; the four with help are ``--param``s of ``adapath``."""

    damping: float = setting(DAMPING, "walk: DWPC degree-damping exponent")
    text: float = 4.0  # weight of the BM25 node term in a node's potential
    embed: float = 8.0  # weight of the embedding cosine in a node's potential
    end: float = setting(6.0, "walk: weight of a candidate's cosine to the question at the last step")
    lexical: float = setting(2.0, "walk: weight of a candidate's BM25 match to the question, relative to "
                                  "the best candidate's (0: off)")
    focus: float = setting(8.0, "walk: weight of a candidate's cosine to the question's wh-phrase (0: off)")
    shorter: float = 0.5  # weight of a meta-path prefix that ends in the answer type, relative
    mentioned: float = 0.0  # factor on a candidate the question names (questions describe answers)
    answers: int = 5  # top candidates whose walks are returned
    walks_per_answer: int = 2
    explore: int = 15  # nodes per depth reported as explored

    def check(self) -> None:
        for name in ("damping", "end", "lexical", "focus"):
            if getattr(self, name) < 0:
                raise InputError(f"--param {name}={getattr(self, name)}: must be at least 0")


@dataclass
class WalkQuery:
    """What the scorer needs of one query (internal node indices and codes)."""

    topic: int
    lanes: list[tuple[tuple[int, ...], tuple[int, ...], float]]  # (relations, types, weight)
    exclude: tuple[int, ...] = ()
    junction_topic: int = -1
    junction: list[tuple[int, int, int, float]] = field(default_factory=list)  # (relation, from, to type, weight)
    question: str = ""  # the question's text: a candidate it names is not what it asks for


@dataclass
class WalkOutcome:
    candidates: list[tuple[int, float]]  # (node, score), best first
    paths: list[tuple[list[int], list[int]]]  # (nodes, relation codes), best first
    junction_paths: list[tuple[list[int], list[int]]]
    explored: dict[int, list[int]]


class WalkScorer:
    def __init__(self, graph: KnowledgeGraph, node_embeddings, config: WalkConfig | None = None):
        self.graph, self.nodes = graph, node_embeddings
        self.config = config or WalkConfig()
        self.layers = RelationLayers(graph, self.config.damping)

    def score(self, queries: list[WalkQuery], bm25: np.ndarray, vectors: np.ndarray,
              focus: np.ndarray | None = None) -> list[WalkOutcome]:
        """``bm25``: nodes x queries, min-max normalized per query; ``vectors``: question
        embeddings, one row per query; ``focus``: embeddings of what each question says of
        its answer (its wh-phrase), one row per query, or None."""
        c = self.config
        n = len(queries)
        every = None
        if hasattr(self.nodes, "cosines"):  # a complete store: the questions and wh-phrases in one pass
            both = vectors if focus is None or not c.focus else np.vstack([vectors, focus])
            every = self.nodes.cosines(both)
        known = every[:n] if every is not None else np.full((n, self.graph.num_nodes), np.nan)

        def cosine(j: int, nodes: np.ndarray) -> np.ndarray:
            """Cosine of node texts to question j: every node's from a complete store, else
            embedded only where a walk reaches."""
            if every is not None:
                return known[j, nodes]
            missing = nodes[np.isnan(known[j, nodes])]
            if len(missing):
                known[j, missing] = self.nodes.get(missing) @ vectors[j]
            return known[j, nodes]

        def focus_cosine(j: int, nodes: np.ndarray) -> np.ndarray | None:
            """Cosine of node texts to question j's wh-phrase (None without one): from the
            store's pass above when complete, else from the nodes' rows."""
            if focus is None or not c.focus:
                return None
            if every is not None:
                return every[n + j, nodes]
            return np.asarray(self.nodes.get(nodes), dtype=np.float64) @ focus[j]

        def potential(j: int, nodes: np.ndarray) -> np.ndarray:
            return np.exp(c.text * bm25[nodes, j].astype(np.float64) + c.embed * cosine(j, nodes))

        lanes, owners = [], []
        for j, q in enumerate(queries):
            for relations, types, weight in q.lanes:
                lanes.append(Lane(j, q.topic, relations, types, q.exclude))
                owners.append((j, weight, "main"))
            for relation, from_type, to_type, weight in q.junction:
                lanes.append(Lane(j, q.junction_topic, (relation,), (from_type, to_type), q.exclude))
                owners.append((j, weight, "junction"))
        propagate(self.layers, lanes, potential)
        outcomes = []
        for j, q in enumerate(queries):
            mine = [(lane, weight, kind) for lane, (o, weight, kind) in zip(lanes, owners) if o == j]
            outcomes.append(self._outcome(j, q, mine, potential, cosine, focus_cosine, bm25[:, j]))
        return outcomes

    def _outcome(self, j, query: WalkQuery, lanes, potential, cosine, focus_cosine, bm25) -> WalkOutcome:
        c = self.config
        main = [(lane, w) for lane, w, kind in lanes if kind == "main" and len(lane.end.nodes)]
        junction = [(lane, w) for lane, w, kind in lanes if kind == "junction" and len(lane.end.nodes)]
        # a candidate's share: its lane end masses, each lane normalized and weighted
        lane_weights, ends, masses = [], [], []
        for lane, weight in main:
            total = lane.end.mass.sum()
            share = weight / total if total > 0 else 0.0
            lane_weights.append(share)
            ends.append(lane.end.nodes)
            masses.append(share * lane.end.mass)
        cands, scores = sum_by_node(ends, masses)
        meet_nodes, meet_shares = self._meet(junction)
        joined = False  # the two topics' walks meet at some candidate
        if len(meet_nodes):
            at = np.searchsorted(meet_nodes, cands).clip(max=len(meet_nodes) - 1)
            met = meet_nodes[at] == cands
            joined = bool(met.any())
            if joined:
                cands, scores = cands[met], scores[met] * meet_shares[at[met]]
        if len(cands):
            scores = scores * np.exp(self._end_logit(j, cands, cosine, focus_cosine, bm25))
        order = np.lexsort((cands, -scores))
        ranked = list(zip(cands[order].tolist(), scores[order].tolist()))
        if query.question and c.mentioned != 1.0:
            head = ranked[: 20 * c.answers]  # enough to refill the top after the named ones drop
            named = {v for v, _ in head if _names(self.graph.name(v), query.question)}
            if named:
                head = [(v, s * c.mentioned if v in named else s) for v, s in head]
                ranked = sorted(head, key=lambda item: (-item[1], item[0])) + ranked[len(head):]
        top = ranked[: c.answers]
        paths: list[tuple[float, list[int], list[int]]] = []
        for v, _ in top:
            found = []
            for (lane, _weight), share in zip(main, lane_weights):
                for nodes, value in heaviest_walks_through(lane, v, self.layers, potential, c.walks_per_answer):
                    found.append((value * share, nodes, list(lane.relations)))
            found.sort(key=lambda x: (-x[0], x[1]))
            paths += [(s, nodes, rels) for s, nodes, rels in found[: c.walks_per_answer]]
        junction_paths = []
        if joined:
            for v, _ in top:
                for lane, _weight in junction:
                    if lane.end.at(v) >= 0:
                        junction_paths.append(([lane.source, v], [lane.relations[0]]))
                        break
        explored = {}
        if top:
            total = sum(s for _, s in top) or 1.0
            flows = through([lane for lane, _ in main], lane_weights, self.layers, potential,
                            {v: s / total for v, s in top})
            for depth, flow in flows.items():
                order = sorted(flow.items(), key=lambda item: (-item[1], item[0]))
                explored[depth] = sorted(v for v, _ in order[: c.explore])
        return WalkOutcome(top, [(nodes, rels) for _, nodes, rels in paths], junction_paths,
                           explored)

    def _end_logit(self, j, cands: np.ndarray, cosine, focus_cosine, bm25: np.ndarray) -> np.ndarray:
        """What the question says of its answer, per candidate: the end cosine, the BM25
        match relative to the best-matching candidate (the rivals at the last step share the
        path, so only the words of the question that single out the answer separate them),
        and the cosine to the wh-phrase."""
        c = self.config
        logit = c.end * cosine(j, cands)
        if c.lexical:
            logit = logit + c.lexical * relative(bm25[cands].astype(np.float64))
        to_focus = focus_cosine(j, cands)
        if to_focus is not None:
            logit = logit + c.focus * to_focus
        return logit

    @staticmethod
    def _meet(junction) -> tuple[np.ndarray, np.ndarray]:
        """Each node's share of the second topic's junction walks (weights summed over
        relations), as (sorted nodes, shares)."""
        ends, masses = [], []
        for lane, weight in junction:
            total = lane.end.mass.sum()
            if total <= 0:
                continue
            ends.append(lane.end.nodes)
            masses.append(weight * lane.end.mass / total)
        return sum_by_node(ends, masses)


def relative(scores: np.ndarray) -> np.ndarray:
    """Scores divided by their maximum (all 0 when none is positive)."""
    top = scores.max(initial=0.0)
    return scores / top if top > 0 else np.zeros_like(scores)


def _names(name: str, question: str) -> bool:
    """Whether the question names ``name`` (whole words, case-insensitive)."""
    if not name or name.lower() not in question.lower():  # most names: no regex to compile
        return False
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", question, flags=re.IGNORECASE) is not None
