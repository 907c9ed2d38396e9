"""PathMind inference: retrieve the query subgraph, prioritize its entities, select the top
K over T rounds, reason over their paths with one LLM call (or extractively).

- **Retrieve**: the union of every topic's ``hops``-hop ball, whole.
- **Prioritize** (``mode``): the learned priority of every entity in it (``model``), or one
  of the paper's ablations: ``readout`` (w/o prioritization: a plain GNN retriever's score,
  the entity representation against the question), ``cumulative`` (the cumulative cost
  alone) or ``future`` (the estimated future cost alone), each from its probe head; or an
  unlearned order: ``nearest`` (nearest entities first, ties by degree) or ``random``
  (seeded random priorities).
- **Select**: :func:`adapath.methods.pathmind.select.select_entities`; a step's relation is the
  one whose triple representation carries most into the entity.
- **Paths the reasoner reads** (``paths``): ``important`` (the prioritized paths: each
  selected entity's path through the rounds that selected it), ``shortest`` (a shortest path
  from a topic to each selected entity, as GNN-RAG retrieves) or ``random`` (K seeded random
  walks from the topics inside the subgraph).
- **Reason**: one call with those paths; the reply's answer set (every name in braces, best
  first). Without an LLM the answer set is the K selected entities in priority order, whatever
  the paths. The answer is the set's first item.

The ``pathmind+walk`` variant adds AdaPath's walk scorer's vote (``gain / rank`` for its
ranked candidates, from the Path-Bank) to the learned priority, standardized over the
subgraph (:mod:`adapath.methods.pathmind.guide`): a blend of both papers' methods, not either one.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
import torch

from adapath.contract import Query, Result, path_step
from adapath.engine.graph import KnowledgeGraph
from adapath.llm import GenerationParams, Usage, prompts
from adapath.llm.base import count_tokens
from adapath.llm.parse import parse_answer_set, read_reply
from adapath.memory import keep_freed_memory
from adapath.methods.answer_type import wh_phrase
from adapath.methods.base import LLMCaller
from adapath.methods.pathmind.config import TrainConfig
from adapath.methods.pathmind.propagate import MAX_QUESTIONS, Places
from adapath.methods.pathmind.reader import Evidence, Reader, evidence_for, top_nodes
from adapath.methods.pathmind.select import Lookahead, Selection, reachable, select_entities
from adapath.methods.pathmind.train import Example, Features, encode_in_chunks
from adapath.retrieval.dense import NodeEmbeddings

MODES = ("model", "readout", "cumulative", "future", "nearest", "random")
LEARNED = MODES[:4]  # the modes that run the network
PATHS = ("important", "shortest", "random")


@dataclass
class Prioritized:
    """One question's priorities: per node (``-inf`` outside the query subgraph), the
    subgraph's mask and each node's hop depth from the nearest topic (-1 outside)."""

    priority: np.ndarray
    inside: np.ndarray
    depth: np.ndarray
    places: Places | None = None  # model mode: the nodes the network scored; per place:
    d: np.ndarray | None = None  # d(q, e), the cumulative cost
    gates: np.ndarray | None = None  # h, the triple representation's node factor
    relations: np.ndarray | None = None  # codes x hidden: W_r(q)
    look: Lookahead | None = None  # the selection's look-ahead, computed where its rounds ask


# questions prioritized side by side: each batch makes passes over the whole graph (its cosines,
# its reach bits), so 16 answer a tenth faster than 8 on 2 cores, the same answers (each
# question's values are its own)
ANSWER_BATCH = 16


class PathMind:
    def __init__(self, graph: KnowledgeGraph, model, config: TrainConfig, encoder, llm=None, graph_dir=None,
                 k: int = 3, rounds: int | None = None, mode: str = "model", rule: str = "lookahead", seed: int = 0,
                 max_prompt_tokens: int = 2048, vote=None, gain: float = 2.5, name: str = "pathmind",
                 batch: int = ANSWER_BATCH, paths: str = "important", device: str = "cpu", vote_on: str = "std",
                 reader: Reader | None = None):
        """``vote``: a :class:`~adapath.methods.pathmind.guide.MetaPathGuide` (``pathmind+walk``);
        ``vote_on``: how its vote meets the priority (:data:`~adapath.methods.pathmind.guide.VOTES`);
        ``reader``: the model's reader (``--rerank``), which reorders the priority's top
        entities before the selection (``model`` mode)."""
        self.graph, self.model, self.config, self.encoder, self.llm = graph, model, config, encoder, llm
        self.k, self.rounds, self.mode, self.rule, self.seed = k, rounds or config.hops, mode, rule, seed
        self.max_prompt_tokens, self.vote, self.gain, self.name, self.batch = max_prompt_tokens, vote, gain, name, batch
        self.path_kind, self.device, self.vote_on = paths, device, vote_on
        self.reader = reader if mode == "model" else None
        self._evidence: Evidence | None = None
        keep_freed_memory()  # each batch frees and allocates the same large arrays: keep their pages
        if self.model is not None:
            self.model.to(device)
        self.nodes, self.graph_dir = NodeEmbeddings(graph, encoder, graph_dir), graph_dir
        self._features: Features | None = None
        self._entities: torch.Tensor | None = None  # every node's entity representation, computed once

    @property
    def features(self) -> Features:
        if self._features is None:
            self._features = Features(self.graph, self.nodes, self.config.hops, device=self.device)
        return self._features

    def examples(self, queries: list[Query]) -> list[Example]:
        texts = [q.text for q in queries]
        if self.config.focus or self.reader is not None:  # with their wh-phrases: one call, batched by length together
            both = encode_in_chunks(self.encoder, texts + [wh_phrase(t) for t in texts])
            vectors, focus = both[:len(texts)], both[len(texts):]
        else:
            vectors, focus = self.encoder.encode(texts), [None] * len(queries)
        return [Example(q.id, q.text, self.graph.index_of(q.topic_ids).tolist(), [], np.asarray(v, np.float32), wh)
                for q, v, wh in zip(queries, vectors, focus)]

    # ------------------------------------------------------------------ prioritize
    def prioritize(self, examples: list[Example], queries: list[Query] | None = None) -> list[Prioritized]:
        out = [p for batch in self._batches(examples) for p in batch]
        if self.vote is not None:
            from adapath.methods.pathmind.guide import add_vote

            for p, e, guide in zip(out, examples, self.vote.guides(queries)):
                p.priority = add_vote(p.priority, p.inside, e.topics, guide.candidates if guide is not None else [],
                                      self.gain, self.vote_on)
        return out

    def _batches(self, examples: list[Example]):
        """The questions' priorities (no vote), a batch at a time."""
        wide = MAX_QUESTIONS // self.batch * self.batch  # the batches whose reach bits one pass makes
        for start in range(0, len(examples), max(wide, self.batch)):
            group = examples[start:start + max(wide, self.batch)]
            if wide > self.batch and len(group) > self.batch:
                self.features.share_reach([e.topics for e in group])
            for lo in range(0, len(group), self.batch):
                yield self._prioritize(group[lo:lo + self.batch])

    def _prioritize(self, chunk: list[Example]) -> list[Prioritized]:
        features = self.features
        if self.mode not in LEARNED:
            bits = features.reach_bits([e.topics for e in chunk])
            return [self._unlearned(e, *reach_of(bits, j)) for j, e in enumerate(chunk)]
        with torch.no_grad():
            if self._entities is None:
                self._entities = self.model.entities(features.whole)
            inputs = features.batch(chunk, entities=self._entities)
            output = self.model(inputs, probes=() if self.mode == "model" else (self.mode,))
        logits = (output.logits if self.mode == "model" else output.probes[self.mode]).cpu().numpy()
        d, gates, relations = (None if t is None else t.cpu().numpy() for t in (output.d, output.gates, output.relations))
        nodes, n = inputs.places.nodes, self.graph.num_nodes
        out = []
        for j in range(len(chunk)):
            inside, depth = reach_of(inputs.reach_bits, j)  # the question's own reach
            priority = np.full(n, -np.inf)
            priority[nodes] = logits[:, j]
            priority[~inside] = -np.inf
            if self.reader is not None:
                priority = self._read(chunk[j], priority, inside)
            out.append(Prioritized(priority, inside, depth, inputs.places, None if d is None else d[:, j],
                                   None if gates is None else gates[:, j], None if relations is None else relations[:, j]))
        return out

    def _read(self, example: Example, priority: np.ndarray, inside: np.ndarray) -> np.ndarray:
        """The priority with its top entities (the topics aside) reordered by the reader."""
        if self._evidence is None:
            self._evidence = evidence_for(self.graph, self.graph_dir, self.features)
        candidates = inside.copy()
        candidates[example.topics] = False
        top = top_nodes(priority, candidates, self.reader.top)
        x = self._evidence.features(top, priority[top], example.text, example.query, example.focus)
        return self.reader.reorder(priority, inside, top, x)

    def _unlearned(self, example: Example, inside: np.ndarray, depth: np.ndarray) -> Prioritized:
        if self.mode == "nearest":
            degree = self.graph.degree().astype(float)
            score = -depth.astype(float) + degree / (degree.max() + 1) * 0.5
        else:
            score = self._rng(example).random(len(inside))
        return Prioritized(np.where(inside, score, -np.inf), inside, depth)

    def _rng(self, example: Example, stream: int = 0) -> np.random.Generator:
        """A question's own seeded generator (the same question draws the same in any batch)."""
        return np.random.default_rng([self.seed, stream, int.from_bytes(example.id.encode()[-4:].rjust(4, b"\0"),
                                                                        "little")])

    # ------------------------------------------------------------------ select and read
    def select(self, example: Example, prioritized: Prioritized) -> Selection:
        g = self.graph
        if self.rule == "lookahead" and prioritized.look is None:  # made here, after any vote: it reads the final priorities
            prioritized.look = Lookahead(g.indptr, g.indices, prioritized.priority,
                                         reachable(prioritized.inside, example.topics), self.rounds - 1)
        return select_entities(g.indptr, g.indices, prioritized.priority, prioritized.inside, example.topics, self.k,
                               self.rounds, self.rule, prioritized.look)

    def select_all(self, examples: list[Example], prioritized: list[Prioritized],
                   threads: int | None = None) -> list[Selection]:
        """:meth:`select` of each question, on ``threads`` threads (Numba's count by default):
        the selection's kernels release the GIL, and one question's selection does not depend
        on another's."""
        threads = min(threads or numba.get_num_threads(), len(examples))
        if threads < 2:
            return [self.select(e, p) for e, p in zip(examples, prioritized)]
        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(self.select, examples, prioritized))

    def step_edge(self, head: int, tail: int, prioritized: Prioritized) -> tuple[int, bool]:
        """The edge of the step head -> tail, as (relation, stored head -> tail): among the
        edges between them, the one whose triple representation carries most into ``tail``
        (the first without a model)."""
        g = self.graph
        row = slice(int(g.indptr[tail]), int(g.indptr[tail + 1]))
        between = np.flatnonzero(np.asarray(g.indices[row]) == head) + row.start  # half-edges tail -> head
        pick = int(between[0])
        if prioritized.relations is not None and len(between) > 1:
            codes = 2 * g.rel[between].astype(np.int64) + (1 - g.fwd[between].astype(np.int64))
            at = prioritized.places.local_of[[head, tail]]
            carried = prioritized.gates[at[0]]  # the node factor at the step's start, times d for the product cost
            if self.model.cost == "product":
                carried = carried * prioritized.d[at[0]]
            weight = (prioritized.relations[codes] * carried * prioritized.gates[at[1]]).sum(1)
            pick = int(between[int(np.argmax(weight))])
        return int(g.rel[pick]), not bool(g.fwd[pick])  # the half-edge tail -> head follows the storage: stored tail -> head

    def paths(self, selection: Selection, nodes: list[int], prioritized: Prioritized,
              example: Example | None = None) -> list[list[tuple[int, int, int, bool]]]:
        """The paths the reasoner reads (``self.path_kind``) as steps (head, relation, tail,
        stored head -> tail), in walked order: for ``important`` and ``shortest`` one per
        node of ``nodes``; for ``random``, as many walks from the topics of ``example``."""
        if self.path_kind == "random" and example is not None:
            walks = self.random_walks(example, prioritized, len(nodes))
        elif self.path_kind == "shortest":
            walks = [self.shortest_walk(node, prioritized) for node in nodes]
        else:
            walks = [selection.path(node) for node in nodes]
        out = []
        for walk in walks:
            steps = []
            for head, tail in zip(walk[:-1], walk[1:]):
                relation, forward = self.step_edge(head, tail, prioritized)
                steps.append((head, relation, tail, forward))
            out.append(steps)
        return out

    def shortest_walk(self, node: int, prioritized: Prioritized) -> list[int]:
        """A shortest path from a topic to ``node`` inside the subgraph: back from the node,
        each step to its neighbour one hop nearer a topic (the smallest index among them)."""
        g, depth = self.graph, prioritized.depth
        walk = [node]
        while depth[walk[-1]] > 0:
            here = walk[-1]
            around = np.asarray(g.indices[g.indptr[here]:g.indptr[here + 1]])
            walk.append(int(around[depth[around] == depth[here] - 1].min()))
        return walk[::-1]

    def random_walks(self, example: Example, prioritized: Prioritized, count: int) -> list[list[int]]:
        """``count`` walks from the question's topics inside its subgraph, each of a length
        drawn in 1..hops and each step to a neighbour drawn uniformly (seeded per question)."""
        g, rng, inside = self.graph, self._rng(example, 1), prioritized.inside
        topics = list(dict.fromkeys(example.topics))
        out = []
        for _ in range(count):
            walk = [topics[int(rng.integers(len(topics)))]]
            for _ in range(int(rng.integers(1, self.config.hops + 1))):
                around = np.asarray(g.indices[g.indptr[walk[-1]]:g.indptr[walk[-1] + 1]])
                around = around[inside[around]]
                if not len(around):
                    break
                walk.append(int(around[rng.integers(len(around))]))
            if len(walk) > 1:
                out.append(walk)
        return out

    def named(self, paths: list[list[tuple[int, int, int, bool]]]) -> list[list[tuple[str, str, str, bool]]]:
        """Paths with names: the steps the reasoning prompt prints (``prompts.path_chain``)."""
        g = self.graph
        return [[(g.name(a), g.relation_names[r], g.name(b), forward) for a, r, b, forward in p] for p in paths]

    def answer(self, queries: list[Query]) -> list[Result]:
        g = self.graph
        examples = self.examples(queries)
        results, prompt_list, usages = [], [], [Usage() for _ in queries]
        prioritized_list = self.prioritize(examples, queries)
        selections = self.select_all(examples, prioritized_list)
        for q, ex, prioritized, selection in zip(queries, examples, prioritized_list, selections):
            local_paths = self.paths(selection, selection.final, prioritized, ex)
            names = [g.name(v) for v in selection.final]
            paths = [[path_step(int(g.node_id[a]), g.relation_names[r], int(g.node_id[b]), forward)
                      for a, r, b, forward in p] for p in local_paths]
            results.append(Result(
                q.id, q.level, names[0] if names else "", method=self.name,
                answer_source="extractive" if names else "none", paths=paths,
                explored={str(t): [int(g.node_id[v]) for v in vs] for t, vs in enumerate(selection.rounds, start=1)},
                fallback="" if self.mode == "model" else self.mode,
                extra={"answer_set": names, "prioritized": [int(g.node_id[v]) for v in selection.final],
                       "path_kind": self.path_kind}))
            if self.llm is not None:
                prompt_list.append(self.prompt(q.text, self.named(local_paths), q.options))
        if self.llm is not None:
            self._reason(queries, results, prompt_list, usages)
        self.nodes.flush()
        for result, usage in zip(results, usages):
            result.usage = usage.as_dict()
        return results

    def _reason(self, queries, results, prompt_list, usages) -> None:
        replies = LLMCaller(self.llm, GenerationParams(max_tokens=64))(prompt_list, list(range(len(queries))), usages)
        for q, result, reply in zip(queries, results, replies):
            result.raw = reply
            extractive = result.extra["answer_set"]
            answers = [] if q.options else parse_answer_set(reply)
            if answers:
                result.answer, result.answer_source = answers[0], "braces"
            else:
                result.answer, result.answer_source = read_reply(reply, q.options, extractive,
                                                                 extractive[0] if extractive else "")
                answers = [result.answer] if result.answer else []
            result.extra["answer_set"] = answers

    def prompt(self, question: str, named_paths: list[list[tuple[str, str, str]]], options=()) -> str:
        """The single reasoning prompt, cut to ``max_prompt_tokens`` by dropping whole paths."""
        keep = list(named_paths)
        while True:
            text = prompts.answer_set(question, keep, tuple(options))
            if count_tokens(text) <= self.max_prompt_tokens or not keep:
                return text
            keep.pop()


def question_encoder(spec: str, backend: str = "auto"):
    """The encoder answering reads the questions (and their wh-phrases) with: the model's
    ``spec`` on the CPU, through OpenVINO where ``backend`` is ``auto`` and it is installed
    (float32: torch's vectors to 2e-7, faster on batches of questions)."""
    from adapath.retrieval.dense import make_encoder, resolve_backend

    return make_encoder(spec, backend=resolve_backend(backend, "cpu"))


def reach_of(reach_bits: list[np.ndarray], j: int) -> tuple[np.ndarray, np.ndarray]:
    """Question j's subgraph mask and hop depth per node (-1 outside) from the reach bits of
    0..hops steps: a node reached at step t is in every later reach, so its depth is hops + 1
    less the number of reaches that hold it (one count instead of a mask per step)."""
    count = (reach_bits[0] >> j) & 1
    for bits in reach_bits[1:]:
        count += (bits >> j) & 1
    inside = count > 0
    return inside, np.where(inside, len(reach_bits) - count, -1)
