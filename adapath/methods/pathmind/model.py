"""PathMind's path-priority network (the A*-like priority of arXiv 2511.14256).

As the paper writes it (the defaults):

- **Entity representations** ``h_e`` from a relational GNN over the graph,
  ``m_e = AGG{W_r h_e'}``, ``h_e <- UPDATE(h_e, m_e)``, randomly initialized
  (:class:`RelationalGNN`); the question ``q`` from the sentence encoder, projected.
- **Triple representation** ``w_q(u, r, v) = (h_u W_r h_v)^T q``, read as a vector:
  ``h_u * W_r * h_v * q'`` with ``W_r`` diagonal (``reading="scalar"``: its sum over channels).
- **Cumulative cost** ``d(q, e)``: the sum over paths from a topic to ``e`` of the **sum** of
  their triple representations. Written per walk length t with ``N_t(v)`` the number of walks
  of t steps from the topics to v and ``S_t(v)`` the sum over them of their triple sums:
  ``N_t(v) = sum_u N_{t-1}(u)``, ``S_t(v) = sum_(u,r) [S_{t-1}(u) + N_{t-1}(u) w_q(u, r, v)]``,
  ``d = S_1 + ... + S_hops``: one pass over the graph per step carries both, several
  questions side by side (:mod:`adapath.methods.pathmind.propagate`).
- **Priority** ``s = sigmoid(MLP(d~ + f))``, ``f = MLP([d~, q'])`` (the estimated future
  cost), with ``d~ = sign(d) log(1 + |d|)``: walk sums span many orders of magnitude.

Named variants (training options, listed by the method): ``cost="product"`` (NBFNet's
generalized Bellman-Ford, ``d`` the sum over walks of the *product* of triple
representations, positive factors, ``d~ = log(d) / 8``); ``entity="gate"`` (no message
passing: each entity's type and text read against the question, plus its text's cosine to
it, as a positive gate); ``readout="layers"`` (``d~`` after each step side by side, NBFNet's
concatenated states).

Three probe heads learn beside the priority from what it computes, detached (so the
priority trains exactly as without them), for the ablations of ``answer --method pathmind``:
``readout`` (w/o prioritization: the entity representation against the question, as a
plain GNN retriever scores), ``cumulative`` (``d`` alone) and ``future`` (``f`` alone).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from adapath.methods.pathmind.config import COSTS, ENTITIES, READINGS, READOUTS
from adapath.methods.pathmind.propagate import Places, RelationalGraph, relational_gather, walk_sum

TINY, LOG_SCALE = 1e-30, 8.0  # product cost: d~ = log(d) / 8
# places scored at a time without gradients: bounds the temporaries (places x B x 128 floats
# at most) without costing speed. Measured answering on the benchmark graph, 2 threads (paper's
# model / nbfnet, questions/s): chunks of 4,096 4.8 / 4.6, of 16,384 4.8 / 4.6, of 65,536 6.3 /
# 6.2, whole 7.1 / 5.9: small chunks slow the next batch's relational passes (seen, not pinned
# down: the heap the many small temporaries leave behind)
SCORE_CHUNK = 65536
BOUND = 4.0  # |log| of a gate, a relation vector entry or the boundary: a walk of 3 steps stays finite in float32
PROBES = ("readout", "cumulative", "future")


def bounded_exp(x: torch.Tensor) -> torch.Tensor:
    """exp of ``x`` squashed into [-BOUND, BOUND]: a positive factor whose log is linear near 0."""
    return torch.exp(BOUND * torch.tanh(x / BOUND))


def bounded_exp_(x: torch.Tensor) -> torch.Tensor:
    """:func:`bounded_exp` in ``x``'s own storage (no gradient): the same values."""
    return x.div_(BOUND).tanh_().mul_(BOUND).exp_()


def needs_grad(*tensors: torch.Tensor) -> bool:
    """Whether autograd records an operation on ``tensors``: otherwise (validation, answering)
    the network computes in place."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def signed_log(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) log(1 + |x|)``: monotone, odd, linear near 0, logarithmic far from it."""
    return torch.sign(x) * torch.log1p(torch.abs(x))


def signed_log_(x: torch.Tensor) -> torch.Tensor:
    """:func:`signed_log` in ``x``'s own storage (no gradient): ``log1p(|x|) * sign(x)``, the
    same product."""
    sign = torch.sign(x)
    return x.abs_().log1p_().mul_(sign)


def unit_rows(x: torch.Tensor) -> torch.Tensor:
    """Each row scaled to length 1 (a zero row stays zero)."""
    return x / x.norm(dim=1, keepdim=True).clamp(min=1e-12)


class WholeGraph:
    """The graph as the GNN reads it, every node at once: its relational CSR, each node's
    type and text embedding, and 1 / degree (the mean aggregation)."""

    def __init__(self, graph: RelationalGraph, node_type: torch.Tensor, text: torch.Tensor):
        self.graph, self.node_type, self.text = graph, node_type, text
        self.places = Places(np.arange(graph.num_nodes), graph.num_nodes)
        self.every = np.ones(graph.num_nodes, dtype=np.bool_)
        degree = np.diff(graph.indptr).astype(np.float32)
        self.inverse_degree = torch.from_numpy(1.0 / np.maximum(degree, 1.0)).to(text.device)
        self._unit = None

    @property
    def unit(self) -> torch.Tensor:
        """Each node's text embedding scaled to length 1, made once: the evidence and the prior's
        cosines read rows of it for every batch (scaling ~10^5 selected rows per batch cost a
        tenth of answering)."""
        if self._unit is None:
            self._unit = unit_rows(self.text)
        return self._unit


TEXT_COMPONENTS = 64  # the GNN's text input: the node text's leading principal components


def principal_components(text: torch.Tensor, components: int = TEXT_COMPONENTS) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, basis): the mean of the rows of ``text`` and its ``components`` leading
    principal directions (text_dim x components), from the covariance's eigenvectors, each
    signed so its largest entry is positive (the same basis on any machine)."""
    x = text.double()
    mean = x.mean(0)
    centered = x - mean
    values, vectors = torch.linalg.eigh(centered.T @ centered)
    basis = vectors[:, torch.argsort(values, descending=True)[:min(components, x.shape[1])]]
    signs = torch.sign(basis.gather(0, basis.abs().argmax(0, keepdim=True)))
    return mean.float(), (basis * signs).float()


class RelationalGNN(nn.Module):
    """``h_e`` for every entity, independent of the question: ``h^0`` from the entity's type
    and its text embedding's leading principal components (a fixed basis kept with the
    model), then ``layers`` rounds of ``m_v = mean over (u, r, v) of W diag(r_l) h_u``
    (CompGCN's multiplicative composition: ``W_r = W diag(r_l)``) and
    ``h_v <- h_v + ReLU(U h_v + m_v)``."""

    def __init__(self, num_types: int, num_codes: int, text_dim: int, hidden: int, layers: int):
        super().__init__()
        components = min(TEXT_COMPONENTS, text_dim)
        self.register_buffer("text_mean", torch.zeros(text_dim))
        self.register_buffer("text_basis", torch.eye(text_dim)[:, :components].contiguous())
        self.type_embedding = nn.Embedding(num_types, hidden)
        self.text = nn.Linear(components, hidden, bias=False)
        self.relations = nn.Parameter(1.0 + 0.1 * torch.randn(layers, num_codes, hidden))
        self.message = nn.ModuleList(nn.Linear(hidden, hidden, bias=False) for _ in range(layers))
        self.update = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self._reduced: tuple | None = None  # (the text it came from, its components): the basis is fixed

    def fit_text(self, text: torch.Tensor) -> None:
        """Set the text basis from every node's text embedding (once, before training)."""
        mean, basis = principal_components(text, self.text_basis.shape[1])
        self.text_mean.copy_(mean)
        self.text_basis.copy_(basis)
        self._reduced = None

    def reduce(self, text: torch.Tensor) -> torch.Tensor:
        key = (text.data_ptr(), tuple(text.shape), text.device)
        if self._reduced is None or self._reduced[0] != key:
            with torch.no_grad():
                self._reduced = (key, (text - self.text_mean) @ self.text_basis)
        return self._reduced[1]

    def initial(self, node_type: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        return self.type_embedding(node_type) + self.text(self.reduce(text))

    def layer(self, h: torch.Tensor, index: int, whole: WholeGraph, rows: np.ndarray) -> torch.Tensor:
        m = relational_gather(h, self.relations[index], whole.graph, whole.places, rows, whole.every)
        m = m * whole.inverse_degree[:, None]
        return h + torch.relu(self.update[index](h) + self.message[index](m))

    def forward(self, whole: WholeGraph, needed: np.ndarray | None = None) -> torch.Tensor:
        """``h`` of every node; ``needed`` (a node mask): exact there only, the last layer
        computing just those rows and each earlier one just the rows the next reads."""
        layers = len(self.message)
        rows = [whole.every] * layers
        if needed is not None:
            from adapath.kernels.relational import mark_neighbours

            rows[-1] = np.asarray(needed, dtype=np.bool_)
            for index in range(layers - 2, -1, -1):
                rows[index] = mark_neighbours(whole.graph.indptr, whole.graph.indices, rows[index + 1],
                                              np.empty(len(rows[index + 1]), np.bool_))
        h = self.initial(whole.node_type, whole.text)
        for index in range(layers):
            h = self.layer(h, index, whole, rows[index])
        return h


def mlp(width_in: int, hidden: int, width_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(width_in, hidden), nn.ReLU(), nn.Linear(hidden, width_out))


class PathMindNet(nn.Module):
    def __init__(self, num_types: int, num_codes: int, query_dim: int, text_dim: int, hidden: int = 32,
                 hops: int = 3, reading: str = "vector", text_projection: bool = True, cost: str = "sum",
                 entity: str = "gnn", readout: str = "last", gnn_layers: int = 2):
        super().__init__()
        for name, value, choices in (("reading", reading, READINGS), ("cost", cost, COSTS),
                                     ("entity", entity, ENTITIES), ("readout", readout, READOUTS)):
            if value not in choices:
                raise ValueError(f"{name} {value!r}: choose {', '.join(choices)}")
        self.config = {"num_types": num_types, "num_codes": num_codes, "query_dim": query_dim,
                       "text_dim": text_dim, "hidden": hidden, "hops": hops, "reading": reading,
                       "text_projection": text_projection, "cost": cost, "entity": entity, "readout": readout,
                       "gnn_layers": gnn_layers}
        self.hidden, self.hops, self.reading, self.num_codes = hidden, hops, reading, num_codes
        self.cost, self.entity, self.readout = cost, entity, readout
        self.channels = hidden if reading == "vector" else 1  # the width of d(q, e)
        width = self.channels * (hops if readout == "layers" else 1)
        self.query = nn.Linear(query_dim, hidden)
        if entity == "gnn":
            self.gnn = RelationalGNN(num_types, num_codes, text_dim, hidden, gnn_layers)
        else:
            self.type_gate = nn.Embedding(num_types, hidden)
            self.text_gate = nn.Linear(text_dim, hidden, bias=False) if text_projection else None
        if cost == "sum":
            self.triple_relation = nn.Parameter(1.0 + 0.1 * torch.randn(num_codes, hidden))
        else:
            self.relation = nn.Linear(hidden, num_codes * hidden)
            self.boundary = nn.Linear(hidden, hidden)
        if cost == "product" or entity == "gate":  # positive node factors read against the question
            self.text_query = nn.Linear(hidden, hidden)
            self.cosine_gate = nn.Parameter(torch.full((hidden,), BOUND))  # the text match counts from the start
        self.future = mlp(width + hidden, hidden, width)
        self.priority = mlp(width, hidden, 1)
        self.probes = nn.ModuleDict({"readout": mlp(2 * hidden, hidden, 1), "cumulative": mlp(width, hidden, 1),
                                     "future": mlp(width, hidden, 1)})

    # ------------------------------------------------------------------ entities
    def entities(self, whole: WholeGraph, nodes: torch.Tensor | None = None) -> torch.Tensor:
        """The entity representations every question shares (nodes x hidden, or the rows of
        ``nodes``): the GNN's ``h`` (``entity="gnn"``, computed over the whole graph), or the
        gates' question-free part, type and text (``entity="gate"``)."""
        if self.entity == "gnn":
            needed = None
            if nodes is not None:
                needed = np.zeros(whole.graph.num_nodes, dtype=np.bool_)
                needed[nodes.cpu().numpy()] = True
            h = self.gnn(whole, needed)
            return h if nodes is None else h.index_select(0, nodes)
        node_type, text = whole.node_type, whole.text
        if nodes is not None:
            node_type, text = node_type.index_select(0, nodes), text.index_select(0, nodes)
        node = self.type_gate(node_type)
        return node + self.text_gate(text) if self.text_gate is not None else node

    def node_factors(self, h: torch.Tensor, cosine: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """The triple representation's node factor per place and question (places x B x
        hidden): ``h`` itself for the paper's additive cost over GNN representations, else a
        positive gate, ``h`` read against the question plus the text's cosine to it."""
        if self.cost == "sum" and self.entity == "gnn":
            return h[:, None, :].expand(-1, q.shape[0], -1)
        read = self.text_query(q)
        if needs_grad(h, cosine, read, self.cosine_gate):
            return bounded_exp(h[:, None, :] * read[None, :, :] + cosine[:, :, None] * self.cosine_gate)
        out = torch.empty(h.shape[0], q.shape[0], h.shape[1], dtype=h.dtype, device=h.device)
        for lo in range(0, h.shape[0], SCORE_CHUNK):  # chunks in place: the same values
            part = torch.mul(h[lo:lo + SCORE_CHUNK, None, :], read[None, :, :], out=out[lo:lo + SCORE_CHUNK])
            part.add_(cosine[lo:lo + SCORE_CHUNK, :, None] * self.cosine_gate)
            bounded_exp_(part)
        return out

    def relation_factors(self, q: torch.Tensor) -> torch.Tensor:
        """``W_r`` read against the question, for every relation code: codes x B x hidden. The
        additive cost: ``W_r * q'`` (the paper's ``^T q``); the product: a positive vector per
        relation conditioned on the question (NBFNet)."""
        if self.cost == "sum":
            return self.triple_relation[:, None, :] * q[None, :, :]
        return bounded_exp(self.relation(q)).view(-1, self.num_codes, self.hidden).transpose(0, 1)

    # ------------------------------------------------------------------ cumulative cost
    def cumulative(self, gates: torch.Tensor, rho: torch.Tensor, start: torch.Tensor, graph: RelationalGraph,
                   places: Places, reach: list[np.ndarray], rows: torch.Tensor | None = None) -> list[torch.Tensor]:
        """d_t(q, e) after each step t = 1..hops (each places x B x channels): the cost over
        walks of at most t steps. ``gates``: the node factors (places x B x hidden); ``rho``:
        the relation factors (codes x B x hidden); ``start``: at the topics, the boundary
        (product cost) or the walk count 1 (sum cost), zero elsewhere (places x B x 1 or x
        hidden); ``reach[t]`` marks the places any question of the batch reaches in t steps
        (the rows step t writes; it reads reach[t - 1]). ``rows``: only these places' last
        d, in this order."""
        step = self._sum_step if self.cost == "sum" else self._product_step
        n = gates.shape[0]
        last_rows = reach[self.hops] != 0
        if rows is not None:
            last_rows = np.zeros(n, dtype=np.bool_)
            last_rows[rows.cpu().numpy()] = True
        state = (start[..., 0], start.new_zeros(start.shape[0], start.shape[1], self.channels)) \
            if self.cost == "sum" else start
        out: list[torch.Tensor] = []
        for t in range(1, self.hops + 1):
            last = t == self.hops
            state, d = step(state, gates, rho, start, graph, places, last_rows if last else reach[t] != 0,
                            reach[t - 1], rows if last else None, out[-1] if out else None)
            out.append(d)
        if rows is not None:
            out[:-1] = [layer.index_select(0, rows) for layer in out[:-1]]
        return out

    def _sum_step(self, state, gates, rho, start, graph, places, write, read, rows, previous):
        """One step of the additive cost: walk counts N and walk sums S, both in one pass."""
        count, total = state  # N_{t-1} (places x B), S_{t-1} (places x B x channels)
        shared = gates[:, :1] if gates.shape[1] > 1 and gates.stride(1) == 0 else gates  # one h for every question
        total, count = walk_sum(total, count, shared, rho, graph, places, write, read)
        if rows is not None:
            total, count = total.index_select(0, rows), count.index_select(0, rows)
            previous = previous.index_select(0, rows) if previous is not None else None
        return (count, total), total if previous is None else previous + total

    def _product_step(self, state, gates, rho, start, graph, places, write, read, rows, previous):
        """One step of the multiplicative cost: d_t = d_0 + h * sum_r W_r * A_r^T (h * d_{t-1})."""
        d = state
        n, batch, hidden = gates.shape
        x = (gates * d).reshape(n, batch * hidden)
        y = relational_gather(x, rho.reshape(rho.shape[0], -1), graph, places, write, read, hidden).view(n, batch, hidden)
        if rows is not None:
            y, gates, start = y.index_select(0, rows), gates.index_select(0, rows), start.index_select(0, rows)
        if self.reading == "vector" and not needs_grad(y, gates, start):
            d = y.mul_(gates).add_(start)  # the gather's own storage: y * h + d_0, the same as d_0 + h * y
            return d, d
        message = gates * y
        if self.reading == "scalar":
            message = message.sum(-1, keepdim=True)
        d = start + message
        return d, d

    # ------------------------------------------------------------------ priority
    def features(self, layers: list[torch.Tensor], in_place: bool = False) -> torch.Tensor:
        """d~: what the priority reads of the cumulative cost. ``in_place``: computed over the
        concatenation's own storage (no gradient: one temporary instead of three)."""
        read = layers if self.readout == "layers" else layers[-1:]
        d = torch.cat(read, dim=-1)  # a new tensor, even of one layer
        if self.cost == "product":
            if in_place:
                return d.clamp_(min=TINY).log_().div_(LOG_SCALE)
            return torch.log(d.clamp(min=TINY)) / LOG_SCALE
        return signed_log_(d) if in_place else signed_log(d)

    def score(self, layers: list[torch.Tensor], q: torch.Tensor, h: torch.Tensor | None = None,
              probes: tuple[str, ...] = ()) -> Scores:
        """Priority logits (places x B) from the cumulative cost and q', and the logits of the
        ``probes`` asked for, from the same quantities detached (``readout`` needs ``h``).
        Without gradients (validation, answering) the places go through in chunks of
        ``SCORE_CHUNK``, in place: the same values, with one temporary where the recorded
        pass makes three (whole-graph temporaries of places x B x 128 floats, allocated and
        filled afresh, were most of answering's time)."""
        if needs_grad(q, *layers):
            return self._score(layers, q, h, probes, in_place=False)
        n = layers[0].shape[0]
        parts = [self._score([layer[lo:lo + SCORE_CHUNK] for layer in layers], q,
                             None if h is None else h[lo:lo + SCORE_CHUNK], probes, in_place=True)
                 for lo in range(0, n, SCORE_CHUNK)]
        if len(parts) == 1:
            return parts[0]
        return Scores(torch.cat([part.logits for part in parts]),
                      {name: torch.cat([part.probes[name] for part in parts]) for name in probes})

    def _score(self, layers: list[torch.Tensor], q: torch.Tensor, h: torch.Tensor | None,
               probes: tuple[str, ...], in_place: bool) -> Scores:
        d = self.features(layers, in_place)
        f = self.future(torch.cat([d, q[None].expand(d.shape[0], -1, -1)], dim=-1))
        out = {}
        for name in probes:  # before the logits: in place, f becomes d + f
            if name == "cumulative":
                out[name] = self.probes[name](d.detach()).squeeze(-1)
            elif name == "future":
                out[name] = self.probes[name](f.detach()).squeeze(-1)
            else:
                pair = torch.cat([h.detach()[:, None, :].expand(-1, q.shape[0], -1),
                                  q.detach()[None].expand(h.shape[0], -1, -1)], dim=-1)
                out[name] = self.probes[name](pair).squeeze(-1)
        logits = self.priority(f.add_(d) if in_place else d + f).squeeze(-1)  # f + d: the same sum as d + f
        return Scores(logits, out)

    # ------------------------------------------------------------------ forward
    def forward(self, inputs: BatchInputs, rows: torch.Tensor | None = None, probes: tuple[str, ...] = ()) -> Output:
        """Priority logits (places x B) and what made them, and the ``probes``' logits.
        ``rows``: score only these places (logits and d then have one row per entry)."""
        q = self.query(inputs.query)
        device = q.device
        index = torch.as_tensor(inputs.places.nodes).to(device)
        if inputs.entities is not None:
            h = inputs.entities.index_select(0, index)
        else:
            h = self.entities(inputs.whole, index)
        gates = self.node_factors(h, inputs.cosine, q)
        rho = self.relation_factors(q)
        batch = q.shape[0]
        if self.cost == "sum":
            start = torch.zeros(gates.shape[0], batch, 1, dtype=gates.dtype, device=device)
            start = start.index_put((inputs.topic_rows, inputs.topic_cols),
                                    torch.ones(len(inputs.topic_rows), 1, dtype=gates.dtype, device=device))
        else:
            start = torch.zeros(gates.shape[0], batch, self.channels, dtype=gates.dtype, device=device)
            boundary = (bounded_exp(self.boundary(q)) if self.reading == "vector"
                        else torch.ones(batch, 1, dtype=gates.dtype, device=device))
            start = start.index_put((inputs.topic_rows, inputs.topic_cols), boundary.index_select(0, inputs.topic_cols))
        layers = self.cumulative(gates, rho, start, inputs.graph, inputs.places, inputs.reach, rows)
        scores = self.score(layers, q, h if rows is None else h.index_select(0, rows), probes)
        return Output(scores.logits, layers[-1], gates if rows is None else gates.index_select(0, rows), rho,
                      scores.probes)


class Scores(NamedTuple):
    logits: torch.Tensor  # places x B
    probes: dict[str, torch.Tensor]  # PROBES -> places x B


class Output(NamedTuple):
    logits: torch.Tensor  # places x B
    d: torch.Tensor  # places x B x channels: the cumulative cost d(q, e)
    gates: torch.Tensor  # places x B x hidden: the triple representation's node factor
    relations: torch.Tensor  # codes x B x hidden: its relation factor, read against the question
    probes: dict[str, torch.Tensor]  # the ablations' heads: PROBES -> places x B
    reached: torch.Tensor | None = None  # places x B: the entities a pruned search reached (None: every one)


class BatchInputs:
    """What the network reads for B questions: the graph, the places it works on, and per
    place its cosine to each question; the questions' embeddings, their topics as (place,
    question) pairs, per place the questions that reach it in 0..hops steps (bit j for
    question j), and every node's type
    and text (``whole``), or their entity representations already computed (``entities``:
    inference computes them once for every question). ``reach_bits``: the same bits for every
    node of the graph, 0..hops steps (inference reads each question's subgraph from them)."""

    def __init__(self, graph: RelationalGraph, places: Places, whole: WholeGraph, cosine,
                 query: torch.Tensor, topics: list[list[int]], reach: list[np.ndarray],
                 entities: torch.Tensor | None = None, reach_bits: list[np.ndarray] | None = None,
                 focus: torch.Tensor | None = None):
        """``cosine``: places x B, or a function that computes it when first read (the
        Bellman-Ford network reads it only for ``--answer-text``)."""
        self.graph, self.places, self.whole, self._cosine = graph, places, whole, cosine
        self.query, self.reach, self.entities, self.reach_bits = query, reach, entities, reach_bits
        self.focus = focus  # B x D: the questions' wh-phrase embeddings (None: not encoded)
        self._unit_cosines: torch.Tensor | None = None
        # training with --guide-paths: per step 0..hops, the sorted keys (question * nodes + node)
        # of the entities on a shortest path from a topic to an answer, at that depth
        self.guide: list[np.ndarray] | None = None
        pairs = [(int(places.local_of[t]), j) for j, ts in enumerate(topics) for t in dict.fromkeys(ts)]
        self.topic_rows = torch.tensor([p[0] for p in pairs], dtype=torch.long, device=query.device)
        self.topic_cols = torch.tensor([p[1] for p in pairs], dtype=torch.long, device=query.device)

    @property
    def cosine(self) -> torch.Tensor:
        if callable(self._cosine):
            self._cosine = self._cosine()
        return self._cosine

    def unit_cosines(self) -> torch.Tensor:
        """Every node's unit text row against each question's unit embedding, then (where the
        questions carry them) each question's unit wh-phrase embedding: nodes x B (or 2B), one
        product per batch, made when first read: answering reads its entries for the
        readout's and the evidence's cosines instead of gathering a text row per entity."""
        if self._unit_cosines is None:
            rows = [unit_rows(self.query)] + ([unit_rows(self.focus)] if self.focus is not None else [])
            self._unit_cosines = self.whole.unit @ torch.cat(rows).T
        return self._unit_cosines
