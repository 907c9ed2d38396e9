"""PathMind's path-priority network (A*-like), in the spirit of A*Net / NBFNet.

- Node states start from a learned type embedding plus a projection of the node's text
  embedding; the topic also receives the query vector q. ``layers`` rounds of
  query-conditioned relational message passing (DistMult-style: h_u * r_q, with r_q a
  relation vector computed from q) give node representations h.
- Triple weight: ``w_q(u, r, v) = q' . (h_u * (W_r h_v))`` with q' the projected query and W_r
  a relation-specific matrix: the paper's (h_{e_{i-1}} W_{r_i} h_{e_i})^T q read as the
  bilinear form projected on q.
- Cumulative cost: edge costs ``c = softplus(-w)``; ``d(q, e)`` is a soft shortest-path cost
  from the topic after T rounds of soft-min relaxation (temperature ``tau``), i.e. message
  passing from the topic.
- Future cost: ``f(e, a) = softplus(MLP([h_e, q', d(q, e)]))``.
- Priority: ``s_q(e) = sigmoid(MLP(d(q, e) + f(e, a)))`` (logits returned for BCE training).

Speed: the per-half-edge work (messages, triple weights) runs as sparse products over the
half-edges (:mod:`adapath.methods.pathmind.halfedges`). Several subgraphs go through as one
disjoint graph (``node_graph`` names each node's subgraph).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from adapath.methods.pathmind.halfedges import HalfEdges, edge_dot, slot_sum, soft_min_relax

BIG = 1e4


class PathMindNet(nn.Module):
    def __init__(self, num_types: int, num_relations: int, query_dim: int, text_dim: int,
                 hidden: int = 32, layers: int = 3, rounds: int = 3, tau: float = 0.5, prior: bool = False,
                 candidate: bool = False, candidate_gain: float = 8.0, learn_candidate_gain: bool = True):
        super().__init__()
        self.config = {"num_types": num_types, "num_relations": num_relations, "query_dim": query_dim,
                       "text_dim": text_dim, "hidden": hidden, "layers": layers, "rounds": rounds, "tau": tau,
                       "prior": prior, "candidate": candidate, "candidate_gain": candidate_gain,
                       "learn_candidate_gain": learn_candidate_gain}
        # the subgraph cut's order (1 first taken .. 0 last): into the node state, and straight
        # onto the priority logit (its gain learned)
        self.prior_proj = nn.Linear(1, hidden) if prior else None
        self.prior_gain = nn.Parameter(torch.tensor(4.0)) if prior else None  # the cut's order trusted at first
        # the walk scorer's vote for a node as the answer (1 its best candidate, 1/2 the next, ..
        # 0 none): into the node state, and onto the logit as a residual the network corrects
        self.candidate_proj = nn.Linear(1, hidden) if candidate else None
        if candidate and learn_candidate_gain:
            self.candidate_gain = nn.Parameter(torch.tensor(float(candidate_gain)))
        elif candidate:
            self.register_buffer("candidate_gain", torch.tensor(float(candidate_gain)))
        else:
            self.candidate_gain = None
        self.type_embedding = nn.Embedding(num_types, hidden)
        self.text_proj = nn.Linear(text_dim, hidden, bias=False)
        self.query_proj = nn.Linear(query_dim, hidden)
        self.relation_query = nn.Linear(hidden, num_relations * hidden)
        self.layers = nn.ModuleList(nn.Linear(2 * hidden, hidden) for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.relation_matrix = nn.Parameter(torch.randn(num_relations, hidden, hidden) / hidden ** 0.5)
        self.future = nn.Sequential(nn.Linear(2 * hidden + 1, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.priority = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
        self.rounds, self.tau, self.hidden, self.num_relations = rounds, tau, hidden, num_relations

    # ---------------------------------------------------------------- pieces
    def half_edges(self, src, dst, rel, n, in_order=None) -> HalfEdges:
        return HalfEdges(src, dst, rel, n, self.num_relations, in_order)

    def encode(self, node_type, text, topics, query, src, dst, rel, node_graph=None, edges=None, prior=None,
               candidate=None):
        """Node representations h (N x hidden) and the projected query q' (hidden; B x hidden batched).

        One subgraph (``query`` of shape D) or B disjoint subgraphs in one graph (``query`` B x D,
        ``node_graph`` the subgraph of each node); a node only ever sees its own subgraph's query.
        """
        n = node_type.shape[0]
        edges = edges if edges is not None else self.half_edges(src, dst, rel, n)
        node_graph = node_graph if node_graph is not None else torch.zeros(n, dtype=torch.long)
        q = self.query_proj(query.reshape(-1, query.shape[-1]))
        h0 = self.type_embedding(node_type) + self.text_proj(text)
        if self.prior_proj is not None and prior is not None:
            h0 = h0 + self.prior_proj(prior[:, None])
        if self.candidate_proj is not None and candidate is not None:
            h0 = h0 + self.candidate_proj(candidate[:, None])
        h0 = h0.index_add(0, topics, q.index_select(0, node_graph.index_select(0, topics)))
        # each node's relation vectors (from its subgraph's query): N x R x hidden
        relation_vectors = self.relation_query(q).view(-1, self.num_relations, self.hidden).index_select(0, node_graph)
        h = h0
        for linear, norm in zip(self.layers, self.norms):
            # sum over in-edges (u, r, v) of h_u * r_q = sum over r of r_q * (sum of h_u in slot (v, r))
            slots = slot_sum(h, edges).view(n, self.num_relations, self.hidden)
            aggregated = (slots * relation_vectors).sum(1) / edges.in_degree[:, None]
            h = norm(h + F.relu(linear(torch.cat([aggregated, h0], dim=-1))))
        return h, q.reshape(query.shape[:-1] + (self.hidden,))

    def triple_weight(self, h, q, src, rel, dst, node_graph=None, edges=None):
        """w_q(u, r, v) = q' . (h_u * (W_r h_v)) for every half-edge.

        W_r h_v is formed once per (node, relation) slot, N x R x hidden, then dotted with
        q' * h_u per half-edge.
        """
        n = h.shape[0]
        edges = edges if edges is not None else self.half_edges(src, dst, rel, n)
        node_graph = node_graph if node_graph is not None else torch.zeros(n, dtype=torch.long)
        right = torch.einsum("nj,rij->nri", h, self.relation_matrix).reshape(n * self.num_relations, self.hidden)
        left = h * q.reshape(-1, self.hidden).index_select(0, node_graph)
        return edge_dot(left, right, edges)

    def cumulative_cost(self, cost, topics, src, dst, n, edges=None):
        """Soft shortest-path cost from the topics after ``rounds`` relaxations (temperature tau)."""
        edges = edges if edges is not None else self.half_edges(src, dst, torch.zeros_like(src), n)
        start = torch.full((n,), BIG, dtype=cost.dtype).index_fill(0, topics, 0.0)
        return soft_min_relax(cost, start, edges, self.rounds, self.tau)

    # ---------------------------------------------------------------- forward
    def forward(self, node_type, text, topics, query, src, dst, rel, node_graph=None, edges=None, prior=None,
                candidate=None):
        """(priority logits N, edge costs E, cumulative cost N).

        Batched when ``query`` is B x D and ``node_graph`` gives each node's subgraph (0..B-1):
        the subgraphs are disjoint, so every output equals that of the subgraph alone.
        ``edges`` (:meth:`half_edges`) may be built once and passed to save rebuilding it.
        ``prior``: per node, the subgraph cut's order (used by a network built with ``prior``);
        ``candidate``: per node, the walk scorer's vote (used by a network built with ``candidate``).
        """
        n = node_type.shape[0]
        edges = edges if edges is not None else self.half_edges(src, dst, rel, n)
        node_graph = node_graph if node_graph is not None else torch.zeros(n, dtype=torch.long)
        h, q = self.encode(node_type, text, topics, query, src, dst, rel, node_graph, edges, prior, candidate)
        q = q.reshape(-1, self.hidden)
        weight = self.triple_weight(h, q, src, rel, dst, node_graph, edges)
        cost = F.softplus(-weight)
        d = self.cumulative_cost(cost, topics, src, dst, n, edges)
        d_in = torch.clamp(d, max=50.0)[:, None]
        future = F.softplus(self.future(torch.cat([h, q.index_select(0, node_graph), d_in], dim=-1)))
        logits = self.priority(d_in + future).squeeze(-1)
        if self.prior_gain is not None and prior is not None:
            logits = logits + self.prior_gain * prior
        if self.candidate_gain is not None and candidate is not None:
            logits = logits + self.candidate_gain * candidate
        return logits, cost, d
