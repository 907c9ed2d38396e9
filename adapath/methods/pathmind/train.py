"""PathMind priority training: examples, node features, the training loop with early
stopping, checkpoints.

An example is one question: its embedding, its topics (every topic entity) and its valid
answers. Its query subgraph is the union of the topics' ``hops``-hop balls, whole: nothing
is cut, so every answer within ``hops`` steps of a topic is in it. Training minimizes, by
default, the paper's objective: the binary cross-entropy of the priority summed over every
entity of the query subgraph, answers positive and every other entity negative, unweighted
(the mean of that sum over a step's questions); ``loss="balanced"`` weights the positives by
negatives / positives, ``loss="softmax"`` takes the cross-entropy of a softmax over the
subgraph. The probe heads (the ablations' priorities) learn the same objective from
detached inputs. The best epoch by validation Hits@1 (or Hits@3) of the priority ranking is
kept; training stops after ``patience`` epochs without improvement. Checkpoints are
safetensors + JSON, never pickles. Everything is seeded.

Speed: each step puts ``batch`` questions side by side through one pass over the graph per
step of the cumulative cost (:mod:`adapath.methods.pathmind.propagate`); every node's text
embedding is read once, before the first epoch. A step scores the answers and a stratified
sample of the rest of the subgraph (:func:`sampled_targets`): the topics and the ``HARD``
negatives most like the question (cosine of their text), all of them, and ``SAMPLED`` of the
rest at each hop depth, uniformly, each weighted by how many it stands for. The weighted sum
is an unbiased estimate of the sum over every entity of the subgraph (exactly that sum when
the sample holds every entity), and the last step computes d(q, e) for the sampled entities
alone. Validation scores every entity.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from adapath.datasets.biostrat import query_text
from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.memory import keep_freed_memory
from adapath.methods.pathmind.bellman import BellmanFordNet
from adapath.methods.pathmind.config import TrainConfig
from adapath.methods.pathmind.model import PROBES, BatchInputs, PathMindNet, WholeGraph, unit_rows
from adapath.methods.pathmind.propagate import MAX_QUESTIONS, Places, RelationalGraph
from adapath.progress import Progress

FORMAT = "adapath-pathmind"
FORMAT_VERSION = 3  # 1: the 400-node cut, a scalar soft shortest-path cost; 2: gates and the product cost only


@dataclass
class Example:
    id: str
    text: str
    topics: list[int]  # internal node indices, every topic of the question
    answers: list[int]  # internal indices of the valid answers in the graph (not topics)
    query: np.ndarray  # the question's embedding
    focus: np.ndarray | None = None  # its wh-phrase's embedding (what it says of its answer)


ENCODE_CHUNK = 1024


def make_examples(graph: KnowledgeGraph, records: list[dict], encoder, level: str = "explicit",
                  with_answers: bool = True, focus: bool = True) -> list[Example]:
    """One example per BioStrat-QA record at one question level (progress shown from
    ``ENCODE_CHUNK`` questions on: tens of thousands of generated ones take minutes). ``focus``:
    with its wh-phrase's vector, which a ``--focus`` model reads (on by default: one set of
    examples trains the benches' models of either kind; a phrase of a few words costs about a
    third of its question's encoding with MiniLM)."""
    texts = [query_text(r, level) for r in records]
    with Progress(len(texts), f"encoding {level} questions", "questions", quiet=len(texts) <= ENCODE_CHUNK) as bar:
        vectors = encode_in_chunks(encoder, texts, bar.advance)
    wh_vectors = encode_focus(encoder, texts) if focus else [None] * len(texts)
    out = []
    for record, text, vector, wh in zip(records, texts, vectors, wh_vectors):
        topics = graph.index_of([int(k) for k in record["topic_entities"]]).tolist()
        answers = []
        if with_answers:
            index = graph.index_of([int(v) for v in record["valid_answer_ids"]], missing="ignore")
            answers = [int(i) for i in index if i >= 0 and i not in topics]
        out.append(Example(str(record["data_id"]), text, topics, answers, np.asarray(vector, dtype=np.float32), wh))
    return out


def encode_in_chunks(encoder, texts: list[str], advance=None) -> np.ndarray:
    """The texts' embeddings (float32), ``ENCODE_CHUNK`` at a time; ``advance(n)`` after each."""
    parts = []
    for lo in range(0, len(texts), ENCODE_CHUNK):
        parts.append(np.asarray(encoder.encode(texts[lo:lo + ENCODE_CHUNK]), dtype=np.float32))
        if advance is not None:
            advance(len(parts[-1]))
    return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)


def encode_focus(encoder, texts: list[str]) -> np.ndarray:
    """The embeddings of the questions' wh-phrases (``--focus`` reads them; each short)."""
    from adapath.methods.answer_type import wh_phrase

    return encode_in_chunks(encoder, [wh_phrase(t) for t in texts])


def _topics_key(topic_lists: list[list[int]]) -> tuple:
    return tuple(tuple(int(t) for t in topics) for topics in topic_lists)


class Features:
    """Per-node inputs every batch shares (types, text embeddings and their unit vectors, the
    graph's relational codes), read once; ``batch`` adds the questions."""

    def __init__(self, graph: KnowledgeGraph, nodes, hops: int, progress: bool = False, chunk: int = 8192,
                 device: str = "cpu", backend: str | None = None):
        """``device``: where the network's tensors live (``cuda`` runs the relational passes
        with torch's ops there); ``backend``: the relational passes' implementation on the
        CPU (``numba``, the default, or ``torch``). ``per_question`` (on by default): the
        passes skip each question's sources its walks have not reached; off, a batch's
        passes cover the union of its questions' reaches for every question (the same sums:
        ``adapath bench pathmind-speed`` times both)."""
        self.graph, self.hops, self.device = graph, hops, torch.device(device)
        self.per_question = True
        self._last_reach: tuple | None = None  # (topic lists, their reach bits)
        self._shared_reach: tuple | None = None  # share_reach's (topic lists, their reach bits)
        self.relational = RelationalGraph(graph, backend or ("numba" if self.device.type == "cpu" else "torch"))
        self.node_type = torch.as_tensor(np.asarray(graph.node_type).astype(np.int64)).to(self.device)
        text = np.empty((graph.num_nodes, 0), dtype=np.float32)
        with Progress(graph.num_nodes, "node text", "nodes", quiet=not progress) as bar:
            parts = []
            for lo in range(0, graph.num_nodes, chunk):
                part = np.arange(lo, min(lo + chunk, graph.num_nodes))
                parts.append(np.asarray(nodes.get(part), dtype=np.float32))
                bar.advance(len(part))
            text = np.concatenate(parts) if parts else text
        self.text = torch.from_numpy(np.ascontiguousarray(text)).to(self.device)
        norms = np.maximum(np.linalg.norm(text, axis=1, keepdims=True), 1e-12)
        self.unit = torch.from_numpy(np.ascontiguousarray(text / norms)).to(self.device)
        self.whole = WholeGraph(self.relational, self.node_type, self.text)

    @property
    def text_dim(self) -> int:
        return int(self.text.shape[1])

    def cosine(self, examples: list[Example]) -> np.ndarray:
        """Every node's text cosine to each question: nodes x B."""
        query = torch.as_tensor(np.stack([e.query for e in examples])).to(self.device)
        return (self.unit @ unit_rows(query).T).cpu().numpy()

    def batch(self, examples: list[Example], rows: np.ndarray | None = None,
              entities: torch.Tensor | None = None) -> BatchInputs:
        """The network's inputs for these questions, over the places they need: every node of
        their subgraphs, or (``rows``: the nodes to score) the nodes within hops - 1 steps,
        whose d the last step reads, and the rows. ``entities``: every node's entity
        representation, computed once beforehand (inference)."""
        reach = self.reach_bits([e.topics for e in examples])
        nodes = np.flatnonzero(reach[-1]) if rows is None else np.union1d(np.flatnonzero(reach[-2]), rows)
        marks = reach if self.per_question else [np.where(bits != 0, np.int64(-1), np.int64(0)) for bits in reach]
        places = Places(nodes, self.graph.num_nodes)
        query = torch.as_tensor(np.stack([e.query for e in examples])).to(self.device)
        unit = unit_rows(query)

        def cosine():
            return (self.unit @ unit.T).index_select(0, torch.as_tensor(nodes).to(self.device))

        focus = None
        if all(e.focus is not None for e in examples):
            focus = torch.as_tensor(np.stack([e.focus for e in examples])).to(self.device)
        return BatchInputs(self.relational, places, self.whole, cosine, query, [e.topics for e in examples],
                           [places.mask(bits) for bits in marks], entities, reach_bits=reach, focus=focus)

    def reach_bits(self, topic_lists: list[list[int]]) -> list[np.ndarray]:
        """The relational graph's ``reach_bits`` over ``hops`` steps, the last call's kept: a
        training step asks for its batch's twice (its targets, then its inputs); a run of the
        lists :meth:`share_reach` was given reads its bits from that pass. Read only."""
        key = _topics_key(topic_lists)
        if self._last_reach is None or self._last_reach[0] != key:
            bits = self._shared_bits(key)
            self._last_reach = (key, bits if bits is not None else self.relational.reach_bits(topic_lists, self.hops))
        return self._last_reach[1]

    def share_reach(self, topic_lists: list[list[int]]) -> None:
        """The reach bits of up to 63 topic lists, one pass of the graph per step for all of
        them (a pass costs the same for 1 bit as for 63): ``reach_bits`` of a run of them then
        shifts its bits out of these (the same bits: each question's walk is its own bit's)."""
        self._shared_reach = (_topics_key(topic_lists), self.relational.reach_bits(topic_lists, self.hops))

    def _shared_bits(self, key: tuple) -> list[np.ndarray] | None:
        shared = self._shared_reach
        if shared is None or not key:
            return None
        wide, bits = shared
        for offset in range(len(wide) - len(key) + 1):
            if wide[offset:offset + len(key)] == key:
                mask = np.int64((1 << len(key)) - 1)
                return [(b >> offset) & mask for b in bits]
        return None

    def subgraph(self, topics: list[int]) -> list[np.ndarray]:
        """Masks of the nodes within 0..hops steps of the topics: the last is the query subgraph."""
        seeds = np.zeros(self.graph.num_nodes, dtype=np.bool_)
        seeds[list(topics)] = True
        return self.relational.reach(seeds, self.hops)

    def subgraphs(self, topic_lists: list[list[int]]) -> list[list[np.ndarray]]:
        """``subgraph`` of each topic list, from one pass of the graph per step for up to 63
        lists side by side (a bit each)."""
        out = []
        for lo in range(0, len(topic_lists), MAX_QUESTIONS):
            group = topic_lists[lo:lo + MAX_QUESTIONS]
            bits = self.reach_bits(group)
            out += [[((b >> j) & 1).astype(np.bool_) for b in bits] for j in range(len(group))]
        return out


def targets(features: Features, examples: list[Example], places: Places,
            topics: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(answers, mask) as places x B: the mask is each question's subgraph, without its
    topics (what a ranking may return) unless ``topics`` (what the loss sums over)."""
    target = torch.zeros(len(places), len(examples))
    mask = torch.zeros(len(places), len(examples), dtype=torch.bool)
    for j, (e, masks) in enumerate(zip(examples, features.subgraphs([e.topics for e in examples]))):
        inside = masks[-1]
        inside[e.topics] = topics
        mask[:, j] = torch.from_numpy(places.mask(inside))
        at = places.local_of[e.answers]
        target[at[at >= 0], j] = 1.0
    return target, mask


HARD, SAMPLED = 256, 384  # negatives per question and step: most like the question; uniform per hop depth


def most_similar(nodes: np.ndarray, score: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(the ``count`` sorted ``nodes`` of highest ``score``, ties to the smaller node; the
    others, sorted): a partition and the tie at its edge, not a sort of every node."""
    if len(nodes) <= count:
        return np.sort(nodes), nodes[:0]
    if count <= 0:
        return nodes[:0], np.sort(nodes)
    edge = np.partition(score, len(score) - count)[len(score) - count]  # the count-th highest
    above = score > edge
    tied = np.flatnonzero(score == edge)
    tied = tied[np.argsort(nodes[tied], kind="stable")][:count - int(above.sum())]
    chosen = above.copy()
    chosen[tied] = True
    return np.sort(nodes[chosen]), np.sort(nodes[~chosen])


def sampled_targets(features: Features, examples: list[Example], cosine: np.ndarray, rng: np.random.Generator,
                    hard: int = HARD, sampled: int = SAMPLED) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
    """(rows, answers, multiplicity): the union of the nodes each question scores this step
    (its answers and its topics; its ``hard`` negatives of highest cosine; at each hop depth
    1..hops, ``sampled`` of the other negatives drawn uniformly, or all where fewer), and per
    row and question the target and how many of the question's entities the row stands for
    (1 for an answer, a topic or a hard negative, the stratum's size over its draws for a
    drawn one; zero where the question did not sample the row). Sums weighted by the
    multiplicity are unbiased estimates of sums over every entity of the subgraph, and equal
    them when every negative is drawn. The strata by depth keep the nodes near the topics,
    few but with the largest walk sums, in every step."""
    picks = []
    for j, (e, masks) in enumerate(zip(examples, features.subgraphs([e.topics for e in examples]))):
        inside = masks[-1].copy()
        topics = np.unique(np.asarray(e.topics, dtype=np.int64))
        inside[topics] = False
        members = np.flatnonzero(inside)
        answer = np.zeros(len(inside), dtype=np.bool_)
        answer[e.answers] = True
        positives = members[answer[members]]
        negatives = members[~answer[members]]
        top, rest = most_similar(negatives, cosine[negatives, j], hard)
        strata = [(positives, 1.0), (topics, 1.0), (top, 1.0)]
        for depth in range(1, len(masks)):
            layer = rest[masks[depth][rest] & ~masks[depth - 1][rest]]
            drawn = np.sort(rng.choice(layer, size=min(sampled, len(layer)), replace=False)) if len(layer) else layer
            strata.append((drawn, len(layer) / max(len(drawn), 1)))
        picks.append(strata)
    rows = np.unique(np.concatenate([nodes for strata in picks for nodes, _ in strata]))
    target = torch.zeros(len(rows), len(examples))
    multiplicity = torch.zeros(len(rows), len(examples))
    for j, strata in enumerate(picks):
        for nodes, m in strata:
            multiplicity[np.searchsorted(rows, nodes), j] = m
        target[np.searchsorted(rows, strata[0][0]), j] = 1.0
    return rows, target, multiplicity


ADVERSARIAL_T = 0.5  # NBFNet-PyG's adversarial temperature on its knowledge-graph configurations


def subgraph_loss(logits: torch.Tensor, target: torch.Tensor, multiplicity: torch.Tensor,
                  kind: str = "bce") -> torch.Tensor:
    """The mean over questions (columns) of each one's loss over its subgraph's entities, from
    the rows it scored and how many entities each stands for (``multiplicity``; zero: not its
    row):

    - ``bce`` (the paper's): ``-sum over answers of log s - sum over the other entities of
      log(1 - s)``, ``s`` the sigmoid of the logit, unweighted;
    - ``balanced``: the same with the answers weighted by negatives / positives, divided by
      the number of entities;
    - ``softmax``: the cross-entropy of a softmax over the entities against the uniform
      distribution over the answers, ``log sum exp(s) - mean over answers of s``;
    - ``adversarial``: NBFNet's and A*Net's binary cross-entropy: the answers' mean term plus
      the negatives' terms weighted by a softmax of their own logits over ``ADVERSARIAL_T``
      (self-adversarial weights, no gradient through them), halved.
    """
    member = multiplicity > 0
    if kind == "softmax":
        shifted = torch.where(member, logits + torch.log(multiplicity.clamp(min=1e-30)), -torch.inf)
        answers = (logits * target).sum(0) / target.sum(0).clamp(min=1)
        return (torch.logsumexp(shifted, 0) - answers).mean()
    per_node = -(target * F.logsigmoid(logits) + (1 - target) * F.logsigmoid(-logits))
    if kind == "adversarial":
        with torch.no_grad():
            negative = member & (target == 0)
            weight = torch.softmax(torch.where(negative, logits / ADVERSARIAL_T + torch.log(
                multiplicity.clamp(min=1e-30)), -torch.inf), 0).nan_to_num(0.0)
        answers = (per_node * target).sum(0) / target.sum(0).clamp(min=1)
        return ((answers + (per_node * weight).sum(0)) / 2).mean()
    if kind == "bce":
        return (per_node * multiplicity).sum(0).mean()
    count = multiplicity.sum(0).clamp(min=1)
    positives = target.sum(0).clamp(min=1)
    weight = torch.where(target > 0, ((count - positives) / positives).expand_as(target), multiplicity)
    return ((per_node * weight * member).sum(0) / count).mean()


def ranked(logits: torch.Tensor, mask: torch.Tensor, places: Places, k: int) -> list[list[int]]:
    """Per question (column), its k best nodes inside the mask (global ids), ties by the smaller id."""
    out = []
    for j in range(logits.shape[1]):
        inside = torch.nonzero(mask[:, j]).squeeze(1).numpy()
        scores = logits[inside, j].cpu().numpy()
        order = np.lexsort((inside, -scores))[:k]
        out.append(places.nodes[inside[order]].tolist())
    return out


def best_entities(model: PathMindNet, features: Features, examples: list[Example], k: int, size: int = 8,
                  progress: bool = False, label: str = "validation") -> list[tuple[list[int], np.ndarray]]:
    """Per question of ``examples``: its k best-priority entities of its subgraph, topics aside
    (global ids, ties by the smaller id), and their logits."""
    model.eval()
    out = []
    with torch.no_grad(), Progress(len(examples), label, "questions", quiet=not progress) as bar:
        entities = model.entities(features.whole)  # the same for every question: computed once
        for chunk in batches(examples, size):
            inputs = features.batch(chunk, entities=entities)
            logits = model(inputs).logits
            _, mask = targets(features, chunk, inputs.places)
            for j, top in enumerate(ranked(logits, mask, inputs.places, k)):
                out.append((top, logits[inputs.places.local_of[top], j].cpu().numpy()))
            bar.advance(len(chunk))
    return out


def hits_at_many(model: PathMindNet, features: Features, examples: list[Example], ks, size: int = 8,
                 progress: bool = False, label: str = "validation") -> list[float]:
    """Share of questions with an answer among their k best-priority entities, for each k."""
    if not examples:
        return [0.0 for _ in ks]
    found = [0 for _ in ks]
    for (top, _), e in zip(best_entities(model, features, examples, max(ks), size, progress, label), examples):
        for i, k in enumerate(ks):
            found[i] += bool(set(top[:k]) & set(e.answers))
    return [f / len(examples) for f in found]


def gold_paths(features: Features, examples: list[Example]) -> list[np.ndarray]:
    """Per step 0..hops, the sorted keys (question j * nodes + node) of the entities on a
    shortest path from one of question j's topics to one of its answers, at that depth: ``t``
    steps from the nearest topic and at most ``L - t`` from an answer, ``L`` the nearest
    answer's depth (none for a question without an answer within ``hops`` steps)."""
    n, hops = features.graph.num_nodes, features.hops
    from_topics = features.subgraphs([e.topics for e in examples])
    from_answers = features.subgraphs([e.answers for e in examples])
    steps: list[list[np.ndarray]] = [[] for _ in range(hops + 1)]
    for j, (e, near, back) in enumerate(zip(examples, from_topics, from_answers)):
        answers = np.asarray(e.answers, dtype=np.int64)
        length = next((t for t in range(hops + 1) if len(answers) and near[t][answers].any()), None)
        if length is None:
            continue
        for t in range(length + 1):
            at_depth = near[t] & ~near[t - 1] if t else near[0]
            steps[t].append(j * n + np.flatnonzero(at_depth & back[length - t]))
    return [np.sort(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64) for keys in steps]


def answers_reached(model: PathMindNet, features: Features, examples: list[Example], size: int = 8) -> list[bool]:
    """Per question, whether its search reached one of its answers: A*Net's pruned
    propagation scores the entities no message reached by the state zero alone, so an answer
    it never reached cannot be told from the rest of the subgraph; unpruned, every entity of
    the subgraph is reached."""
    model.eval()
    out = []
    with torch.no_grad():
        entities = model.entities(features.whole)
        for chunk in batches(examples, size):
            inputs = features.batch(chunk, entities=entities)
            reached = model(inputs).reached
            answer, mask = targets(features, chunk, inputs.places)
            if reached is not None:
                mask = mask & reached.cpu()
            out += ((answer > 0) & mask).any(0).tolist()
    return out


def batches(examples: list, size: int) -> list[list]:
    return [examples[lo:lo + size] for lo in range(0, len(examples), size)]


def new_model(graph: KnowledgeGraph, features: Features, query_dim: int, config: TrainConfig,
              answer_share: float | None = None) -> PathMindNet:
    """A randomly initialized network; ``answer_share``: the share of a subgraph's entities
    that are answers, where the binary cross-entropies start their output bias (the prior
    initialization of imbalanced binary classifiers: the first steps then learn the ranking
    instead of pushing every score down)."""
    if config.network == "bellman-ford":
        model = BellmanFordNet(len(graph.type_names), 2 * graph.num_relations, query_dim, features.text_dim,
                               hidden=config.hidden, hops=config.hops, message=config.message, nodes=config.nodes,
                               degree_ratio=config.degree_ratio, entity_text=config.entity_text,
                               answer_type=config.answer_type, answer_text=config.answer_text,
                               focus=config.focus)
    else:
        model = PathMindNet(len(graph.type_names), 2 * graph.num_relations, query_dim, features.text_dim,
                            hidden=config.hidden, hops=config.hops, reading=config.reading,
                            text_projection=config.text_projection, cost=config.cost, entity=config.entity,
                            readout=config.readout, gnn_layers=config.gnn_layers)
    if config.network == "walk" and config.entity == "gnn":
        model.gnn.fit_text(features.text)
    if answer_share is not None and config.loss == "bce":
        with torch.no_grad():
            for head in (model.priority, *model.probes.values()):
                head[-1].bias.fill_(float(np.log(answer_share / (1 - answer_share))))
    return model


def start_from(model: PathMindNet, init: PathMindNet) -> None:
    """Copies ``init``'s weights into ``model``; one line naming the first setting where their
    shapes differ (the graph's types or relations, the encoder's width, an architecture option)."""
    mine, theirs = model.config.get("network", "walk"), init.config.get("network", "walk")
    if mine != theirs:  # the networks' settings differ wholesale: name the network
        raise InputError(f"--init: a model of other settings (network {theirs!r}, here {mine!r})")
    for key, value in model.config.items():
        if init.config.get(key) != value:
            raise InputError(f"--init: a model of other settings ({key} {init.config.get(key)!r}, "
                             f"here {value!r})")
    model.load_state_dict({k: v.detach().to("cpu") for k, v in init.state_dict().items()})


def split_by_question(examples: list[Example], fraction: float, rng: np.random.Generator) -> tuple[list, list]:
    """(validation, training): a seeded ``fraction`` of the questions (by id) with every level of
    each, so no question is seen in training at one level and validated at another."""
    ids = sorted(dict.fromkeys(e.id for e in examples))
    order = rng.permutation(len(ids))
    held = {ids[i] for i in order[:max(1, int(round(len(ids) * fraction)))]}
    if len(held) == len(ids):  # a single question: validate on what it trains on rather than on nothing
        return list(examples), list(examples)
    return [e for e in examples if e.id in held], [e for e in examples if e.id not in held]


def held_out(features: Features, examples: list[Example], config: TrainConfig) -> list[Example]:
    """The validation questions :func:`train` holds out of ``examples`` with ``config`` (its
    seeded generator's first draw)."""
    return split_by_question(within_reach(features, examples), config.val_fraction,
                             np.random.default_rng(config.seed))[0]


def within_reach(features: Features, examples: list[Example]) -> list[Example]:
    """The questions with an answer inside their query subgraph (the others teach nothing).
    Each distinct topic set's subgraph is found once (a question's wordings share it), 63
    side by side."""
    slot: dict[tuple, int] = {}  # a distinct topic set -> its place among them
    groups: dict[int, list[tuple[int, int]]] = {}  # a group of 63 topic sets -> (example, its set's place)
    for i, e in enumerate(examples):
        if e.answers:
            at = slot.setdefault(tuple(sorted(set(e.topics))), len(slot))
            groups.setdefault(at // MAX_QUESTIONS, []).append((i, at))
    unique = list(slot)
    found = np.zeros(len(examples), dtype=np.bool_)
    for group, members in groups.items():
        lo = group * MAX_QUESTIONS
        last = features.relational.reach_bits([list(k) for k in unique[lo:lo + MAX_QUESTIONS]], features.hops)[-1]
        for i, at in members:
            found[i] = bool(((last[examples[i].answers] >> (at - lo)) & 1).any())
    return [e for e, ok in zip(examples, found) if ok]


def training_loss(model, features: Features, chunk: list[Example], config: TrainConfig,
                  rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(the priority's loss, the probes' loss) of one batch. The probes (and, with
    ``negatives`` sampled, the priority) read the sampled rows of :func:`sampled_targets`; with
    ``negatives`` all the priority's loss reads every entity of each question's subgraph, its
    topics included, each once."""
    rows, target, weight = sampled_targets(features, chunk, features.cosine(chunk), rng)
    every = config.negatives == "all"
    inputs = features.batch(chunk, None if every else rows)
    if config.guide_paths:
        inputs.guide = gold_paths(features, chunk)
    at = torch.as_tensor(inputs.places.local_of[rows]).to(features.device)
    output = model(inputs, at, PROBES, every=True) if every else model(inputs, at, PROBES)
    target, weight = target.to(features.device), weight.to(features.device)
    if every:
        answers, inside = targets(features, chunk, inputs.places, topics=True)
        inside = inside.to(features.device, output.logits.dtype)
        loss = subgraph_loss(output.logits, answers.to(features.device) * inside, inside, config.loss)
    else:
        loss = subgraph_loss(output.logits, target, weight, config.loss)
    if config.guide_paths:  # and the pruned search's selections along the gold paths
        loss = loss + model.search_loss
    # the probes learn from detached inputs: the priority's gradients are its own
    probe_loss = sum(subgraph_loss(p, target, weight, config.loss) for p in output.probes.values())
    return loss, probe_loss


def train(graph: KnowledgeGraph, examples: list[Example], features: Features, config: TrainConfig, log=None,
          progress: bool = False, more: list[Example] = (), split=None, init: PathMindNet | None = None):
    """Returns (model, history) with the best validation epoch's weights (validation: a seeded
    fifth of ``examples``' questions, every level of each). ``more``: questions that only
    train (generated ones beside real records, say). Questions whose answers lie outside
    their subgraph (more than ``hops`` steps away) teach nothing and are left out.
    ``split(validation, training, more)``: told the three counts before the first epoch.
    ``init``: a trained network of the same shape whose weights training starts from instead
    of random ones (fine-tuning on real records a model trained on generated questions); they
    are validated first (``log`` gets them as epoch 0, outside the history) and kept unless an
    epoch scores higher."""
    keep_freed_memory()  # every step frees and allocates the same large arrays: keep their pages
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    usable = within_reach(features, examples)
    if len(usable) < 4:
        raise InputError("too few training questions with an answer within --hops steps of a topic")
    val, fit = split_by_question(usable, config.val_fraction, rng)
    extra = within_reach(features, list(more))
    if split is not None:
        split(len(val), len(fit), len(extra))
    fit = fit + extra
    sizes = [int(masks[-1].sum()) for masks in features.subgraphs([e.topics for e in fit[:64]])]
    share = float(np.median([len(e.answers) / max(size, 2) for e, size in zip(fit, sizes)]))
    model = new_model(graph, features, len(usable[0].query), config, min(max(share, 1e-7), 0.5))
    if init is not None:
        start_from(model, init)
    model = model.to(features.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    best, best_state, stale, history = -1.0, None, 0, []
    if init is not None:  # the starting weights compete too: fine-tuning keeps them unless an epoch does better
        hits1, hits3 = hits_at_many(model, features, val, (1, 3), progress=progress, label="validation 0")
        best = hits1 if config.select == "hits1" else hits3
        best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if log:
            log({"epoch": 0, "loss": float("nan"), "val_hits1": hits1, "val_hits3": hits3, "seconds": 0.0})
    for epoch in range(1, config.epochs + 1):
        model.train()
        clock = time.perf_counter()
        total = 0.0
        shuffled = [fit[i] for i in rng.permutation(len(fit))]
        with Progress(len(fit), f"epoch {epoch}", "questions", quiet=not progress) as bar:
            for chunk in batches(shuffled, max(1, config.batch)):
                loss, probe_loss = training_loss(model, features, chunk, config, rng)
                optimizer.zero_grad()
                (loss + probe_loss).backward()
                optimizer.step()
                total += float(loss.detach()) * len(chunk)
                bar.advance(len(chunk))
        seconds = time.perf_counter() - clock
        hits1, hits3 = hits_at_many(model, features, val, (1, 3), progress=progress, label=f"validation {epoch}")
        score = hits1 if config.select == "hits1" else hits3
        history.append({"epoch": epoch, "loss": total / max(len(fit), 1), "val_hits1": hits1, "val_hits3": hits3,
                        "seconds": seconds})
        if log:
            log(history[-1])
        if score > best:
            best, stale = score, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            stale += 1
            if stale >= config.patience:
                break
    model.load_state_dict(best_state)
    model.eval()
    return model, history


def epoch_line(h: dict) -> str:
    """One line of the training log for a ``train`` log entry (epoch 0: the ``init`` weights)."""
    if h["epoch"] == 0:
        return f"start (--init): val Hits@1 {h['val_hits1']:.3f}, Hits@3 {h['val_hits3']:.3f}"
    return (f"epoch {h['epoch']}: loss {h['loss']:.4f}, val Hits@1 {h['val_hits1']:.3f}, Hits@3 {h['val_hits3']:.3f}, "
            f"{h['seconds']:.1f} s")


def save_checkpoint(model: PathMindNet, config: TrainConfig, graph: KnowledgeGraph, out: str | Path,
                    history: list[dict] | None = None, started_from: str = "", reader=None) -> None:
    """``started_from``: the model whose weights training started from (``--init``), if any;
    ``reader``: its fitted :class:`~adapath.methods.pathmind.reader.Reader` (``--rerank``)."""
    from safetensors.torch import save_file

    from adapath.fsutil import atomic_dir

    with atomic_dir(out, overwrite=True) as tmp:
        save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, str(tmp / "model.safetensors"))
        (tmp / "config.json").write_text(json.dumps({
            "format": FORMAT, "version": FORMAT_VERSION, "model": model.config, "train": asdict(config),
            "graph_checksum": graph.checksum(), "history": history or [],
            **({"started_from": started_from} if started_from else {})}, indent=2))
        if reader is not None:
            reader.save(tmp)


def load_checkpoint(path: str | Path) -> tuple[PathMindNet, TrainConfig]:
    from safetensors.torch import load_file

    path = Path(path)
    if not (path / "config.json").is_file() or not (path / "model.safetensors").is_file():
        raise InputError(f"{path}: not a PathMind model (config.json + model.safetensors)")
    meta = json.loads((path / "config.json").read_text())
    if meta.get("format") != FORMAT:
        raise InputError(f"{path}: not a PathMind model")
    if meta.get("version", 1) != FORMAT_VERSION:
        raise InputError(f"{path}: a PathMind model of an earlier version; train it again "
                         "with `adapath pathmind train`")
    settings = dict(meta["model"])
    if settings.pop("network", "walk") == "bellman-ford":
        model = BellmanFordNet(**settings)
    else:  # a walk-algebra model (its checkpoints name no network)
        model = PathMindNet(**settings)
        meta["train"]["network"] = "walk"
    model.load_state_dict(load_file(str(path / "model.safetensors")))
    model.eval()
    return model, TrainConfig(**meta["train"])
