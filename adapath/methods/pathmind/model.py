"""PathMind's path-priority network (the A*-like priority of arXiv 2511.14256, built on
NBFNet's and A*Net's path representations).

- **Triple representation.** ``w_q(u, r, v) = h_u * W_r(q) * h_v``: the paper's
  ``(h_u W_r h_v)^T q`` read as a vector, with ``W_r`` diagonal and conditioned on the question
  (one vector per relation and direction, NBFNet's query-dependent relations) and ``h`` each
  entity's gate from its representation (type and text) read against the question, plus its
  text's cosine to the question. Gates, relation vectors and the boundary are exponentials
  of bounded logits (:func:`bounded_exp`), so a walk's product is a sum of logits in log space
  and stays finite in float32. ``reading="scalar"`` takes the other reading: the sum over the
  hidden channels of that vector, one number per triple.
- **Cumulative cost.** ``d_t(q, e)``: the sum over every walk of at most t steps from a topic
  to ``e`` of the product of its triple representations, started from the boundary at each
  topic: the generalized Bellman-Ford iteration with sum aggregation,
  ``d_t = d_0 + h * sum_r W_r(q) * A_r^T (h * d_{t-1})``, run as relational products over the
  whole graph (:mod:`adapath.methods.pathmind.propagate`), several questions side by side.
  ``d(q, e)`` is ``d_hops``.
- **Priority.** ``d~ = [log d_1, ..., log d_hops] / 8`` (NBFNet's concatenated hidden states:
  how much each walk length brings; a zero says the entity is farther), ``f = MLP([d~, q'])``
  (the estimated future cost from the cumulative cost and the question),
  ``s = sigmoid(MLP(d~ + f))``. Logits are returned.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from adapath.methods.pathmind.config import READINGS
from adapath.methods.pathmind.propagate import Places, RelationalGraph, relational_gather

TINY, LOG_SCALE = 1e-30, 8.0  # d~ = log(d) / 8: walk sums span many orders of magnitude
BOUND = 4.0  # |log| of a gate, a relation vector entry or the boundary: a walk of 3 steps stays finite in float32


def bounded_exp(x: torch.Tensor) -> torch.Tensor:
    """exp of ``x`` squashed into [-BOUND, BOUND]: a positive factor whose log is linear near 0."""
    return torch.exp(BOUND * torch.tanh(x / BOUND))


class PathMindNet(nn.Module):
    def __init__(self, num_types: int, num_codes: int, query_dim: int, text_dim: int, hidden: int = 32,
                 hops: int = 3, reading: str = "vector", text_projection: bool = True):
        super().__init__()
        if reading not in READINGS:
            raise ValueError(f"reading {reading!r}: choose {', '.join(READINGS)}")
        self.config = {"num_types": num_types, "num_codes": num_codes, "query_dim": query_dim,
                       "text_dim": text_dim, "hidden": hidden, "hops": hops, "reading": reading,
                       "text_projection": text_projection}
        self.hidden, self.hops, self.reading, self.num_codes = hidden, hops, reading, num_codes
        width = (hidden if reading == "vector" else 1) * hops  # d_1 .. d_hops side by side
        self.query = nn.Linear(query_dim, hidden)
        self.boundary = nn.Linear(hidden, hidden)
        self.relation = nn.Linear(hidden, num_codes * hidden)
        self.type_gate = nn.Embedding(num_types, hidden)
        self.text_gate = nn.Linear(text_dim, hidden, bias=False) if text_projection else None
        self.text_query = nn.Linear(hidden, hidden)
        self.cosine_gate = nn.Parameter(torch.full((hidden,), BOUND))  # the text match counts from the start
        self.future = nn.Sequential(nn.Linear(width + hidden, hidden), nn.ReLU(), nn.Linear(hidden, width))
        self.priority = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    # ------------------------------------------------------------------ pieces
    def query_vector(self, query: torch.Tensor) -> torch.Tensor:
        """q' (B x hidden) from the question embeddings (B x query_dim)."""
        return self.query(query)

    def relation_vectors(self, q: torch.Tensor) -> torch.Tensor:
        """W_r(q) for every relation code: codes x (B * hidden), the layout the products read."""
        rho = bounded_exp(self.relation(q)).view(-1, self.num_codes, self.hidden)
        return rho.transpose(0, 1).reshape(self.num_codes, -1)

    def node_gates(self, node_type: torch.Tensor, text: torch.Tensor, cosine: torch.Tensor,
                   q: torch.Tensor) -> torch.Tensor:
        """h per node and question: nodes x B x hidden, positive (its log bounded): the node's
        representation (type and text) read against the question, plus its text's cosine to it."""
        node = self.type_gate(node_type)  # nodes x hidden
        if self.text_gate is not None:
            node = node + self.text_gate(text)
        logits = node[:, None, :] * self.text_query(q)[None, :, :] + cosine[:, :, None] * self.cosine_gate
        return bounded_exp(logits)

    def boundary_vectors(self, q: torch.Tensor) -> torch.Tensor:
        """d_0 at a question's topics: B x width."""
        if self.reading == "scalar":
            return torch.ones(q.shape[0], 1, dtype=q.dtype)
        return bounded_exp(self.boundary(q))

    def cumulative(self, gates: torch.Tensor, rho: torch.Tensor, start: torch.Tensor, graph: RelationalGraph,
                   places: Places, reach: list[np.ndarray], rows: torch.Tensor | None = None) -> list[torch.Tensor]:
        """d_t(q, e) after each layer t = 1..hops (each places x B x width): the sum over walks
        of at most t steps. ``start`` holds d_0 (the boundary at each question's topics, zero
        elsewhere); ``reach[t]`` marks the places any question of the batch reaches in t steps
        (the rows layer t writes; layer t reads reach[t - 1]). ``rows``: only these places' d_t,
        in this order (the last layer writes no other row)."""
        n, batch, hidden = gates.shape
        d = start
        last_rows = reach[self.hops]
        if rows is not None:
            last_rows = np.zeros(n, dtype=np.bool_)
            last_rows[rows.numpy()] = True
        out = []
        for t in range(1, self.hops + 1):
            x = (gates * d).reshape(n, batch * hidden)
            y = relational_gather(x, rho, graph, places, last_rows if t == self.hops else reach[t], reach[t - 1])
            y, node_gates, base = y.view(n, batch, hidden), gates, start
            if t == self.hops and rows is not None:
                y, node_gates, base = y.index_select(0, rows), gates.index_select(0, rows), start.index_select(0, rows)
            message = node_gates * y
            if self.reading == "scalar":
                message = message.sum(-1, keepdim=True)
            d = base + message
            out.append(d)
        if rows is not None:
            out[:-1] = [layer.index_select(0, rows) for layer in out[:-1]]
        return out

    def score(self, layers: list[torch.Tensor], q: torch.Tensor) -> torch.Tensor:
        """Priority logits (nodes x B) from d_1..d_hops, concatenated (NBFNet's concatenated
        hidden states: how much of the cumulative cost each walk length brings), and q'."""
        features = torch.log(torch.cat(layers, dim=-1).clamp(min=TINY)) / LOG_SCALE
        future = self.future(torch.cat([features, q[None].expand(features.shape[0], -1, -1)], dim=-1))
        return self.priority(features + future).squeeze(-1)

    # ------------------------------------------------------------------ forward
    def forward(self, inputs: BatchInputs, rows: torch.Tensor | None = None) -> Output:
        """Priority logits (places x B) and what made them: d(q, e), the node gates, W_r(q).
        ``rows``: score only these places (logits and d then have one row per entry)."""
        q = self.query_vector(inputs.query)
        gates = self.node_gates(inputs.node_type, inputs.text, inputs.cosine, q)
        rho = self.relation_vectors(q)
        start = torch.zeros(gates.shape[0], gates.shape[1], 1 if self.reading == "scalar" else self.hidden)
        boundary = self.boundary_vectors(q)
        start = start.index_put((inputs.topic_rows, inputs.topic_cols), boundary.index_select(0, inputs.topic_cols))
        layers = self.cumulative(gates, rho, start, inputs.graph, inputs.places, inputs.reach, rows)
        return Output(self.score(layers, q), layers[-1], gates, rho.view(self.num_codes, gates.shape[1], -1))


class Output(NamedTuple):
    logits: torch.Tensor  # nodes x B
    d: torch.Tensor  # nodes x B x width: the cumulative cost d(q, e)
    gates: torch.Tensor  # nodes x B x hidden: h
    relations: torch.Tensor  # codes x B x hidden: W_r(q)


class BatchInputs:
    """What the network reads for B questions: the graph, the places it works on, and per
    place its type, text embedding and cosine to each question; the questions' embeddings,
    their topics as (place, question) pairs, and the places any of them reaches in 0..hops
    steps."""

    def __init__(self, graph: RelationalGraph, places: Places, node_type: torch.Tensor, text: torch.Tensor,
                 cosine: torch.Tensor, query: torch.Tensor, topics: list[list[int]], reach: list[np.ndarray]):
        self.graph, self.places, self.node_type, self.text = graph, places, node_type, text
        self.cosine, self.query, self.reach = cosine, query, reach
        pairs = [(int(places.local_of[t]), j) for j, ts in enumerate(topics) for t in dict.fromkeys(ts)]
        self.topic_rows = torch.tensor([p[0] for p in pairs], dtype=torch.long)
        self.topic_cols = torch.tensor([p[1] for p in pairs], dtype=torch.long)
