"""KGARevion (Su et al., 2025; mims-harvard/KGARevion): extract, generate, review, revise, answer.

1. Extract: the LLM lists the question's medical entities (asked again, up to
   ``extract_tries`` times in all, while its reply cannot be read, as the original does).
2. Generate: the LLM writes 1 to 3 undirected triplets from its own knowledge about those
   entities, with the graph's relation names; for multiple choice one prompt per option.
3. Review: each triplet's head and tail names are linked to nodes (same name, else a close
   name: ``Resolver``) and its relation to the nearest relation name. A triplet whose entity
   links to no node is kept unjudged, as the original's reviewer keeps it. A linked triplet
   is judged by ``review``:
   - ``kge`` (the default): a DistMult embedding trained on the graph's triplets scores it
     (its best-scoring node pair when names repeat) and it is accepted at or above the
     threshold set on held-out true triplets against corrupted ones (``retrieval.kge``).
     The original's reviewer is an LLM fine-tuned over RotatE embeddings of the graph;
   - ``oracle``: accepted only if the graph holds that exact edge (either direction): a lookup
     in the evaluation graph itself, an upper bound rather than the paper's method.
4. Revise: a rejected triplet goes back to the LLM with the question only (and any earlier
   rejected revisions), for ``rounds`` rounds (the original's default 1); the first revised
   triplet the review accepts replaces it, else it is dropped. ``revise_facts`` > 0 also shows
   that many graph facts around its entities (an earlier variant; not the original).
5. Answer: the LLM answers from the kept triplets and its own knowledge.

Every step sends the prompts of the whole batch as one backend batch. Calls per question:
the extraction (1 to ``extract_tries``), 1 generation (one per option for multiple choice),
one per rejected triplet per round, and the answer. Accepted triplets that are graph edges are
the result's one-hop ``paths`` (reporting only: the review never reads them under ``kge``);
``triplets`` (extra) lists each reviewed triplet, its verdict and score.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from adapath.contract import Query, Result
from adapath.engine.graph import KnowledgeGraph
from adapath.llm import GenerationParams, Usage
from adapath.llm import kgarevion_prompts as kp
from adapath.llm.parse import lenient_reading, parse_triplets, read_reply
from adapath.methods._kg_facts import Fact, Resolver, fact_edge, fact_names, facts_of, rank_facts
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, Param

REVIEWS = ("kge", "oracle")


@dataclass
class Review:
    triplet: tuple[str, str, str]  # as the LLM wrote it
    status: str  # accepted | unlinked | rejected
    fact: Fact | None = None  # the graph's edge the triplet links to, when the graph holds it
    heads: list[int] = field(default_factory=list)
    tails: list[int] = field(default_factory=list)
    relation: int = -1
    score: float | None = None  # the scorer's, under review=kge

    @property
    def kept(self) -> bool:
        return self.status in ("accepted", "unlinked")


def read_entities(reply: str) -> list[str] | None:
    """The "medical_terminologies" list of an extraction reply; None when it cannot be read."""
    match = re.search(r"\{.*\}", reply or "", flags=re.S)
    if match:
        try:
            value = json.loads(match.group(0)).get("medical_terminologies")
        except (json.JSONDecodeError, AttributeError):
            value = None
        if isinstance(value, list):
            names = [str(v).strip() for v in value if str(v).strip()]
            return list(dict.fromkeys(names)) or None
    listed = re.search(r"medical_terminologies\W*\[([^\[\]]*)\]", reply or "")
    if listed:
        names = [a or b for a, b in re.findall(r'"([^"]+)"|\'([^\']+)\'', listed.group(1))]
        return list(dict.fromkeys(n.strip() for n in names if n.strip())) or None
    return None


class KGARevion:
    name = "kgarevion"

    def __init__(self, graph: KnowledgeGraph, encoder, llm, scorer=None, review: str = "kge", rounds: int = 1,
                 revise_facts: int = 0, extract_tries: int = 5, keep_unlinked: bool = True,
                 link_threshold: float = 0.85, max_tokens: int = 256, answer_tokens: int = 64):
        if review == "kge" and scorer is None:
            raise ValueError("review=kge needs a scorer")
        self.graph, self.encoder, self.scorer, self.review_mode = graph, encoder, scorer, review
        self.rounds, self.revise_facts, self.extract_tries = rounds, revise_facts, extract_tries
        self.keep_unlinked = keep_unlinked
        self.resolver = Resolver(graph, threshold=link_threshold)
        self._call = LLMCaller(llm, GenerationParams(max_tokens=max_tokens))
        self._extract = GenerationParams(max_tokens=128)  # the original's budget for the entity list
        self._short = GenerationParams(max_tokens=answer_tokens)  # the original allows 30 tokens

    # ------------------------------------------------------------------ steps
    def review(self, triplet: tuple[str, str, str]) -> Review:
        head, relation, tail = triplet
        heads, tails = self.resolver.entity(head), self.resolver.entity(tail)
        code = self.resolver.relation(relation)
        if not heads or not tails:
            return Review(triplet, "unlinked" if self.keep_unlinked else "rejected", None, heads, tails, code)
        fact = self.resolver.holds(heads, code, tails)
        if self.review_mode == "oracle":
            return Review(triplet, "accepted" if fact else "rejected", fact, heads, tails, code)
        _, _, score = self.scorer.best(heads, code, tails)
        return Review(triplet, "accepted" if self.scorer.accepts(score) else "rejected", fact, heads, tails, code,
                      round(score, 4))

    def candidate_facts(self, review: Review, question: str, vector) -> list[Fact]:
        """``revise_facts`` graph facts around a rejected triplet's entities: edges between head
        and tail, then edges of either with the claimed relation, then their other edges (each
        group ranked by relevance to the question)."""
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
            if len(out) >= self.revise_facts:
                break
        return out[: self.revise_facts]

    def _orient(self, fact: Fact, topics: set[int]) -> Fact:
        a, r, b = fact
        return (b, r, a) if b in topics and a not in topics else fact

    def extract(self, queries: list[Query], usages: list[Usage]) -> list[list[str]]:
        """Each question's medical entities, asked again while the reply cannot be read."""
        found: list[list[str] | None] = [None] * len(queries)
        todo = list(range(len(queries)))
        for _ in range(self.extract_tries):
            if not todo:
                break
            replies = self._call([kp.extract_entities(queries[j].text) for j in todo], todo, usages, self._extract)
            for j, reply in zip(todo, replies):
                found[j] = read_entities(reply)
            todo = [j for j in todo if found[j] is None]
        return [names or [] for names in found]

    # ------------------------------------------------------------------ the batch
    def answer(self, queries: list[Query]) -> list[Result]:
        g, n = self.graph, len(queries)
        usages = [Usage() for _ in queries]
        topics = [[int(t) for t in g.index_of(list(q.topic_ids), missing="ignore") if t >= 0] for q in queries]
        relations = list(g.relation_names)

        # 1. extract the medical entities; 2. generate: one prompt per query, or per option
        entities = self.extract(queries, usages)
        prompt_list, owners = [], []
        for j, q in enumerate(queries):
            for option in (q.options or (None,)):
                prompt_list.append(kp.generate_triplets(q.text, entities[j], relations, option))
                owners.append(j)
        proposed: list[list[tuple[str, str, str]]] = [[] for _ in queries]
        for j, reply in zip(owners, self._call(prompt_list, owners, usages)):
            proposed[j] += [t for t in parse_triplets(reply) if t not in proposed[j]]

        # 3. review
        reviews = [[self.review(t) for t in triplets] for triplets in proposed]
        kept: list[list[Review]] = [[r for r in rs if r.kept] for rs in reviews]
        log = [[{"triplet": list(r.triplet), "status": r.status, **({"score": r.score} if r.score is not None else {})}
                for r in rs] for rs in reviews]

        # 4. revise the rejected ones, one prompt each, all of a round in one batch
        open_items = [(j, i, [r.triplet], r) for j, rs in enumerate(reviews) for i, r in enumerate(rs)
                      if r.status == "rejected"]
        vectors = self.encoder.encode([q.text for q in queries]) if open_items and self.revise_facts else None
        for _ in range(self.rounds):
            if not open_items:
                break
            prompt_list = []
            for j, _, attempts, r in open_items:
                facts = ([fact_names(g, f) for f in self.candidate_facts(r, queries[j].text, vectors[j])]
                         if vectors is not None and r.heads and r.tails else None)
                prompt_list.append(kp.revise_triplet(queries[j].text, attempts, facts))
            replies = self._call(prompt_list, [j for j, *_ in open_items], usages)
            still_open = []
            for (j, i, attempts, original), reply in zip(open_items, replies):
                accepted = None
                for triplet in parse_triplets(reply):
                    review = self.review(triplet)
                    attempts = attempts + [triplet]
                    if review.kept:
                        accepted = review
                        break
                if accepted is not None:
                    kept[j].append(accepted)
                    log[j][i].update(revised=list(accepted.triplet), revised_status=accepted.status)
                else:
                    still_open.append((j, i, attempts, original))
            open_items = still_open

        # 5. answer from the kept triplets
        replies = self._call([kp.answer(q.text, [r.triplet for r in kept[j]], q.options)
                              for j, q in enumerate(queries)], list(range(n)), usages, self._short)
        results = []
        for j, (q, reply) in enumerate(zip(queries, replies)):
            topic_set = set(topics[j])
            facts = list(dict.fromkeys(self._orient(r.fact, topic_set) for r in kept[j]
                                       if r.fact is not None and r.status == "accepted"))
            names = [name for r in kept[j] for name in (r.triplet[0], r.triplet[2])
                     if name.lower() not in {g.name(t).lower() for t in topic_set}]
            answer, source = read_reply(reply, q.options, list(dict.fromkeys(names)))
            results.append(Result(q.id, q.level, answer, method=self.name, raw=reply, answer_source=source,
                                  paths=[[fact_edge(g, f)] for f in facts], usage=usages[j].as_dict(),
                                  extra={"entities": entities[j], "triplets": log[j]}))
        return results


def _build(context: MethodContext) -> KGARevion:
    from adapath.errors import InputError

    p = context.params
    if p["review"] not in REVIEWS:
        raise InputError(f"--method kgarevion: --param review={p['review']!r}: choose kge or oracle")
    if p["rounds"] < 0 or p["revise_facts"] < 0 or p["extract_tries"] < 1 or not 0 < p["link_threshold"] <= 1:
        raise InputError("--method kgarevion: --param rounds >= 0, revise_facts >= 0, extract_tries >= 1 and "
                         "0 < link_threshold <= 1, please")
    if p["kge_dim"] < 1 or p["kge_epochs"] < 1:
        raise InputError("--method kgarevion: --param kge_dim and kge_epochs must be at least 1")
    scorer = None
    if p["review"] == "kge":
        from adapath.retrieval.kge import KGEConfig, scorer_for_graph

        try:
            import torch  # noqa: F401  (the scorer trains with it)
        except ImportError:
            raise InputError("--method kgarevion: the review scorer needs torch (pip install 'adapath[embed]'), "
                             "or use --param review=oracle") from None
        scorer = scorer_for_graph(context.graph, context.graph_dir,
                                  KGEConfig(dim=p["kge_dim"], epochs=p["kge_epochs"], seed=p["seed"]))
    return KGARevion(context.graph, context.encoder(), context.llm, scorer, p["review"], p["rounds"],
                     p["revise_facts"], p["extract_tries"], p["keep_unlinked"], p["link_threshold"],
                     p["max_tokens"], p["answer_tokens"])


METHODS = [MethodSpec(
    "kgarevion", "the LLM extracts the medical entities and proposes triplets; a KG-embedding scorer trained on "
                 "the graph reviews them; rejected ones are revised from the question alone; then it answers "
                 "(review=oracle: the exact-edge lookup instead of the scorer, an upper bound)",
    "KGARevion (Su et al. 2025; extract, generate, review, revise, answer)", _build, llm="required",
    path_finding=True, repository="mims-harvard/KGARevion", calls="≥ 3",
    deviations=(
        "the review is a DistMult embedding trained on the graph's triplets with a threshold set on held-out "
        "triplets, not an LLM fine-tuned over RotatE embeddings: no fine-tuned reviewer model can be shipped or "
        "trained here, and the embedding is the part that carries the graph",
        "the review is no LLM call, so it adds no calls or tokens (the original runs one forward pass of its "
        "fine-tuned reviewer per triplet)",
        "entities link to nodes by name (exact, then a close name by character 3-grams), not through UMLS "
        "with scispaCy; relations link to the closest relation name, not by BERT embedding similarity",
        "the answer may use 64 tokens (the original allows 30), so a braced answer is not cut off",
        "prompts are in this project's words; like the original's they are zero-shot and ask for JSON",
        lenient_reading("an entity of its triplets (or an option)")),
    params=(Param("review", "kge", "how a linked triplet is judged: kge (the trained scorer) or oracle (the exact "
                                   "edge must be in the graph: an upper bound, not the paper's method)"),
            Param("rounds", 1, "revision rounds for a rejected triplet"),
            Param("revise_facts", 0, "graph facts shown when revising (0, the original: triplet and question only)"),
            Param("extract_tries", 5, "entity-extraction attempts while the reply cannot be read"),
            Param("keep_unlinked", True, "keep triplets whose entities are not in the graph (the original does)"),
            Param("link_threshold", 0.85, "least name similarity to link an entity to a node of another name"),
            Param("kge_dim", 64, "embedding size of the review scorer"),
            Param("kge_epochs", 30, "training passes of the review scorer (at most 3000 mini-batches)"),
            Param("seed", 42, "seed of the review scorer's training"),
            Param("max_tokens", 256, "most tokens in a triplet reply"),
            Param("answer_tokens", 64, "most tokens in the answer")),
)]
