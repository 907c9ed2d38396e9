"""KGARevion (Su et al., 2025; mims-harvard/KGARevion): generate, review, revise, answer.

1. Generate: the LLM writes triplets from its own knowledge that help answer the question,
   given the question's medical entities (here the topic entities' names: the topic links
   every method shares stand in for the paper's LLM entity extraction) and the graph's
   relation names; for multiple choice one prompt per option, as the paper does.
2. Review: each triplet is checked against the graph. Its head and tail names are resolved
   to nodes (same name, else a close name: ``Resolver``) and its relation to the nearest
   relation name; it is ``verified`` when the graph holds that edge (either direction: the
   paper's triplets are undirected). Where a name resolves to no node the paper's reviewer
   keeps the triplet (it cannot judge it); so do we (``unlinked``). A triplet whose entities
   resolve but whose edge the graph lacks is ``refuted``. (The paper's reviewer is a
   fine-tuned LLM over KG embeddings; a lookup in the graph itself is the exact check.)
3. Revise: each refuted triplet goes back to the LLM with the graph's facts around its
   entities (edges between them, then edges of each with the claimed relation, then their
   other edges, ranked by relevance to the question), for ``rounds`` rounds (the paper's
   default 1); a revision the review accepts replaces it, else it is dropped.
4. Answer: the LLM answers from the kept triplets and its own knowledge.

Every step sends the prompts of the whole batch as one backend batch. Verified triplets (and
accepted revisions) are the result's one-hop ``paths``, a topic entity first where one is in
the triplet; ``triplets`` (extra) lists each reviewed triplet and its verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from adapath.engine.graph import KnowledgeGraph
from adapath.llm import GenerationParams, Usage, prompts
from adapath.llm.parse import parse_triplets, read_reply
from adapath.methods._kg_facts import Fact, Resolver, fact_edge, fact_names, facts_of, rank_facts
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, Param, Query, Result


@dataclass
class Review:
    triplet: tuple[str, str, str]  # as the LLM wrote it
    status: str  # verified | unlinked | refuted
    fact: Fact | None = None  # the graph's edge, when verified
    heads: list[int] = field(default_factory=list)
    tails: list[int] = field(default_factory=list)
    relation: int = -1


class KGARevion:
    name = "kgarevion"

    def __init__(self, graph: KnowledgeGraph, encoder, llm, count: int = 3, rounds: int = 1, facts: int = 10,
                 keep_unlinked: bool = True, link_threshold: float = 0.85, max_tokens: int = 256):
        self.graph, self.encoder = graph, encoder
        self.count, self.rounds, self.facts, self.keep_unlinked = count, rounds, facts, keep_unlinked
        self.resolver = Resolver(graph, threshold=link_threshold)
        self._generate = LLMCaller(llm, GenerationParams(max_tokens=max_tokens))
        self._short = GenerationParams(max_tokens=64)  # the answer (the paper allows 30 tokens)

    # ------------------------------------------------------------------ steps
    def review(self, triplet: tuple[str, str, str]) -> Review:
        head, relation, tail = triplet
        heads, tails = self.resolver.entity(head), self.resolver.entity(tail)
        code = self.resolver.relation(relation)
        if not heads or not tails:
            return Review(triplet, "unlinked", None, heads, tails, code)
        fact = self.resolver.holds(heads, code, tails)
        return Review(triplet, "verified" if fact else "refuted", fact, heads, tails, code)

    def candidate_facts(self, review: Review, question: str, vector) -> list[Fact]:
        """The graph's facts around a refuted triplet's entities: edges between head and tail,
        then edges of either with the claimed relation, then their other edges (each group
        ranked by relevance to the question), at most ``facts``."""
        around = facts_of(self.graph, review.heads + review.tails)
        tails, heads = set(review.tails), set(review.heads)
        between = [f for f in around if (f[0] in heads and f[2] in tails) or (f[0] in tails and f[2] in heads)]
        taken = set(between)
        same_relation = [f for f in around if f[1] == review.relation and f not in taken]
        taken.update(same_relation)
        groups = [between, same_relation, [f for f in around if f not in taken]]
        out: list[Fact] = []
        for group in groups:
            order = rank_facts(self.graph, question, vector, group, self.encoder)
            out += [group[i] for i in order]
            if len(out) >= self.facts:
                break
        return out[: self.facts]

    def _orient(self, fact: Fact, topics: set[int]) -> Fact:
        a, r, b = fact
        return (b, r, a) if b in topics and a not in topics else fact

    # ------------------------------------------------------------------ the batch
    def answer(self, queries: list[Query]) -> list[Result]:
        g, n = self.graph, len(queries)
        usages = [Usage() for _ in queries]
        topics = [[int(t) for t in g.index_of(list(q.topic_ids), missing="ignore") if t >= 0] for q in queries]
        relations = list(g.relation_names)

        # 1. generate: one prompt per query, or per option
        prompt_list, owners = [], []
        for j, q in enumerate(queries):
            entities = [g.name(t) for t in topics[j]]
            for option in (q.options or (None,)):
                prompt_list.append(prompts.propose_triplets(q.text, entities, relations, self.count, option))
                owners.append(j)
        proposed: list[list[tuple[str, str, str]]] = [[] for _ in queries]
        for j, reply in zip(owners, self._generate(prompt_list, owners, usages)):
            proposed[j] += [t for t in parse_triplets(reply) if t not in proposed[j]]

        # 2. review
        reviews = [[self.review(t) for t in triplets] for triplets in proposed]
        kept: list[list[Review]] = [[r for r in rs if r.status == "verified" or
                                     (r.status == "unlinked" and self.keep_unlinked)] for rs in reviews]
        log = [[{"triplet": list(r.triplet), "status": r.status} for r in rs] for rs in reviews]

        # 3. revise the refuted ones, one prompt each, all of a round in one batch
        vectors = self.encoder.encode([q.text for q in queries]) if any(
            r.status == "refuted" for rs in reviews for r in rs) else None
        open_items = [(j, i, [r.triplet], r) for j, rs in enumerate(reviews) for i, r in enumerate(rs)
                      if r.status == "refuted"]
        for _ in range(self.rounds):
            if not open_items:
                break
            prompt_list = [prompts.revise_triplet(queries[j].text, attempts,
                                                  [fact_names(g, f) for f in
                                                   self.candidate_facts(r, queries[j].text, vectors[j])])
                           for j, _, attempts, r in open_items]
            replies = self._generate(prompt_list, [j for j, *_ in open_items], usages)
            still_open = []
            for (j, i, attempts, original), reply in zip(open_items, replies):
                accepted = None
                for triplet in parse_triplets(reply):
                    review = self.review(triplet)
                    attempts = attempts + [triplet]
                    if review.status == "verified" or (review.status == "unlinked" and self.keep_unlinked):
                        accepted = review
                        break
                if accepted is not None:
                    kept[j].append(accepted)
                    log[j][i].update(revised=list(accepted.triplet), revised_status=accepted.status)
                else:
                    still_open.append((j, i, attempts, original))
            open_items = still_open

        # 4. answer from the kept triplets
        replies = self._generate([prompts.triplets_answer(q.text, [r.triplet for r in kept[j]], q.options)
                                  for j, q in enumerate(queries)], list(range(n)), usages, self._short)
        results = []
        for j, (q, reply) in enumerate(zip(queries, replies)):
            topic_set = set(topics[j])
            facts = list(dict.fromkeys(self._orient(r.fact, topic_set) for r in kept[j] if r.fact is not None))
            names = [name for r in kept[j] for name in (r.triplet[0], r.triplet[2])
                     if name.lower() not in {g.name(t).lower() for t in topic_set}]
            answer, source = read_reply(reply, q.options, list(dict.fromkeys(names)))
            results.append(Result(q.id, q.level, answer, method=self.name, raw=reply, answer_source=source,
                                  paths=[[fact_edge(g, f)] for f in facts], usage=usages[j].as_dict(),
                                  extra={"triplets": log[j]}))
        return results


def _build(context: MethodContext) -> KGARevion:
    from adapath.errors import InputError

    p = context.params
    if p["triplets"] < 1 or p["rounds"] < 0 or p["facts"] < 0 or not 0 < p["link_threshold"] <= 1:
        raise InputError("--param triplets >= 1, rounds >= 0, facts >= 0 and 0 < link_threshold <= 1, please")
    return KGARevion(context.graph, context.encoder(), context.llm, p["triplets"], p["rounds"], p["facts"],
                     p["keep_unlinked"], p["link_threshold"], p["max_tokens"])


METHODS = [MethodSpec(
    "kgarevion", "the LLM proposes triplets, the KG verifies them, refuted ones are revised with KG facts, then it answers",
    "KGARevion (Su et al. 2025; generate, review, revise, answer)", _build, llm="required", path_finding=True,
    params=(Param("triplets", 3, "triplets proposed per prompt (1 to this many)"),
            Param("rounds", 1, "revision rounds for a refuted triplet"),
            Param("facts", 10, "graph facts shown when revising a triplet"),
            Param("keep_unlinked", True, "keep triplets whose entities are not in the graph (the paper does)"),
            Param("link_threshold", 0.85, "least name similarity to link an entity to a node of another name"),
            Param("max_tokens", 256, "most tokens in a triplet reply")),
)]
