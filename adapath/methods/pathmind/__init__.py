"""PathMind (Retrieve-Prioritize-Reason): the topics' k-hop query subgraph, a learned A*-like
path priority, top-K entity selection over T rounds, single-call reasoning, and SFT +
path-level DPO training of the reasoner.

torch is needed here (``pip install -e ".[train]"``); importing ``adapath`` alone never
imports it.
"""

from adapath.llm.parse import lenient_reading
from adapath.methods.base import MethodContext, MethodSpec, Param

PAPER = "PathMind (Retrieve-Prioritize-Reason), Liu et al., AAAI 2026, arXiv 2511.14256"


def _build(context: MethodContext, name: str = "pathmind"):
    from adapath.errors import InputError
    from adapath.methods.pathmind.infer import MODES, PathMind
    from adapath.methods.pathmind.select import RULES
    from adapath.methods.pathmind.train import load_checkpoint
    from adapath.retrieval.dense import make_encoder

    params = context.params
    if params["prioritize"] not in MODES:
        raise InputError(f"--param prioritize={params['prioritize']!r}: choose {', '.join(MODES)}")
    if params["select"] not in RULES:
        raise InputError(f"--param select={params['select']!r}: choose {', '.join(RULES)}")
    for key in ("k", "rounds"):
        if params[key] < 1:
            raise InputError(f"--param {key}={params[key]}: must be at least 1")
    net, config = load_checkpoint(context.model)
    encoder = make_encoder(config.encoder)
    vote = None
    if name == "pathmind+walk":
        from adapath.methods.pathmind.guide import MetaPathGuide

        vote = MetaPathGuide(context.graph, context.bank, encoder, context.graph_dir)
    return PathMind(context.graph, net, config, encoder, context.llm, graph_dir=context.graph_dir,
                    k=params["k"], rounds=params["rounds"], mode=params["prioritize"], rule=params["select"],
                    vote=vote, gain=params.get("gain", 0.0), name=name)


_PARAMS = (
    Param("prioritize", "model", "model, or the ablations shortest and random"),
    Param("k", 3, "K: entities selected per round, and the answer set's size"),
    Param("rounds", 3, "T: selection rounds (the paper: 2 on WebQSP, 4 on CWQ; BioStrat-QA's questions "
          "have at most 3 hops)"),
    Param("select", "lookahead", "how a round orders its frontier: lookahead (the best priority within reach "
          "through an entity in the rounds left) or greedy (the entity's own priority)"),
)

_DEVIATIONS = (
    "the triple representation (h_u W_r h_v)^T q is read as a vector: W_r diagonal and conditioned on the "
    "question (one vector per relation and direction), h each entity's gate from its type and text read against "
    "the question and its text's cosine to it; gates and relation vectors are exponentials of bounded logits, so "
    "a walk's product is a sum of logits in log space; the scalar reading is a training option "
    "(pathmind train --reading scalar)",
    "the cumulative cost d(q, e) sums over walks (paths that may revisit an entity), as NBFNet's and A*Net's "
    "generalized Bellman-Ford does; the priority reads log d after each of the 3 layers side by side (walks of "
    "at most 1, 2, 3 steps), as NBFNet's concatenated hidden states",
    "the query subgraph is the whole union of every topic's 3-hop ball (no bound): the message passing runs "
    "over the whole graph's CSR, several questions side by side",
    "a selection round ranks its frontier by the best priority within reach through an entity in the rounds "
    "left (select=lookahead); the paper does not say how intermediate entities are ordered (select=greedy: "
    "by their own priority)",
    "the priority is trained with the cross-entropy of a softmax over the subgraph's entities against the "
    "answers (as GNN readers of KGQA subgraphs train), estimated each step from the answers and a stratified "
    "sample of the negatives; the paper does not state its loss (pathmind train --loss bce: class-balanced "
    "binary cross-entropy)",
    "question and entity text are embedded by the project's --encoder at training (MiniLM by default); the "
    "paper's encoder is not stated",
    "the reasoner is whatever --llm names (the paper: Llama-3.1-8B after SFT and DPO); a trained LoRA adapter "
    "loads with --llm-option adapter=DIR",
    "the ablations are a parameter, not separate methods: prioritize=shortest (no learned priority: nearest "
    "entities, ties by degree) and prioritize=random (seeded random priorities)",
    "a reasoning prompt longer than 2,048 estimated tokens drops whole paths from its end until it fits",
    lenient_reading("a prioritized entity", "the best prioritized entity"),
)

METHODS = [
    MethodSpec(
        "pathmind", "a learned A*-like path priority over the topics' 3-hop subgraph picks top-K entities over "
        "T rounds; one LLM call reasons over their paths", PAPER, _build, llm="optional", needs=("model",),
        params=_PARAMS, repository="liuyudiy/PathMind", deviations=_DEVIATIONS, calls="0, LLM 1"),
    MethodSpec(
        "pathmind+walk", "beyond both papers: PathMind's learned priority plus AdaPath's walk-scorer vote "
        "(gain / rank for the walk scorer's candidates, from the Path-Bank)", PAPER + " + AdaPath's walk scorer",
        lambda context: _build(context, "pathmind+walk"), llm="optional", needs=("model", "bank"),
        params=(*_PARAMS, Param("gain", 8.0, "the walk-scorer vote's weight on the priority logit")),
        repository="liuyudiy/PathMind", calls="0, LLM 1",
        deviations=("a blend of two methods: the priority reads AdaPath's walk scorer (its candidates from the "
                    "Path-Bank), which PathMind never does; measured on 1,200 held-out BioStrat-QA questions (HPO "
                    "base with competitors, scale 1.0, MiniLM, no LLM), it gives AdaPath's walk answer in 87.7% of "
                    "them (pathmind alone: 46.9%), strict EM 77.5 against the walk's 76.8 "
                    "(docs/benchmarks/pathmind_real.md)", *_DEVIATIONS)),
]
