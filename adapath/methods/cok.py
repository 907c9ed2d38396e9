"""Chain-of-Knowledge as the AdaPath paper runs it: a fact-retrieval baseline.

Chain-of-Knowledge (Li et al., ICLR 2024) grounds a chain of thought in knowledge retrieved
for the question and corrects the reasoning steps that knowledge contradicts. With a
knowledge graph as its one source, as in the AdaPath comparison, the knowledge is the
graph's triplets about the question's topic entities (the same topic links every method
gets): all one-hop facts of the topics, ranked by relevance to the question (BM25 over the
triplet text mixed with the encoder's cosine, ``rank_facts``), the best ``triplets`` of them
put into one chain-of-thought prompt that grounds and corrects each step with them. No
traversal: nothing beyond one hop is read. The injected facts are the result's ``paths``
(one-hop, from the topic), so triplet recall can be measured; their far ends are the
depth-1 ``explored`` set. One LLM call per query, one batch per batch of queries.
"""

from __future__ import annotations

from adapath.engine.graph import KnowledgeGraph
from adapath.llm import GenerationParams, Usage, prompts
from adapath.llm.parse import read_reply
from adapath.methods._kg_facts import fact_edge, fact_names, facts_of, rank_facts
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, Param, Query, Result


class ChainOfKnowledge:
    name = "cok"

    def __init__(self, graph: KnowledgeGraph, encoder, llm, triplets: int = 30, alpha: float = 0.5,
                 prefilter: int = 200, max_tokens: int = 256):
        self.graph, self.encoder = graph, encoder
        self.triplets, self.alpha, self.prefilter = triplets, alpha, prefilter
        self._generate = LLMCaller(llm, GenerationParams(max_tokens=max_tokens))

    def evidence(self, query: Query, vector) -> list[tuple[int, int, int]]:
        """The facts put into the prompt, most relevant first."""
        topics = [int(t) for t in self.graph.index_of(list(query.topic_ids), missing="ignore") if t >= 0]
        facts = facts_of(self.graph, topics)
        order = rank_facts(self.graph, query.text, vector, facts, self.encoder, self.alpha, self.prefilter)
        return [facts[i] for i in order[: self.triplets]]

    def answer(self, queries: list[Query]) -> list[Result]:
        g = self.graph
        usages = [Usage() for _ in queries]
        vectors = self.encoder.encode([q.text for q in queries])
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
    if p["triplets"] < 0 or p["prefilter"] < 1 or not 0 <= p["alpha"] <= 1:
        raise InputError("--param triplets >= 0, prefilter >= 1 and 0 <= alpha <= 1, please")
    return ChainOfKnowledge(context.graph, context.encoder(), context.llm, p["triplets"], p["alpha"],
                            p["prefilter"], p["max_tokens"])


METHODS = [MethodSpec(
    "cok", "one-hop KG triplets of the topic entities, ranked by relevance, ground a chain of thought",
    "Chain-of-Knowledge (Li et al., ICLR 2024), KG triplets as its knowledge source (AdaPath §4.2)",
    _build, llm="required", path_finding=True,
    params=(Param("triplets", 30, "facts put into the prompt"),
            Param("alpha", 0.5, "weight of the encoder's cosine against BM25 in the ranking"),
            Param("prefilter", 200, "facts kept by BM25 before embedding"),
            Param("max_tokens", 256, "most tokens in the reply")),
)]
