"""AdaPath's walk scorer as a vote for the ``pathmind+walk`` variant: the Path-Bank's retrieval
(Eq. 6), control signals and walk scorer, exactly as ``adapath answer`` runs them without an
LLM, stopped before answering. PathMind as its authors built it never reads this.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from adapath.methods.base import MethodContext

CANDIDATES = 50  # the walk scorer's candidates the vote covers (AdaPath itself answers from its top 5)


@dataclass
class Guide:
    """The walk scorer's candidate answers for one question (node, score), best first."""

    candidates: list[tuple[int, float]] = field(default_factory=list)


class MetaPathGuide:
    def __init__(self, graph, bank: str | Path, encoder, graph_dir=None, candidates: int = CANDIDATES,
                 params: dict | None = None):
        """``candidates``: how many of the walk scorer's best candidates the vote covers;
        ``params``: AdaPath's ``--param`` settings (default: as ``adapath answer`` runs)."""
        from adapath.methods.registry import get_method

        spec = get_method("adapath")
        context = MethodContext(graph, graph_dir=graph_dir, bank=Path(bank), params=spec.resolve_params(params or {}),
                                _encoder=encoder)
        self.graph, self.adapath = graph, spec.make(context)
        walks = self.adapath.explorer.scorer
        walks.config = replace(walks.config, answers=candidates)

    def guides(self, queries) -> list[Guide | None]:
        """Per query (``adapath.methods.base.Query``): the walk scorer's candidates; None where
        no meta-path survived."""
        _, outcomes = self.adapath.walk_outcomes(list(queries))
        out: list[Guide | None] = []
        for j in range(len(queries)):
            if j not in outcomes:
                out.append(None)
                continue
            out.append(Guide([(int(v), float(s)) for v, s in outcomes[j].candidates]))
        self.adapath.nodes.flush()
        return out



# How the vote meets the priority (the ``vote`` parameter of pathmind+walk): ``std``, on
# PathMind's logits in units of their spread over the question's subgraph (its entities' mean
# and standard deviation); ``rank``, on -ln of each entity's rank by priority; ``logit``, on the
# raw logits (the blend before: its effect then hangs on the network's logit scale).
VOTES = ("std", "rank", "logit")
VOTE = ("the vote is added once per question, before selection round 1, so every round's look-ahead and the "
        "final answer set read it: the walk scorer's r-th best candidate inside the query subgraph gains "
        "gain / r (r = 1..50, --param gain, 2.5 by default) on PathMind's logits standardized over the question's "
        "subgraph ((s - mean) / standard deviation over the entities a round may take), so the vote weighs "
        "the same against a network with wider or narrower logits (vote=logit adds gain / r to the raw logits, "
        "as the blend did before with gain 8; vote=rank to -ln of PathMind's rank)")
VOTE_MEASURED = ("on the benchmark graph's test half with one walk-network model (nbfnet options, 6 epochs, "
                 "validation Hits@1 0.496) strict EM 82.3 against 82.0 on the raw logits, every 3-hop cell at least "
                 "as high (all 78 three-hop records: 68.0 / 53.9 / 65.4 against 65.4 / 53.9 / 64.1); with its logits "
                 "tripled the same 82.3, where the raw-logit vote falls to 69.7; gain 2.5 is 8 over that model's median "
                 "logit spread (3.3), and a weaker model (1 epoch, spread 2.0) loses 4.7 points with it against the "
                 "raw-logit vote (docs/benchmarks/pathmind_real.md)")


def add_vote(priority: np.ndarray, inside: np.ndarray, topics, candidates, gain: float,
             vote: str = "std") -> np.ndarray:
    """One question's priorities (per node, ``-inf`` outside the subgraph ``inside``) with the
    walk's vote (``candidates``: its (node, score) best first; see ``VOTE``). ``std``: the
    logits inside less the mean, over the standard deviation, of the entities a round may take
    (inside, not a topic). ``rank``: each
    entity a round may take (inside, not a topic) first gets ``-ln(rank)`` by priority, ties by
    the smaller index, so only the order of the logits counts, as in PathMind's own selection."""
    if vote not in VOTES:
        raise ValueError(f"vote {vote!r}: choose {', '.join(VOTES)}")
    out = np.array(priority, dtype=np.float64)
    takeable = np.array(inside, dtype=np.bool_)
    takeable[list(topics)] = False
    if vote == "std":
        values = out[takeable]
        spread = float(values.std()) if len(values) else 0.0
        within = np.asarray(inside, dtype=np.bool_)
        out[within] = (out[within] - (float(values.mean()) if len(values) else 0.0)) / (spread if spread > 0 else 1.0)
    elif vote == "rank":
        nodes = np.flatnonzero(takeable)
        order = nodes[np.lexsort((nodes, -out[nodes]))]
        out[order] = -np.log(np.arange(1, len(order) + 1, dtype=np.float64))
    for r, (v, _) in enumerate(candidates, start=1):
        if inside[int(v)]:
            out[int(v)] += gain / r
    return out
