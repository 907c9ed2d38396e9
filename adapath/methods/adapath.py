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

from adapath.bank.index import TOP_K, BankIndex
from adapath.contract import Query, Result
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.engine.traverse import (
    Candidate,
    Group,
    TraversalState,
    metapath_codes,
    realizable,
    typed_neighbors,
)
from adapath.engine.walks import DAMPING
from adapath.errors import InputError
from adapath.llm import GenerationParams, LLMBackend, Usage, prompts
from adapath.llm.parse import lenient_reading, parse_choice, parse_control, read_answer, read_option
from adapath.methods.answer_type import combine, wh_phrase
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, Param
from adapath.methods.level_banks import LevelBanks, own_pooled, vote_shares
from adapath.methods.walk_scorer import WalkConfig, WalkOutcome, WalkQuery, WalkScorer
from adapath.retrieval.bm25 import GraphText, minmax_columns
from adapath.retrieval.dense import NodeEmbeddings

SCORERS = ("beam", "walk")
WALK_RETRIEVE = 10  # the walk scorer weighs what it walks, so it can take a wider pool
WALK_METAPATHS = 8


@dataclass
class AdaPathConfig:
    """The paper's settings by default (the beam, meta-paths cut by the control signals);
    ``adapath answer`` (``_build``) takes the walk scorer and weighed control without an LLM."""

    narrow: int = 5  # top M per candidate group by cosine
    beam: int = 3  # next-frontier width
    max_depth: int = 3
    max_metapaths: int = 3  # surviving meta-paths walked per query
    prefilter: int = 50  # BM25 cap on a candidate group before embedding narrowing
    max_triplets: int = 30
    use_metapath: bool = True  # False: free BFS with the same scorer ("w/o meta-path")
    llm_plan: bool = False  # the LLM proposes the meta-paths ("w/o Path-Bank")
    scorer: str = "beam"  # "beam": the paper's frontier beam; "walk": every walk (walk_scorer)
    share: bool = True  # beam without an LLM: frontier slots shared among meta-paths by score
    shorter: bool = True  # keep shorter completed paths that end in the predicted answer type
    junction: bool = True  # two topics: walk from both and meet at the answer
    pool: str = "own"  # rank meta-paths by own-hop support ("own") or Eq. 6's summed similarity ("all")
    control: str = "filter"  # "filter": cut by predicted type and hops; "weigh": weigh by vote shares
    type_model: bool = True  # without an LLM: the wh-phrase answer-type model joins the vote (LevelBanks)
    walk: WalkConfig = field(default_factory=WalkConfig)
    params: GenerationParams = field(default_factory=lambda: GenerationParams(max_tokens=64))


@dataclass
class Plan:
    """What retrieval and control make of one query before any walk."""

    topics: list[int]  # internal indices, first topic first
    topic_type: str
    index: BankIndex
    retrieved: list
    control: dict
    ranked: list[tuple[MetaPath, float]]  # pooled (or planned) meta-paths, before filtering
    surviving: list[tuple[MetaPath, float]] = field(default_factory=list)
    fallback: str = ""
    junction: list[tuple[int, int, int, float]] = field(default_factory=list)  # (rel, from, to, weight)
    type_shares: dict[str, float] | None = None  # answer type -> probability, without an LLM


class AdaPath:
    name = "adapath"

    def __init__(self, graph: KnowledgeGraph, bank: BankIndex | LevelBanks, encoder, llm: LLMBackend | None = None,
                 config: AdaPathConfig | None = None, graph_dir=None):
        """``bank``: a ``LevelBanks`` (retrieval matched to each question's level, two-topic
        junction shapes) or one ``BankIndex`` (every level compared with its texts)."""
        self.graph, self.encoder, self.llm = graph, encoder, llm
        self.banks = bank if isinstance(bank, LevelBanks) else None
        self.bank = bank.default if isinstance(bank, LevelBanks) else bank
        self.config = config or AdaPathConfig()
        if self.config.scorer not in SCORERS:
            raise InputError(f"--param scorer={self.config.scorer!r}: choose from {', '.join(SCORERS)}")
        self.text = GraphText.for_graph(graph, graph_dir, b=0.0)
        self.nodes = NodeEmbeddings(graph, encoder, graph_dir)
        self.walks = WalkScorer(graph, self.nodes, self.config.walk)
        if self.config.scorer == "walk":
            self.walks.layers.build_all()
        self.answer_types = list(graph.type_names)
        self._generate = LLMCaller(llm, self.config.params)

    def index_for(self, level: str) -> BankIndex:
        return self.banks.index(level) if self.banks is not None else self.bank

    # ------------------------------------------------------------------ the batch
    def answer(self, queries: list[Query]) -> list[Result]:
        c = self.config
        usages = [Usage() for _ in queries]
        texts = [q.text for q in queries]
        embeddings = self.encoder.encode(texts)
        plans = self._plans(queries, embeddings, usages)
        if c.scorer == "walk":
            results, explored, asks = self._walk_answers(queries, plans, embeddings, usages)
        else:
            results, explored, asks = self._beam_answers(queries, plans, embeddings, usages)
        if self.llm is not None:  # every answer prompt of the batch as one backend batch
            owners = [j for j, _, _ in asks]
            for (j, _, names), reply in zip(asks, self._generate([p for _, p, _ in asks], owners, usages)):
                self._read_reply(results[j], queries[j], reply, names)
        self.nodes.flush()
        g = self.graph
        for j, result in enumerate(results):
            plan = plans[j]
            result.metapaths = [{"metapath": str(mp), "score": round(float(s), 6)} for mp, s in plan.surviving]
            result.extra["ranked_metapaths"] = [{"metapath": str(mp), "score": round(float(s), 6)}
                                                for mp, s in plan.ranked]
            result.extra["retrieved"] = [{"id": plan.index.ids[r.index], "similarity": round(r.similarity, 6)}
                                         for r in plan.retrieved]
            result.control, result.fallback, result.usage = plan.control, plan.fallback, usages[j].as_dict()
            result.explored = {str(d): [int(g.node_id[v]) for v in nodes] for d, nodes in sorted(explored[j].items())}
            result.extra["explored_edges"] = self._explored_edges(plan.topics[0], explored[j])
        return results

    def _explored_edges(self, topic: int, explored: dict[int, list[int]]) -> dict[str, list[list]]:
        """Per depth d, every edge of the graph from a node explored at d - 1 (the topic at
        d = 1) to a node explored at d, as ``[head_id, relation, tail_id]``: the triplets the
        traversal looked at there (Appendix D's retrieved triplets, which eval samples)."""
        g = self.graph
        out: dict[str, list[list]] = {}
        previous = np.array([topic], dtype=np.int64)
        for depth in sorted(explored):
            here = np.asarray(sorted(explored[depth]), dtype=np.int64)
            edges = []
            for u in previous.tolist():
                nbrs, rels = g.neighbors(u)
                keep = np.isin(nbrs, here)
                head = int(g.node_id[u])
                edges += [[head, g.relation_names[r], int(g.node_id[v])]
                          for v, r in zip(nbrs[keep].tolist(), rels[keep].tolist())]
            out[str(depth)] = edges
            previous = here
        return out

    def _plans(self, queries: list[Query], embeddings: np.ndarray, usages: list[Usage]) -> list[Plan]:
        """Retrieval (Eq. 6, against the bank's texts of the matched level), control signals,
        meta-paths ranked then filtered, and the junction of two-topic queries."""
        g, c = self.graph, self.config
        n = len(queries)
        texts = [q.text for q in queries]
        topics = [[int(t) for t in g.index_of(list(q.topic_ids))] for q in queries]
        topic_types = [g.type_name(t[0]) for t in topics]
        indexes = [self.index_for(q.level) for q in queries]
        retrieved: list = [None] * n
        for index in {id(x): x for x in indexes}.values():
            rows = [j for j in range(n) if indexes[j] is index]
            for j, found in zip(rows, index.retrieve(embeddings[rows], [texts[j] for j in rows],
                                                     [topic_types[j] for j in rows])):
                retrieved[j] = found
        control = [dict(zip(("answer_type", "hops"), indexes[j].vote(retrieved[j])), source="vote") for j in range(n)]
        type_shares: list[dict[str, float] | None] = [None] * n
        if c.type_model and self.banks is not None:  # the wh-phrase model sharpens the vote's answer type
            for j, probabilities in enumerate(self.banks.type_model().probabilities(texts)):
                type_shares[j] = combine(probabilities, vote_shares(indexes[j], retrieved[j])[0])
                control[j]["answer_type"] = max(sorted(type_shares[j]), key=type_shares[j].get)
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
        if c.llm_plan and self.llm is not None:
            relations = list(g.relation_names)
            replies = self._generate([prompts.plan(t, tt, relations, self.answer_types, c.max_depth)
                                      for t, tt in zip(texts, topic_types)], list(range(n)), usages,
                                     GenerationParams(max_tokens=160))
            ranked = [[(mp, 1.0) for mp in _parse_plans(reply)] for reply in replies]
        else:
            ranked = [own_pooled(indexes[j], retrieved[j]) if c.pool == "own" else
                      [(s.metapath, s.score) for s in indexes[j].pooled_metapaths(retrieved[j])] for j in range(n)]
        plans = []
        for j in range(n):
            plan = Plan(topics[j], topic_types[j], indexes[j], retrieved[j], control[j], ranked[j],
                        type_shares=type_shares[j])
            if c.use_metapath:
                plan.surviving = self._surviving(plan)
            plan.fallback = "" if plan.surviving else ("free-bfs" if c.use_metapath else "no-metapath")
            if c.junction and len(plan.topics) > 1 and plan.surviving:
                plan.junction = self._junction(plan)
            plans.append(plan)
        return plans

    # ------------------------------------------------------------------ pieces
    def _surviving(self, plan: Plan) -> list[tuple[MetaPath, float]]:
        """The meta-paths walked, with their weights. ``control=filter`` (the paper): the first
        ``max_metapaths`` of the ranked list that match the predicted answer type and hop
        count. ``control=weigh``: a retrieval vote weighs each meta-path by its answer type's
        and hop count's shares instead of cutting (an LLM's signals still cut); the heaviest
        ``max_metapaths``. Either way the topic's type, ``max_depth`` and realizability hold."""
        c = self.config
        if c.control == "weigh" and plan.control.get("source") == "vote":
            type_share, hop_share = vote_shares(plan.index, plan.retrieved)
            type_share = plan.type_shares or type_share
            weighed = [(mp, score * type_share.get(mp.types[-1], 0.0) * hop_share.get(mp.hops, 0.0))
                       for mp, score in plan.ranked if mp.types[0] == plan.topic_type and mp.hops <= c.max_depth]
            candidates = sorted((x for x in weighed if x[1] > 0), key=lambda x: -x[1])
        else:
            candidates = [(mp, score) for mp, score in plan.ranked
                          if self._consistent(mp, plan.topic_type, plan.control)]
        kept = []
        for mp, score in candidates:
            if self._realizable(mp, plan.topics[0]):
                kept.append((mp, score))
                if len(kept) == c.max_metapaths:
                    break
        return kept

    def _consistent(self, mp: MetaPath, topic_type: str, control: dict) -> bool:
        if mp.types[0] != topic_type or mp.hops > self.config.max_depth:
            return False
        if control.get("answer_type") and mp.types[-1] != control["answer_type"]:
            return False
        return not (control.get("hops") and mp.hops != control["hops"])

    def _realizable(self, mp: MetaPath, topic: int) -> bool:
        return realizable(self.graph, topic, mp)  # depth first: stops at the first full walk

    def _junction(self, plan: Plan) -> list[tuple[int, int, int, float]]:
        """The step from the second topic into the answer: the last step of the retrieved
        training queries' topic-to-topic (chain) paths that reach the second topic's type from
        an answer type, weighted by the queries' similarity; without any, every relation the
        graph has from the second topic into an answer type."""
        g = self.graph
        second = plan.topics[1]
        second_type = g.type_name(second)
        answer_types = {mp.types[-1] for mp, _ in plan.surviving}
        weights: dict[tuple[str, str], float] = {}
        if self.banks is not None:
            for item in plan.retrieved:
                for chain in self.banks.chains(item.index):
                    if chain.types[-1] == second_type and chain.types[-2] in answer_types:
                        key = (chain.relations[-1], chain.types[-2])
                        weights[key] = weights.get(key, 0.0) + item.similarity + 1e-6
        out = []
        for (relation, answer_type), weight in sorted(weights.items()):
            if relation in g.relation_names:
                out.append((g.relation_names.index(relation), g.type_code(second_type), g.type_code(answer_type),
                            weight))
        if not out:
            for answer_type in sorted(answer_types):
                _, rels = g.neighbors(second, node_type=answer_type)
                out += [(int(r), g.type_code(second_type), g.type_code(answer_type), 1.0) for r in np.unique(rels)]
        total = sum(w for *_, w in out) or 1.0
        return [(r, a, b, w / total) for r, a, b, w in out]

    def _meet(self, plan: Plan) -> dict[int, int]:
        """Nodes one junction step from the second topic (where the beam's paths should end),
        each with the relation of that step."""
        meet: dict[int, int] = {}
        for relation, _, answer_type, _ in plan.junction:
            for v in typed_neighbors(self.graph, plan.topics[1], relation, answer_type).tolist():
                meet.setdefault(v, relation)
        return meet

    # ------------------------------------------------------------------ the walk scorer
    def walk_outcomes(self, queries: list[Query]) -> tuple[list[Plan], dict[int, WalkOutcome]]:
        """Retrieval, control and the walk scorer without answering: each query's plan, and
        the walk outcome of each query (by position) that kept a meta-path. What other
        methods take from the Path-Bank (PathMind's meta-path subgraph)."""
        embeddings = self.encoder.encode([q.text for q in queries])
        plans = self._plans(queries, embeddings, [Usage() for _ in queries])
        return plans, self._walk_outcomes(queries, plans, embeddings)

    def _walk_outcomes(self, queries, plans, embeddings) -> dict[int, WalkOutcome]:
        g, c = self.graph, self.config
        walked = [j for j, plan in enumerate(plans) if plan.surviving]
        outcomes = {}
        if walked:
            wanted = []
            for j in walked:
                plan = plans[j]
                answer_type = plan.control.get("answer_type")
                answer_code = g.type_code(answer_type) if c.shorter and answer_type else -1
                weights: dict[tuple, float] = {}
                for mp, score in plan.surviving:
                    codes = metapath_codes(g, mp)
                    if codes is None:
                        continue
                    types, rels = tuple(int(t) for t in codes[0]), tuple(int(r) for r in codes[1])
                    weights[(rels, types)] = weights.get((rels, types), 0.0) + score
                    for k in range(1, len(rels)):  # a prefix that already ends in the answer type
                        if types[k] == answer_code:
                            key = (rels[:k], types[:k + 1])
                            weights[key] = weights.get(key, 0.0) + score * c.walk.shorter
                weights = {k: max(w, 1e-9) for k, w in weights.items()}  # a meta-path no query holds as its own
                total = sum(weights.values())
                lanes = [(rels, types, w / total) for (rels, types), w in weights.items()]
                wanted.append(WalkQuery(plan.topics[0], lanes, tuple(plan.topics),
                                        plan.topics[1] if plan.junction else -1, plan.junction, queries[j].text))
            bm25 = minmax_columns(self.text.nodes.scores([queries[j].text for j in walked]))
            focus = (self.encoder.encode([wh_phrase(queries[j].text) for j in walked])
                     if self.walks.config.focus else None)
            for j, outcome in zip(walked, self.walks.score(wanted, bm25, embeddings[walked], focus)):
                outcomes[j] = outcome
        return outcomes

    def _walk_answers(self, queries, plans, embeddings, usages):
        g = self.graph
        outcomes = self._walk_outcomes(queries, plans, embeddings)
        # a query without a surviving meta-path takes the free BFS of the beam
        free = [j for j in range(len(queries)) if j not in outcomes]
        beam_results, beam_explored, asks = {}, {}, []
        if free:
            got, explored, free_asks = self._beam_answers([queries[j] for j in free], [plans[j] for j in free],
                                                          embeddings[free], [usages[j] for j in free])
            beam_results = dict(zip(free, got))
            beam_explored = dict(zip(free, explored))
            asks = [(free[i], prompt, names) for i, prompt, names in free_asks]
        results, explored = [], []
        for j, query in enumerate(queries):
            if j in beam_results:
                results.append(beam_results[j])
                explored.append(beam_explored[j])
                continue
            outcome = outcomes[j]
            walked = outcome.paths + outcome.junction_paths
            best = g.name(outcome.candidates[0][0]) if outcome.candidates else ""
            results.append(Result(query.id, query.level, best, method=self.name,
                                  answer_source="extractive" if best else "none", paths=self._external(walked)))
            explored.append(outcome.explored)
            if self.llm is not None:
                asks.append((j, self._answer_prompt(query, walked), [g.name(v) for v, _ in outcome.candidates]))
        return results, explored, sorted(asks, key=lambda ask: ask[0])

    # ------------------------------------------------------------------ the beam
    def _beam_answers(self, queries, plans, embeddings, usages):
        g, c = self.graph, self.config
        n = len(queries)
        states, weights = [], []
        for plan in plans:
            codes, scores = [], []
            for mp, score in plan.surviving:
                x = metapath_codes(g, mp)
                if x is not None:
                    codes.append(x)
                    scores.append(score)
            # the surviving meta-paths' lengths (the predicted hops when they were filtered by it)
            depth = max((mp.hops for mp, _ in plan.surviving), default=min(c.max_depth, int(plan.control["hops"]
                                                                                           or c.max_depth)))
            answer_type = plan.control.get("answer_type")
            states.append(TraversalState(g, plan.topics[0], codes, depth,
                                         answer_type=g.type_code(answer_type) if c.shorter and answer_type else -1))
            weights.append(scores)
        meets = [self._meet(plan) if plan.junction else {} for plan in plans]
        node_scores = self.text.nodes.scores([q.text for q in queries])  # BM25 prefilter for wide groups
        while True:
            active = [j for j in range(n) if not states[j].finished]
            if not active:
                break
            batch = {}
            for j in active:
                groups = states[j].groups(prefilter=lambda nodes, j=j: node_scores[nodes, j], limit=c.prefilter)
                if meets[j]:
                    groups = _meet_groups(states[j], groups, meets[j])
                batch[j] = self._narrow(groups, embeddings[j])
            choices = self._choose(batch, queries, states, embeddings, usages, weights)
            for j in active:
                considered = [cand.node for group in batch[j] for cand, _ in group]
                states[j].advance(choices[j], considered)
        results, asks = self._answers(queries, states, plans, embeddings, meets)
        return results, [state.explored for state in states], asks

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

    def _choose(self, batch, queries, states, embeddings, usages, weights) -> dict[int, list[tuple[Candidate, float]]]:
        """The next frontier of each active query: LLM picks (one prompt per query), else cosine
        (with ``share``: the slots shared among the meta-paths by retrieval score)."""
        beam = self.config.beam
        chosen = {}
        for j, groups in batch.items():
            flat = [item for group in groups for item in group]
            if self.config.share and weights[j] and not states[j].free:
                chosen[j] = shared_beam(flat, weights[j], beam)
            else:
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

    def _answers(self, queries, states, plans, embeddings, meets):
        """A result per query from its completed paths, and (with an LLM) its answer prompt."""
        g = self.graph
        results, asks = [], []
        for j, state in enumerate(states):
            paths = state.complete
            wanted = plans[j].control.get("answer_type")
            typed = [p for p in paths if wanted and g.type_name(p.nodes[-1]) == wanted]
            paths = typed or paths
            met = [p for p in paths if p.nodes[-1] in meets[j]]
            paths = met or paths
            if paths:
                ends = np.array([p.nodes[-1] for p in paths])
                final = self.nodes.get(ends) @ embeddings[j]
                order = sorted(range(len(paths)), key=lambda i: (-final[i], -paths[i].score, paths[i].nodes))
                paths = [paths[i] for i in order]
            walked = [(p.nodes, p.relations) for p in paths]
            # the second topic's step into each met end
            walked += [([plans[j].topics[1], v], [meets[j][v]])
                       for v in dict.fromkeys(p.nodes[-1] for p in paths) if v in meets[j]]
            best = g.name(paths[0].nodes[-1]) if paths else ""
            results.append(Result(queries[j].id, queries[j].level, best, method=self.name,
                                  answer_source="extractive" if best else "none", paths=self._external(walked)))
            if self.llm is not None:
                ends = list(dict.fromkeys(g.name(p.nodes[-1]) for p in state.complete))
                asks.append((j, self._answer_prompt(queries[j], walked), ends))
        return results, asks

    def _answer_prompt(self, query: Query, walked) -> str:
        g = self.graph
        triples = _triples(walked, self.config.max_triplets)
        return prompts.answer(query.text, [(g.name(a), g.relation_names[r], g.name(b)) for a, r, b in triples],
                              query.options)

    def _external(self, walked) -> list[list[list]]:
        """Paths given as (nodes, relation codes) as ``[head_id, relation, tail_id]`` steps."""
        g = self.graph
        return [[[int(g.node_id[a]), g.relation_names[r], int(g.node_id[b])]
                 for a, r, b in zip(nodes[:-1], relations, nodes[1:])] for nodes, relations in walked]

    @staticmethod
    def _read_reply(result: Result, query: Query, reply: str, candidate_names: list[str]) -> None:
        result.raw = reply
        if query.options:
            result.answer, result.answer_source = read_option(reply, list(query.options))
        else:
            result.answer, result.answer_source = read_answer(reply, candidate_names, result.answer)


def _triples(paths, cap: int) -> list[tuple[int, int, int]]:
    """The distinct (head, relation, tail) steps of paths given as (nodes, relations), in order."""
    triples, seen = [], set()
    for nodes, relations in paths:
        for step in zip(nodes[:-1], relations, nodes[1:]):
            if step not in seen and len(triples) < cap:
                seen.add(step)
                triples.append(step)
    return triples


def shared_beam(flat: list[tuple[Candidate, float]], weights: list[float], beam: int) -> list[tuple[Candidate, float]]:
    """The beam's slots shared among meta-paths in proportion to their retrieval scores
    (largest remainder), each meta-path's slots taken by its best candidates by cosine; slots a
    meta-path cannot fill go to the candidates whose meta-paths weigh most, then by cosine."""
    total = sum(weights) or 1.0
    share = [beam * w / total for w in weights]
    slots = [int(x) for x in share]
    for m in sorted(range(len(share)), key=lambda m: (-(share[m] - slots[m]), m))[: beam - sum(slots)]:
        slots[m] += 1
    by_cosine = sorted(range(len(flat)), key=lambda i: (-flat[i][1], flat[i][0].node))
    taken: list[int] = []
    for m in sorted(range(len(weights)), key=lambda m: (-weights[m], m)):
        mine = [i for i in by_cosine if m in flat[i][0].metapaths and i not in taken]
        taken += mine[: slots[m]]
    weight_of = [sum(weights[m] for m in flat[i][0].metapaths) for i in range(len(flat))]
    rest = sorted((i for i in range(len(flat)) if i not in taken), key=lambda i: (-weight_of[i], -flat[i][1],
                                                                                   flat[i][0].node))
    taken += rest[: beam - len(taken)]
    return [flat[i] for i in taken]


def _meet_groups(state: TraversalState, groups: list[Group], meet: set[int]) -> list[Group]:
    """Candidates that complete a meta-path here kept only where the second topic's junction
    step reaches them (when any does); candidates that go on are kept."""
    depth = state.depth + 1

    def completes(cand: Candidate) -> bool:
        return any(len(state.metapaths[m][1]) == depth for m in cand.metapaths)

    if not any(completes(cand) and cand.node in meet for group in groups for cand in group.candidates):
        return groups
    out = []
    for group in groups:
        kept = [cand for cand in group.candidates if not completes(cand) or cand.node in meet]
        if kept:
            out.append(Group(group.relation, group.node_type, group.parent, kept))
    return out


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
    params = context.params
    scorer = params.get("scorer", "auto")
    if scorer == "auto":
        scorer = "walk" if context.llm is None else "beam"
    # 0 = the scorer's own default: the paper's 5 and 3 for the beam, wider for the walk scorer
    retrieve = params.get("retrieve", 0) or (WALK_RETRIEVE if scorer == "walk" else TOP_K)
    metapaths = params.get("metapaths", 0) or (WALK_METAPATHS if scorer == "walk" else 3)
    if retrieve < 0 or metapaths < 0:
        raise InputError("--param retrieve and metapaths take 0 (the scorer's default) or a positive count")
    config = AdaPathConfig(use_metapath=params.get("metapath", True), llm_plan=params.get("plan") == "llm",
                           beam=params.get("beam", 3), narrow=params.get("narrow", 5),
                           max_depth=params.get("max_depth", 3), max_metapaths=metapaths, scorer=scorer,
                           share=params.get("share", True), shorter=params.get("shorter", True),
                           junction=params.get("junction", True), pool=params.get("pool", "own"),
                           control=params.get("control", "weigh"), type_model=params.get("type_model", True),
                           walk=WalkConfig(damping=params.get("damping", DAMPING),
                                           end=params.get("end", WalkConfig.end),
                                           lexical=params.get("lexical", WalkConfig.lexical),
                                           focus=params.get("focus", WalkConfig.focus)))
    if config.llm_plan and context.llm is None:
        raise InputError("plan=llm (--llm-plan) needs an LLM (--llm ...)")
    if params.get("plan") not in ("bank", "llm"):
        raise InputError(f"--param plan={params.get('plan')!r}: choose bank or llm")
    for name, allowed in (("pool", ("own", "all")), ("control", ("filter", "weigh"))):
        if params.get(name, allowed[0]) not in allowed:
            raise InputError(f"--param {name}={params.get(name)!r}: choose {' or '.join(allowed)}")
    for name in ("damping", "end", "lexical", "focus"):
        if getattr(config.walk, name) < 0:
            raise InputError(f"--param {name}={getattr(config.walk, name)}: must be at least 0")
    encoder = context.encoder()
    banks = LevelBanks(context.bank, encoder, params.get("retrieval_level", "same"), k=retrieve)
    return AdaPath(context.graph, banks, encoder, context.llm, config, graph_dir=context.graph_dir)


METHODS = [MethodSpec(
    "adapath", "Path-Bank meta-paths guide a typed walk from the topic; every walk weighed, or an LLM or "
    "cosine beam",
    "AdaPath (Path-Bank retrieval Eq. 6, control signals, guided traversal, §3.2)", _build,
    llm="optional", needs=("bank",), calls="0, LLM ≤ D+2",
    params=(Param("metapath", True, "follow retrieved meta-paths (false: free BFS, the w/o meta-path ablation)"),
            Param("plan", "bank", "where meta-paths come from: bank, or llm (the w/o Path-Bank ablation)"),
            Param("scorer", "auto", "walk (every walk along the meta-paths, weighed by the query; picks what "
                  "an LLM sees), beam (the paper's frontier beam) or auto (walk without an LLM, beam with one)"),
            Param("retrieval_level", "same", "bank texts Eq. 6 compares a question with: same (its own "
                  "level), explicit, implicit or bare (the cross-level setting)"),
            Param("retrieve", 0, f"training queries retrieved per question, Eq. 6's k (0: {TOP_K} for the beam, "
                  f"{WALK_RETRIEVE} for the walk scorer)"),
            Param("metapaths", 0, f"surviving meta-paths walked per question (0: 3 for the beam, {WALK_METAPATHS} "
                  "for the walk scorer)"),
            Param("pool", "own", "rank retrieved meta-paths by the similarity of the queries holding them as their "
                  "own (at their hop count and answer type), or all (Eq. 6's sum over every query holding them)"),
            Param("control", "weigh", "filter (keep meta-paths of the predicted answer type and hops) or weigh "
                  "(weigh them by the retrieval vote's shares; an LLM's signals still filter)"),
            Param("type_model", True, "without an LLM, a model of the question's wh-phrase trained on the bank's "
                  "questions joins the retrieval vote on the answer type"),
            Param("damping", DAMPING, "walk: DWPC degree-damping exponent"),
            Param("end", WalkConfig.end, "walk: weight of a candidate's cosine to the question at the last step"),
            Param("lexical", WalkConfig.lexical, "walk: weight of a candidate's BM25 match to the question, "
                  "relative to the best candidate's (0: off)"),
            Param("focus", WalkConfig.focus, "walk: weight of a candidate's cosine to the question's wh-phrase "
                  "(0: off)"),
            Param("share", True, "beam without an LLM: share the frontier among meta-paths by retrieval score"),
            Param("shorter", True, "keep shorter completed paths ending in the predicted answer type"),
            Param("junction", True, "two topics: walk from both and meet at the answer"),
            Param("beam", 3, "next-frontier width"),
            Param("narrow", 5, "candidates kept per group by cosine"),
            Param("max_depth", 3, "most hops walked")),
    deviations=(
        "without an LLM the default scorer is the walk scorer (every walk along the meta-paths, weighed by the "
        "query with degree damping), which the paper does not have; with an LLM it is the paper's frontier "
        "beam (scorer=beam)",
        "control=weigh: the predicted answer type and hop count weigh meta-paths by the retrieval vote's shares "
        "instead of filtering them (control=filter is the paper's); an LLM's signals still filter",
        "pool=own: meta-paths are ranked by the similarity of the training queries holding them as their own "
        "(pool=all is Eq. 6's sum over every query holding them)",
        "shorter, junction, share and type_model (all on) are this project's additions, each a --param that "
        "turns it off",
        "the ablations are parameters, not separate methods: metapath=false (w/o meta-path: free BFS with the "
        "same scorer) and plan=llm (w/o Path-Bank: the LLM proposes the meta-paths)",
        "with an LLM, " + lenient_reading("a candidate entity of its paths (or an option)", "the best path's end"),
    ),
)]
