"""The plan of each question before any walk (AdaPath §3.2): Path-Bank retrieval (Eq. 6,
against the bank's texts of the question's level), control signals (predicted answer type and
hop count), the meta-paths ranked and then cut or weighed by those signals, and the junction
step of a two-topic question.

``Batch`` carries a batch of questions through every step; ``Plan.lanes`` turns a plan's
surviving meta-paths into the graph's codes, the one conversion both explorers walk."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from adapath.bank.index import BankIndex
from adapath.contract import Query
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.engine.traverse import metapath_codes, realizable
from adapath.errors import InputError
from adapath.llm import GenerationParams, Usage, prompts
from adapath.llm.parse import parse_control
from adapath.methods.answer_type import combine
from adapath.methods.base import LLMCaller
from adapath.methods.guided.config import AdaPathConfig
from adapath.methods.level_banks import LevelBanks, own_pooled, vote_shares


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

    def lanes(self, graph: KnowledgeGraph) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """Each surviving meta-path the graph can walk as (type codes, relation codes, weight)."""
        out = []
        for mp, score in self.surviving:
            codes = metapath_codes(graph, mp)
            if codes is not None:
                out.append((*codes, score))
        return out


@dataclass
class Batch:
    """Queries answered together and what the steps know of each, one entry per query."""

    queries: list[Query]
    embeddings: np.ndarray  # the questions' sentence embeddings, one row each
    usages: list[Usage]  # what each query's LLM calls cost
    plans: list[Plan] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.queries)

    @property
    def texts(self) -> list[str]:
        return [q.text for q in self.queries]

    def rows(self, rows: list[int]) -> Batch:
        """The batch of these queries only (their usages still the same objects)."""
        return Batch([self.queries[j] for j in rows], self.embeddings[rows], [self.usages[j] for j in rows],
                     [self.plans[j] for j in rows])


class Planner:
    def __init__(self, graph: KnowledgeGraph, bank: BankIndex | LevelBanks, config: AdaPathConfig,
                 call: LLMCaller):
        """``bank``: a ``LevelBanks`` (retrieval matched to each question's level, two-topic
        junction shapes) or one ``BankIndex`` (every level compared with its texts)."""
        self.graph, self.config, self.call = graph, config, call
        self.banks = bank if isinstance(bank, LevelBanks) else None
        self.bank = bank.default if isinstance(bank, LevelBanks) else bank
        self.answer_types = list(graph.type_names)

    def index_for(self, level: str) -> BankIndex:
        return self.banks.index(level) if self.banks is not None else self.bank

    def plans(self, batch: Batch) -> list[Plan]:
        """Retrieval, control signals, meta-paths ranked then filtered, and the junction of
        two-topic queries."""
        g, c = self.graph, self.config
        n = len(batch)
        texts = batch.texts
        topics = [[int(t) for t in g.index_of(list(q.topic_ids))] for q in batch.queries]
        topic_types = [g.type_name(t[0]) for t in topics]
        indexes = [self.index_for(q.level) for q in batch.queries]
        retrieved: list = [None] * n
        for index in {id(x): x for x in indexes}.values():
            rows = [j for j in range(n) if indexes[j] is index]
            for j, found in zip(rows, index.retrieve(batch.embeddings[rows], [texts[j] for j in rows],
                                                     [topic_types[j] for j in rows])):
                retrieved[j] = found
        control = [dict(zip(("answer_type", "hops"), indexes[j].vote(retrieved[j])), source="vote") for j in range(n)]
        type_shares: list[dict[str, float] | None] = [None] * n
        if c.type_model and self.banks is not None:  # the wh-phrase model sharpens the vote's answer type
            for j, probabilities in enumerate(self.banks.type_model().probabilities(texts)):
                type_shares[j] = combine(probabilities, vote_shares(indexes[j], retrieved[j])[0])
                control[j]["answer_type"] = max(sorted(type_shares[j]), key=type_shares[j].get)
        if self.call.llm is not None:
            replies = self.call([prompts.control(t, self.answer_types, c.max_depth) for t in texts],
                                list(range(n)), batch.usages)
            for j, reply in enumerate(replies):
                answer_type, hops = parse_control(reply, self.answer_types, c.max_depth)
                if answer_type is not None:
                    control[j]["answer_type"] = answer_type
                if hops is not None:
                    control[j]["hops"] = hops
                control[j]["source"] = "llm" if (answer_type, hops) != (None, None) else "vote"
        if c.plan == "llm" and self.call.llm is not None:
            relations = list(g.relation_names)
            replies = self.call([prompts.plan(t, tt, relations, self.answer_types, c.max_depth)
                                 for t, tt in zip(texts, topic_types)], list(range(n)), batch.usages,
                                GenerationParams(max_tokens=160))
            ranked = [[(mp, 1.0) for mp in parse_plans(reply)] for reply in replies]
        else:
            ranked = [own_pooled(indexes[j], retrieved[j]) if c.pool == "own" else
                      [(s.metapath, s.score) for s in indexes[j].pooled_metapaths(retrieved[j])] for j in range(n)]
        plans = []
        for j in range(n):
            plan = Plan(topics[j], topic_types[j], indexes[j], retrieved[j], control[j], ranked[j],
                        type_shares=type_shares[j])
            if c.metapath:
                plan.surviving = self.surviving(plan)
            plan.fallback = "" if plan.surviving else ("free-bfs" if c.metapath else "no-metapath")
            if c.junction and len(plan.topics) > 1 and plan.surviving:
                plan.junction = self.junction(plan)
            plans.append(plan)
        return plans

    def surviving(self, plan: Plan) -> list[tuple[MetaPath, float]]:
        """The meta-paths walked, with their weights. ``control=filter`` (the paper): the first
        ``metapaths`` of the ranked list that match the predicted answer type and hop count.
        ``control=weigh``: a retrieval vote weighs each meta-path by its answer type's and hop
        count's shares instead of cutting (an LLM's signals still cut); the heaviest
        ``metapaths``. Either way the topic's type, ``max_depth`` and realizability hold."""
        c = self.config
        if c.control == "weigh" and plan.control.get("source") == "vote":
            type_share, hop_share = vote_shares(plan.index, plan.retrieved)
            type_share = plan.type_shares or type_share
            weighed = [(mp, score * type_share.get(mp.types[-1], 0.0) * hop_share.get(mp.hops, 0.0))
                       for mp, score in plan.ranked if mp.types[0] == plan.topic_type and mp.hops <= c.max_depth]
            candidates = sorted((x for x in weighed if x[1] > 0), key=lambda x: -x[1])
        else:
            candidates = [(mp, score) for mp, score in plan.ranked
                          if self.consistent(mp, plan.topic_type, plan.control)]
        kept = []
        for mp, score in candidates:
            if self.realizable(mp, plan.topics[0]):
                kept.append((mp, score))
                if len(kept) == c.metapaths:
                    break
        return kept

    def consistent(self, mp: MetaPath, topic_type: str, control: dict) -> bool:
        if mp.types[0] != topic_type or mp.hops > self.config.max_depth:
            return False
        if control.get("answer_type") and mp.types[-1] != control["answer_type"]:
            return False
        return not (control.get("hops") and mp.hops != control["hops"])

    def realizable(self, mp: MetaPath, topic: int) -> bool:
        return realizable(self.graph, topic, mp)  # depth first: stops at the first full walk

    def junction(self, plan: Plan) -> list[tuple[int, int, int, float]]:
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


def parse_plans(text: str) -> list[MetaPath]:
    """The meta-paths an LLM's plan reply lists, one a line; an unparsable line is skipped."""
    plans = []
    for line in (text or "").splitlines():
        line = line.strip().lstrip("-*0123456789.) ").strip()
        if "-[" not in line:
            continue
        try:
            plans.append(MetaPath.parse(line))
        except (InputError, ValueError):
            continue
    return plans
