"""ToG-2 (Ma et al., ICLR 2025; IDEA-FinAI/ToG-2): graph search interleaved with retrieval over
the entities' documents, here the nodes' descriptions.

0. Self-consistency gate (ToG-2's default): ``gate_samples`` (10) two-rationale chains of
   thought (3 worked examples) are sampled at temperature 0.7 in one request; when the most
   common stated answer has ``gate_threshold`` (0.8) of the samples or more, it is the answer
   and the graph is not searched.
1. Topic pruning (only with more than two topic entities): the LLM keeps the ones that matter.
   The topic entities' descriptions give the first reference sentences: their three best
   chunks are split into sentences and the best three of those kept.
2. At each depth:
   - relation pruning for all entities at once: one prompt per question lists every frontier
     entity with its relations; the LLM picks up to ``width`` per entity with scores 0-10;
   - entity discovery: neighbours through the picked relations (lists of ``sample_at`` or more
     cut to a seeded sample of that size, as ToG-2 samples 50), keeping those with a description;
   - entity-guided context retrieval and context-based entity pruning: every candidate's
     description is cut into chunks of ``chunk_sentences`` sentences; all chunks are ranked
     by relevance to the question (plus the last clue with ``clue=true``); the ``top_chunks`` best (k = 10) score
     their entities as sum(score * exp(-0.8 * rank)); the ``width`` best entities extend the
     reasoning paths, and the sentences of their ranked chunks join the reference pool;
   - hybrid reasoning: the question, the triplets of all reasoning paths and the ``references``
     (10) pool sentences most relevant to the question go to the LLM, which answers ({Yes} and
     the answer) or says what is missing ({No} and a clue). The official code has a slot for the
     clue that its main leaves empty, so retrieval uses the question alone; ``clue=true`` feeds
     the clue back: it joins the next retrieval query and the next reasoning prompt.
3. No candidate left, or the depth limit without a yes: the LLM answers from its own
   knowledge (``exhausted=paths``: from the triplets).

A node's documents are its description. A node without one (phenotypes, anatomy, exposures
and GO terms often have none) gets a text made of its name, its type and its typed one-hop
facts, one sentence each ("<name> <relation> <neighbour> (<type>)."; at most ``sample_at``
of them, a seeded sample when there are more), so it can be reached and ranked like the
others (``bare_nodes=facts``; ``bare_nodes=skip`` drops such nodes, as ToG-2 drops entities
without a page).

Relevance is the sentence encoder's cosine (``ranker=dense``, as ToG-2's default bi-encoder)
or BM25 over the candidate chunks (``ranker=bm25``, ToG-2's other option).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from adapath.config import setting
from adapath.contract import Query, Result
from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.llm import GenerationParams, LLMBackend, Usage, prompts
from adapath.llm import rationale_prompts as rp
from adapath.llm.parse import read_option
from adapath.methods import _rationales as ra
from adapath.methods import _search as s
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, config_from, params_of

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
RANK_DECAY = 0.8  # ToG-2's weight exp(-0.8 * rank) of a chunk's score in its entity's score


def sentences(text: str) -> list[str]:
    return [x.strip() for x in _SENTENCE_END.split(text or "") if x.strip()]


def chunk_text(text: str, size: int) -> list[str]:
    """A description as consecutive chunks of ``size`` sentences (its "paragraphs")."""
    parts = sentences(text)
    return [" ".join(parts[i:i + size]) for i in range(0, len(parts), size)]


RANKERS = ("dense", "bm25")


class Relevance:
    """Relevance of texts to a query: encoder cosine (dense) or BM25 over the texts given."""

    def __init__(self, kind: str, encoder_factory=None):
        if kind not in RANKERS:
            raise InputError(f"--method tog2: --param ranker={kind!r}: choose dense or bm25")
        self.kind, self._factory, self._encoder = kind, encoder_factory, None
        self._vectors: dict[str, np.ndarray] = {}

    def reset(self, keep: int = 200_000) -> None:
        """Called once per batch: cached vectors carry over (hub neighbours recur across
        questions) until there are more than ``keep`` of them, so memory stays bounded."""
        if len(self._vectors) > keep:
            self._vectors.clear()

    def scores(self, jobs: list[tuple[str, list[str]]]) -> list[np.ndarray]:
        """One score array per (query, texts) job; a batch of jobs is encoded at once."""
        if self.kind == "bm25":
            return [self._bm25(query, texts) for query, texts in jobs]
        if self._encoder is None:
            self._encoder = self._factory()
        todo = list(dict.fromkeys(t for query, texts in jobs for t in [query, *texts] if t not in self._vectors))
        if todo:
            for text, vector in zip(todo, self._encoder.encode(todo)):
                self._vectors[text] = vector
        out = []
        for query, texts in jobs:
            if not texts:
                out.append(np.zeros(0))
                continue
            matrix = np.stack([self._vectors[t] for t in texts])
            out.append(matrix @ self._vectors[query])
        return out

    @staticmethod
    def _bm25(query: str, texts: list[str]) -> np.ndarray:
        from adapath.retrieval.bm25 import TextIndex

        if not texts:
            return np.zeros(0)
        return TextIndex.build(texts).scores([query])[:, 0].astype(np.float64)


@dataclass
class ToG2Config:
    width: int = setting(3, "relations per entity and entities kept per depth")
    max_depth: int = setting(3, "most hops searched")
    sample_at: int = setting(50, "neighbour lists this long or longer are cut to a seeded sample of this size")
    chunk_sentences: int = setting(3, "sentences per description chunk")
    top_chunks: int = setting(10, "best-ranked chunks that score the candidate entities (k)")
    references: int = setting(10, "reference sentences given to the reasoning prompt")  # num_sents_for_reasoning
    ranker: str = setting("dense", "chunk relevance: dense (the --encoder's cosine) or bm25")
    exhausted: str = s.exhausted_setting("ToG-2")
    gate: bool = setting(True, "the chain-of-thought self-consistency gate (ToG-2's default)")
    gate_samples: int = setting(10, "chains of thought sampled by the gate (at temperature 0.7)")
    gate_threshold: float = setting(0.8, "share of the samples the majority answer needs to skip the graph")
    bare_nodes: str = setting("facts", "text of a node without a description: facts (its name, type and typed "
                                       "one-hop facts) or skip (unreachable, as without a page)")
    clue: bool = setting(False, "feed the {No} reply's clue back into the next retrieval query and reasoning "
                                "prompt (false: as the official main, whose clue slot stays empty)")
    seed: int = setting(42, "seed of the neighbour samples and of the gate's first sample")
    topic_sentences: int = 3  # best chunks, then best sentences, of a topic entity's description
    # ToG-2's defaults: temperature 0 throughout, 256 new tokens
    params: GenerationParams = field(default_factory=lambda: GenerationParams(max_tokens=256, temperature=0.0))

    def check(self) -> None:
        s.check_exhausted(self.exhausted, "tog2")
        if self.bare_nodes not in ("facts", "skip"):
            raise InputError(f"--method tog2: --param bare_nodes={self.bare_nodes!r}: choose facts or skip")
        if not 0 <= self.gate_threshold <= 1:
            raise InputError("--method tog2: --param gate_threshold must be between 0 and 1")
        for name in ("width", "max_depth", "sample_at", "chunk_sentences", "top_chunks", "gate_samples"):
            if getattr(self, name) < 1:
                raise InputError(f"--method tog2: --param {name} must be at least 1")
        if self.ranker not in RANKERS:
            raise InputError(f"--method tog2: --param ranker={self.ranker!r}: choose dense or bm25")


@dataclass
class _State(s.SearchState):
    pool: dict[str, str] = field(default_factory=dict)  # reference sentence -> entity name
    clue: str = ""
    gate_score: float = 0.0
    references: list[str] = field(default_factory=list)  # what the last reasoning prompt held

    @property
    def retrieval_query(self) -> str:
        return f"{self.query.text} {self.clue}".strip()


class ThinkOnGraph2:
    name = "tog2"

    def __init__(self, graph: KnowledgeGraph, llm: LLMBackend, relevance: Relevance,
                 config: ToG2Config | None = None):
        self.graph, self.relevance = graph, relevance
        self.config = config or ToG2Config()
        self.config.check()
        self._call = LLMCaller(llm, self.config.params)
        self._chunks: dict[int, list[str]] = {}

    def chunks(self, node: int) -> list[str]:
        if node not in self._chunks:
            text = self.graph.description(node) or ""
            if not text.strip() and self.config.bare_nodes == "facts":
                text = self.fact_text(node)
            self._chunks[node] = chunk_text(text, self.config.chunk_sentences)
        return self._chunks[node]

    def fact_text(self, node: int) -> str:
        """A description-less node as text: its name and type, then its typed one-hop facts."""
        g, c = self.graph, self.config
        name = g.name(node)
        neighbours, relations = g.neighbors(node)
        pairs = list(dict.fromkeys(zip(neighbours.tolist(), relations.tolist())))
        if len(pairs) >= c.sample_at:
            keep = s.seeded_sample(list(range(len(pairs))), c.sample_at, c.seed, "node-text", node)
            pairs = [pairs[i] for i in keep]
        facts = [f"{name} {g.relation_names[r]} {g.name(v)} ({g.type_name(v)})." for v, r in pairs]
        return " ".join([f"{name} is a {g.type_name(node)}.", *facts])

    def _gate(self, states: list[_State], usages) -> dict[int, tuple[str, str]]:
        """The self-consistency gate: {query: (answer, how it was read)} for those it answers."""
        c = self.config
        asked = [j for j, st in enumerate(states) if not st.answer_from]
        if not c.gate or not asked:
            return {}
        params = GenerationParams(max_tokens=c.params.max_tokens, temperature=0.7, seed=c.seed)
        chains = ra.sample_chains(self._call, [rp.rationale_cot(states[j].query.text, states[j].query.options, 3)
                                               for j in asked], asked, usages, c.gate_samples, params)
        out = {}
        for j, replies in zip(asked, chains):
            st = states[j]
            gate = ra.consistency(replies, st.query.options, denominator="samples")
            st.gate_score = gate.score
            if gate.winner is not None and gate.score >= c.gate_threshold:
                stated = gate.answers[gate.winner]
                out[j] = read_option(stated, list(st.query.options)) if st.query.options else (stated, "stated")
                st.finish("gate", "self-consistency", 0, replies[gate.winner])
        return out

    def answer(self, queries: list[Query]) -> list[Result]:
        c = self.config
        self.relevance.reset()
        usages = [Usage() for _ in queries]
        states = [_State(q, s.topic_walks(self.graph, q)) for q in queries]
        gated = self._gate(states, usages)
        for st in states:
            if not st.frontier and not st.answer_from:
                st.finish("knowledge", "no-topic", 0)
        self._prune_topics(states, usages)
        self._topic_context(states)
        for depth in range(1, c.max_depth + 1):
            active = s.searching(states)
            if not active:
                break
            picked = self._prune_relations(states, active, usages)
            candidates = self._discover(states, active, picked)
            reasoning = self._rank_entities(states, active, candidates, depth)
            self._reason(states, reasoning, depth, usages)
        results = s.final_results(self.graph, self._call, states, usages, self.name,
                                  lambda st: {"clue": st.clue, "references": st.references,
                                              "gate_score": round(st.gate_score, 4)})
        for j, (answer, source) in gated.items():
            results[j].answer, results[j].answer_source = answer, source
        return results

    # ------------------------------------------------------------------ steps
    def _prune_topics(self, states: list[_State], usages) -> None:
        g = self.graph
        asked = [j for j, st in enumerate(states) if len(st.frontier) > 2 and not st.answer_from]
        texts = [prompts.tog2_topics(states[j].query.text, [g.name(w.end) for w in states[j].frontier])
                 for j in asked]
        for j, reply in zip(asked, self._call(texts, asked, usages)):
            st = states[j]
            keep = s.read_names(reply, [g.name(w.end) for w in st.frontier])
            if keep:  # an unreadable reply keeps every topic, as ToG-2 does
                st.frontier = [st.frontier[i] for i in sorted(keep)]

    def _topic_context(self, states: list[_State]) -> None:
        c, g = self.config, self.graph
        jobs, owners = [], []
        for j, st in enumerate(states):
            for walk in st.frontier:
                if self.chunks(walk.end):
                    jobs.append((st.query.text, self.chunks(walk.end)))
                    owners.append((j, walk.end))
        best_chunks = []
        for (_, texts), scores in zip(jobs, self.relevance.scores(jobs)):
            order = np.argsort(-scores, kind="stable")[: c.topic_sentences]
            best_chunks.append([sent for i in order for sent in sentences(texts[i])])
        jobs2 = [(states[j].query.text, sents) for (j, _), sents in zip(owners, best_chunks)]
        for (j, node), (_, sents), scores in zip(owners, jobs2, self.relevance.scores(jobs2)):
            for i in np.argsort(-scores, kind="stable")[: c.topic_sentences]:
                states[j].pool.setdefault(sents[i], g.name(node))

    def _prune_relations(self, states, active, usages) -> dict[int, list[tuple[s.Walk, int, float]]]:
        g, c = self.graph, self.config
        texts, owners, asked = [], [], []
        for j in active:
            listed = [(walk, s.relations_of(g, walk.end)) for walk in states[j].frontier]
            listed = [(walk, rels) for walk, rels in listed if rels]
            if not listed:
                continue
            texts.append(prompts.tog2_relations(
                states[j].query.text, [(g.name(w.end), [g.relation_names[r] for r in rels]) for w, rels in listed],
                c.width))
            owners.append(j)
            asked.append(listed)
        picked: dict[int, list] = {j: [] for j in active}
        for j, listed, reply in zip(owners, asked, self._call(texts, owners, usages)):
            sections = _entity_sections(reply, len(listed))
            for (walk, rels), section in zip(listed, sections):
                best = sorted(s.read_scored(section, [g.relation_names[r] for r in rels]),
                              key=lambda x: -x[1])[: c.width]
                picked[j] += [(walk, rels[i], score) for i, score in best]
        return picked

    def _discover(self, states, active, picked) -> dict[int, list[s.Walk]]:
        g, c = self.graph, self.config
        out: dict[int, list[s.Walk]] = {}
        for j in active:
            st, walks, seen = states[j], [], set()
            for walk, relation, _ in picked[j]:
                nodes = s.neighbors_via(g, walk, relation)
                if len(nodes) >= c.sample_at:
                    nodes = s.seeded_sample(nodes, c.sample_at, c.seed, st.query.id, walk.end, relation)
                nodes = [v for v in nodes if self.chunks(v)]  # ToG-2 drops entities without a document
                st.explored.add(walk.hops + 1, nodes)
                for v in nodes:
                    if v not in seen:  # an entity reached twice keeps its first path
                        seen.add(v)
                        walks.append(walk.extend(v, relation, 0.0))
            out[j] = walks
        return out

    def _rank_entities(self, states, active, candidates, depth) -> list[int]:
        """Context-based entity pruning; returns the queries that go on to reasoning."""
        g, c = self.graph, self.config
        go_on, jobs, owners = [], [], []
        for j in active:
            if not candidates[j]:
                states[j].finish(c.exhausted, "no-candidates", depth)
                continue
            texts, whose = [], []
            for k, walk in enumerate(candidates[j]):
                for chunk in self.chunks(walk.end):
                    texts.append(chunk)
                    whose.append(k)
            jobs.append((states[j].retrieval_query, texts))
            owners.append((j, whose))
        for (j, whose), (_, texts), scores in zip(owners, jobs, self.relevance.scores(jobs)):
            st, walks = states[j], candidates[j]
            top = np.argsort(-scores, kind="stable")[: c.top_chunks]
            entity_score: dict[int, float] = {}
            for rank, i in enumerate(top, start=1):
                entity_score[whose[i]] = entity_score.get(whose[i], 0.0) + float(scores[i]) * math.exp(-RANK_DECAY * rank)
            chosen = sorted(entity_score, key=lambda k: -entity_score[k])[: c.width]
            kept = [s.Walk(walks[k].nodes, walks[k].relations, entity_score[k]) for k in chosen]
            st.kept.extend(kept)
            st.frontier = kept
            for i in top:
                if whose[i] in chosen:
                    for sentence in sentences(texts[i]):
                        st.pool.setdefault(sentence, g.name(walks[whose[i]].end))
            go_on.append(j)
        return go_on

    def _reason(self, states, reasoning: list[int], depth: int, usages) -> None:
        g, c = self.graph, self.config
        jobs = [(states[j].retrieval_query, list(states[j].pool)) for j in reasoning]
        texts = []
        for j, (_, pool), scores in zip(reasoning, jobs, self.relevance.scores(jobs)):
            st = states[j]
            order = np.argsort(-scores, kind="stable")[: c.references]
            st.references = [f"{st.pool[pool[i]]}: {pool[i]}" for i in order]
            texts.append(prompts.tog2_reason(st.query.text, st.clue, s.unique_triplets(g, st.kept),
                                             st.references, st.query.options))
        for j, reply in zip(reasoning, self._call(texts, reasoning, usages)):
            st = states[j]
            if s.read_verdict(reply):  # the reasoning reply carries the answer
                st.finish("reply", "sufficient", depth, reply)
                continue
            if c.clue:
                st.clue = s.braced_text(reply) or st.clue
            if depth == c.max_depth:
                st.finish(c.exhausted, "depth-limit", depth)


def _entity_sections(reply: str, count: int) -> list[str]:
    """The part of a combined relation-pruning reply about each entity ("Entity N:" headings);
    a reply without headings speaks for every entity."""
    parts = re.split(r"entity\s*(\d+)\s*:", reply or "", flags=re.I)
    if len(parts) < 3:
        return [reply or ""] * count
    sections = [""] * count
    for number, text in zip(parts[1::2], parts[2::2]):
        index = int(number) - 1
        if 0 <= index < count:
            sections[index] += text
    return sections


def _build(context: MethodContext) -> ThinkOnGraph2:
    config = config_from(ToG2Config, context.params)
    config.check()
    return ThinkOnGraph2(context.graph, context.llm, Relevance(config.ranker, context.encoder), config)


METHODS = [MethodSpec(
    "tog2", "ToG-2: a self-consistency gate (10 chains of thought; >= 80% agreement answers without the graph), "
            "then ToG's graph search interleaved with retrieval over node texts (context-based entity pruning, "
            "hybrid reasoning). A node without a description is given its name, type and typed "
            "one-hop facts as its text, so it can be reached (bare_nodes=skip drops such nodes)",
    "Think-on-Graph 2.0 (Ma et al., ICLR 2025)", _build, llm="required", repository="IDEA-FinAI/ToG-2",
    calls="≤ 2D+3 = 9",
    deviations=(
        "node descriptions stand in for the Wikipedia pages ToG-2 retrieves from, and a node without one gets "
        "its name and typed one-hop facts as text (ToG-2 drops an entity without a page; in the 898 BioStrat-QA "
        "dev records 389 of the 1,732 path nodes have no description, and 333 gold paths pass one after the "
        "topic, so dropping them would make those paths unreachable)",
        "the gate's samples are n seeded copies of the prompt in one batch when the backend takes no n "
        "parameter; they are charged as the one request they stand for",
        "worked examples are biomedical, in this project's words, in the authors' format and number (the "
        "gate's chain of thought has 3)",
        "chunks and sentences are ranked with this project's --encoder (minilm by default) where the official "
        "code ranks them with BAAI/bge-large-en-v1.5 ('bge-bi'); ranker=bm25 is ToG-2's other option",
        s.READER_DEVIATION),
    config=ToG2Config, params=params_of(ToG2Config),
)]
