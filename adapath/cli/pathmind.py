"""`adapath pathmind`: train the path-priority model, build reasoner data, fine-tune."""

from __future__ import annotations

from pathlib import Path

import typer

from adapath.cli.common import (
    CACHE_DIR_HELP,
    DEFAULT_ENCODER,
    ENCODER_HELP,
    announce_compiling,
    say,
    setting_option,
    use_cache_dir,
)
from adapath.errors import InputError, ctrl_c_between_steps
from adapath.fsutil import check_writable
from adapath.methods.pathmind.checks import check_installed, check_model_graph, model_settings
from adapath.methods.pathmind.config import TrainConfig
from adapath.methods.pathmind.sft_dpo import DPO_LR, PAPER_DPO_LR, PAPER_SFT_LR, SFT_LR
from adapath.progress import Progress

pathmind_app = typer.Typer(help="PathMind: train the path-priority model, build reasoner data, fine-tune.",
                            no_args_is_help=True)


def check_level(level: str, allow_all: bool = False) -> None:
    from adapath.datasets.biostrat import LEVELS

    choices = (*LEVELS, "all") if allow_all else LEVELS
    if level not in choices:
        raise InputError(f"--level {level!r}: choose {', '.join(choices)}")


@pathmind_app.command("train")
@ctrl_c_between_steps()  # Ctrl-C stops between training steps, never inside a kernel; nothing is written
def pathmind_train(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    queries: list[str] = typer.Option(..., "--queries", help="Training questions: biostrat:PATH, repeatable. The "
                                      "first file also gives the validation questions (a seeded fifth of its "
                                      "records); the others only train (generated questions, for example)."),
    out: Path = typer.Option(..., "--out", help="Model directory to write (safetensors + config.json)."),
    level: str = typer.Option("explicit", "--level", help="Question wording: explicit, implicit, bare or all "
                              "(every level, each question once per level)."),
    encoder: str = typer.Option(DEFAULT_ENCODER, "--encoder", help=ENCODER_HELP),
    epochs: int = setting_option(TrainConfig, "epochs"),
    hops: int = setting_option(TrainConfig, "hops"),
    batch: int = setting_option(TrainConfig, "batch"),
    reading: str = setting_option(TrainConfig, "reading"),
    threads: int = typer.Option(2, "--threads", help="Threads of torch and of the graph passes."),
    device: str = typer.Option("cpu", "--device", help="cpu (the Numba kernels) or cuda (the network and its "
                               "relational passes on the GPU, as torch's ops)."),
    seed: int = setting_option(TrainConfig, "seed"),
    force: bool = typer.Option(False, "--force", help="Replace an existing model directory."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
    select: str = setting_option(TrainConfig, "select"),
    loss: str = setting_option(TrainConfig, "loss"),
    cost: str = setting_option(TrainConfig, "cost"),
    entity: str = setting_option(TrainConfig, "entity"),
    readout: str = setting_option(TrainConfig, "readout"),
    gnn_layers: int = setting_option(TrainConfig, "gnn_layers"),
    network: str = setting_option(TrainConfig, "network"),
    message: str = setting_option(TrainConfig, "message"),
    nodes: int = setting_option(TrainConfig, "nodes"),
    degree_ratio: float = setting_option(TrainConfig, "degree_ratio"),
    entity_text: bool = setting_option(TrainConfig, "entity_text"),
    answer_type: bool = setting_option(TrainConfig, "answer_type"),
    answer_text: bool = setting_option(TrainConfig, "answer_text"),
    focus: bool = setting_option(TrainConfig, "focus"),
    negatives: str = setting_option(TrainConfig, "negatives"),
    guide_paths: bool = setting_option(TrainConfig, "guide_paths"),
    rerank: bool = setting_option(TrainConfig, "rerank"),
    init: Path | None = typer.Option(None, "--init", help="A trained model to start from instead of random "
                                     "weights (same settings): fine-tune on real records a model trained with "
                                     "generated questions, for example."),
    pretrain_generated: int = typer.Option(0, "--pretrain-generated", min=0, help="First train one epoch on "
                                           "this many questions generated on the graph (beside the records), then "
                                           "the records without them from those weights."),
    exclude: list[str] = typer.Option([], "--exclude", help="Evaluation questions (biostrat:PATH, repeatable) "
                                      "whose (topic, answer) pairs no generated question may hold."),
) -> None:
    """Train the path-priority network with early stopping on a validation split.

    With no options it trains the paper's priority as NBFNet computes its formula (neural
    Bellman-Ford layers, the additive message), pruned as A*Net prunes it (--nodes), on the
    paper's loss summed over every entity of the subgraph (--negatives all), with the parts of
    the recipe that measured best where the paper's as written fell short on the benchmark
    graph: a softmax cross-entropy for the unweighted BCE, each reached entity's own evidence
    (--entity-text, --focus), the readout's answer prior (--answer-type, --answer-text) and,
    after training, a reader of the question's words over the priority's top 30 (--rerank, in
    place of the LLM the paper hands its K to). `adapath methods pathmind` gives each with its
    numbers; --loss bce --no-entity-text --no-focus --no-answer-type --no-answer-text
    --no-rerank is the paper's recipe. --pretrain-generated N first trains on questions
    generated on the graph; --guide-paths keeps each training question's shortest paths in its
    pruned search (ours). --message, --nodes and --loss name the variants, --network walk the
    formula as literal walk algebra (with its legacy options --cost, --entity, --readout,
    --reading). It reads the graph and the questions only (no Path-Bank). Progress within each
    epoch goes to stderr: a bar on a terminal, a line every few seconds in a log. The model
    directory appears only when training has finished.
    """
    check_writable(out, folder=True)
    check_level(level, allow_all=True)
    check_installed("pathmind train")
    if threads < 1:
        raise InputError(f"--threads {threads}: must be at least 1")
    config = TrainConfig(epochs=epochs, hops=hops, seed=seed, encoder=encoder, batch=batch, reading=reading,
                         select=select, loss=loss, cost=cost, entity=entity, readout=readout, gnn_layers=gnn_layers,
                         network=network, message=message, nodes=nodes, degree_ratio=degree_ratio,
                         entity_text=entity_text, answer_type=answer_type,
                         answer_text=answer_text, guide_paths=guide_paths, focus=focus,
                         negatives=negatives, rerank=rerank)
    config.check()
    if out.exists() and not force:
        raise InputError(f"{out}: already exists (pass --force to replace it)")
    from adapath.methods.pathmind import check_device

    device = check_device(device)
    use_cache_dir(cache_dir)
    import numba
    import torch

    from adapath.datasets.biostrat import LEVELS, load_records, parse_spec
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.pathmind.train import (
        Features,
        epoch_line,
        load_checkpoint,
        make_examples,
        save_checkpoint,
        train,
        within_reach,
    )
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder

    torch.set_num_threads(threads)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    if init is not None:
        model_settings(init)  # not a model: one line before the graph loads
    announce_compiling("relational")
    graph = KnowledgeGraph.load(kg)
    if init is not None:
        check_model_graph(init, graph.checksum(), kg)
    start = load_checkpoint(init)[0] if init is not None else None
    encoder_model = make_encoder(encoder)
    levels = LEVELS if level == "all" else (level,)
    files = [(spec, load_records(parse_spec(spec))) for spec in queries]
    examples = [[e for lv in levels for e in make_examples(graph, records, encoder_model, lv,
                                                            focus=config.focus or config.rerank)]
                for _, records in files]
    nodes = NodeEmbeddings(graph, encoder_model, kg)
    features = Features(graph, nodes, hops, progress=True, device=device)
    nodes.flush()
    within = [len(within_reach(features, part)) for part in examples]
    total = sum(len(part) for part in examples)
    say(f"{total} questions; an answer lies within {hops} hops of a topic in {sum(within)}")

    def split(validation: int, training: int, more: int) -> None:
        counts = [training] + [w for w in within[1:]]
        shares = ", ".join(f"{parse_spec(spec).name} {count} ({100 * count / max(sum(counts), 1):.0f}%)"
                           for (spec, _), count in zip(files, counts))
        say(f"training on {sum(counts)} questions: {shares}; validating on {validation} from "
            f"{parse_spec(files[0][0]).name}")

    more = [e for p in examples[1:] for e in p]
    if pretrain_generated:
        start = pretrain(graph, encoder_model, features, config, levels, examples[0], more, pretrain_generated,
                         exclude, start)
    model, history = train(graph, examples[0], features, config, progress=True, more=more,
                           split=split, init=start,
                           log=lambda h: say(epoch_line(h)))
    reader = None
    if config.rerank:
        from adapath.methods.pathmind.reader import evidence_for, fit_reader

        reader = fit_reader(model, features, examples[0], config, evidence_for(graph, kg, features), encoder_model)
        say(reader.summary())
    save_checkpoint(model, config, graph, out, history, started_from=str(init) if init is not None else "",
                    reader=reader)
    say(f"wrote {out}")


def pretrain(graph, encoder_model, features, config, levels, examples, more, count: int, exclude: list[str], start):
    """The model one epoch over ``count`` generated questions (describe phrasing, 1 to 3 hops,
    none holding an (topic, answer) pair of the ``exclude`` files) beside the records trains,
    from ``start``'s weights or random ones: where training on the records alone starts."""
    from dataclasses import replace

    from adapath.datasets.biostrat import load_records, parse_spec
    from adapath.datasets.generate import QueryGenerator, topic_answer_pairs
    from adapath.methods.pathmind.train import epoch_line, make_examples, train

    held = set()
    for spec in exclude:
        held |= topic_answer_pairs(load_records(parse_spec(spec)))
    say(f"generating {count} questions on the graph" + (f" (none holding one of {len(held)} (topic, answer) pairs "
                                                          "of --exclude)" if exclude else ""))
    records = QueryGenerator(graph).generate(count, seed=config.seed, phrasing="describe", first_id=10_000_000,
                                             exclude=frozenset(held))
    generated = [e for lv in levels for e in make_examples(graph, records, encoder_model, lv, focus=config.focus)]
    say("pretraining one epoch on the generated questions beside the records")
    model, _ = train(graph, examples, features, replace(config, epochs=1), progress=True, more=more + generated,
                     init=start, log=lambda h: say(f"pretraining {epoch_line(h)}"))
    say("training on the records from those weights")
    return model


@pathmind_app.command("reasoner-data")
def pathmind_reasoner_data(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    model: Path = typer.Option(..., "--model", help="Trained PathMind model directory."),
    queries: str = typer.Option(..., "--queries", help="Training questions with answers: biostrat:PATH."),
    stage: str = typer.Option(..., "--stage", help="sft or dpo."),
    out: Path = typer.Option(..., "--out", help="JSONL in trl's conversational format."),
    level: str = typer.Option("explicit", "--level", help="Question wording: explicit, implicit or bare."),
    method: str = typer.Option("pathmind", "--method", help="pathmind (the paper's, no bank) or pathmind+walk "
                               "(the blend with AdaPath's walk-scorer vote; needs --bank)."),
    bank: Path | None = typer.Option(None, "--bank", help="Path-Bank directory (pathmind+walk only)."),
    param: list[str] = typer.Option([], "--param", metavar="NAME=VALUE", help="A method parameter (see `adapath "
                                    "methods`), e.g. k=3."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
) -> None:
    """Reasoner training data from PathMind's own selection: SFT rows (the reasoning prompt,
    the gold answer set) or DPO rows (prioritized paths chosen over the subgraph's remaining
    candidate paths). The paper's method reads the graph, the model and the questions only."""
    check_writable(out)
    check_level(level)
    check_installed("pathmind reasoner-data")
    from adapath.cli.common import parse_pairs
    from adapath.methods.pathmind.sft_dpo import STAGES
    from adapath.methods.registry import get_method

    if stage not in STAGES:
        raise InputError(f"--stage {stage!r}: choose sft or dpo")
    if method not in ("pathmind", "pathmind+walk"):
        raise InputError(f"--method {method!r}: choose pathmind or pathmind+walk")
    spec = get_method(method)
    params = spec.resolve_params(parse_pairs(param, "--param"))
    use_cache_dir(cache_dir)
    from adapath.datasets.biostrat import load_records, parse_spec
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.base import MethodContext
    from adapath.methods.pathmind.sft_dpo import reasoner_examples, write_jsonl

    records = load_records(parse_spec(queries))
    graph = KnowledgeGraph.load(kg)
    check_model_graph(model, graph.checksum(), kg)
    pipeline = spec.make(MethodContext(graph, kg, None, bank=bank, model=model, params=params))
    with Progress(len(records), "reasoner data", "questions") as bar:
        rows = reasoner_examples(pipeline, records, stage, level, progress=bar)
    pipeline.nodes.flush()
    write_jsonl(rows, out)
    say(f"wrote {out}: {len(rows)} {stage} examples")


@pathmind_app.command("finetune")
def pathmind_finetune(
    base: Path = typer.Option(..., "--base", help="Base causal LM: a transformers directory or a .gguf file."),
    stage: str = typer.Option(..., "--stage", help="sft, then dpo."),
    data: Path = typer.Option(..., "--data", help="JSONL from `pathmind reasoner-data`."),
    out: Path = typer.Option(..., "--out", help="Output directory (LoRA adapter)."),
    sft_adapter: Path | None = typer.Option(None, "--sft-adapter", help="dpo: the SFT stage's adapter, trained "
                                            "on and used as the reference model."),
    epochs: int = typer.Option(3, "--epochs", help="Training epochs."),
    lr: float = typer.Option(0.0, "--lr", help=f"Learning rate; 0 = the stage's default for a LoRA adapter: "
                             f"{SFT_LR:g} SFT (measured), {DPO_LR:g} DPO (the paper's, for a full fine-tune: "
                             f"{PAPER_SFT_LR:g} SFT, {PAPER_DPO_LR:g} DPO)."),
    max_steps: int = typer.Option(-1, "--max-steps", help="Stop after this many steps (-1: all epochs)."),
    lora_rank: int = typer.Option(8, "--lora-rank", help="LoRA rank (on the attention q and v projections)."),
    batch_size: int = typer.Option(2, "--batch-size", help="Examples per step."),
    device: str = typer.Option("auto", "--device", help="auto (CUDA when torch sees a GPU, else the CPU), cpu or "
                               "cuda. On CUDA the base is bfloat16 (float16 where the GPU lacks it) with mixed "
                               "precision; on the CPU a float32 base under bfloat16 autocast (trl's default)."),
) -> None:
    """LoRA fine-tuning of the reasoner with trl: SFT (its loss on the answer set alone, the
    prompt masked), then path-level DPO (beta 0.1) from the SFT adapter with the SFT model as
    the reference; warm-up 3% of the steps, 2,048 tokens at most. Load the result with
    `--llm hf:BASE --llm-option adapter=OUT` (or vllm:)."""
    check_writable(out, folder=True)
    from adapath.methods.pathmind.checks import TRAIN_INSTALL, TRAIN_PACKAGES

    check_installed("pathmind finetune", TRAIN_PACKAGES, TRAIN_INSTALL)
    from adapath.methods.pathmind.sft_dpo import DEVICES, STAGES, finetune, training_device

    if stage not in STAGES:
        raise InputError(f"--stage {stage!r}: choose sft or dpo")
    if device not in DEVICES:
        raise InputError(f"--device {device!r}: choose {', '.join(DEVICES)}")
    if lr < 0:
        raise InputError(f"--lr {lr:g}: must be positive (0 = the stage's default)")
    if not data.is_file():
        raise InputError(f"{data}: no such file")
    if not (base.is_dir() or (base.suffix == ".gguf" and base.is_file())):
        raise InputError(f"{base}: not a model directory or .gguf file")
    if stage == "dpo" and (sft_adapter is None or not (sft_adapter / "adapter_config.json").is_file()):
        raise InputError("--stage dpo needs --sft-adapter DIR: the adapter `pathmind finetune --stage sft` wrote")
    if stage == "sft" and sft_adapter is not None:
        raise InputError("--sft-adapter belongs to --stage dpo")
    training_device(device)  # --device cuda without a GPU: one line before anything loads
    history = finetune(base, stage, data, out, epochs=epochs, lr=lr or None, max_steps=max_steps,
                       lora_rank=lora_rank, batch_size=batch_size, sft_adapter=sft_adapter, device=device)
    losses = [h["loss"] for h in history if "loss" in h]
    say(f"wrote {out}: {len(losses)} logged steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}" if losses
        else f"wrote {out}")
