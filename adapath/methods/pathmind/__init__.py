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
    from adapath.methods.pathmind.infer import MODES, PATHS, PathMind
    from adapath.methods.pathmind.select import RULES
    from adapath.methods.pathmind.train import load_checkpoint
    from adapath.retrieval.dense import make_encoder

    params = context.params
    for key, choices in (("prioritize", MODES), ("select", RULES), ("paths", PATHS)):
        if params[key] not in choices:
            raise InputError(f"--param {key}={params[key]!r}: choose {', '.join(choices)}")
    for key in ("k", "rounds"):
        if params[key] < 1:
            raise InputError(f"--param {key}={params[key]}: must be at least 1")
    device = check_device(params["device"])
    net, config = load_checkpoint(context.model)
    encoder = make_encoder(config.encoder)
    vote = None
    if name == "pathmind+walk":
        from adapath.methods.pathmind.guide import VOTES, MetaPathGuide

        if params["vote"] not in VOTES:
            raise InputError(f"--param vote={params['vote']!r}: choose {', '.join(VOTES)}")
        vote = MetaPathGuide(context.graph, context.bank, encoder, context.graph_dir)
    return PathMind(context.graph, net, config, encoder, context.llm, graph_dir=context.graph_dir,
                    k=params["k"], rounds=params["rounds"], mode=params["prioritize"], rule=params["select"],
                    vote=vote, gain=params.get("gain", 0.0), name=name, paths=params["paths"], device=device,
                    vote_on=params.get("vote", "rank"))


def check_device(device: str) -> str:
    """``cpu`` or ``cuda[:N]`` where torch sees a GPU; one line otherwise."""
    from adapath.errors import InputError

    if device == "cpu":
        return device
    if not (device == "cuda" or device.startswith("cuda:")):
        raise InputError(f"--device {device!r}: choose cpu or cuda")
    import torch

    if not torch.cuda.is_available():
        raise InputError(f"--device {device}: torch sees no CUDA GPU on this machine")
    return device


_PARAMS = (
    Param("prioritize", "model", "the priority that ranks entities: model (the learned s_q(e)); the paper's "
          "ablations readout (w/o prioritization: the GNN's entity representation against the question, as a plain "
          "GNN retriever scores), cumulative (d alone) and future (f alone); or nearest (hop distance, ties by "
          "degree) and random"),
    Param("paths", "important", "the paths the reasoner reads: important (the prioritized paths), shortest "
          "(a shortest path from a topic to each selected entity, as GNN-RAG retrieves) or random (K random walks "
          "from the topics); without an LLM the answer is the selected entities whatever the paths"),
    Param("k", 3, "K: entities selected per round, and the answer set's size (the paper's K = 3)"),
    Param("rounds", 3, "T: selection rounds (the paper: 2 on WebQSP, 4 on CWQ; BioStrat-QA's questions "
          "have at most 3 hops)"),
    Param("device", "cpu", "where the priority network runs: cpu (Numba kernels) or cuda (torch on the GPU; "
          "answer's --device sets it too)"),
    Param("select", "lookahead", "how a round orders its frontier: lookahead (the best priority within reach "
          "through an entity in the rounds left) or greedy (the entity's own priority)"),
)

# What the paper states (../shared/papers/pathmind-paper-notes.txt) and where this
# implementation departs from it, each with its reason and, where measured, its effect.
_DEVIATIONS = (
    "as the paper: the query subgraph is the union of every topic's 3-hop neighbourhood; entity representations "
    "come from a randomly initialized relational GNN (m_e = AGG{W_r h_e'}, h_e = UPDATE(h_e, m_e)) and the query "
    "from a text encoder (BERT in the paper); w_q(u, r, v) = (h_u W_r h_v)^T q; d(q, e) sums over the paths from the query's "
    "topics the sum of their triple representations; f = f([d, q]); s = sigmoid(MLP(d + f)); the objective is "
    "the binary cross-entropy over every entity of the subgraph, answers positive, the rest negative, unweighted; "
    "top-K entities (K = 3) over T rounds",
    "the GNN (pathmind train --gnn-layers, 2 by default) reads each entity's type and text embedding as its "
    "input features (the paper does not say what its GNN starts from), aggregates by the mean, W_r = W diag(r) "
    "(CompGCN's multiplicative composition: one matrix per layer, a vector per relation and direction), "
    "UPDATE(h, m) = h + ReLU(U h + W m); it passes messages over the whole graph once for every question rather "
    "than over each question's subgraph, which differs only at the subgraph's rim",
    "the query encoder is the project's --encoder at training (MiniLM by default) in place of BERT",
    "(h_u W_r h_v)^T q is read as a vector, h_u * W_r * h_v * q' with W_r diagonal, so d(q, e) is a vector as "
    "the paper's bold d; the scalar reading (its sum over channels) is a training option (--reading scalar)",
    "d(q, e) sums over walks of at most 3 steps (paths that may revisit an entity), counted by a walk-count and "
    "walk-sum recursion over the graph's CSR, several questions side by side: simple paths cannot be enumerated "
    "over a whole 3-hop neighbourhood; the MLPs read sign(d) log(1 + |d|), since walk sums span many orders of "
    "magnitude",
    "the objective's sum runs over a stratified sample of the subgraph each step (the answers, the topics, the 256 "
    "entities most like the question, 384 drawn per hop depth), each drawn entity weighted by how many it stands "
    "for: an unbiased estimate of the paper's sum; validation and inference score every entity",
    "named training options beside the paper's model: --cost product (d the sum over walks of the product of "
    "triple representations, NBFNet's generalized Bellman-Ford, with positive factors and query-conditioned "
    "relations), --entity gate (no message passing: each entity's type and text read against the question, plus "
    "its text's cosine to it), --readout layers (d after each step side by side, NBFNet's concatenated states), "
    "--loss balanced (positives weighted by negatives / positives) and --loss softmax (cross-entropy of a softmax "
    "over the subgraph); measured in docs/benchmarks/pathmind_real.md",
    "a selection round ranks its frontier by the best priority within reach through an entity in the rounds "
    "left (select=lookahead); the paper does not say how intermediate entities are ordered (select=greedy: "
    "by their own priority)",
    "the ablations are parameters of one trained model, not separately trained ones: w/o prioritization, d only "
    "and f only read probe heads trained beside the priority on its detached entity representations, d and f "
    "(so the priority trains exactly as without them); nearest and random are unlearned orders",
    "the reasoner is whatever --llm names (the paper: Llama-3.1-8B after SFT and DPO); a trained LoRA adapter "
    "loads with --llm-option adapter=DIR",
    "a reasoning prompt longer than 2,048 estimated tokens (the paper's input bound) drops whole paths from its end "
    "until it fits",
    lenient_reading("a prioritized entity", "the best prioritized entity"),
)

def _vote_said() -> str:
    """The blend's vote, said once (``guide.VOTE``), with what it was measured to give."""
    from adapath.methods.pathmind.guide import VOTE, VOTE_MEASURED

    return f"{VOTE}; {VOTE_MEASURED}"


METHODS = [
    MethodSpec(
        "pathmind", "a learned A*-like path priority over the topics' 3-hop subgraph picks top-K entities over "
        "T rounds; one LLM call reasons over their paths", PAPER, _build, llm="optional", needs=("model",),
        params=_PARAMS, repository="liuyudiy/PathMind", deviations=_DEVIATIONS, calls="0, LLM 1"),
    MethodSpec(
        "pathmind+walk", "beyond both papers: PathMind's learned priority plus AdaPath's walk-scorer vote "
        "(gain / rank for the walk scorer's candidates, from the Path-Bank)", PAPER + " + AdaPath's walk scorer",
        lambda context: _build(context, "pathmind+walk"), llm="optional", needs=("model", "bank"),
        params=(*_PARAMS, Param("gain", 8.0, "the walk-scorer vote's weight: its r-th candidate gains gain / r"),
                Param("vote", "rank", "how the vote meets the priority: rank (on -ln of PathMind's rank of each "
                      "entity: the blend reads PathMind's order, not its logit scale) or logit (added to the logits, "
                      "as before)")),
        repository="liuyudiy/PathMind", calls="0, LLM 1",
        deviations=("a blend of two methods: the priority reads AdaPath's walk scorer (its candidates from the "
                    "Path-Bank), which PathMind never does (docs/benchmarks/pathmind_real.md measures how often it "
                    "gives AdaPath's walk answer)", _vote_said(), *_DEVIATIONS)),
]
