"""PathMind (Retrieve-Prioritize-Reason): bounded query subgraphs, a learned A*-like path
priority, single-call reasoning, and SFT + path-level DPO training of the reasoner.

torch is needed here (``pip install -e ".[train]"``); importing ``adapath`` alone never
imports it.
"""

from adapath.methods.base import MethodContext, MethodSpec, Param


def _build(context: MethodContext):
    from adapath.errors import InputError
    from adapath.methods.pathmind.infer import MODES, PathMind
    from adapath.methods.pathmind.train import load_checkpoint
    from adapath.retrieval.dense import make_encoder

    mode = context.params.get("prioritize", "model")
    if mode not in MODES:
        raise InputError(f"--prioritize {mode!r}: choose {', '.join(MODES)}")
    net, train_config = load_checkpoint(context.model)
    subgraph = context.params.get("subgraph", "") or train_config.subgraph
    if subgraph == "metapath" and context.bank is None:
        raise InputError("subgraph=metapath needs a Path-Bank (--bank); or pass --param subgraph=question")
    train_config.subgraph = subgraph
    return PathMind(context.graph, net, train_config, make_encoder(train_config.encoder), context.llm,
                    graph_dir=context.graph_dir, mode=mode, k=context.params.get("k", 3), bank=context.bank)


METHODS = [MethodSpec(
    "pathmind", "a learned A*-like path priority picks top-K entities; one LLM call reasons over their paths",
    "PathMind (Retrieve-Prioritize-Reason)", _build, llm="optional", needs=("model",),
    params=(Param("prioritize", "model", "model, or the ablations shortest and random"),
            Param("k", 3, "entities selected"),
            Param("subgraph", "", "how the query subgraph's node budget is cut: ppr (uniform PPR), question "
                  "(PPR under the question's Eq. 1 weights, whole paths from the topic) or metapath (the "
                  "Path-Bank's typed walks first, needs --bank); empty: as the model was trained")),
    deviations=(
        "the ablations are a parameter, not separate methods: prioritize=shortest (no learned priority: "
        "nearest entities, unit-cost shortest paths) and prioritize=random (seeded random entities)",
        "without an LLM the answer is extractive: the best prioritized entity",
        "a reasoning prompt longer than 2,048 estimated tokens drops whole paths from its end until it fits",
    ),
)]
