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
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch_geometric.utils import scatter

BIG = 1e4


class PathMindNet(nn.Module):
    def __init__(self, num_types: int, num_relations: int, query_dim: int, text_dim: int,
                 hidden: int = 32, layers: int = 3, rounds: int = 3, tau: float = 0.5):
        super().__init__()
        self.config = {"num_types": num_types, "num_relations": num_relations, "query_dim": query_dim,
                       "text_dim": text_dim, "hidden": hidden, "layers": layers, "rounds": rounds, "tau": tau}
        self.type_embedding = nn.Embedding(num_types, hidden)
        self.text_proj = nn.Linear(text_dim, hidden, bias=False)
        self.query_proj = nn.Linear(query_dim, hidden)
        self.relation_query = nn.Linear(hidden, num_relations * hidden)
        self.layers = nn.ModuleList(nn.Linear(2 * hidden, hidden) for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.relation_matrix = nn.Parameter(torch.randn(num_relations, hidden, hidden) / hidden ** 0.5)
        self.future = nn.Sequential(nn.Linear(2 * hidden + 1, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.priority = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
        self.rounds, self.tau, self.hidden = rounds, tau, hidden

    # ---------------------------------------------------------------- pieces
    def encode(self, node_type, text, topics, query, src, dst, rel):
        """Node representations h (N x hidden) and the projected query q' (hidden)."""
        n = node_type.shape[0]
        q = self.query_proj(query)
        h0 = self.type_embedding(node_type) + self.text_proj(text)
        h0 = h0.index_add(0, topics, q.expand(len(topics), -1))
        relation_vectors = self.relation_query(q).view(-1, self.hidden)
        degree = scatter(torch.ones_like(dst, dtype=h0.dtype), dst, 0, dim_size=n, reduce="sum").clamp(min=1)
        h = h0
        for linear, norm in zip(self.layers, self.norms):
            message = h[src] * relation_vectors[rel]
            aggregated = scatter(message, dst, 0, dim_size=n, reduce="sum") / degree[:, None]
            h = norm(h + F.relu(linear(torch.cat([aggregated, h0], dim=-1))))
        return h, q

    def triple_weight(self, h, q, src, rel, dst):
        """w_q(u, r, v) = q' . (h_u * (W_r h_v)) for every half-edge."""
        transformed = torch.empty_like(h[dst])
        for r in torch.unique(rel).tolist():
            mask = rel == r
            transformed[mask] = h[dst[mask]] @ self.relation_matrix[r].T
        return ((h[src] * transformed) * q).sum(-1)

    def cumulative_cost(self, cost, topics, src, dst, n):
        """Soft shortest-path cost from the topics after ``rounds`` relaxations."""
        d = torch.full((n,), BIG, dtype=cost.dtype)
        d = d.index_fill(0, topics, 0.0)
        for _ in range(self.rounds):
            candidate = d[src] + cost
            both = torch.cat([candidate, d])
            index = torch.cat([dst, torch.arange(n)])
            low = scatter(both, index, 0, dim_size=n, reduce="min").detach()
            total = scatter(torch.exp(-(both - low[index]) / self.tau), index, 0, dim_size=n, reduce="sum")
            d = low - self.tau * torch.log(total)
        return d

    # ---------------------------------------------------------------- forward
    def forward(self, node_type, text, topics, query, src, dst, rel):
        """(priority logits N, edge costs E, cumulative cost N)."""
        n = node_type.shape[0]
        h, q = self.encode(node_type, text, topics, query, src, dst, rel)
        weight = self.triple_weight(h, q, src, rel, dst)
        cost = F.softplus(-weight)
        d = self.cumulative_cost(cost, topics, src, dst, n)
        d_in = torch.clamp(d, max=50.0)[:, None]
        future = F.softplus(self.future(torch.cat([h, q.expand(n, -1), d_in], dim=-1)))
        logits = self.priority(d_in + future).squeeze(-1)
        return logits, cost, d
