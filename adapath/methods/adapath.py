"""AdaPath inference (AdaPath §3.2): Path-Bank retrieval, control signals, meta-path guided
traversal with an LLM (or embedding) frontier scorer, and answering from the paths.

``AdaPath`` puts the parts in ``adapath.methods.guided`` together: the planner (retrieval and
control signals), one explorer chosen at construction (the paper's beam, or the walk scorer),
and the answer step. A batch of queries advances together: the control-signal prompts of the
batch, then the frontier prompts of each depth, then the answer prompts each go to the backend
as one batch. Inference reads only a query's id, its question text and its topic ids: no gold
field (triplets, path ids, answers) reaches a prompt or a scorer.
"""

from __future__ import annotations

from adapath.contract import Query, Result
from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.llm import LLMBackend, Usage
from adapath.llm.parse import lenient_reading
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, config_from, params_of
from adapath.methods.guided.answer import AnswerStep
from adapath.methods.guided.beam import BeamExplorer, shared_beam
from adapath.methods.guided.config import AdaPathConfig
from adapath.methods.guided.plan import Batch, Plan, Planner
from adapath.methods.guided.walk import WalkExplorer
from adapath.methods.level_banks import LevelBanks
from adapath.methods.walk_scorer import WalkOutcome, WalkScorer
from adapath.retrieval.bm25 import GraphText
from adapath.retrieval.dense import NodeEmbeddings

__all__ = ["AdaPath", "AdaPathConfig", "METHODS", "shared_beam"]


class AdaPath:
    name = "adapath"

    def __init__(self, graph: KnowledgeGraph, bank, encoder, llm: LLMBackend | None = None,
                 config: AdaPathConfig | None = None, graph_dir=None):
        """``bank``: a ``LevelBanks`` (retrieval matched to each question's level, two-topic
        junction shapes) or one ``BankIndex`` (every level compared with its texts).
        ``config`` is checked and resolved here (``scorer=auto`` by whether ``llm`` is given)."""
        config = config or AdaPathConfig()
        config.check(with_llm=llm is not None)
        self.graph, self.encoder, self.llm = graph, encoder, llm
        self.config = c = config.resolved(with_llm=llm is not None)
        call = LLMCaller(llm, c.params)
        self.text = GraphText.for_graph(graph, graph_dir, b=0.0)
        self.nodes = NodeEmbeddings(graph, encoder, graph_dir)
        self.planner = Planner(graph, bank, c, call)
        beam = BeamExplorer(graph, self.text, self.nodes, c, call)
        if c.scorer == "walk":
            walks = WalkScorer(graph, self.nodes, c.walk)
            walks.layers.build_all()
            self.explorer: BeamExplorer | WalkExplorer = WalkExplorer(graph, self.text, encoder, walks, c, beam)
        else:
            self.explorer = beam
        self.answer_step = AnswerStep(graph, call, c.max_triplets, self.name)

    def answer(self, queries: list[Query]) -> list[Result]:
        batch = self._planned(queries)
        results = self.answer_step(batch, self.explorer.explore(batch))
        self.nodes.flush()
        return results

    def walk_outcomes(self, queries: list[Query]) -> tuple[list[Plan], dict[int, WalkOutcome]]:
        """Retrieval, control and the walk scorer without answering: each query's plan, and
        the walk outcome of each query (by position) that kept a meta-path. What other
        methods take from the Path-Bank (PathMind's meta-path subgraph); ``scorer=walk`` only."""
        if not isinstance(self.explorer, WalkExplorer):
            raise InputError("walk outcomes come from the walk scorer (scorer=walk)")
        batch = self._planned(queries)
        return batch.plans, self.explorer.outcomes(batch)

    def _planned(self, queries: list[Query]) -> Batch:
        batch = Batch(list(queries), self.encoder.encode([q.text for q in queries]), [Usage() for _ in queries])
        batch.plans = self.planner.plans(batch)
        return batch


def _build(context: MethodContext) -> AdaPath:
    config = config_from(AdaPathConfig, context.params)
    config.check(with_llm=context.llm is not None)  # before the encoder loads
    encoder = context.encoder()
    run = config.resolved(with_llm=context.llm is not None)
    banks = LevelBanks(context.bank, encoder, run.retrieval_level, k=run.retrieve)
    return AdaPath(context.graph, banks, encoder, context.llm, config, graph_dir=context.graph_dir)


METHODS = [MethodSpec(
    "adapath", "Path-Bank meta-paths guide a typed walk from the topic; every walk weighed, or an LLM or "
    "cosine beam",
    "AdaPath (Path-Bank retrieval Eq. 6, control signals, guided traversal, §3.2)", _build,
    llm="optional", needs=("bank",), calls="0, LLM ≤ D+2", config=AdaPathConfig,
    params=params_of(AdaPathConfig),
    deviations=(
        "without an LLM the default scorer is the walk scorer (every walk along the meta-paths, weighed by the "
        "query with degree damping), which the paper does not have; with an LLM it is the paper's frontier "
        "beam (scorer=beam)",
        "control=weigh: the predicted answer type and hop count weigh meta-paths by the retrieval vote's shares "
        "instead of filtering them (control=filter is the paper's); an LLM's signals still filter",
        "pool=own: meta-paths are ranked by the similarity of the training queries holding them as their own "
        "(pool=all is Eq. 6's sum over every query holding them)",
        "shorter, junction, share and type_model (all on) are this project's additions, each a --param that "
        "turns it off",
        "the ablations are parameters, not separate methods: metapath=false (w/o meta-path: free BFS with the "
        "same scorer) and plan=llm (w/o Path-Bank: the LLM proposes the meta-paths)",
        "with an LLM, " + lenient_reading("a candidate entity of its paths (or an option)", "the best path's end"),
    ),
)]
