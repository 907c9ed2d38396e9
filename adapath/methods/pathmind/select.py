"""Top-K entity selection over T rounds, each round's selection seeding the next.

Round 1 looks at the topics' neighbours inside the query subgraph, round t at the
neighbours of round t-1's selection; each round keeps the K best by priority that no round
has taken, each with the seed it was reached from (its parent). After T rounds the answer
set is the K best of everything selected, by priority; each comes with its path back to a
topic through the parents.

Which priority orders a frontier entity: ``lookahead`` (the default) ranks it by the best
priority within reach through it in the rounds left (the entity's own included): A*'s
estimate of the best completion, computed exactly over the subgraph from the learned
priorities, so a round does not drop the entity that leads to the best answer for one that
merely looks like an answer. ``greedy`` ranks it by its own priority alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from adapath.kernels.relational import closed_neighbourhood, frontier, neighbour_max_at

RULES = ("lookahead", "greedy")


@dataclass
class Selection:
    rounds: list[list[int]] = field(default_factory=list)  # the entities each round took, best first
    parent: dict[int, int] = field(default_factory=dict)  # entity -> the seed it was reached from
    passed: dict[int, int] = field(default_factory=dict)  # candidates no round took -> the seed that reached them
    final: list[int] = field(default_factory=list)  # the answer set: the K best selected, best first

    def path(self, node: int) -> list[int]:
        """Nodes from a topic to ``node`` through the parents (a passed-over candidate through
        the seed that reached it)."""
        out = [node]
        if node in self.passed and node not in self.parent:
            out.append(self.passed[node])
        while out[-1] in self.parent:
            out.append(self.parent[out[-1]])
        return out[::-1]

    def runners_up(self, priority: np.ndarray) -> list[int]:
        """The candidates no round took, best priority first (ties by the smaller index)."""
        left = np.array([v for v in self.passed if v not in self.parent], dtype=np.int64)
        return left[np.lexsort((left, -priority[left]))].tolist() if len(left) else []


def reachable(inside: np.ndarray, topics) -> np.ndarray:
    """The look-ahead's subgraph: ``inside`` without the topics (no round walks back through
    a topic, so the look-ahead does not either)."""
    out = np.array(inside, dtype=np.bool_)
    out[list(topics)] = False
    return out


class Lookahead:
    """One question's look-ahead: ``at(m, nodes)`` is, per node, the best priority within m
    steps of it inside its subgraph (the node's own included; ``-inf`` outside), computed only
    where a round asks, from the nodes' neighbourhoods rather than the whole graph, and kept
    for the later rounds. ``inside``: the look-ahead's subgraph (:func:`reachable`)."""

    def __init__(self, indptr, indices, priority: np.ndarray, inside: np.ndarray, steps: int):
        self.indptr, self.indices = indptr, indices
        self.inside = np.asarray(inside, dtype=np.bool_)
        self.known = [np.where(self.inside, np.asarray(priority, dtype=np.float64), -np.inf)]
        self.known += [np.where(self.inside, np.nan, -np.inf) for _ in range(steps)]  # nan: not yet computed
        self._seen = np.zeros(len(self.inside), dtype=np.bool_)
        self._buffer = np.empty(len(self.inside), dtype=np.int64)

    def at(self, m: int, nodes) -> np.ndarray:
        nodes = np.asarray(nodes, dtype=np.int64)
        todo = {m: nodes}
        for level in range(m, 0, -1):  # level needs level - 1 at its nodes and their neighbours
            wanted = todo[level]
            todo[level] = wanted = wanted[np.isnan(self.known[level][wanted])]
            if level > 1:
                count = closed_neighbourhood(self.indptr, self.indices, wanted, self.inside, self._seen, self._buffer)
                todo[level - 1] = self._buffer[:count].copy()
        for level in range(1, m + 1):
            neighbour_max_at(self.indptr, self.indices, self.known[level - 1], self.inside, todo[level],
                             self.known[level])
        return self.known[m][nodes]


def select_entities(indptr, indices, priority: np.ndarray, inside: np.ndarray, topics, k: int, rounds: int,
                    rule: str = "lookahead", look: Lookahead | None = None) -> Selection:
    """The selection of a question: ``priority`` per node (higher is better), ``inside`` the
    query subgraph's mask, ``topics`` where the walk starts. Ties go to the smaller index.
    ``look``: the question's :class:`Lookahead` over :func:`reachable` (made here if None)."""
    if rule not in RULES:
        raise ValueError(f"selection rule {rule!r}: choose {', '.join(RULES)}")
    priority = np.asarray(priority, dtype=np.float64)
    topics = list(dict.fromkeys(int(t) for t in topics))
    if rule != "lookahead":
        look = None
    elif look is None:
        look = Lookahead(indptr, indices, priority, reachable(inside, topics), rounds - 1)
    taken = np.zeros(len(inside), dtype=np.bool_)
    taken[topics] = True
    reached_from = np.full(len(inside), -1, dtype=np.int64)  # candidate -> the first seed (best first) to meet it
    buffer = np.empty(len(inside), dtype=np.int64)
    seeds = np.array(topics, dtype=np.int64)
    out = Selection()
    for t in range(1, rounds + 1):
        count = frontier(indptr, indices, seeds, inside, taken, reached_from, buffer)
        if not count:
            break
        candidates = buffer[:count].copy()
        came_from = reached_from[candidates]
        reached_from[candidates] = -1
        order = look.at(rounds - t, candidates) if look is not None else priority[candidates]
        keep = np.lexsort((candidates, -priority[candidates], -order))[:k]
        best = candidates[keep].tolist()
        taken[candidates[keep]] = True
        out.parent.update(zip(best, came_from[keep].tolist()))
        passed = dict(zip(candidates.tolist(), came_from.tolist()))
        passed.update(out.passed)  # an earlier round's seed stays
        out.passed = passed
        out.rounds.append(best)
        seeds = candidates[keep]
    chosen = np.array([v for r in out.rounds for v in r], dtype=np.int64)
    if len(chosen):
        out.final = chosen[np.lexsort((chosen, -priority[chosen]))][:k].tolist()
    return out
