"""PathMind's priority as the path networks it comes from compute it: a neural Bellman-Ford
(NBFNet, Zhu et al. 2021) whose priority prunes the propagation (A*Net, Zhu et al. 2023).

The paper's cumulative cost ``d(q, e)`` -- a sum over the paths from the question's topics
to ``e`` of the sum of their triple representations -- is NBFNet's generalized
Bellman-Ford with the additive (TransE) message and the sum aggregation; NBFNet computes it
with neural layers, and so does this network:

- **boundary**: the question's vector ``q'`` at each of its topic entities, zero elsewhere;
  the state ``x`` starts there;
- **relations read from the question** (NBFNet's query-dependent relations): per step a
  linear map of ``q'`` to one vector per relation and direction;
- **per step t**: each visited entity ``u`` sends ``sigma(s(u)) x_u (+ or *) r_t`` (``add``,
  the paper's sum of triple representations, or ``mul``, DistMult) along its edges; an
  entity that receives sums the messages and its boundary, then ``x_v <- x_v + ReLU(LN(W
  [sigma(s(v)) x_v, aggregate]))`` (a linear map over [input, aggregate], layer norm, ReLU,
  the short-cut);
- **priority**: ``s = MLP(d + f([d, q']))`` with ``d = x`` (the paper's formula, A*Net's
  score), read at every step, so the messages of an entity are weighted by its priority
  ``sigma(s)`` and the priority learns through the answer loss;
- **the readout's answer prior** (ours, ``answer_type`` / ``answer_text``): the logits the
  loss and the selection read add a logit per entity type and the text's weighted cosine to
  the question, both read from ``q'``; the priority that prunes and weights the messages is
  ``s`` alone;
- **pruning** (A*Net's, ``nodes > 0``): per step each question propagates only from its
  ``nodes`` visited entities of highest priority (ties: the smaller node index), along the
  ``degree_ratio * nodes * mean degree`` of their edges whose far end has the highest
  priority (ties: the earlier edge, source by source in priority order, each source's edges
  in storage order). An entity no message reached keeps the state zero and the priority
  ``s(0)``;
- **gold paths in training** (ours, ``--guide-paths``): a training batch may name, per step,
  the entities on each question's shortest paths from a topic to an answer; the pruned
  search then also sends from those at that depth, along the edges to the next, so that an
  answer the priority would prune away still gets a state and its loss a gradient through
  the priorities on its path, and the priorities at each step learn to select them: a
  softmax over the question's visited entities against its gold ones at that depth (a
  pruned search trained with its gold path kept in the beam and a loss on its selections, as
  learning to search does); answering never reads them.

Without pruning every visited entity sends along every edge. Each step is then one pass of
:func:`adapath.methods.pathmind.propagate.relational_gather` over the graph's CSR for the
whole batch (no tensor of edges x hidden): the ``add`` message as ``[x, 1] . [1, r]``
side by side, the ``mul`` message as ``x . r``, a column of ones counting the messages each
entity receives. A question's values are zero outside the entities its walks reach. With
pruning the selected edges are few, and their messages are materialized per edge, as A*Net
does.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from adapath.methods.pathmind.model import Output, unit_rows
from adapath.methods.pathmind.propagate import relational_gather

MESSAGES = ("add", "mul")  # TransE (the paper's sum of triple representations), DistMult (NBFNet's default)
PROBES = ("readout", "cumulative", "future")


def visited(bits: np.ndarray, graph, places, batch: int) -> tuple[float, float]:
    """(entities, edges) per question that a step without pruning propagates from and along:
    the places whose bit the question holds, and their edges."""
    degree = np.diff(graph.indptr)[places.nodes]
    entities = edges = 0
    for j in range(batch):
        mine = (bits >> j) & 1
        entities += int(mine.sum())
        edges += int(degree[mine.astype(np.bool_)].sum())
    return entities / batch, edges / batch


def top_per_group(group: np.ndarray, score: np.ndarray, tie: np.ndarray, k: int, groups: int) -> np.ndarray:
    """Indices of the ``k`` highest ``score`` within each group (0..groups-1), ties by the
    smaller ``tie``: group by group, best first."""
    if in_tie_order(group, tie):  # the pruned search's case: a partition per group, not a sort of all
        return top_of_runs(group, score, k, groups)
    order = np.lexsort((tie, -score, group))
    first = np.searchsorted(group[order], np.arange(groups))
    place = np.arange(len(order)) - first[group[order]]
    return order[place < k]


def in_tie_order(group: np.ndarray, tie: np.ndarray) -> bool:
    """Whether the entries come group by group, each group's in increasing ``tie``."""
    if len(group) < 2:
        return True
    same = group[1:] == group[:-1]
    return bool(np.all(group[1:] >= group[:-1]) and np.all(tie[1:][same] > tie[:-1][same]))


def top_of_runs(group: np.ndarray, score: np.ndarray, k: int, groups: int) -> np.ndarray:
    """:func:`top_per_group` of entries in tie order: per group, the entries at or above its
    k-th highest score (a partition), sorted stably by score (ties keep their order)."""
    bounds = np.searchsorted(group, np.arange(groups + 1))
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if k <= 0 or hi <= lo:
            continue
        below = -score[lo:hi]
        if hi - lo > k:
            candidates = np.flatnonzero(below <= np.partition(below, k - 1)[k - 1])
            parts.append(lo + candidates[np.argsort(below[candidates], kind="stable")[:k]])
        else:
            parts.append(lo + np.argsort(below, kind="stable"))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def lookup(keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``wanted``: its place in the sorted non-empty ``keys`` (clipped) and
    whether it is there."""
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return at, keys[at] == wanted


NO_WH = "a --focus model reads the questions' wh-phrase embeddings (Example.focus)"


def wh_phrases(inputs) -> torch.Tensor:
    """The questions' wh-phrase embeddings as unit rows (B x D): what a ``--focus`` model reads."""
    if inputs.focus is None:
        raise ValueError(NO_WH)
    return unit_rows(inputs.focus)


def mlp(width_in: int, hidden: int, width_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(width_in, hidden), nn.ReLU(), nn.Linear(hidden, width_out))


class BellmanFordNet(nn.Module):
    """The priority network (see the module's text). ``nodes``: entities each question
    propagates from per step (0: every visited one, no pruning); ``degree_ratio``: the edges
    kept per step, as a multiple of ``nodes`` times the graph's mean degree (0: all of the
    selected entities' edges)."""

    network = "bellman-ford"
    cost = "bellman-ford"  # what inference's edge choice asks of a network

    def __init__(self, num_types: int, num_codes: int, query_dim: int, text_dim: int, hidden: int = 32,
                 hops: int = 3, message: str = "add", nodes: int = 0, degree_ratio: float = 1.0,
                 entity_text: bool = False, answer_type: bool = False, answer_text: bool = False,
                 focus: bool = False):
        super().__init__()
        if message not in MESSAGES:
            raise ValueError(f"message {message!r}: choose {', '.join(MESSAGES)}")
        self.config = {"network": self.network, "num_types": num_types, "num_codes": num_codes,
                       "query_dim": query_dim, "text_dim": text_dim, "hidden": hidden, "hops": hops,
                       "message": message, "nodes": nodes, "degree_ratio": degree_ratio}
        if entity_text:  # recorded only when on: the models without it keep their settings
            self.config["entity_text"] = True
        for name, on in (("answer_type", answer_type), ("answer_text", answer_text), ("focus", focus)):
            if on:
                self.config[name] = True
        self.hidden, self.hops, self.message, self.num_codes = hidden, hops, message, num_codes
        self.nodes, self.degree_ratio, self.entity_text = nodes, degree_ratio, entity_text
        self.answer_type, self.answer_text, self.focus = answer_type, answer_text, focus
        if focus and not entity_text:
            raise ValueError("focus adds to the entity evidence: it needs entity_text")
        self.query = nn.Linear(query_dim, hidden)
        self.relations = nn.ModuleList(nn.Linear(hidden, num_codes * hidden) for _ in range(hops))
        self.combine = nn.ModuleList(nn.Linear(2 * hidden, hidden) for _ in range(hops))
        self.norm = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(hops))
        self.future = nn.Linear(2 * hidden, hidden)  # f([d, q']): A*Net's linear map of [hidden, query]
        self.priority = mlp(hidden, hidden, 1)
        # the ablations' heads: w/o prioritization reads a question-free entity representation
        # (type and text) against the question; d only and f only read them detached
        self.type_embedding = nn.Embedding(num_types, hidden)
        self.text = nn.Linear(text_dim, hidden, bias=False)
        if entity_text:  # the entity's own evidence, read against the question: cosine's weight per channel
            self.cosine_weight = nn.Parameter(torch.zeros(hidden))
        if focus:  # and its text's cosine to the question's wh-phrase: a weight per channel
            self.focus_weight = nn.Parameter(torch.zeros(hidden))
        if answer_type:  # the readout's answer-type prior: one logit per entity type read from the question
            self.type_prior = nn.Linear(hidden, num_types)
            nn.init.zeros_(self.type_prior.weight)
            nn.init.zeros_(self.type_prior.bias)
        if answer_text:  # the readout's text match: the entity text's cosine to the question, a weight per question
            self.text_weight = nn.Linear(hidden, 1)
            nn.init.zeros_(self.text_weight.weight)
            nn.init.zeros_(self.text_weight.bias)
            if focus:  # and its cosine to the question's wh-phrase, a weight per question
                self.focus_text_weight = nn.Linear(hidden, 1)
                nn.init.zeros_(self.focus_text_weight.weight)
                nn.init.zeros_(self.focus_text_weight.bias)
        self.probes = nn.ModuleDict({"readout": mlp(2 * hidden, hidden, 1), "cumulative": mlp(hidden, hidden, 1),
                                     "future": mlp(hidden, hidden, 1)})
        self.visits: list[tuple[float, float]] = []  # per step of the last forward: entities, edges per question
        self.search_loss: torch.Tensor | None = None  # the last forward's (see _selection_loss)

    # the interface the training loop and inference share with the walk network
    def entities(self, whole, nodes: torch.Tensor | None = None) -> torch.Tensor | None:
        """Every node's question-free representation (type embedding + text projection), for
        inference to make once (no gradient) and the evidence to read rows of; None without
        ``entity_text``, which reads none."""
        if not self.entity_text:
            return None
        return self.type_embedding(whole.node_type) + self.text(whole.text)

    def future_cost(self, x: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """f([d, q']) of states ``x`` (... x H) for questions ``q`` (broadcast alike)."""
        return self.future(torch.cat([x, q.expand_as(x)], dim=-1))

    def _score(self, x: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """The priority logits s = MLP(d + f([d, q'])) of states ``x``."""
        return self.priority(x + self.future_cost(x, q)).squeeze(-1)

    def readout_prior(self, inputs, q: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor | None:
        """What the readout adds to the priority of the places (or ``rows``) per question (places
        x B), not the priority that prunes: ``--answer-type``'s logit for the place's type,
        ``--answer-text``'s weight times its text's cosine to the question (with ``--focus``, and
        another weight times its cosine to the question's wh-phrase); None when both are off."""
        if not (self.answer_type or self.answer_text):
            return None
        prior = 0
        if self.answer_type:
            nodes = inputs.places.nodes if rows is None else inputs.places.nodes[rows.cpu().numpy()]
            types = inputs.whole.node_type.index_select(0, torch.as_tensor(nodes, device=q.device))
            prior = self.type_prior(q).index_select(1, types).T
        if self.answer_text:
            cosine = self.question_cosine(inputs, rows)
            prior = prior + cosine * self.text_weight(q).T
            if self.focus:
                nodes = inputs.places.nodes if rows is None else inputs.places.nodes[rows.cpu().numpy()]
                prior = prior + self.focus_cosine(inputs, torch.as_tensor(nodes, device=q.device)) * \
                    self.focus_text_weight(q).T
        return prior

    @staticmethod
    def question_cosine(inputs, rows: torch.Tensor | None) -> torch.Tensor:
        """The places' (or ``rows``') text cosine to each question: places x B (answering: read
        from the batch's one product of both cosines, whose unit rows are the evidence's)."""
        if inputs.entities is None:
            return inputs.cosine if rows is None else inputs.cosine.index_select(0, rows)
        places = torch.as_tensor(inputs.places.nodes, device=inputs.query.device)
        if rows is not None:
            places = places.index_select(0, rows)
        return inputs.unit_cosines()[:, :inputs.query.shape[0]].index_select(0, places)

    @staticmethod
    def focus_cosine(inputs, nodes: torch.Tensor) -> torch.Tensor:
        """Each of ``nodes``' text cosine to each question's wh-phrase: nodes x B (every node's,
        then the rows of ``nodes``: one product over the graph instead of a copy of its rows;
        answering reads the batch's product of both cosines)."""
        if inputs.entities is not None and inputs.focus is not None:
            return inputs.unit_cosines()[:, inputs.query.shape[0]:].index_select(0, nodes)
        return (inputs.whole.unit @ wh_phrases(inputs).T).index_select(0, nodes)

    def entity_representation(self, inputs, nodes: torch.Tensor) -> torch.Tensor:
        """A question-free representation of ``nodes``: type embedding + text projection."""
        return self.type_embedding(inputs.whole.node_type.index_select(0, nodes)) + \
            self.text(inputs.whole.text.index_select(0, nodes))

    def relation_vectors(self, step: int, q: torch.Tensor) -> torch.Tensor:
        """Step ``step``'s relation vectors read from the questions: codes x B x H."""
        return self.relations[step](q).view(q.shape[0], self.num_codes, self.hidden).transpose(0, 1)

    def update(self, step: int, x_in: torch.Tensor, aggregate: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm[step](self.combine[step](torch.cat([x_in, aggregate], dim=-1))))

    # ------------------------------------------------------------------ forward
    def forward(self, inputs, rows: torch.Tensor | None = None, probes: tuple[str, ...] = (), every: bool = False):
        """``every``: the logits of every place, the probes (and d) of ``rows`` alone (the
        exact loss over the subgraph beside the probes' sampled one)."""
        q = self.query(inputs.query)
        reached = None
        self.search_loss = q.new_zeros(())  # the pruned search's selection loss, in training with a guide
        if self.nodes > 0:
            logits, d, reached = self._pruned(inputs, q, rows, dense=bool(probes), every=every)
        elif every:  # the whole propagation holds every place's state: all of them read out, d of rows kept
            logits, d = self._whole(inputs, q, None)
            d = d if rows is None else d.index_select(0, rows)
        else:
            logits, d = self._whole(inputs, q, rows)
        out = {}
        if probes:
            f = self.future_cost(d, q[None])
            for name in probes:
                if name == "cumulative":
                    out[name] = self.probes[name](d.detach()).squeeze(-1)
                elif name == "future":
                    out[name] = self.probes[name](f.detach()).squeeze(-1)
                else:
                    index = torch.as_tensor(inputs.places.nodes).to(q.device)
                    if rows is not None:
                        index = index.index_select(0, rows)
                    h = self.entity_representation(inputs, index)
                    pair = torch.cat([h.detach()[:, None, :].expand(-1, q.shape[0], -1),
                                      q.detach()[None].expand(h.shape[0], -1, -1)], dim=-1)
                    out[name] = self.probes[name](pair).squeeze(-1)
        return Output(logits, d, None, None, out, reached)

    def evidence(self, inputs, nodes: torch.Tensor, questions: torch.Tensor | None, q: torch.Tensor) -> torch.Tensor:
        """``--entity-text``: each entity's own evidence for a question, added to what it
        aggregates (the paper's triple representation reads the entities' representations;
        NBFNet's layers read none): (type embedding + text projection) * q' + cos(text, question)
        * w (+ cos(text, wh-phrase) * w' with ``--focus``). ``questions`` None: every node for every question (nodes x B x H), else the
        question of each node (nodes x H)."""
        if inputs.entities is not None:  # answering: rows of the tables made once, no text row gathered
            return self._read_evidence(inputs, nodes, questions, q)
        h = self.entity_representation(inputs, nodes)
        unit = inputs.whole.unit.index_select(0, nodes)
        query = unit_rows(inputs.query)
        focus = wh_phrases(inputs) if self.focus else None
        if questions is None:
            out = h[:, None, :] * q[None] + (unit @ query.T)[..., None] * self.cosine_weight
            return out if focus is None else out + (unit @ focus.T)[..., None] * self.focus_weight
        cosine = (unit * query.index_select(0, questions)).sum(1, keepdim=True)
        out = h * q.index_select(0, questions) + cosine * self.cosine_weight
        if focus is None:
            return out
        return out + (unit * focus.index_select(0, questions)).sum(1, keepdim=True) * self.focus_weight

    def _read_evidence(self, inputs, nodes: torch.Tensor, questions: torch.Tensor | None,
                       q: torch.Tensor) -> torch.Tensor:
        """:meth:`evidence` from the entity table (:meth:`entities`) and the batch's cosines
        (``BatchInputs.unit_cosines``): their rows instead of each entity's text row, projected
        and multiplied (a tenth of answering)."""
        if self.focus and inputs.focus is None:
            raise ValueError(NO_WH)
        h = inputs.entities.index_select(0, nodes)
        table = inputs.unit_cosines()  # nodes x B (x 2B: the wh-phrases' after)
        batch, width = q.shape[0], table.shape[1]
        if questions is None:
            rows = table.index_select(0, nodes)
            out = h[:, None, :] * q[None] + rows[:, :batch, None] * self.cosine_weight
            return out if not self.focus else out + rows[:, batch:, None] * self.focus_weight
        flat = table.reshape(-1)
        at = nodes * width + questions
        out = h * q.index_select(0, questions) + flat.index_select(0, at)[:, None] * self.cosine_weight
        if not self.focus:
            return out
        return out + flat.index_select(0, at + batch)[:, None] * self.focus_weight

    def boundary(self, inputs, q: torch.Tensor, n: int) -> torch.Tensor:
        start = torch.zeros(n, q.shape[0], self.hidden, dtype=q.dtype, device=q.device)
        return start.index_put((inputs.topic_rows, inputs.topic_cols), q.index_select(0, inputs.topic_cols))

    def _whole(self, inputs, q: torch.Tensor, rows: torch.Tensor | None):
        """Every visited entity propagates along every edge: one relational pass per step.
        (logits, d) over the places (or ``rows``), places x B."""
        places, graph = inputs.places, inputs.graph
        n, batch, hidden = len(places), q.shape[0], self.hidden
        x = boundary = self.boundary(inputs, q, n)
        if self.entity_text:  # what an entity reached adds to its messages: its boundary and its evidence
            boundary = boundary + self.evidence(inputs, torch.as_tensor(places.nodes).to(q.device), None, q)
        self.visits = []
        for t in range(self.hops):
            last = t == self.hops - 1
            s = self._score(x, q[None])
            x_in = torch.sigmoid(s)[..., None] * x
            write = inputs.reach[t + 1] != 0
            if last and rows is not None:
                write = np.zeros(n, dtype=np.bool_)
                write[rows.cpu().numpy()] = True
            rho = self.relation_vectors(t, q)
            # a source's ones are its question's bit: zero where its walks have not reached, as
            # its state is (the kernels skip those sources; torch's ops, on a GPU, add them)
            # (each question's own bits: a batch's marks may be the union of its questions')
            own = inputs.reach[t] if inputs.reach_bits is None else places.mask(inputs.reach_bits[t])
            bits = torch.as_tensor(own).to(x.device)
            ones = ((bits[:, None] >> torch.arange(batch, device=x.device)) & 1).to(x.dtype)[..., None]
            code_ones = rho.new_ones(rho.shape[0], batch, 1)
            if self.message == "add":  # sum (x_u + r) = sum x_u * 1 + sum 1 * r
                source = torch.cat([x_in, ones.expand(-1, -1, hidden), ones], dim=-1)
                factor = torch.cat([code_ones.expand(-1, -1, hidden), rho, code_ones], dim=-1)
            else:
                source = torch.cat([x_in, ones], dim=-1)
                factor = torch.cat([rho, code_ones], dim=-1)
            width = source.shape[-1]
            y = relational_gather(source.reshape(n, -1), factor.reshape(factor.shape[0], -1), graph, places, write,
                                  inputs.reach[t], width).view(n, batch, width)
            if last and rows is not None:
                y, x, x_in, boundary = (a.index_select(0, rows) for a in (y, x, x_in, boundary))
            aggregate = y[..., :hidden] + y[..., hidden:2 * hidden] if self.message == "add" else y[..., :hidden]
            received = (y[..., -1:] > 0).to(x.dtype)  # an entity no message reached keeps its state
            x = x + received * self.update(t, x_in, aggregate + boundary)
            self.visits.append(visited(own, graph, places, batch))
        logits = self._score(x, q[None])
        prior = self.readout_prior(inputs, q, rows)
        return (logits if prior is None else logits + prior), x

    @staticmethod
    def _selection_loss(s: torch.Tensor, question: np.ndarray, keys: np.ndarray, gold: np.ndarray,
                        batch: int) -> torch.Tensor:
        """The search's own loss at one step: per question with gold entities visited, the
        cross-entropy of a softmax of the priorities over its visited entities against the
        uniform distribution over those gold ones (``log sum exp s - mean of s over the gold``),
        the mean over those questions."""
        at, found = lookup(keys, gold)
        rows = at[found]
        if not len(rows):
            return s.new_zeros(())
        device = s.device
        group = torch.as_tensor(question, device=device)
        top = s.detach().new_full((batch,), -torch.inf).scatter_reduce(0, group, s.detach(), "amax")
        total = s.new_zeros(batch).index_add(0, group, torch.exp(s - top[group]))
        gold_group = torch.as_tensor(question[rows], device=device)
        count = s.new_zeros(batch).index_add(0, gold_group, torch.ones(len(rows), dtype=s.dtype, device=device))
        gold_sum = s.new_zeros(batch).index_add(0, gold_group, s.index_select(0, torch.as_tensor(rows, device=device)))
        has = count > 0
        return (top[has] + torch.log(total[has]) - gold_sum[has] / count[has]).mean()

    def _pruned(self, inputs, q: torch.Tensor, rows: torch.Tensor | None, dense: bool = True, every: bool = False):
        """A*Net's pruned propagation over each question's visited entities, kept sparse:
        (logits, d, reached) over the places (or ``rows``), places x B; ``dense`` false: d is
        None (answering reads the logits alone: no places x B x hidden tensor); ``reached``: the
        places a message reached (or a topic), per question."""
        graph, places = inputs.graph, inputs.places
        indptr, indices, codes = graph.indptr, graph.indices, graph.scatter_code
        num_nodes, batch, hidden = graph.num_nodes, q.shape[0], self.hidden
        device = q.device
        mean_degree = len(indices) / max(num_nodes, 1)
        # the state of each visited (question, node), keyed j * num_nodes + node, sorted
        topic_nodes = places.nodes[inputs.topic_rows.cpu().numpy()]
        topic_keys = inputs.topic_cols.cpu().numpy() * num_nodes + topic_nodes
        order = np.argsort(topic_keys, kind="stable")
        keys = topic_keys[order]
        x = q.index_select(0, inputs.topic_cols.index_select(0, torch.as_tensor(order, device=device)))
        topic_set = np.sort(topic_keys)
        guide = inputs.guide if self.training else None
        unseen = self._score(torch.zeros_like(q), q)  # s(0) per question: an entity not reached
        unseen_np = unseen.detach().cpu().numpy()
        self.visits = []
        for t in range(self.hops):
            question = keys // num_nodes
            s = self._score(x, q.index_select(0, torch.as_tensor(question, device=device)))
            s_np = s.detach().cpu().numpy()
            node = keys % num_nodes
            if guide is not None and t > 0:
                self.search_loss = self.search_loss + self._selection_loss(s, question, keys, guide[t], batch)
            # the top `nodes` per question: by priority, ties by the smaller node
            chosen = top_per_group(question, s_np, node, self.nodes, batch)
            if guide is not None:  # and, in training, the gold paths' entities at this depth
                at, found = lookup(keys, guide[t])
                chosen = np.concatenate([chosen, np.setdiff1d(at[found], chosen)])
            # their edges, in the chosen order, each source's in storage order
            lo, hi = indptr[node[chosen]], indptr[node[chosen] + 1]
            lengths = hi - lo
            total = int(lengths.sum())
            source_row = np.repeat(chosen, lengths)
            offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            edge = np.repeat(lo, lengths) + offsets
            target = indices[edge].astype(np.int64)
            edge_question = question[source_row]
            target_keys = edge_question * num_nodes + target
            at, seen = lookup(keys, target_keys)
            if self.degree_ratio > 0:  # the edges whose far end has the highest priority
                far = np.where(seen, s_np[at], unseen_np[edge_question])
                keep = top_per_group(edge_question, far, np.arange(total),
                                     int(np.ceil(self.degree_ratio * self.nodes * mean_degree)), batch)
                if guide is not None:  # the gold paths' edges stay
                    on_path = np.isin(keys[source_row], guide[t]) & np.isin(target_keys, guide[t + 1])
                    keep = np.union1d(keep, np.flatnonzero(on_path))
                keep = np.sort(keep)
                source_row, target, edge_question, target_keys, at, seen, edge = (
                    a[keep] for a in (source_row, target, edge_question, target_keys, at, seen, edge))
            x_in = torch.sigmoid(s)[:, None] * x
            rho = self.relation_vectors(t, q)
            # index_select (its gradient an index_add, summed in order) rather than advanced
            # indexing, whose gradient's accumulation over repeated (code, question) pairs
            # depends on the threads' schedule
            pair = torch.as_tensor(codes[edge].astype(np.int64) * batch + edge_question, device=device)
            relation = rho.reshape(-1, hidden).index_select(0, pair)
            sent = x_in.index_select(0, torch.as_tensor(source_row, device=device))
            message = sent + relation if self.message == "add" else sent * relation
            new_keys, inverse = np.unique(target_keys, return_inverse=True)
            aggregate = x.new_zeros(len(new_keys), hidden).index_add(0, torch.as_tensor(inverse, device=device),
                                                                    message)
            new_question = new_keys // num_nodes
            is_topic = np.isin(new_keys, topic_set)
            q_new = q.index_select(0, torch.as_tensor(new_question, device=device))
            aggregate = aggregate + q_new * torch.as_tensor(is_topic, device=device, dtype=x.dtype)[:, None]
            if self.entity_text:
                aggregate = aggregate + self.evidence(inputs, torch.as_tensor(new_keys % num_nodes, device=device),
                                                      torch.as_tensor(new_question, device=device), q)
            old_at, found = lookup(keys, new_keys)
            target_in = x_in.index_select(0, torch.as_tensor(old_at, device=device)) * \
                torch.as_tensor(found, device=device, dtype=x.dtype)[:, None]
            out = self.update(t, target_in, aggregate)
            merged = np.union1d(keys, new_keys)
            x = x.new_zeros(len(merged), hidden).index_add(
                0, torch.as_tensor(np.searchsorted(merged, keys), device=device), x).index_add(
                0, torch.as_tensor(np.searchsorted(merged, new_keys), device=device), out)
            keys = merged
            self.visits.append((len(chosen) / batch, len(edge) / batch))
        question, node = keys // num_nodes, keys % num_nodes
        s = self._score(x, q.index_select(0, torch.as_tensor(question, device=device)))
        local = places.local_of[node]
        inside = local >= 0
        n = len(places)
        logits = unseen[None, :].expand(n, batch).index_put(
            (torch.as_tensor(local[inside], device=device), torch.as_tensor(question[inside], device=device)),
            s[torch.as_tensor(np.flatnonzero(inside), device=device)])
        prior = self.readout_prior(inputs, q, None)
        if prior is not None:  # every place, reached or not, as the unpruned readout
            logits = logits + prior
        reached = torch.zeros(n, batch, dtype=torch.bool, device=device)
        reached[torch.as_tensor(local[inside], device=device), torch.as_tensor(question[inside], device=device)] = True
        if rows is not None and not every:
            logits, reached = logits.index_select(0, rows), reached.index_select(0, rows)
        if not dense:
            return logits, None, reached
        d = x.new_zeros(n, batch, hidden).index_put(
            (torch.as_tensor(local[inside], device=device), torch.as_tensor(question[inside], device=device)),
            x[torch.as_tensor(np.flatnonzero(inside), device=device)])
        return logits, (d if rows is None else d.index_select(0, rows)), reached
