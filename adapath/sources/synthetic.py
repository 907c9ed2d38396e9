"""A PrimeKG-shaped graph generator: the embedded default graph.

At scale 1.0 the graph has PrimeKG's node counts per type and its relation mix; scale
multiplies node and edge counts alike, so mean degrees keep PrimeKG's profile. Degrees are
heavy-tailed: every node draws a log-normal hub propensity (shared across relations, with
per-relation noise), and edge endpoints are sampled in proportion to it, so a few nodes
collect thousands of neighbours, as in PrimeKG.

*Evidence*: BioStrat-QA records plant their real nodes (ids, names, types, descriptions) and
triplets. Planted nodes join their type's pool before edges are sampled, so they are wired
into the background with their type's degree profile. Background node ids never reuse an id
any evidence record mentions (valid answers included), names never equal a real name, and
distractor descriptions are recombined from real descriptions of the same type (with the
source entity's name replaced), so text alone cannot tell a planted node from a distractor.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.schema import (
    DISPLAY_RELATIONS,
    NODE_TYPES,
    PRIMEKG_NODE_COUNTS,
    PRIMEKG_RELATIONS,
    relation_description,
)
from adapath.errors import InputError
from adapath.jsonl import iter_jsonl
from adapath.sources.biostrat import evidence_from_biostrat

HUB_SIGMA = 1.3  # log-normal spread of hub propensity; gives PrimeKG-like p99/max degrees
RELATION_NOISE = 0.5  # per-relation log-normal noise on top of the shared propensity

_SYLLABLES = (
    "ka", "ro", "vi", "zan", "tel", "mor", "qui", "bex", "sul", "dra", "pho", "len", "cyt",
    "gal", "nur", "osp", "tri", "vel", "xan", "ylo", "bra", "cor", "dep", "fen", "hal", "iso",
    "jun", "kel", "lum", "myr", "nov", "pra", "rix", "sta", "tor", "uro", "vas", "wen", "zol",
    "ameth",
)
_DRUG_SUFFIX = ("mab", "nib", "pril", "olol", "azole", "statin", "cillin", "vir", "tide",
                "parin", "sartan", "dipine", "oxacin", "zepam", "afil", "triptan")
_DISEASE_WORD = ("syndrome", "disease", "dystrophy", "carcinoma", "deficiency", "anemia",
                 "neuropathy", "myopathy", "dysplasia", "encephalopathy", "type 2", "sarcoma")
_PHENOTYPE_HEAD = ("Abnormal", "Increased", "Decreased", "Absent", "Progressive", "Recurrent")
_PHENOTYPE_TAIL = ("morphology", "tone", "density", "reflex", "pigmentation", "size",
                   "function", "ossification")
_ANATOMY_HEAD = ("lateral", "medial", "anterior", "posterior", "superior", "inner", "outer")
_ANATOMY_TAIL = ("gland", "ganglion", "lobe", "epithelium", "duct", "nucleus", "tract",
                 "muscle", "cartilage", "vein")
_PROCESS_HEAD = ("regulation of", "positive regulation of", "negative regulation of",
                 "response to", "biosynthesis of", "transport of")
_PROCESS_TAIL = ("signaling", "metabolic process", "assembly", "differentiation",
                 "catabolic process", "secretion")
_FUNCTION_TAIL = ("binding", "kinase activity", "transporter activity", "receptor activity",
                  "hydrolase activity", "ligase activity")
_COMPONENT_TAIL = ("complex", "membrane", "granule", "vesicle", "body", "filament")
_EXPOSURE_TAIL = ("chloride", "compound", "particulate matter", "oxide", "dust", "solvent")

# Type-specific sentence patterns used when no real descriptions of the type are given.
_VOCAB_SENTENCES = {
    "gene/protein": (
        "{name} encodes a protein that participates in {a} and {b}.",
        "The encoded protein localizes to the {c} and interacts with partners involved in {a}.",
        "Variants of {name} have been reported in studies of {d}.",
    ),
    "drug": (
        "{name} is a small molecule that modulates {a}.",
        "It is used in the management of {d} and is metabolised in the liver.",
        "{name} acts on proteins involved in {b}.",
    ),
    "disease": (
        "{name} is a disorder characterised by impaired {a}.",
        "Patients often present with abnormalities of the {c}.",
        "The condition has been linked to altered {b}.",
    ),
    "effect/phenotype": (
        "{name} describes an observable change in {a}.",
        "It is recorded as a clinical finding affecting the {c}.",
    ),
    "anatomy": (
        "{name} is a structure of the {c} made of specialised tissue.",
        "It supports {a}.",
    ),
    "biological_process": (
        "{name} is a process that controls {a}.",
        "It contributes to {b} in many cell types.",
    ),
    "molecular_function": (
        "{name} is a molecular activity required for {a}.",
        "Proteins with this activity take part in {b}.",
    ),
    "cellular_component": (
        "{name} is a cellular structure associated with the {c}.",
        "It hosts proteins that mediate {a}.",
    ),
    "pathway": (
        "{name} is a signalling pathway coordinating {a} and {b}.",
        "Its members are expressed in the {c}.",
    ),
    "exposure": (
        "{name} is an environmental exposure studied for its effect on {a}.",
        "Exposure has been associated with {d}.",
    ),
}
_TOPICS_A = ("cell proliferation", "lipid metabolism", "immune signalling", "DNA repair",
             "ion transport", "synaptic transmission", "apoptosis", "angiogenesis",
             "oxidative stress", "protein folding", "hormone secretion", "cell adhesion")
_TOPICS_C = ("liver", "kidney", "heart", "brain", "lung", "skin", "pancreas", "retina",
             "bone marrow", "intestine", "mitochondrion", "nucleus")
_TOPICS_D = ("cancer", "hypertension", "diabetes", "epilepsy", "arthritis", "asthma",
             "heart failure", "infection", "anaemia", "dementia")

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


def node_counts(scale: float) -> dict[str, int]:
    return {t: max(2, int(round(c * scale))) for t, c in PRIMEKG_NODE_COUNTS.items()}


def relation_targets(scale: float) -> list[int]:
    """Undirected edge count per PrimeKG relation at this scale."""
    return [int(round(r.kg_rows / 2 * scale)) for r in PRIMEKG_RELATIONS]


def generate(
    scale: float = 1.0,
    seed: int = 0,
    evidence: Iterable[str | Path] = (),
    description_sources: Iterable[str | Path] = (),
    base: KnowledgeGraph | None = None,
    report: dict | None = None,
) -> KnowledgeGraph:
    """Generate the PrimeKG-shaped graph, optionally planting BioStrat-QA evidence.

    With ``base``, the node types the base holds come from it whole (names, descriptions and
    the relations it has, at any scale); other types are generated at ``scale`` and wired to
    the base nodes by the relations the base lacks, with PrimeKG's edge counts. Evidence
    nodes of a base type whose name (case-insensitive) names a base node of that type are
    planted onto it (the base node takes the record's id and keeps its name; the record's
    description, where it has one, replaces the base's); ``report`` (a dict) receives the
    counts of evidence nodes and edges that matched the base.
    """
    if not scale > 0:
        raise InputError(f"--scale must be positive, got {scale}")
    rng = np.random.default_rng(seed)
    evidence = [Path(p) for p in evidence]
    planted, planted_edges = evidence_from_biostrat(evidence) if evidence else ({}, [])
    reserved = _mentioned_ids(evidence) | set(planted)
    pools = _description_pools(list(evidence) + [Path(p) for p in description_sources])
    real_names = {name.lower() for name, _, _ in planted.values()} | pools.pop("__names__")

    # ---- nodes: per type, planted nodes first, then background up to the type's count
    counts = node_counts(scale)
    based = _BaseNodes(base, planted) if base is not None else None
    if based is not None:
        real_names |= based.lower_names
    planted_by_type: dict[str, list[int]] = {t: [] for t in NODE_TYPES}
    for node, (_, type_name, _) in sorted(planted.items()):
        if based is None or node not in based.matched:
            planted_by_type[type_name].append(node)
    type_codes, external, is_planted, base_of = [], [], [], []
    n_background = {t: 0 if based is not None and t in based.types else max(counts[t] - len(planted_by_type[t]), 0)
                    for t in NODE_TYPES}
    n_base_free = based.unmatched_count if based is not None else 0
    free_ids = _free_ids(sum(n_background.values()) + n_base_free, reserved)
    cursor = 0
    for code, type_name in enumerate(NODE_TYPES):
        ids = planted_by_type[type_name] + free_ids[cursor: cursor + n_background[type_name]].tolist()
        cursor += n_background[type_name]
        type_codes += [code] * len(ids)
        external += ids
        is_planted += [True] * len(planted_by_type[type_name]) + [False] * n_background[type_name]
        base_of += [-1] * len(ids)
        if based is not None and type_name in based.types:
            for b in based.nodes_of(type_name):
                record_id = based.record_of.get(int(b))
                if record_id is None:
                    record_id = int(free_ids[cursor])
                    cursor += 1
                external.append(record_id)
                type_codes.append(code)
                is_planted.append(False)
                base_of.append(int(b))
    base_of = np.asarray(base_of, dtype=np.int64)
    external = np.asarray(external, dtype=np.int64)
    type_codes = np.asarray(type_codes, dtype=np.int8)
    is_planted = np.asarray(is_planted, dtype=bool)
    n = len(external)
    members = {t: np.flatnonzero(type_codes == c) for c, t in enumerate(NODE_TYPES)}

    # ---- edges: heavy-tailed endpoint sampling per PrimeKG relation
    propensity = rng.lognormal(0.0, HUB_SIGMA, size=n)
    rel_code = {r: i for i, r in enumerate(DISPLAY_RELATIONS)}
    heads, tails, rels = [], [], []
    for relation, target in zip(PRIMEKG_RELATIONS, relation_targets(scale)):
        xs, ys = members[relation.x_type], members[relation.y_type]
        if based is not None and based.has_relation(relation):
            continue  # the base's own edges stand for this relation
        if target == 0 or len(xs) == 0 or len(ys) == 0:
            continue
        noise = rng.lognormal(0.0, RELATION_NOISE, size=n)
        weight = propensity * noise
        h, t = _sample_pairs(rng, xs, ys, weight[xs], weight[ys], target,
                             same=relation.x_type == relation.y_type)
        heads.append(h)
        tails.append(t)
        rels.append(np.full(len(h), rel_code[relation.display], dtype=np.int16))
    if based is not None:
        position_of_base = np.full(base.num_nodes, -1, dtype=np.int64)
        rows = np.flatnonzero(base_of >= 0)
        position_of_base[base_of[rows]] = rows
        bh, br, bt = base.edges()
        bh, bt = position_of_base[based.canonical[bh]], position_of_base[based.canonical[bt]]
        heads.append(bh)
        tails.append(bt)
        rels.append(np.array([rel_code.setdefault(base.relation_names[c], len(rel_code)) for c in range(base.num_relations)],
                             dtype=np.int16)[br])
        if report is not None:
            report.update(based.match_report(planted_edges))
    elif report is not None:
        report.update({"evidence_nodes": len(planted), "matched_nodes": 0,
                       "evidence_edges": len(planted_edges), "matched_edges": 0})
    if planted_edges:
        position = {int(v): i for i, v in enumerate(external)}
        heads.append(np.array([position[h] for h, _, _ in planted_edges], dtype=np.int64))
        tails.append(np.array([position[t] for _, _, t in planted_edges], dtype=np.int64))
        extra_rel = []
        relation_names = list(rel_code)
        for _, r, _ in planted_edges:
            if r not in rel_code:
                rel_code[r] = len(relation_names)
                relation_names.append(r)
            extra_rel.append(rel_code[r])
        rels.append(np.array(extra_rel, dtype=np.int16))
    else:
        relation_names = list(rel_code)

    # ---- text
    names, descriptions = [], []
    name_streams = {t: _NameStream(t, n_background[t], rng, real_names) for t in NODE_TYPES}
    for i in range(n):
        type_name = NODE_TYPES[type_codes[i]]
        if base_of[i] >= 0:
            name, description = based.text(int(base_of[i]))
        elif is_planted[i]:
            name, _, description = planted[int(external[i])]
        else:
            name = name_streams[type_name].next()
            description = _describe(name, type_name, pools.get(type_name), rng)
        names.append(name)
        descriptions.append(description)

    # Internal order follows external ids, so id lookups are a binary search on a sorted array.
    order = np.argsort(external, kind="stable")
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.arange(n)
    head = inverse[np.concatenate(heads)] if heads else np.zeros(0, np.int64)
    tail = inverse[np.concatenate(tails)] if tails else np.zeros(0, np.int64)
    return KnowledgeGraph.from_edges(
        head, tail, np.concatenate(rels) if rels else np.zeros(0, np.int16),
        node_type=type_codes[order],
        node_id=external[order],
        names=[names[i] for i in order],
        descriptions=[descriptions[i] for i in order],
        type_names=NODE_TYPES,
        relation_names=tuple(relation_names),
        relation_descriptions=tuple(relation_description(r) for r in relation_names),
    )


class _BaseNodes:
    """The base graph's nodes as they enter a generated graph: duplicates of a (type, name)
    folded into the first, evidence nodes matched by type and case-insensitive name."""

    def __init__(self, base: KnowledgeGraph, planted: dict):
        self.base = base
        names = base.names.to_pylist()
        self.descriptions = base.descriptions.to_pylist()
        self.names = names
        codes = np.bincount(base.node_type, minlength=len(base.type_names))
        self.types = {t for t, c in zip(base.type_names, codes) if c}
        unknown = self.types - set(NODE_TYPES)
        if unknown:
            raise InputError(f"--base: node type {sorted(unknown)[0]!r} is not one of PrimeKG's")
        first: dict[tuple[str, str], int] = {}
        self.canonical = np.arange(base.num_nodes, dtype=np.int64)
        for i, (name, code) in enumerate(zip(names, base.node_type.tolist())):
            key = (base.type_names[code], (name or "").strip().lower())
            self.canonical[i] = first.setdefault(key, i)
        self.by_name = first
        self.lower_names = {k[1] for k in first}
        self.matched: dict[int, int] = {}  # record id -> base node
        self.record_of: dict[int, int] = {}  # base node -> record id
        for node, (name, type_name, _) in sorted(planted.items()):
            b = first.get((type_name, name.strip().lower()))
            if b is not None and b not in self.record_of:
                self.matched[node] = b
                self.record_of[b] = node
        self.planted = planted
        self.unmatched_count = int((self.canonical == np.arange(base.num_nodes)).sum()) - len(self.record_of)
        h, r, t = base.edges()
        self.relation_types = {(base.relation_names[a], base.type_names[x], base.type_names[y])
                               for a, x, y in set(zip(r.tolist(), base.node_type[h].tolist(), base.node_type[t].tolist()))}
        self.pairs = set(zip(np.minimum(self.canonical[h], self.canonical[t]).tolist(),
                             np.maximum(self.canonical[h], self.canonical[t]).tolist(),
                             [base.relation_names[c] for c in r.tolist()]))

    def nodes_of(self, type_name: str) -> np.ndarray:
        code = self.base.type_names.index(type_name)
        keep = (self.base.node_type == code) & (self.canonical == np.arange(self.base.num_nodes))
        return np.flatnonzero(keep)

    def has_relation(self, relation) -> bool:
        return ((relation.display, relation.x_type, relation.y_type) in self.relation_types
                or (relation.display, relation.y_type, relation.x_type) in self.relation_types)

    def text(self, b: int) -> tuple[str, str]:
        """The base's name; the record's description where the node is planted and the record
        has one (PrimeKG's own text for that node, which its questions were written from),
        else the base's."""
        record = self.record_of.get(b)
        description = self.planted[record][2] if record is not None else ""
        return self.names[b] or "", description or self.descriptions[b] or ""

    def match_report(self, planted_edges) -> dict:
        matched_edges = 0
        for h, r, t in planted_edges:
            if h in self.matched and t in self.matched:
                a, b = self.matched[h], self.matched[t]
                if (min(a, b), max(a, b), r) in self.pairs:
                    matched_edges += 1
        by_type: dict[str, list[int]] = {}
        for node, (_, type_name, _) in self.planted.items():
            if type_name in self.types:
                cell = by_type.setdefault(type_name, [0, 0])
                cell[0] += 1
                cell[1] += node in self.matched
        return {"evidence_nodes": len(self.planted), "matched_nodes": len(self.matched),
                "evidence_edges": len(planted_edges), "matched_edges": matched_edges,
                "by_type": {t: {"evidence": c[0], "matched": c[1]} for t, c in sorted(by_type.items())}}


def _mentioned_ids(paths: list[Path]) -> set[int]:
    """Every node id an evidence record mentions, so background ids never alias one."""
    ids: set[int] = set()
    for path in paths:
        for _, record in iter_jsonl(path):
            for key in ("path_node_ids", "valid_answer_ids"):
                ids.update(int(v) for v in record.get(key) or [])
            ids.update(int(k) for k in (record.get("topic_entities") or {}))
            answer = record.get("answer_entity") or {}
            if "id" in answer:
                ids.add(int(answer["id"]))
    return ids


def _free_ids(count: int, reserved: set[int]) -> np.ndarray:
    """The first ``count`` non-negative integers not in ``reserved``."""
    if not reserved:
        return np.arange(count, dtype=np.int64)
    taken = np.fromiter(reserved, dtype=np.int64, count=len(reserved))
    candidates = np.arange(count + len(taken), dtype=np.int64)
    return np.setdiff1d(candidates, taken, assume_unique=False)[:count]


def _sample_pairs(rng, xs, ys, wx, wy, target, same):
    """``target`` distinct pairs (x in xs, y in ys), endpoints drawn in proportion to weight.

    Dense relations (drug_drug at small scales) saturate the heavy-tailed pairs, so each
    round flattens the weights a little (weight ** gamma, gamma shrinking) until the count is
    reached or the pair space is exhausted.
    """
    nx, ny = len(xs), len(ys)
    capacity = nx * (nx - 1) // 2 if same else nx * ny
    target = min(target, capacity)
    keys = np.zeros(0, dtype=np.int64)
    gamma = 1.0
    for _ in range(60):
        need = target - len(keys)
        if need <= 0:
            break
        draw = int(need * 1.25) + 32
        px, py = wx ** gamma, wy ** gamma
        a = rng.choice(nx, size=draw, p=px / px.sum())
        b = rng.choice(ny, size=draw, p=py / py.sum())
        if same:
            ok = a != b
            a, b = np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok])
        new = np.unique(a.astype(np.int64) * ny + b)
        new = new[~np.isin(new, keys, assume_unique=True)]
        if len(new) < need // 2:
            gamma *= 0.6
        rng.shuffle(new)
        keys = np.concatenate([keys, new[:need]])
    a, b = keys // ny, keys % ny
    if same:  # undirected within a type: orient each pair at random
        flip = rng.random(len(a)) < 0.5
        a, b = np.where(flip, b, a), np.where(flip, a, b)
    return xs[a], ys[b]


def _description_pools(paths: list[Path]) -> dict:
    """Sentences of real descriptions per type, each with its source name; plus real names."""
    pools: dict = {"__names__": set()}
    seen = set()
    for path in paths:
        for _, record in iter_jsonl(path):
            for meta in record.get("node_metadata") or []:
                name, type_name = str(meta.get("name", "")), str(meta.get("type", ""))
                pools["__names__"].add(name.lower())
                description = str(meta.get("description") or "").strip()
                key = (name, type_name)
                if not description or key in seen or type_name not in NODE_TYPES:
                    continue
                seen.add(key)
                sentences = [s for s in _SENTENCE_SPLIT.split(description) if len(s) > 20]
                if sentences:
                    pools.setdefault(type_name, []).append((name, sentences))
    return pools


def _describe(name: str, type_name: str, pool, rng) -> str:
    if pool:
        parts = []
        for k in range(int(rng.integers(1, 4))):
            source_name, sentences = pool[int(rng.integers(len(pool)))]
            sentence = sentences[0] if k == 0 else sentences[int(rng.integers(len(sentences)))]
            if source_name:
                sentence = re.sub(re.escape(source_name), name, sentence, flags=re.IGNORECASE)
            parts.append(sentence)
        return " ".join(parts)
    patterns = _VOCAB_SENTENCES[type_name]
    fill = {
        "name": name,
        "a": _TOPICS_A[int(rng.integers(len(_TOPICS_A)))],
        "b": _TOPICS_A[int(rng.integers(len(_TOPICS_A)))],
        "c": _TOPICS_C[int(rng.integers(len(_TOPICS_C)))],
        "d": _TOPICS_D[int(rng.integers(len(_TOPICS_D)))],
    }
    return " ".join(p.format(**fill) for p in patterns[: int(rng.integers(1, len(patterns) + 1))])


class _NameStream:
    """Unique names of one type, drawn from a shuffled syllable code space.

    Each name spells a distinct integer in base len(_SYLLABLES) with a fixed number of
    syllables, so names are unique by construction; one that equals a known real name is
    skipped (the code space holds at least twice the names needed).
    """

    def __init__(self, type_name: str, count: int, rng, real_names: set[str]):
        base = len(_SYLLABLES)
        self.width = max(2, int(np.ceil(np.log(max(2 * count, 2)) / np.log(base))))
        self.codes = rng.permutation(base ** self.width)
        self.position = 0
        self.type_name, self.real = type_name, real_names

    def next(self) -> str:
        while True:
            code = int(self.codes[self.position])
            self.position += 1
            name = self._render(code)
            if name.lower() not in self.real:
                return name

    def _render(self, code: int) -> str:
        base = len(_SYLLABLES)
        digits = [(code // base ** i) % base for i in range(self.width)]
        stem = "".join(_SYLLABLES[d] for d in digits)
        k = code % 97
        t = self.type_name
        if t == "gene/protein":
            return f"{stem.upper()}{k % 9 + 1}"
        if t == "drug":
            return f"{stem.capitalize()}{_DRUG_SUFFIX[k % len(_DRUG_SUFFIX)]}"
        if t == "disease":
            return f"{stem.capitalize()} {_DISEASE_WORD[k % len(_DISEASE_WORD)]}"
        if t == "effect/phenotype":
            return f"{_PHENOTYPE_HEAD[k % 6]} {stem} {_PHENOTYPE_TAIL[k % 8]}"
        if t == "anatomy":
            return f"{_ANATOMY_HEAD[k % 7]} {stem} {_ANATOMY_TAIL[k % 10]}"
        if t == "biological_process":
            return f"{_PROCESS_HEAD[k % 6]} {stem} {_PROCESS_TAIL[k % 6]}"
        if t == "molecular_function":
            return f"{stem} {_FUNCTION_TAIL[k % 6]}"
        if t == "cellular_component":
            return f"{stem} {_COMPONENT_TAIL[k % 6]}"
        if t == "pathway":
            return f"{stem.upper()} signaling pathway"
        return f"{stem} {_EXPOSURE_TAIL[k % 6]}"
