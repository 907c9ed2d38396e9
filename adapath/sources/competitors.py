"""Related competitors for planted BioStrat-QA records.

In PrimeKG the answer's rivals along a question's meta-path are related entities (a drug's
siblings that share a side effect, the phenotypes of one organ system). A generated graph
gives random rivals, which makes picking the answer by its description easy. For each
record this adds rivals of the answer's type at the record's last step: the entities whose
real descriptions are nearest the answer's (BM25 over the records' descriptions and the
graph's own descriptions of that type). An entity already in the graph is linked (a new
edge from the record's second-to-last node, with the last relation); one that is not is
added as a new node with its real name and description. No rival is a valid answer or
carries a valid answer's name. Per record, at most ``k`` rivals are added, and only until
the pool along the gold meta-path reaches the record's ``answer_ambiguity`` (``k`` rivals
where a record lacks the field).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.engine.schema import relation_description
from adapath.engine.traverse import reach
from adapath.errors import InputError
from adapath.jsonl import iter_jsonl
from adapath.retrieval.bm25 import TextIndex, tokenize

PARENT = "parent-child"


def record_walk(graph: KnowledgeGraph, record: dict):
    """(internal path nodes, gold meta-path, head-first flags per hop) of a planted record, or None
    when a path node is missing from the graph."""
    ids = [int(v) for v in record["path_node_ids"]]
    answer = int(record["answer_entity"]["id"])
    if answer in ids:  # junction records continue past the answer to a second topic
        ids = ids[: ids.index(answer) + 1]
    nodes = graph.index_of(ids, missing="ignore")
    if (nodes < 0).any():
        return None
    meta = {int(m["id"]): m for m in record["node_metadata"]}
    types = tuple(meta[i]["type"] for i in ids)
    relations, head_first = [], []
    for i, (head_name, relation, _) in enumerate(record["triplets"][: len(ids) - 1]):
        relations.append(relation)
        head_first.append(meta[ids[i]]["name"] == head_name)
    return nodes, MetaPath(types, tuple(relations)), head_first


def answer_pool(graph: KnowledgeGraph, record: dict) -> np.ndarray:
    """Every node reached from the record's topic along its gold meta-path (answer type)."""
    walk = record_walk(graph, record)
    if walk is None:
        return np.zeros(0, np.int64)
    nodes, metapath, _ = walk
    return reach(graph, nodes[:1], metapath)


def _records(paths: Iterable[str | Path]) -> list[dict]:
    out = []
    for path in paths:
        for lineno, record in iter_jsonl(path):
            for key in ("path_node_ids", "triplets", "node_metadata", "answer_entity"):
                if key not in record:
                    raise InputError(f"{path}:{lineno}: record lacks {key}")
            out.append(record)
    return out


def _candidates(base: KnowledgeGraph | None, records: list[dict]) -> dict[str, list[tuple[str, str]]]:
    """Per type: distinct real (name, description) texts from the records and the base graph
    (never a generated node's: those recombine real sentences, the answer's among them)."""
    seen: set[tuple[str, str]] = set()
    pools: dict[str, list[tuple[str, str]]] = {}
    for record in records:
        for m in record["node_metadata"]:
            name, description = str(m.get("name", "")), str(m.get("description") or "")
            key = (m.get("type"), name.strip().lower())
            if description and name and key not in seen:
                seen.add(key)
                pools.setdefault(m["type"], []).append((name, description))
    if base is None:
        return pools
    names = base.names.to_pylist()
    descriptions = base.descriptions.to_pylist()
    for i, (name, description) in enumerate(zip(names, descriptions)):
        type_name = base.type_names[base.node_type[i]]
        key = (type_name, (name or "").strip().lower())
        if description and name and key not in seen:
            seen.add(key)
            pools.setdefault(type_name, []).append((name, description))
    return pools


def plant_competitors(graph: KnowledgeGraph, evidence: Iterable[str | Path], k: int, seed: int = 0,
                      base: KnowledgeGraph | None = None, ambiguity_cap: int = 200,
                      groups: Mapping[tuple[str, str], str] | None = None) -> tuple[KnowledgeGraph, dict]:
    """The graph with related rivals added for every record; returns (graph, counts).

    ``groups`` ((type, lower-case name) -> group, e.g. PrimeKG's disease groups): for an
    answer of a type it covers, rivals come first from the answer's own group, then from its
    siblings under a parent-child parent in the graph (the Disease Ontology's), each tier
    nearest description first, and only then from BM25 over all descriptions."""
    records = _records(evidence)
    pools = _candidates(base, records)
    indexes = {t: TextIndex.build([f"{n}. {d}" for n, d in texts]) for t, texts in pools.items()}
    names = graph.names.to_pylist()
    by_name: dict[tuple[str, str], int] = {}
    for i, name in enumerate(names):
        by_name.setdefault((graph.type_names[graph.node_type[i]], (name or "").strip().lower()), i)
    relatives = _Relatives(graph, groups, by_name) if groups else None
    new_nodes: list[tuple[str, str, str]] = []  # name, type, description
    new_edges: list[tuple[int, str, int]] = []  # node positions; new nodes are N + j
    linked: set[tuple[int, str, int]] = set()
    before, after, ambiguities = [], [], []
    tiers = {"group": 0, "siblings": 0, "bm25": 0}
    n = graph.num_nodes
    rng = np.random.default_rng(seed)
    for record in records:
        walk = record_walk(graph, record)
        if walk is None:
            continue
        nodes, metapath, head_first = walk
        pool = reach(graph, nodes[:1], metapath)
        answer_type = metapath.types[-1]
        # records without the field (most 3-hop ones) get k rivals: their real count is unknown
        raw = record.get("answer_ambiguity")
        ambiguity = min(int(raw), ambiguity_cap) if raw is not None else len(pool) + k
        valid_ids = {int(v) for v in record.get("valid_answer_ids") or []} | {int(record["answer_entity"]["id"])}
        valid_nodes = set(graph.index_of(sorted(valid_ids), missing="ignore").tolist()) - {-1}
        banned = {names[v].strip().lower() for v in valid_nodes} | {str(record["answer_entity"]["name"]).strip().lower()}
        in_pool = set(pool.tolist())
        need = min(k, max(0, ambiguity - len(pool)))
        before.append(len(pool))
        if raw is not None:
            ambiguities.append(ambiguity)
        if need == 0 or answer_type not in indexes:
            after.append(len(pool))
            continue
        # the answer's text as the graph holds it (a base node keeps the base's definition)
        answer_node = int(nodes[-1])
        query = f"{names[answer_node]}. {graph.description(answer_node)}"
        penultimate, relation, forward = int(nodes[-2]), metapath.relations[-1], head_first[-1]
        added = 0
        for tier, name, description in _rivals(query, answer_node, answer_type, indexes, pools,
                                               relatives, rng):
            if added == need:
                break
            key = (answer_type, name.strip().lower())
            if key[1] in banned:
                continue
            target = by_name.get(key)
            if target is not None and (target in valid_nodes or target in in_pool or target == penultimate):
                continue
            if target is None:
                target = n + len(new_nodes)
                new_nodes.append((name, answer_type, description))
                by_name[key] = target
            edge = (penultimate, relation, target) if forward else (target, relation, penultimate)
            if edge in linked:
                continue
            linked.add(edge)
            new_edges.append(edge)
            in_pool.add(target)
            tiers[tier] += 1
            added += 1
        after.append(len(pool) + added)
    counts = {"records": len(before), "nodes": len(new_nodes), "edges": len(new_edges),
              "pool_before_median": float(np.median(before)) if before else 0.0,
              "pool_after_median": float(np.median(after)) if after else 0.0,
              "ambiguity_median": float(np.median(ambiguities)) if ambiguities else 0.0}
    if relatives is not None:
        counts["from"] = tiers
    return _extend(graph, new_nodes, new_edges), counts


def _rivals(query: str, answer: int, answer_type: str, indexes, pools, relatives, rng):
    """(tier, name, description) candidates, best first: the answer's group and ontology
    siblings (with ``relatives``, for the types it covers), then BM25 over descriptions
    (ties broken by the seed so equal scores do not always favour file order)."""
    if relatives is not None and answer_type in relatives.types:
        for tier, members in (("group", relatives.group_mates(answer)), ("siblings", relatives.siblings(answer))):
            yield from ((tier, *text) for text in relatives.nearest(query, members))
    scores = indexes[answer_type].scores([query])[:, 0]
    for doc in np.lexsort((rng.random(len(scores)), -scores)).tolist():
        if scores[doc] <= 0:
            return
        yield ("bm25", *pools[answer_type][doc])


class _Relatives:
    """An answer's real relatives in the graph: its group's other members (by name, from
    ``groups``) and its siblings under a parent-child parent of its own type."""

    def __init__(self, graph: KnowledgeGraph, groups: Mapping[tuple[str, str], str], by_name: dict):
        self.graph = graph
        self.types = {t for t, _ in groups}
        self.group_of: dict[int, str] = {}
        self.members: dict[str, list[int]] = {}
        for key, node in by_name.items():
            group = groups.get(key)
            if group:
                self.group_of[node] = group
                self.members.setdefault(group, []).append(node)
        self.parent_code = graph.relation_names.index(PARENT) if PARENT in graph.relation_names else -1

    def group_mates(self, node: int) -> list[int]:
        group = self.group_of.get(node)
        return [v for v in self.members.get(group, []) if v != node] if group else []

    def _parent_child(self, node: int, as_parent: bool) -> list[int]:
        g = self.graph
        lo, hi = int(g.indptr[node]), int(g.indptr[node + 1])
        keep = (g.rel[lo:hi] == self.parent_code) & (g.fwd[lo:hi] == as_parent)
        keep &= g.node_type[g.indices[lo:hi]] == g.node_type[node]
        return g.indices[lo:hi][keep].tolist()

    def siblings(self, node: int) -> list[int]:
        if self.parent_code < 0:
            return []
        mates = set(self.group_mates(node)) | {node}
        out = {c for p in self._parent_child(node, as_parent=False) for c in self._parent_child(p, as_parent=True)}
        return sorted(out - mates)

    def nearest(self, query: str, members: list[int]) -> list[tuple[str, str]]:
        """Members' (name, description), the nearest the query first (BM25; then by position)."""
        if not members:
            return []
        texts = [(self.graph.name(v), self.graph.description(v)) for v in members]
        documents = [f"{n}. {d}" for n, d in texts]
        if not any(tokenize(documents)):  # no word BM25 can use: keep the order
            return texts
        scores = TextIndex.build(documents).scores([query])[:, 0]
        return [texts[i] for i in np.argsort(-scores, kind="stable").tolist()]


def _extend(graph: KnowledgeGraph, new_nodes, new_edges) -> KnowledgeGraph:
    """The graph plus new nodes (ids after the largest) and new edges, rebuilt as CSR."""
    relation_names = list(graph.relation_names)
    descriptions = list(graph.relation_descriptions)
    rel_code = {r: i for i, r in enumerate(relation_names)}
    for _, r, _ in new_edges:
        if r not in rel_code:
            rel_code[r] = len(relation_names)
            relation_names.append(r)
            descriptions.append(relation_description(r))
    h, r, t = graph.edges()
    head = np.concatenate([h.astype(np.int64), np.array([e[0] for e in new_edges], np.int64)])
    tail = np.concatenate([t.astype(np.int64), np.array([e[2] for e in new_edges], np.int64)])
    rel = np.concatenate([r.astype(np.int64), np.array([rel_code[e[1]] for e in new_edges], np.int64)])
    start = int(graph.node_id.max()) + 1 if graph.num_nodes else 0
    node_type = np.concatenate([graph.node_type,
                                np.array([graph.type_names.index(t) for _, t, _ in new_nodes], np.int8)])
    node_id = np.concatenate([graph.node_id, np.arange(start, start + len(new_nodes), dtype=np.int64)])
    return KnowledgeGraph.from_edges(
        head, tail, rel, node_type=node_type, node_id=node_id,
        names=graph.names.to_pylist() + [x[0] for x in new_nodes],
        descriptions=graph.descriptions.to_pylist() + [x[2] for x in new_nodes],
        type_names=graph.type_names, relation_names=tuple(relation_names),
        relation_descriptions=tuple(descriptions),
    )


def pool_difficulty(graph: KnowledgeGraph, evidence: Iterable[str | Path], encoder, level: str = "bare",
                    max_pool: int = 300, seed: int = 0) -> dict:
    """How the answer stands out in its pool: per record, the pool size along the gold
    meta-path and the percentile of the question-answer cosine among the pool's non-answers
    (node text = name + first 300 description characters; pools above ``max_pool`` are
    sampled with ``seed``). 100 means the answer is the closest node to the question."""
    rng = np.random.default_rng(seed)
    names, descriptions = graph.names, graph.descriptions
    sizes, percentiles, top1 = [], [], []
    for record in _records(evidence):
        pool = answer_pool(graph, record)
        valid = set(graph.index_of([int(v) for v in record.get("valid_answer_ids") or []]
                                   + [int(record["answer_entity"]["id"])], missing="ignore").tolist())
        answer = int(graph.index_of([int(record["answer_entity"]["id"])], missing="ignore")[0])
        if answer < 0 or answer not in set(pool.tolist()):
            continue
        rivals = np.array([v for v in pool.tolist() if v not in valid], dtype=np.int64)
        sizes.append(len(pool))
        if len(rivals) > max_pool:
            rivals = rng.choice(rivals, max_pool, replace=False)
        texts = [f"{names[int(v)].as_py()}. {(descriptions[int(v)].as_py() or '')[:300]}"
                 for v in [answer, *rivals.tolist()]]
        question = record.get(f"{level}_query") or record.get("explicit_query") or ""
        vectors = encoder.encode([question] + texts)
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        cos = vectors[1:] @ vectors[0]
        if len(rivals):
            percentiles.append(100.0 * float((cos[1:] < cos[0]).mean()))
            top1.append(bool((cos[1:] < cos[0]).all()))
        else:
            percentiles.append(100.0)
            top1.append(True)
    return {"records": len(sizes),
            "pool_median": float(np.median(sizes)) if sizes else 0.0,
            "pool_mean": float(np.mean(sizes)) if sizes else 0.0,
            "percentile_median": float(np.median(percentiles)) if percentiles else 0.0,
            "percentile_mean": float(np.mean(percentiles)) if percentiles else 0.0,
            "answer_top1": 100.0 * float(np.mean(top1)) if top1 else 0.0}
