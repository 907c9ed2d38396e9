"""AdaPath inference (AdaPath §3.2): Path-Bank retrieval, control signals, meta-path guided
traversal with an LLM (or embedding) frontier scorer, and answering from the paths.

A batch of queries advances together: the control-signal prompts of the batch, then the
frontier prompts of each depth, then the answer prompts each go to the backend as one
batch. Inference reads only a query's id, its question text and its topic ids: no gold
field (triplets, path ids, answers) reaches a prompt or a scorer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from adapath.bank.index import BankIndex
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.engine.traverse import Candidate, Group, TraversalState, metapath_codes, reach
from adapath.errors import InputError
from adapath.llm import GenerationParams, LLMBackend, Usage, prompts
from adapath.llm.parse import parse_choice, parse_control, read_answer, read_option
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, Param, Query, Result
from adapath.retrieval.bm25 import GraphText
from adapath.retrieval.dense import NodeEmbeddings


@dataclass
class AdaPathConfig:
    narrow: int = 5  # top M per candidate group by cosine
    beam: int = 3  # next-frontier width
    max_depth: int = 3
    max_metapaths: int = 3  # surviving meta-paths walked per query
    prefilter: int = 50  # BM25 cap on a candidate group before embedding narrowing
    max_triplets: int = 30
    use_metapath: bool = True  # False: free BFS with the same scorer ("w/o meta-path")
    llm_plan: bool = False  # the LLM proposes the meta-paths ("w/o Path-Bank")
    params: GenerationParams = field(default_factory=lambda: GenerationParams(max_tokens=64))


class AdaPath:
    name = "adapath"

    def __init__(self, graph: KnowledgeGraph, bank: BankIndex, encoder, llm: LLMBackend | None = None,
                 config: AdaPathConfig | None = None, graph_dir=None):
        self.graph, self.bank, self.encoder, self.llm = graph, bank, encoder, llm
        self.config = config or AdaPathConfig()
        self.text = GraphText.for_graph(graph, graph_dir, b=0.0)
        self.nodes = NodeEmbeddings(graph, encoder, graph_dir)
        self.answer_types = list(graph.type_names)
        self._generate = LLMCaller(llm, self.config.params)

    # ------------------------------------------------------------------ the batch
    def answer(self, queries: list[Query]) -> list[Result]:
        g, c = self.graph, self.config
        n = len(queries)
        usages = [Usage() for _ in queries]
        topics = [int(g.index_of(q.topic_ids[:1])[0]) for q in queries]
        topic_types = [g.type_name(t) for t in topics]
        texts = [q.text for q in queries]
        embeddings = self.encoder.encode(texts)
        retrieved = self.bank.retrieve(embeddings, texts, topic_types)

        # control signals: one LLM prompt per query, or the vote of retrieved queries
        control = [dict(zip(("answer_type", "hops"), self.bank.vote(r)), source="vote") for r in retrieved]
        if self.llm is not None:
            replies = self._generate([prompts.control(t, self.answer_types, c.max_depth) for t in texts],
                                     list(range(n)), usages)
            for j, reply in enumerate(replies):
                answer_type, hops = parse_control(reply, self.answer_types, c.max_depth)
                if answer_type is not None:
                    control[j]["answer_type"] = answer_type
                if hops is not None:
                    control[j]["hops"] = hops
                control[j]["source"] = "llm" if (answer_type, hops) != (None, None) else "vote"

        # meta-paths: pooled from the bank (or planned by the LLM), filtered, realizable
        if c.llm_plan and self.llm is not None:
            relations = list(g.relation_names)
            replies = self._generate([prompts.plan(t, tt, relations, self.answer_types, c.max_depth)
                                      for t, tt in zip(texts, topic_types)], list(range(n)), usages,
                                     GenerationParams(max_tokens=160))
            candidates = [[(mp, 1.0) for mp in _parse_plans(reply)] for reply in replies]
        else:
            candidates = [[(s.metapath, s.score) for s in self.bank.pooled_metapaths(r)] for r in retrieved]
        surviving, fallback = [], []
        for j in range(n):
            kept = []
            if c.use_metapath:
                for mp, score in candidates[j]:
                    if self._consistent(mp, topic_types[j], control[j]) and self._realizable(mp, topics[j]):
                        kept.append((mp, score))
                    if len(kept) == c.max_metapaths:
                        break
            surviving.append(kept)
            fallback.append("" if kept else ("free-bfs" if c.use_metapath else "no-metapath"))

        states = []
        for j in range(n):
            codes = [metapath_codes(g, mp) for mp, _ in surviving[j]]
            depth = min(c.max_depth, int(control[j]["hops"] or c.max_depth))
            states.append(TraversalState(g, topics[j], [x for x in codes if x is not None], depth))
        node_scores = self.text.nodes.scores(texts)  # BM25 prefilter for wide groups

        while True:
            active = [j for j in range(n) if not states[j].finished]
            if not active:
                break
            batch = {}
            for j in active:
                groups = states[j].groups(prefilter=lambda nodes, j=j: node_scores[nodes, j], limit=c.prefilter)
                batch[j] = self._narrow(groups, embeddings[j])
            choices = self._choose(batch, queries, states, embeddings, usages)
            for j in active:
                considered = [cand.node for group in batch[j] for cand, _ in group]
                states[j].advance(choices[j], considered)

        results = self._answers(queries, states, control, embeddings, usages)
        self.nodes.flush()
        for j, result in enumerate(results):
            result.metapaths = [{"metapath": str(mp), "score": round(float(s), 6)} for mp, s in surviving[j]]
            result.extra["retrieved"] = [{"id": self.bank.ids[r.index], "similarity": round(r.similarity, 6)}
                                         for r in retrieved[j]]
            result.control, result.fallback, result.usage = control[j], fallback[j], usages[j].as_dict()
            result.explored = {str(d): [int(g.node_id[v]) for v in nodes]
                               for d, nodes in sorted(states[j].explored.items())}
        return results

    # ------------------------------------------------------------------ pieces
    def _consistent(self, mp: MetaPath, topic_type: str, control: dict) -> bool:
        if mp.types[0] != topic_type or mp.hops > self.config.max_depth:
            return False
        if control.get("answer_type") and mp.types[-1] != control["answer_type"]:
            return False
        return not (control.get("hops") and mp.hops != control["hops"])

    def _realizable(self, mp: MetaPath, topic: int) -> bool:
        return len(reach(self.graph, [topic], mp)) > 0

    def _narrow(self, groups: list[Group], query_vector: np.ndarray) -> list[list[tuple[Candidate, float]]]:
        """Each group cut to the top M candidates by cosine to the query."""
        out = []
        for group in groups:
            nodes = np.array([cand.node for cand in group.candidates], dtype=np.int64)
            if len(nodes) == 0:
                continue
            cosine = self.nodes.get(nodes) @ query_vector
            order = np.lexsort((nodes, -cosine))[: self.config.narrow]
            out.append([(group.candidates[i], float(cosine[i])) for i in order])
        return out

    def _choose(self, batch, queries, states, embeddings, usages) -> dict[int, list[tuple[Candidate, float]]]:
        """The next frontier of each active query: LLM picks (one prompt per query), else cosine."""
        beam = self.config.beam
        chosen = {}
        for j, groups in batch.items():
            flat = [item for group in groups for item in group]
            order = sorted(range(len(flat)), key=lambda i: (-flat[i][1], flat[i][0].node))
            chosen[j] = [flat[i] for i in order[:beam]]
        if self.llm is None:
            return chosen
        g = self.graph
        owners, prompt_list, flats = [], [], {}
        for j, groups in batch.items():
            flat = [item for group in groups for item in group]
            if len(flat) <= beam:
                continue  # nothing to choose
            labels = []
            for group in groups:
                cand = group[0][0]
                parent = states[j].beams[cand.beam].nodes[-1]
                labels.append((f"{g.name(parent)} -[{g.relation_names[cand.relation]}]-> "
                               f"{g.type_name(cand.node)}", [g.name(c.node) for c, _ in group]))
            state = states[j]
            relation = g.relation_names[flat[0][0].relation]
            sub = prompts.sub_query(queries[j].text, state.depth + 1, state.target_depth, relation,
                                    g.type_name(flat[0][0].node))
            owners.append(j)
            prompt_list.append(prompts.frontier(sub, labels, beam))
            flats[j] = flat
        replies = self._generate(prompt_list, owners, usages)
        for j, reply in zip(owners, replies):
            picks = parse_choice(reply, len(flats[j]))[:beam]
            if picks:
                chosen[j] = [flats[j][i] for i in picks]
        return chosen

    def _answers(self, queries, states, control, embeddings, usages) -> list[Result]:
        g, c = self.graph, self.config
        results, prompt_list, owners = [], [], []
        for j, state in enumerate(states):
            paths = state.complete
            wanted = control[j].get("answer_type")
            typed = [p for p in paths if wanted and g.type_name(p.nodes[-1]) == wanted]
            paths = typed or paths
            if paths:
                ends = np.array([p.nodes[-1] for p in paths])
                final = self.nodes.get(ends) @ embeddings[j]
                order = sorted(range(len(paths)), key=lambda i: (-final[i], -paths[i].score, paths[i].nodes))
                paths = [paths[i] for i in order]
            triples, seen = [], set()
            for p in paths:
                for a, r, b in zip(p.nodes[:-1], p.relations, p.nodes[1:]):
                    if (a, r, b) not in seen and len(triples) < c.max_triplets:
                        seen.add((a, r, b))
                        triples.append((a, r, b))
            best = g.name(paths[0].nodes[-1]) if paths else ""
            results.append(Result(
                queries[j].id, queries[j].level, best, method=self.name,
                answer_source="extractive" if best else "none",
                paths=[[[int(g.node_id[a]), g.relation_names[r], int(g.node_id[b])]
                        for a, r, b in zip(p.nodes[:-1], p.relations, p.nodes[1:])] for p in paths]))
            if self.llm is not None:
                named = [(g.name(a), g.relation_names[r], g.name(b)) for a, r, b in triples]
                prompt_list.append(prompts.answer(queries[j].text, named, queries[j].options))
                owners.append(j)
        if self.llm is not None:
            replies = self._generate(prompt_list, owners, usages)
            for j, reply in zip(owners, replies):
                result = results[j]
                result.raw = reply
                if queries[j].options:
                    result.answer, result.answer_source = read_option(reply, list(queries[j].options))
                else:
                    ends = list(dict.fromkeys(g.name(p.nodes[-1]) for p in states[j].complete))
                    result.answer, result.answer_source = read_answer(reply, ends, result.answer)
        return results


def _parse_plans(text: str) -> list[MetaPath]:
    plans = []
    for line in (text or "").splitlines():
        line = line.strip().lstrip("-*0123456789.) ").strip()
        if "-[" not in line:
            continue
        try:
            plans.append(MetaPath.parse(line))
        except (InputError, ValueError):  # an unparsable plan line is simply skipped
            continue
    return plans


def _build(context: MethodContext) -> AdaPath:
    from adapath.bank.index import BankIndex

    params = context.params
    config = AdaPathConfig(use_metapath=params.get("metapath", True), llm_plan=params.get("plan") == "llm",
                           beam=params.get("beam", 3), narrow=params.get("narrow", 5),
                           max_depth=params.get("max_depth", 3))
    if config.llm_plan and context.llm is None:
        raise InputError("plan=llm (--llm-plan) needs an LLM (--llm ...)")
    if params.get("plan") not in ("bank", "llm"):
        raise InputError(f"--param plan={params.get('plan')!r}: choose bank or llm")
    encoder = context.encoder()
    return AdaPath(context.graph, BankIndex(context.bank, encoder), encoder, context.llm, config,
                   graph_dir=context.graph_dir)


METHODS = [MethodSpec(
    "adapath", "Path-Bank meta-paths guide a typed walk from the topic; an LLM or cosine picks frontiers",
    "AdaPath (Path-Bank retrieval Eq. 6, control signals, guided traversal, §3.2)", _build,
    llm="optional", needs=("bank",),
    params=(Param("metapath", True, "follow retrieved meta-paths (false: free BFS, the w/o meta-path ablation)"),
            Param("plan", "bank", "where meta-paths come from: bank, or llm (the w/o Path-Bank ablation)"),
            Param("beam", 3, "next-frontier width"),
            Param("narrow", 5, "candidates kept per group by cosine"),
            Param("max_depth", 3, "most hops walked")),
)]
