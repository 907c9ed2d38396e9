"""The Path-Bank guiding PathMind's subgraph: AdaPath's retrieval (Eq. 6), control signals and
walk scorer, exactly as ``adapath answer`` runs them without an LLM, stopped before answering.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from adapath.engine.traverse import metapath_codes
from adapath.methods.base import MethodContext
from adapath.methods.pathmind.subgraph import Guide

CANDIDATES = 50  # the walk scorer's candidates a guide keeps (AdaPath itself answers from its top 5)


class MetaPathGuide:
    def __init__(self, graph, bank: str | Path, encoder, graph_dir=None, candidates: int = CANDIDATES,
                 params: dict | None = None):
        """``candidates``: how many of the walk scorer's best candidates (each with its two
        heaviest walks) the guide returns; more keep more multi-hop answers in the cut.
        ``params``: AdaPath's ``--param`` settings (default: as ``adapath answer`` runs)."""
        from adapath.methods.registry import get_method

        spec = get_method("adapath")
        context = MethodContext(graph, graph_dir=graph_dir, bank=Path(bank), params=spec.resolve_params(params or {}),
                                _encoder=encoder)
        self.graph, self.adapath = graph, spec.make(context)
        self.adapath.walks.config = replace(self.adapath.walks.config, answers=candidates)

    def guides(self, queries) -> list[Guide | None]:
        """Per query (``adapath.methods.base.Query``): its surviving meta-paths as typed lanes
        the walk scorer's walks to its best candidates and those candidates (best first); None
        where no meta-path survived."""
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
            candidates = [(int(v), float(s)) for v, s in outcomes[j].candidates]
            out.append(Guide(lanes, walks, candidates))
        self.adapath.nodes.flush()
        return out


class OutOfFoldGuide:
    """Guides training questions with a Path-Bank that does not hold them: each question goes to
    the guide of its fold, whose bank was built on the other folds' records. A bank retrieves
    its own records' meta-paths almost perfectly, so a network trained on in-bank guides learns
    to trust the walk scorer more than it earns on new questions."""

    def __init__(self, fold_of: dict[str, int], guides: list[MetaPathGuide]):
        self.fold_of, self.by_fold = fold_of, guides

    def guides(self, queries) -> list[Guide | None]:
        queries = list(queries)
        out: list[Guide | None] = [None] * len(queries)
        for fold, guide in enumerate(self.by_fold):
            rows = [j for j, q in enumerate(queries) if self.fold_of[str(q.id)] == fold]
            if rows:
                for j, got in zip(rows, guide.guides([queries[j] for j in rows])):
                    out[j] = got
        return out
