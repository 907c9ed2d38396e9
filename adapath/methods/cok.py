"""Chain-of-Knowledge (Li et al., ICLR 2024; DAMO-NLP-SG/chain-of-knowledge), with the
knowledge graph as its knowledge source.

``cok`` runs the authors' stages (their ``run.py`` with ``--step True``):

1. Reasoning preparation:
   - domain selection: the LLM names the knowledge domains the question needs (4 worked
     examples; temperature 0);
   - ``samples`` (10) two-rationale chains of thought ("First, ... Second, ... The answer
     is X", 6 worked examples) sampled at ``temperature`` (0.7) in one request; the majority
     answer among the first ``voters`` (5) that state one, and its share, the consistency.
     At a share of ``threshold`` (0.5) or more the majority answer is the answer: no retrieval.
2. Knowledge adapting, rationale by rationale (from the majority chain):
   - query generation: the LLM writes a question that checks the rationale and names the
     entity it asks about (3 worked examples);
   - retrieval: that entity's one-hop facts in the graph (the topic entities' when the name
     links to no node), ranked by relevance to the generated question (BM25 mixed with the
     encoder's cosine, ``rank_facts``); the ``facts`` (5) best are the knowledge;
   - editing: the LLM corrects the rationale with that knowledge (2 worked examples);
   - the second rationale is written anew after the edited first one, then checked the same way.
3. Answer consolidation: the chain with both edited rationales is completed with the answer.

Calls per question: 2 when the samples agree (domains, one request for the samples), else
8 (domains, samples, query + edit for rationale 1, rationale 2, query + edit for it, answer).
Each stage of a batch is one backend batch. The retrieved facts are the result's one-hop
``paths`` and their far ends its depth-1 ``explored`` set.

``cok-facts`` is this project's single-call variant, described by neither the CoK paper nor the
AdaPath paper: the ``triplets`` (30) best one-hop facts of the topic entities in one
chain-of-thought prompt.
"""

from __future__ import annotations

import re

import numpy as np

from adapath.contract import Query, Result
from adapath.engine.graph import KnowledgeGraph
from adapath.llm import GenerationParams, Usage, prompts
from adapath.llm import rationale_prompts as rp
from adapath.llm.parse import lenient_reading, parse_answer, read_option, read_reply
from adapath.methods import _rationales as ra
from adapath.methods._kg_facts import Fact, Resolver, fact_edge, fact_names, facts_of, rank_facts
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, Param


def _topics(graph: KnowledgeGraph, query: Query) -> list[int]:
    return [int(t) for t in graph.index_of(list(query.topic_ids), missing="ignore") if t >= 0]


def _first_line(text: str) -> str:
    return (text or "").strip().split("\n")[0].strip()


class ChainOfKnowledge:
    """The authors' four stages (see the module)."""

    name = "cok"

    def __init__(self, graph: KnowledgeGraph, encoder, llm, samples: int = 10, temperature: float = 0.7,
                 voters: int = 5, threshold: float = 0.5, facts: int = 5, alpha: float = 0.5,
                 prefilter: int = 200, max_tokens: int = 256, seed: int = 42):
        self.graph, self.encoder = graph, encoder
        self.samples, self.voters, self.threshold = samples, voters, threshold
        self.facts, self.alpha, self.prefilter = facts, alpha, prefilter
        self.sampling = GenerationParams(max_tokens=max_tokens, temperature=temperature, seed=seed)
        self._call = LLMCaller(llm, GenerationParams(max_tokens=max_tokens, temperature=0.0, seed=seed))
        self.resolver = Resolver(graph)

    # ------------------------------------------------------------------ retrieval
    def retrieve(self, query: Query, reply: str) -> tuple[str, list[Fact]]:
        """(the generated question, the facts retrieved for it)."""
        asked = re.sub(r"\{[^{}]*\}", "", _first_line(reply)).strip() or _first_line(reply)
        asked = re.sub(r"^question\s*:\s*", "", asked, flags=re.I)
        entity = parse_answer(reply)
        nodes = self.resolver.entity(entity) if entity else []
        facts = facts_of(self.graph, nodes or _topics(self.graph, query))
        if not facts:
            return asked, []
        text = asked or query.text
        order = rank_facts(self.graph, text, self.encoder.encode([text])[0], facts, self.encoder,
                           self.alpha, self.prefilter)
        return asked, [facts[i] for i in order[: self.facts]]

    def _check(self, queries, todo, rationales, usages, log, step: str) -> list[str]:
        """Query generation, retrieval and editing of one rationale per question in ``todo``."""
        g = self.graph
        replies = self._call([rp.generate_query(queries[j].text, r) for j, r in zip(todo, rationales)], todo, usages)
        knowledge = []
        for j, reply in zip(todo, replies):
            asked, facts = self.retrieve(queries[j], reply)
            knowledge.append(facts)
            log[j][step] = {"query": asked, "facts": facts}
        edits = self._call([rp.edit_rationale(r, [fact_names(g, f) for f in facts])
                            for r, facts in zip(rationales, knowledge)], todo, usages)
        return [_first_line(e) or r for e, r in zip(edits, rationales)]

    # ------------------------------------------------------------------ the batch
    def answer(self, queries: list[Query]) -> list[Result]:
        n = len(queries)
        every = list(range(n))
        usages = [Usage() for _ in queries]
        log: list[dict] = [{} for _ in queries]

        # 1. reasoning preparation: domains, then the sampled chains and their consistency
        domains = self._call([rp.select_domains(q.text) for q in queries], every, usages)
        chains = ra.sample_chains(self._call, [rp.rationale_cot(q.text, q.options) for q in queries], every,
                                  usages, self.samples, self.sampling)
        gates = [ra.consistency(c, q.options, self.voters) for c, q in zip(chains, queries)]
        for j, (d, gate) in enumerate(zip(domains, gates)):
            log[j].update(domains=[x.strip() for x in _first_line(d).split(",") if x.strip()],
                          samples=gate.answers, consistency=round(gate.score, 4))
        todo = [j for j in every if gates[j].winner is None or gates[j].score < self.threshold]

        # 2. knowledge adapting, rationale by rationale
        majority = {j: chains[j][gates[j].winner if gates[j].winner is not None else 0] for j in todo}
        first = [ra.split_rationales(majority[j])[0] for j in todo]
        edited_first = self._check(queries, todo, first, usages, log, "rationale_1")
        seconds = self._call([rp.rationale_continue(queries[j].text, queries[j].options, e)
                              for j, e in zip(todo, edited_first)], todo, usages)
        second = [ra.rationale_only(s) for s in seconds]
        edited_second = self._check(queries, todo, second, usages, log, "rationale_2")

        # 3. answer consolidation
        finals = self._call([rp.rationale_continue(queries[j].text, queries[j].options, a, b)
                             for j, a, b in zip(todo, edited_first, edited_second)], todo, usages)
        final = dict(zip(todo, finals))
        for j, a, b in zip(todo, edited_first, edited_second):
            log[j]["edited"] = [a, b]
        return [self._result(q, j, final.get(j), chains[j], gates[j], usages[j], log[j])
                for j, q in enumerate(queries)]

    def _result(self, q: Query, j: int, final: str | None, chains: list[str], gate: ra.Consistency,
                usage: Usage, log: dict) -> Result:
        g = self.graph
        facts = list(dict.fromkeys(f for step in ("rationale_1", "rationale_2") for f in log.get(step, {}).get("facts", [])))
        for step in ("rationale_1", "rationale_2"):
            if step in log:
                log[step]["facts"] = [list(fact_names(g, f)) for f in log[step]["facts"]]
        if final is None:  # the samples agreed: the majority answer
            raw = chains[gate.winner]
            stated = gate.answers[gate.winner]
            answer, source = read_option(stated, list(q.options)) if q.options else (stated, "stated")
        else:
            raw = final
            stated = ra.continued_answer(final)
            if q.options:
                answer, source = read_option(stated, list(q.options))
                if not answer:
                    answer, source = read_option(final, list(q.options))
            else:
                names = [g.name(b) for b in dict.fromkeys(b for _, _, b in facts)]
                answer, source = (stated, "stated") if stated else read_reply(final, (), names, names[0] if names else "")
        ends = list(dict.fromkeys(int(g.node_id[b]) for _, _, b in facts))
        return Result(q.id, q.level, answer, method=self.name, raw=raw, answer_source=source,
                      paths=[[fact_edge(g, f)] for f in facts], explored={"1": ends} if ends else {},
                      usage=usage.as_dict(), extra={"stages": log, "retrieved": final is not None})


class FactsPrompt:
    """``cok-facts``: the best one-hop facts of the topic entities in one prompt."""

    name = "cok-facts"

    def __init__(self, graph: KnowledgeGraph, encoder, llm, triplets: int = 30, alpha: float = 0.5,
                 prefilter: int = 200, max_tokens: int = 256):
        self.graph, self.encoder = graph, encoder
        self.triplets, self.alpha, self.prefilter = triplets, alpha, prefilter
        self._generate = LLMCaller(llm, GenerationParams(max_tokens=max_tokens))

    def evidence(self, query: Query, vector) -> list[Fact]:
        """The facts put into the prompt, most relevant first."""
        facts = facts_of(self.graph, _topics(self.graph, query))
        order = rank_facts(self.graph, query.text, vector, facts, self.encoder, self.alpha, self.prefilter)
        return [facts[i] for i in order[: self.triplets]]

    def answer(self, queries: list[Query]) -> list[Result]:
        g = self.graph
        usages = [Usage() for _ in queries]
        vectors = self.encoder.encode([q.text for q in queries]) if queries else np.zeros((0, 1))
        chosen = [self.evidence(q, v) for q, v in zip(queries, vectors)]
        replies = self._generate(
            [prompts.knowledge_answer(q.text, [fact_names(g, f) for f in facts], q.options)
             for q, facts in zip(queries, chosen)], list(range(len(queries))), usages)
        results = []
        for q, facts, reply, usage in zip(queries, chosen, replies, usages):
            ends = list(dict.fromkeys(b for _, _, b in facts))
            names = [g.name(b) for b in ends]
            answer, source = read_reply(reply, q.options, names, names[0] if names else "")
            results.append(Result(
                q.id, q.level, answer, method=self.name, raw=reply, answer_source=source,
                paths=[[fact_edge(g, f)] for f in facts],
                explored={"1": [int(g.node_id[b]) for b in ends]} if ends else {},
                usage=usage.as_dict()))
        return results


def _build(context: MethodContext) -> ChainOfKnowledge:
    from adapath.errors import InputError

    p = context.params
    if p["samples"] < 1 or p["voters"] < 1 or p["facts"] < 0 or p["prefilter"] < 1:
        raise InputError("--method cok: --param samples, voters and prefilter >= 1 and facts >= 0, please")
    if p["temperature"] <= 0 or not 0 <= p["threshold"] <= 1 or not 0 <= p["alpha"] <= 1:
        raise InputError("--method cok: --param temperature > 0, 0 <= threshold <= 1 and 0 <= alpha <= 1, please")
    return ChainOfKnowledge(context.graph, context.encoder(), context.llm, p["samples"], p["temperature"],
                            p["voters"], p["threshold"], p["facts"], p["alpha"], p["prefilter"],
                            p["max_tokens"], p["seed"])


def _build_facts(context: MethodContext) -> FactsPrompt:
    from adapath.errors import InputError

    p = context.params
    if p["triplets"] < 0 or p["prefilter"] < 1 or not 0 <= p["alpha"] <= 1:
        raise InputError("--param triplets >= 0, prefilter >= 1 and 0 <= alpha <= 1, please")
    return FactsPrompt(context.graph, context.encoder(), context.llm, p["triplets"], p["alpha"],
                       p["prefilter"], p["max_tokens"])


_READER = lenient_reading("an entity of the retrieved facts (or an option)", "the best-ranked fact's far end")
_RANKING = (Param("alpha", 0.5, "weight of the encoder's cosine against BM25 in the fact ranking"),
            Param("prefilter", 200, "facts kept by BM25 before embedding"))

METHODS = [
    MethodSpec(
        "cok", "Chain-of-Knowledge's four stages: domain selection, 10 sampled two-rationale chains of "
               "thought with a self-consistency gate, then per rationale a query, KG facts and an edit, "
               "and a final answer",
        "Chain-of-Knowledge (Li et al., ICLR 2024), the knowledge graph as its knowledge source",
        _build, llm="required", path_finding=True, repository="DAMO-NLP-SG/chain-of-knowledge",
        calls="2 or 8",
        deviations=(
            "every domain is served by the one knowledge graph (the authors map domains to Wikidata, "
            "Wikipedia, UpToDate and others): the graph is the only source here, so domain selection is "
            "made and recorded but changes no retrieval",
            "the query generator writes a question plus the entity it asks about in braces, and retrieval "
            "ranks that entity's one-hop facts (the authors' sources answer a SPARQL query from a fine-tuned "
            "generator or a search engine); the 5 best facts are the knowledge",
            "samples are n seeded copies of the prompt in one batch when the backend takes no n parameter; "
            "they are charged as the one request they stand for",
            "worked examples are biomedical, in this project's words, in the authors' format and number "
            "(6 chain-of-thought, 4 domain, 3 query, 2 edit examples)",
            _READER),
        params=(Param("samples", 10, "chains of thought sampled in stage 1"),
                Param("temperature", 0.7, "their sampling temperature"),
                Param("voters", 5, "the first this many samples that state an answer vote (the authors' code)"),
                Param("threshold", 0.5, "majority share at or above which the answer needs no retrieval"),
                Param("facts", 5, "graph facts retrieved per rationale"),
                *_RANKING,
                Param("max_tokens", 256, "most tokens in a reply"),
                Param("seed", 42, "seed of the first sample; sample i uses seed + i"))),
    MethodSpec(
        "cok-facts", "one prompt: the best one-hop KG facts of the topic entities ground a chain of thought "
                     "(this project's single-call variant of Chain-of-Knowledge; no sampling, no per-step editing)",
        "a single-call variant of Chain-of-Knowledge (Li et al., ICLR 2024) made for this project",
        _build_facts, llm="required", path_finding=True, calls="1",
        repository="DAMO-NLP-SG/chain-of-knowledge",
        deviations=("one call: none of the authors' domain selection, self-consistency gate, per-rationale "
                    "retrieval and editing or consolidation; a variant of this project's, which neither the CoK "
                    "paper nor the AdaPath paper describes", _READER),
        params=(Param("triplets", 30, "facts put into the prompt"), *_RANKING,
                Param("max_tokens", 256, "most tokens in the reply"))),
]
