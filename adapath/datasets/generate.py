"""BioStrat-QA-format questions generated on any graph from the 60 templates.

A record walks a template from a random topic, matching relation and node type at every
hop (junction templates meet a second topic at the answer; constrained templates also need
a direct edge between topic and answer). ``valid_answer_ids`` holds every node the template
reaches from the topic(s). Three templated surface forms: *explicit* names every
intermediate and relation, *implicit* describes intermediates from their descriptions
without naming them, *bare* gives only the topic(s) and the answer type. No form ever
contains the answer's name.

The ``describe`` phrasing (for real graphs, as BioStrat-QA questions do) adds the answer's
own definition in words to every form, its name hidden, and keeps only the answer valid:
the question then singles out one of the nodes the template reaches, and answering it
means matching that description among related rivals. Answers without a description are
drawn again.
"""

from __future__ import annotations

import re

import numpy as np

from adapath.datasets.templates import Template, load_templates
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.engine.traverse import metapath_codes, reach, typed_neighbors
from adapath.errors import InputError
from adapath.kernels.expand import count_typed

MAX_TRIES = 400
PHRASINGS = ("templated", "describe")
DESCRIBE_WORDS = 30  # words of the answer's definition a describing question carries


class QueryGenerator:
    def __init__(self, graph: KnowledgeGraph, templates: tuple[Template, ...] | None = None):
        self.graph = graph
        templates = templates or load_templates()
        self.present = self._present_steps()
        self.templates = [t for t in templates if self._groundable(t)]
        self._starts: dict[tuple[int, int, int], np.ndarray] = {}

    def _present_steps(self) -> set[tuple[int, int, int]]:
        g = self.graph
        n_types, n_rel = len(g.type_names), g.num_relations
        key = (g.node_type[g.src].astype(np.int64) * n_rel + g.rel) * n_types + g.node_type[g.indices]
        steps = set()
        for k in np.unique(key).tolist():
            steps.add((k // (n_rel * n_types), (k // n_types) % n_rel, k % n_types))
        return steps

    def _groundable(self, template: Template) -> bool:
        for chain in template.chains:
            codes = metapath_codes(self.graph, chain.metapath)
            if codes is None:
                return False
            types, rels = codes
            if any((int(types[h]), int(rels[h]), int(types[h + 1])) not in self.present
                   for h in range(len(rels))):
                return False
        return True

    def _start_nodes(self, t0: int, r: int, t1: int) -> np.ndarray:
        key = (t0, r, t1)
        if key not in self._starts:
            g = self.graph
            nodes = np.flatnonzero(g.node_type == t0).astype(np.int64)
            counts = count_typed(g.indptr, g.indices, g.rel, g.node_type, nodes, r, t1)
            self._starts[key] = nodes[counts > 0]
        return self._starts[key]

    def _walk(self, start: int, metapath: MetaPath, avoid: set[int], rng) -> list[int] | None:
        types, rels = metapath_codes(self.graph, metapath)
        path = [start]
        for hop in range(metapath.hops):
            options = typed_neighbors(self.graph, path[-1], rels[hop], types[hop + 1])
            options = [v for v in options.tolist() if v not in avoid and v not in path]
            if not options:
                return None
            path.append(options[int(rng.integers(len(options)))])
        return path

    def sample(self, template: Template, rng, describe: bool = False) -> dict | None:
        """One record for ``template``, or None if this draw found no grounding."""
        g = self.graph
        main = template.main.metapath
        types, rels = metapath_codes(g, main)
        starts = self._start_nodes(int(types[0]), int(rels[0]), int(types[1]))
        if len(starts) == 0:
            return None
        topic = int(starts[int(rng.integers(len(starts)))])
        path = self._walk(topic, main, set(), rng)
        if path is None:
            return None
        answer = path[-1]
        topics = [topic]
        branch: list[int] = []
        valid = set(reach(g, [topic], main).tolist())
        for chain in template.chains[1:]:
            if chain.topic_slot == 1:  # junction: walk back from the answer to a second topic
                back = self._walk(answer, chain.metapath.reversed(), set(path), rng)
                if back is None:
                    return None
                branch = back[1:]
                topics.append(back[-1])
                valid &= set(reach(g, [back[-1]], chain.metapath).tolist())
            else:  # constraint: the topic must reach the answer this way too
                reached = reach(g, [topic], chain.metapath)
                if answer not in set(reached.tolist()):
                    return None
                valid &= set(reached.tolist())
        valid -= set(topics)
        if answer not in valid:
            return None
        if describe:
            if not _snippet(g, answer, [g.name(answer)], words=DESCRIBE_WORDS):
                return None
            valid = {answer}
        return self._record(template, path, branch, topics, sorted(valid), describe)

    def _record(self, template, path, branch, topics, valid, describe: bool = False) -> dict:
        g = self.graph
        ext = lambda i: int(g.node_id[i])  # noqa: E731
        full_path = path + branch[::-1]  # [topic1, ..., answer, ..., topic2], as BioStrat-QA
        relations = list(template.main.metapath.relations)
        if branch:
            relations += list(template.chains[1].metapath.relations)[::-1]
        triplets = []
        for i, relation in enumerate(relations):
            a, b = full_path[i], full_path[i + 1]
            if i >= len(path) - 1:  # second branch: traversal runs from topic2 toward the answer
                a, b = b, a
            triplets.append([g.name(a), relation, g.name(b)])
        answer = path[-1]
        texts = surface_forms(g, template, path, branch, topics)
        if describe:
            texts = {key: text + describing(g, path[-1], template.answer_type) for key, text in texts.items()}
        return {
            "template_id": template.id,
            "num_hops": template.num_hops,
            "path_node_ids": [ext(i) for i in full_path],
            "triplets": triplets,
            "topic_entities": {str(ext(t)): g.name(t) for t in topics},
            "answer_entity": {"id": ext(answer), "name": g.name(answer), "type": g.type_name(answer)},
            "node_metadata": [
                {"id": ext(i), "name": g.name(i), "type": g.type_name(i), "description": g.description(i)}
                for i in full_path
            ],
            **texts,
            "valid_answer_ids": [ext(v) for v in valid],
            "valid_answer_names": [g.name(v) for v in valid],  # so eval needs no graph to name them
        }

    def generate(self, n: int, seed: int, hops=(1, 2, 3), first_id: int = 0,
                 max_answers: int = 50, phrasing: str = "templated", exclude=frozenset()) -> list[dict]:
        """``n`` records; walks with more than ``max_answers`` valid answers are drawn again
        (as ``dataset build`` drops them), so one vague question cannot inflate exact match.
        ``exclude``: (topic id, answer id) pairs (external ids, :func:`topic_answer_pairs`) no
        record may hold: a walk sharing one with them is drawn again."""
        if phrasing not in PHRASINGS:
            raise InputError(f"--phrasing {phrasing!r}: choose {' or '.join(PHRASINGS)}")
        rng = np.random.default_rng(seed)
        usable = [t for t in self.templates if t.num_hops in set(hops)]
        missing = sorted(set(hops) - {t.num_hops for t in usable})
        if missing:
            raise InputError(f"no template with {missing[0]} hop(s) can be grounded on this graph "
                             f"(hops with templates: {sorted({t.num_hops for t in self.templates})})")
        records = []
        failures = 0
        while len(records) < n:
            template = usable[int(rng.integers(len(usable)))]
            record = self.sample(template, rng, describe=phrasing == "describe")
            if record is not None and len(record["valid_answer_ids"]) > max_answers:
                record = None
            if record is not None and exclude and not exclude.isdisjoint(topic_answer_pairs([record])):
                record = None
            if record is None:
                failures += 1
                if failures > MAX_TRIES * max(n, 1):
                    raise InputError("the graph grounds too few template walks; is it too small?")
                continue
            record["data_id"] = first_id + len(records)
            records.append(record)
        return records


def topic_answer_pairs(records) -> set[tuple[int, int]]:
    """Every (topic id, valid answer id) pair of the records (external ids): generated
    training questions sharing none with a test set ask nothing the test set asks."""
    pairs = set()
    for record in records:
        answers = [int(a) for a in record.get("valid_answer_ids", [])]
        for topic in record.get("topic_entities", {}):
            pairs.update((int(topic), a) for a in answers)
    return pairs


def _snippet(graph: KnowledgeGraph, node: int, hide: list[str], words: int = 14) -> str:
    text = graph.description(node)
    for name in hide:
        if name:
            text = re.sub(re.escape(name), "it", text, flags=re.IGNORECASE)
    text = " ".join(text.split()[:words]).rstrip(".,;:")
    return text


def describing(graph: KnowledgeGraph, answer: int, answer_type: str) -> str:
    """The sentence that describes the answer: its definition, its name hidden."""
    snippet = _snippet(graph, answer, [graph.name(answer)], words=DESCRIBE_WORDS)
    snippet = re.sub(r"^(?:an?|the) it\b", "It", snippet, flags=re.IGNORECASE)
    return f' The {answer_type} sought is described as: "{snippet}".'


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def surface_forms(graph, template, path, branch, topics) -> dict:
    """Explicit, implicit and bare questions; none contains the answer's name."""
    answer = path[-1]
    answer_type = template.answer_type
    answer_name = graph.name(answer)
    names = [graph.name(i) for i in path]
    relations = template.main.metapath.relations
    hops = len(relations)
    intermediates = path[1:-1]

    def steps(describe):
        parts = [f"'{relations[h]}' to {describe(path[h + 1])}" for h in range(hops - 1)]
        return parts

    explicit_steps = steps(lambda i: f"{graph.name(i)} ({graph.type_name(i)})")
    hide = [answer_name] + [graph.name(i) for i in intermediates]

    def describe(i):
        kind = _article(graph.type_name(i))
        snippet = _snippet(graph, i, hide)
        return f'{kind} described as "{snippet}"' if snippet else kind

    implicit_steps = steps(describe)
    tail = f"'{relations[-1]}'"

    def sentence(step_list):
        if step_list:
            route = ", then ".join(step_list)
            text = f"Starting from {names[0]}, following {route}, then {tail}: which {answer_type} is reached?"
        else:
            text = f"Which {answer_type} is linked to {names[0]} by {tail}?"
        return text

    explicit, implicit = sentence(explicit_steps), sentence(implicit_steps)
    extra = ""
    if branch:
        second = template.chains[1].metapath
        topic2 = graph.name(topics[1])
        extra = f" It must also be linked to {topic2} by '{second.relations[0]}'"
        if second.hops > 1:
            extra += " through " + ", ".join(f"'{r}'" for r in second.relations[1:])
        extra += "."
    elif len(template.chains) > 1:
        extra = f" It must also have a '{template.chains[1].metapath.relations[0]}' link to {names[0]}."
    bare_topics = " and ".join(graph.name(t) for t in topics)
    bare = f"Which {answer_type} is related to {bare_topics}?"
    forms = {"explicit_query": explicit + extra, "implicit_query": implicit + extra, "bare_query": bare}
    for key, text in forms.items():
        if answer_name and answer_name.lower() in text.lower():
            forms[key] = re.sub(re.escape(answer_name), f"this {answer_type}", text, flags=re.IGNORECASE)
    return forms
