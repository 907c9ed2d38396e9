"""`adapath pathmind`: train the path-priority model, build reasoner data, fine-tune."""

from __future__ import annotations

from pathlib import Path

import typer

from adapath.cli.common import say
from adapath.errors import InputError

pathmind_app = typer.Typer(help="PathMind: train the path-priority model, build reasoner data, fine-tune.",
                            no_args_is_help=True)



@pathmind_app.command("train")
def pathmind_train(
    kg: Path = typer.Option(..., "--kg"),
    queries: str = typer.Option(..., "--queries", help="Training questions: biostrat:PATH."),
    out: Path = typer.Option(..., "--out", help="Model directory (safetensors + config.json)."),
    level: str = typer.Option("explicit", "--level"),
    encoder: str = typer.Option("hashing", "--encoder", help="Query and node-text encoder."),
    epochs: int = typer.Option(20, "--epochs"),
    budget: int = typer.Option(400, "--budget", help="Subgraph node budget."),
    hops: int = typer.Option(3, "--hops", help="k of the k-hop subgraph, and rounds T."),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Train the path-priority network with early stopping on a validation split."""
    from adapath.datasets.biostrat import load_records, parse_spec
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.pathmind.train import (
        Featurizer,
        TrainConfig,
        make_examples,
        save_checkpoint,
        train,
    )
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder

    graph = KnowledgeGraph.load(kg)
    records = load_records(parse_spec(queries))
    config = TrainConfig(epochs=epochs, budget=budget, hops=hops, seed=seed, encoder=encoder)
    encoder_model = make_encoder(encoder)
    examples = make_examples(graph, records, encoder_model, level, hops=hops, budget=budget)
    survive = sum(bool(len(e.local_answers)) for e in examples) / len(examples)
    say(f"{len(examples)} questions; the answer survives the subgraph bound in {100 * survive:.1f}%")
    nodes = NodeEmbeddings(graph, encoder_model, kg)
    model, history = train(graph, examples, Featurizer(graph, nodes), config, log=lambda h: say(
        f"epoch {h['epoch']}: loss {h['loss']:.4f}, val Hits@3 {h['val_hits3']:.3f}, {h['seconds']:.1f} s"))
    nodes.flush()
    save_checkpoint(model, config, graph, out, history)
    say(f"wrote {out}")


@pathmind_app.command("reasoner-data")
def pathmind_reasoner_data(
    kg: Path = typer.Option(..., "--kg"),
    model: Path = typer.Option(..., "--model", help="Trained PathMind model directory."),
    queries: str = typer.Option(..., "--queries", help="Training questions with answers: biostrat:PATH."),
    stage: str = typer.Option(..., "--stage", help="sft or dpo."),
    out: Path = typer.Option(..., "--out", help="JSONL in trl's conversational format."),
    level: str = typer.Option("explicit", "--level"),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Reasoner training data from prioritized paths (SFT: answer sets; DPO: path preferences)."""
    from adapath.datasets.biostrat import load_records, parse_spec, query_from_record
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.pathmind.infer import PathMind
    from adapath.methods.pathmind.sft_dpo import reasoner_examples, write_jsonl
    from adapath.methods.pathmind.train import load_checkpoint
    from adapath.retrieval.dense import make_encoder

    if stage not in ("sft", "dpo"):
        raise InputError(f"--stage {stage!r}: choose sft or dpo")
    graph = KnowledgeGraph.load(kg)
    records = load_records(parse_spec(queries))
    net, config = load_checkpoint(model)
    pipeline = PathMind(graph, net, config, make_encoder(config.encoder), None, graph_dir=kg)
    results = []
    for lo in range(0, len(records), 32):
        results += [r.to_json() for r in pipeline.answer([query_from_record(r, level) for r in records[lo:lo + 32]])]
    rows = reasoner_examples(graph, records, results, stage, seed=seed)
    write_jsonl(rows, out)
    say(f"wrote {out}: {len(rows)} {stage} examples")


@pathmind_app.command("finetune")
def pathmind_finetune(
    base: Path = typer.Option(..., "--base", help="Base causal LM directory (transformers format)."),
    stage: str = typer.Option(..., "--stage", help="sft or dpo."),
    data: Path = typer.Option(..., "--data", help="JSONL from `pathmind reasoner-data`."),
    out: Path = typer.Option(..., "--out", help="Output directory (LoRA adapter)."),
    epochs: int = typer.Option(3, "--epochs"),
    lr: float = typer.Option(0.0, "--lr", help="0 = the paper's (2e-5 SFT, 5e-6 DPO)."),
    max_steps: int = typer.Option(-1, "--max-steps"),
) -> None:
    """LoRA fine-tuning of the reasoner with trl (SFT, then path-level DPO with beta 0.1)."""
    from adapath.methods.pathmind.sft_dpo import finetune

    if not data.is_file():
        raise InputError(f"{data}: no such file")
    if not base.is_dir():
        raise InputError(f"{base}: not a model directory")
    history = finetune(base, stage, data, out, epochs=epochs, lr=lr or None, max_steps=max_steps)
    losses = [h["loss"] for h in history if "loss" in h]
    say(f"wrote {out}: {len(losses)} logged steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}" if losses
         else f"wrote {out}")


