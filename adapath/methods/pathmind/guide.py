"""AdaPath's walk scorer as a vote for the ``pathmind+walk`` variant: the Path-Bank's retrieval
(Eq. 6), control signals and walk scorer, exactly as ``adapath answer`` runs them without an
LLM, stopped before answering. PathMind as its authors built it never reads this.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

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
