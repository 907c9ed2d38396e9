"""The Path-Bank guiding PathMind's subgraph: AdaPath's retrieval (Eq. 6), control signals and
walk scorer, exactly as ``adapath answer`` runs them without an LLM, stopped before answering.
"""

from __future__ import annotations

from pathlib import Path

from adapath.engine.traverse import metapath_codes
from adapath.methods.base import MethodContext
from adapath.methods.pathmind.subgraph import Guide


class MetaPathGuide:
    def __init__(self, graph, bank: str | Path, encoder, graph_dir=None):
        from adapath.methods.registry import get_method

        spec = get_method("adapath")
        context = MethodContext(graph, graph_dir=graph_dir, bank=Path(bank), params=spec.resolve_params({}),
                                _encoder=encoder)
        self.graph, self.adapath = graph, spec.make(context)

    def guides(self, queries) -> list[Guide | None]:
        """Per query (``adapath.methods.base.Query``): its surviving meta-paths as typed lanes
        and the walk scorer's walks to its best candidates; None where no meta-path survived."""
        plans, outcomes = self.adapath.walk_outcomes(list(queries))
        out: list[Guide | None] = []
        for j, plan in enumerate(plans):
            if j not in outcomes:
                out.append(None)
                continue
            lanes = []
            for metapath, _ in plan.surviving:
                codes = metapath_codes(self.graph, metapath)
                if codes is not None:
                    lanes.append((tuple(int(r) for r in codes[1]), tuple(int(t) for t in codes[0])))
            walks = [list(nodes) for nodes, _ in outcomes[j].paths if nodes and nodes[0] == plan.topics[0]]
            out.append(Guide(lanes, walks))
        self.adapath.nodes.flush()
        return out
