"""PathMind inference: prioritize entities in the query subgraph, extract reasoning paths,
reason with one LLM call (or extractively: the best prioritized entity).

Selection: at each round t = 1..T the top K entities (by priority) among those t hops from
the topic in the subgraph are explored; the final K entities are the best of all rounds.
Paths: cheapest paths from the topic under the learned edge costs (Dijkstra), the cheapest
relation between each pair. Ablations: ``shortest`` (no learned priority: nearest entities,
ties by degree, unit-cost shortest paths) and ``random`` (seeded random entities).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import dijkstra

from adapath.engine.graph import KnowledgeGraph
from adapath.llm import GenerationParams, Usage, prompts
from adapath.llm.base import count_tokens
from adapath.llm.parse import read_answer, read_option
from adapath.methods.base import Result
from adapath.methods.pathmind.train import (
    Example,
    Featurizer,
    TrainConfig,
    make_builder,
    make_guide,
)
from adapath.retrieval.dense import NodeEmbeddings

MODES = ("model", "shortest", "random")


class PathMind:
    name = "pathmind"

    def __init__(self, graph: KnowledgeGraph, model, config: TrainConfig, encoder, llm=None, graph_dir=None,
                 k: int = 3, mode: str = "model", seed: int = 0, max_prompt_tokens: int = 2048, bank=None):
        """The query subgraph is cut as ``config.subgraph`` says (the ``metapath`` cut needs ``bank``)."""
        self.graph, self.model, self.config, self.encoder, self.llm = graph, model, config, encoder, llm
        self.k, self.mode, self.seed, self.max_prompt_tokens = k, mode, seed, max_prompt_tokens
        self.builder = make_builder(graph, config.hops, config.budget, config.subgraph, graph_dir)
        self.guide = make_guide(graph, config.subgraph, bank, encoder, graph_dir)
        self.nodes = NodeEmbeddings(graph, encoder, graph_dir)
        self.featurize = Featurizer(graph, self.nodes)

    def examples(self, queries) -> list[Example]:
        topics = [self.graph.index_of(q.topic_ids).tolist() for q in queries]
        vectors = self.encoder.encode([q.text for q in queries])
        guides = self.guide.guides(queries) if self.guide is not None else None
        subgraphs = self.builder.build_many(topics, [q.text for q in queries], guides)
        return [Example(q.id, q.text, t, [], s, v) for q, t, s, v in zip(queries, topics, subgraphs, vectors)]

    def prioritize(self, example: Example) -> tuple[np.ndarray, np.ndarray]:
        """(priority per local node, cost per local half-edge)."""
        return self.prioritize_many([example])[0]

    def prioritize_many(self, examples: list[Example], batch: int = 16) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`prioritize` of each example; the model scores ``batch`` subgraphs per forward pass."""
        if self.mode != "model":
            return [self._unlearned(ex) for ex in examples]
        out = []
        with torch.no_grad():
            for lo in range(0, len(examples), batch):
                chunk = examples[lo:lo + batch]
                inputs = self.featurize.batch(chunk)
                logits, cost, _ = self.model(*inputs.inputs)
                out += [(logits[inputs.nodes_of(i)].numpy(), cost[inputs.edges_of(i)].numpy()) for i in range(len(chunk))]
        return out

    def _unlearned(self, example: Example) -> tuple[np.ndarray, np.ndarray]:
        sub = example.subgraph
        unit = np.ones(len(sub.src))
        if self.mode == "shortest":
            degree = self.graph.degree()[sub.nodes].astype(float)
            return -sub.depth.astype(float) + degree / (degree.max() + 1) * 0.5, unit
        rng = np.random.default_rng(self.seed + int.from_bytes(example.id.encode()[-4:].rjust(4, b"\0"), "little"))
        return rng.random(len(sub.nodes)), unit

    def select(self, example: Example, priority: np.ndarray) -> tuple[list[int], dict[int, list[int]]]:
        sub = example.subgraph
        explored, pool = {}, []
        for t in range(1, self.config.hops + 1):
            at = np.flatnonzero(sub.depth == t)
            top = at[np.lexsort((at, -priority[at]))][: self.k]
            explored[t] = top.tolist()
            pool += top.tolist()
        pool = sorted(set(pool), key=lambda v: (-priority[v], v))
        return pool[: self.k], explored

    def paths(self, example: Example, targets: list[int], cost: np.ndarray) -> list[list[tuple[int, int, int]]]:
        sub = example.subgraph
        n = len(sub.nodes)
        src, dst = sub.src.astype(np.int64), sub.dst.astype(np.int64)
        key = src * n + dst
        order = np.lexsort((cost, key))
        first = np.ones(len(order), dtype=bool)
        first[1:] = key[order][1:] != key[order][:-1]
        chosen = order[first]
        matrix = sp.csr_matrix((cost[chosen] + 1e-9, (src[chosen], dst[chosen])), shape=(n, n))
        relation = dict(zip(key[chosen].tolist(), sub.rel[chosen].tolist()))
        source = int(sub.topics[0])
        _, predecessors = dijkstra(matrix, indices=source, return_predecessors=True)
        out = []
        for target in targets:
            walk = [target]
            while walk[-1] != source and predecessors[walk[-1]] >= 0:
                walk.append(int(predecessors[walk[-1]]))
            if walk[-1] != source:
                continue
            walk.reverse()
            out.append([(a, relation[a * n + b], b) for a, b in zip(walk[:-1], walk[1:])])
        return out

    def answer(self, queries) -> list[Result]:
        g = self.graph
        results, prompt_list, candidates, usages = [], [], [], [Usage() for _ in queries]
        examples = self.examples(queries)
        for q, ex, (priority, cost) in zip(queries, examples, self.prioritize_many(examples)):
            chosen, explored = self.select(ex, priority)
            local_paths = self.paths(ex, chosen, cost)
            nodes = ex.subgraph.nodes
            paths = [[[int(g.node_id[nodes[a]]), g.relation_names[r], int(g.node_id[nodes[b]])] for a, r, b in p]
                     for p in local_paths]
            best = g.name(nodes[chosen[0]]) if chosen else ""
            results.append(Result(
                q.id, q.level, best, method=self.name, answer_source="extractive" if best else "none",
                paths=paths, explored={str(t): [int(g.node_id[nodes[v]]) for v in vs] for t, vs in explored.items()},
                fallback="" if self.mode == "model" else self.mode,
                extra={"prioritized": [int(g.node_id[nodes[v]]) for v in chosen]}))
            if self.llm is not None:
                prompt_list.append(self._prompt(q.text, [[(g.name(nodes[a]), g.relation_names[r], g.name(nodes[b]))
                                                          for a, r, b in p] for p in local_paths], q.options))
                candidates.append([g.name(nodes[v]) for v in chosen])
        if self.llm is not None:
            clock = time.perf_counter()
            generations = self.llm.generate(prompt_list, GenerationParams(max_tokens=64))
            seconds = time.perf_counter() - clock
            for q, result, usage, generation, names in zip(queries, results, usages, generations, candidates):
                usage.add([generation], seconds, 1.0 / len(generations))
                result.raw = generation.text
                if q.options:
                    result.answer, result.answer_source = read_option(generation.text, list(q.options))
                else:
                    result.answer, result.answer_source = read_answer(generation.text, names, result.answer)
        self.nodes.flush()
        for result, usage in zip(results, usages):
            result.usage = usage.as_dict()
        return results

    def _prompt(self, question: str, named_paths: list[list[tuple[str, str, str]]], options=()) -> str:
        """The single reasoning prompt, cut to ``max_prompt_tokens`` by dropping whole paths."""
        keep = list(named_paths)
        while True:
            triplets = [t for p in keep for t in p]
            prompt = prompts.answer(question, triplets, tuple(options))
            if count_tokens(prompt) <= self.max_prompt_tokens or not keep:
                return prompt
            keep.pop()
