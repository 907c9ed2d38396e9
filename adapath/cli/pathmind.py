"""`adapath pathmind`: train the path-priority model, build reasoner data, fine-tune."""

from __future__ import annotations

from pathlib import Path

import typer

from adapath.cli.common import CACHE_DIR_HELP, DEFAULT_ENCODER, ENCODER_HELP, say, use_cache_dir
from adapath.errors import InputError
from adapath.methods.pathmind.config import TrainConfig
from adapath.progress import Progress

pathmind_app = typer.Typer(help="PathMind: train the path-priority model, build reasoner data, fine-tune.",
                            no_args_is_help=True)

MAX_HOPS = 5  # the Path-Bank's construction bound; a ball of mean degree ~60 covers the graph well before


def check_level(level: str) -> None:
    from adapath.datasets.biostrat import LEVELS

    if level not in LEVELS:
        raise InputError(f"--level {level!r}: choose {', '.join(LEVELS)}")


def check_train_options(level: str, epochs: int, budget: int, hops: int, batch: int, threads: int) -> None:
    """Every training option checked before anything is loaded or written: one line each."""
    check_level(level)
    if epochs < 1:
        raise InputError(f"--epochs {epochs}: must be at least 1")
    if budget < 1:
        raise InputError(f"--budget {budget}: must be at least 1 (nodes kept per subgraph besides the topics)")
    if not 1 <= hops <= MAX_HOPS:
        raise InputError(f"--hops {hops}: must be between 1 and {MAX_HOPS}")
    if batch < 1:
        raise InputError(f"--batch {batch}: must be at least 1")
    if threads < 1:
        raise InputError(f"--threads {threads}: must be at least 1")


@pathmind_app.command("train")
def pathmind_train(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    queries: str = typer.Option(..., "--queries", help="Training questions: biostrat:PATH."),
    out: Path = typer.Option(..., "--out", help="Model directory to write (safetensors + config.json)."),
    level: str = typer.Option("explicit", "--level", help="Question wording: explicit, implicit or bare."),
    encoder: str = typer.Option(DEFAULT_ENCODER, "--encoder", help=ENCODER_HELP),
    epochs: int = typer.Option(20, "--epochs", help="Most epochs (early stopping on the --select score)."),
    budget: int = typer.Option(400, "--budget", help="Subgraph node budget."),
    hops: int = typer.Option(3, "--hops", help=f"k of the k-hop subgraph, and rounds T (1-{MAX_HOPS})."),
    batch: int = typer.Option(TrainConfig.batch, "--batch", help="Questions per optimizer step, as one graph."),
    threads: int = typer.Option(1, "--threads", help="torch threads (the sparse products run on one)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the split, the shuffling and the initial weights."),
    force: bool = typer.Option(False, "--force", help="Replace an existing model directory."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
    subgraph: str = typer.Option("auto", "--subgraph", help="How the subgraph budget is cut: ppr, question, "
                                 "metapath (the Path-Bank's typed walks first; needs --bank) or auto (metapath "
                                 "with --bank, else question)."),
    bank: Path | None = typer.Option(None, "--bank", help="Path-Bank directory (subgraph metapath)."),
    select: str = typer.Option(TrainConfig.select, "--select", help="Validation score that picks the best epoch "
                               "and stops early: hits3 (the K=3 entities an LLM reads) or hits1 (the extractive "
                               "answer)."),
) -> None:
    """Train the path-priority network with early stopping on a validation split.

    Progress within each epoch goes to stderr: a bar on a terminal, a line every few
    seconds in a log. The model directory appears only when training has finished.
    """
    check_train_options(level, epochs, budget, hops, batch, threads)
    if select not in ("hits1", "hits3"):
        raise InputError(f"--select {select!r}: choose hits1 or hits3")
    from adapath.methods.pathmind.subgraph import MODES

    if subgraph not in (*MODES, "auto"):
        raise InputError(f"--subgraph {subgraph!r}: choose {', '.join(MODES)} or auto")
    if subgraph == "auto":
        subgraph = "metapath" if bank is not None else "question"
        if bank is None:
            say("no --bank: the subgraph is cut by the question's PPR (--subgraph question); "
                "pass --bank for the meta-path cut, which measures best")
    if subgraph == "metapath" and bank is None:
        raise InputError("--subgraph metapath needs a Path-Bank (--bank); or choose --subgraph question")
    if out.exists() and not force:
        raise InputError(f"{out}: already exists (pass --force to replace it)")
    use_cache_dir(cache_dir)
    import torch

    from adapath.datasets.biostrat import load_records, parse_spec
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.pathmind.train import Featurizer, make_examples, save_checkpoint, train
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder

    torch.set_num_threads(threads)
    graph = KnowledgeGraph.load(kg)
    records = load_records(parse_spec(queries))
    config = TrainConfig(epochs=epochs, budget=budget, hops=hops, seed=seed, encoder=encoder, batch=batch,
                         subgraph=subgraph, select=select)
    encoder_model = make_encoder(encoder)
    examples = make_examples(graph, records, encoder_model, level, hops=hops, budget=budget, progress=True,
                             subgraph=subgraph, graph_dir=kg, bank=bank)
    survive = sum(bool(len(e.local_answers)) for e in examples) / max(len(examples), 1)
    say(f"{len(examples)} questions; the answer survives the subgraph bound in {100 * survive:.1f}%")
    nodes = NodeEmbeddings(graph, encoder_model, kg)
    model, history = train(graph, examples, Featurizer(graph, nodes), config, progress=True, log=lambda h: say(
        f"epoch {h['epoch']}: loss {h['loss']:.4f}, val Hits@1 {h['val_hits1']:.3f}, Hits@3 {h['val_hits3']:.3f}, "
        f"{h['seconds']:.1f} s"))
    nodes.flush()
    save_checkpoint(model, config, graph, out, history)
    say(f"wrote {out}")


@pathmind_app.command("reasoner-data")
def pathmind_reasoner_data(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    model: Path = typer.Option(..., "--model", help="Trained PathMind model directory."),
    queries: str = typer.Option(..., "--queries", help="Training questions with answers: biostrat:PATH."),
    stage: str = typer.Option(..., "--stage", help="sft or dpo."),
    out: Path = typer.Option(..., "--out", help="JSONL in trl's conversational format."),
    level: str = typer.Option("explicit", "--level", help="Question wording: explicit, implicit or bare."),
    seed: int = typer.Option(0, "--seed", help="Seed of the rejected (DPO) paths."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
) -> None:
    """Reasoner training data from prioritized paths (SFT: answer sets; DPO: path preferences)."""
    check_level(level)
    use_cache_dir(cache_dir)
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
    with Progress(len(records), "reasoner data", "questions") as bar:
        for lo in range(0, len(records), 32):
            chunk = [query_from_record(r, level) for r in records[lo:lo + 32]]
            results += [r.to_json() for r in pipeline.answer(chunk)]
            bar.advance(len(chunk))
    rows = reasoner_examples(graph, records, results, stage, seed=seed)
    write_jsonl(rows, out)
    say(f"wrote {out}: {len(rows)} {stage} examples")


@pathmind_app.command("finetune")
def pathmind_finetune(
    base: Path = typer.Option(..., "--base", help="Base causal LM directory (transformers format)."),
    stage: str = typer.Option(..., "--stage", help="sft or dpo."),
    data: Path = typer.Option(..., "--data", help="JSONL from `pathmind reasoner-data`."),
    out: Path = typer.Option(..., "--out", help="Output directory (LoRA adapter)."),
    epochs: int = typer.Option(3, "--epochs", help="Training epochs."),
    lr: float = typer.Option(0.0, "--lr", help="0 = the paper's (2e-5 SFT, 5e-6 DPO)."),
    max_steps: int = typer.Option(-1, "--max-steps", help="Stop after this many steps (-1: all epochs)."),
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


