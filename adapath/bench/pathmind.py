"""PathMind: training s/epoch against the number of training questions (after an untimed epoch),
and per graph scale inference ms/query and answer-set Hits@1/3 against the unlearned orders;
``--real``: on the real BioStrat-QA dev halves beside AdaPath (``pathmind_real.py``)."""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from adapath.bench.inputs import DEFAULT_RECORDS, add_common, add_options, inputs, parser
from adapath.bench.real_records import GRAPHS
from adapath.bench.result import report
from adapath.bench.timing import timed
from adapath.datasets.biostrat import query_from_record
from adapath.llm import ScriptedBackend


def training_inputs(graph, records: list[dict], encoder_spec: str, hops: int = 3) -> tuple:
    """(encoder, training examples, features) of ``records``, as training reads them."""
    from adapath.methods.pathmind.train import Features, make_examples
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder

    encoder = make_encoder(encoder_spec)
    features = Features(graph, NodeEmbeddings(graph, encoder), hops)
    return encoder, make_examples(graph, records, encoder), features


def generated_examples(scale: float, count: int, encoder_spec: str) -> tuple:
    """(graph, records, encoder, examples, features) of ``count`` questions at ``scale``."""
    graph, _ = inputs().graph(scale, 0)
    records = inputs().questions(graph, count, seed=1)
    return graph, records, *training_inputs(graph, records, encoder_spec)


def time_epochs(args) -> list[dict]:
    from adapath.methods.pathmind.train import TrainConfig, train

    counts = sorted(int(n) for n in args.questions.split(","))
    graph, _, _, examples, features = generated_examples(args.time_scale, counts[-1], args.encoder)
    # one untimed epoch on a few questions compiles the kernels, so the first row is not the slowest
    train(graph, examples[:16], features, TrainConfig(epochs=1, patience=1, encoder=args.encoder))
    rows = []
    for n in counts:
        usable = sum(bool(e.answers) and bool(features.subgraph(e.topics)[-1][e.answers].any()) for e in examples[:n])
        for batch in (int(b) for b in args.batches.split(",")):
            config = TrainConfig(epochs=args.epochs, patience=args.epochs, batch=batch, encoder=args.encoder)
            marks = [time.process_time()]
            _, history = train(graph, examples[:n], features, config, log=lambda _, m=marks: m.append(time.process_time()))
            cpu = float(np.mean(np.diff(marks)))
            rows.append({"scale": args.time_scale, "questions": n, "usable": usable, "batch": batch,
                         "threads": args.threads, "epochs": len(history),
                         "seconds_per_epoch": float(np.mean([h["seconds"] for h in history])),
                         "cpu_seconds_per_epoch": cpu, "cpu_ms_per_usable_question": 1000 * cpu / max(usable, 1),
                         "load": os.getloadavg()[0], "val_hits3_last": history[-1]["val_hits3"]})
    return rows


def quality(scale, args) -> dict:
    import torch

    from adapath.methods.pathmind.infer import PathMind
    from adapath.methods.pathmind.train import TrainConfig, train

    torch.manual_seed(0)
    graph, records, encoder, examples, features = generated_examples(scale, args.train + args.test, args.encoder)
    config = TrainConfig(epochs=args.quality_epochs, patience=args.quality_epochs, encoder=args.encoder)
    model, history = train(graph, examples[: args.train], features, config)
    queries = [query_from_record(r, "explicit") for r in records[args.train:]]
    gold = [set(int(graph.node_id[a]) for a in e.answers) for e in examples[args.train:]]
    out = {"scale": scale, "nodes": graph.num_nodes, "epochs": len(history),
           "epoch_seconds": float(np.mean([h["seconds"] for h in history])), "test": len(queries)}
    for mode in ("model", "nearest", "random"):
        pathmind = PathMind(graph, model, config, encoder, None, mode=mode)
        pathmind.answer(queries[:2])  # warm: compiled kernels, node features
        seconds, results = timed(pathmind.answer, queries)
        if mode == "model":
            out["infer_ms_per_query"] = 1000 * seconds / len(queries)
        for k in (1, 3):
            out[f"{mode}_hits{k}"] = float(np.mean([bool(set(r.extra["prioritized"][:k]) & g)
                                                    for r, g in zip(results, gold)]))
    results = PathMind(graph, model, config, encoder, ScriptedBackend(default="{x}")).answer(queries)
    out["calls_per_query"] = float(np.mean([r.usage["calls"] for r in results]))
    out["prompt_tokens_per_query"] = float(np.mean([r.usage["prompt_tokens"] for r in results]))
    return out


def arguments() -> argparse.ArgumentParser:
    out = parser(__doc__, {
        "time-scale": (0.2, "Graph scale of the s/epoch table."),
        "questions": ("250,500,1000", "Training question counts (empty: no table)."),
        "batches": ("1,4", "Questions per step to time."),
        "epochs": (2, "Epochs timed per row (their mean is shown)."),
        "scales": ("0.2", "Graph scales of the quality table (empty: no table)."),
        "train": (150, "Training questions of the quality table."),
        "test": (50, "Test questions of the quality table."),
        "quality-epochs": (4, "Epochs of the quality table's training."),
        "threads": (2, "torch threads."),
        "encoder": (None, "Query and node-text encoder (default: hashing; minilm with --real)."),
    })
    real = out.add_argument_group("--real: the real BioStrat-QA dev halves (adapath/bench/pathmind_real.py)")
    add_options(real, {"real": (False, "Run on the real records instead of the tables above.")})
    add_common(real, records=DEFAULT_RECORDS, work=None, competitors=20, scale=1.0, split="test",
               levels="explicit,implicit,bare", limit=0)
    add_options(real, {
        "graph": ("base+diseases+competitors", "bench real-records' graph", {"choices": GRAPHS}),
        "models": ("default,network,paper-recipe", "training options, a model each (the first: the "
                   "ablations'): names, key=value+key=value settings against the default, or a name then "
                   "settings (network+seed=1)"),
        "variants": ("models,readout,cumulative,future,nearest,random,greedy,pathmind+walk",
                     "PathMind runs (models: each trained model)"),
        "generated": ("", "learning curve: generated question counts, e.g. 0,2000"),
        "curve-epochs": (0, "most epochs of a curve model (0: --quality-epochs)"),
        "curve-then-real": (False, "each curve model also fine-tuned on the real"),
        "curve-model": ("", "the curve's training option (default: the first of --models)"),
        "batch": (4, "questions per training step"),
        "patience": (3, "epochs without improvement before stopping"),
        "adapath": ("beam,walk", "AdaPath variants answered beside"),
        "answer-nodes": ("", "entities per step the first model also answers with, e.g. 128,256 (A*Net's "
                             "test node ratio)"),
        "train-records": (0, "PathMind's training records of the bank half (0: all)"),
        "reasoner": (0, "test records of the reasoner rows (0: none)"),
        "reasoner-train": (500, "reasoner training questions (records x levels)"),
        "reasoner-val": (20, "bank-half records held out to pick DPO's rate"),
        "reasoner-dpo-lrs": ("5e-6,5e-5", "DPO learning rates tried (the best: Full)"),
        "reasoner-seed": (0, "seed of the reasoner data's draw"),
        "reasoner-epochs": (1, "SFT and DPO epochs of the reasoner"),
        "reasoner-steps": (-1, "most steps per reasoner stage (-1: the epochs)"),
    })
    return out


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    args.encoder = args.encoder or ("minilm" if args.real else "hashing")
    if args.real:
        from adapath.bench import pathmind_real

        args.epochs = args.quality_epochs
        return pathmind_real.main(args)
    import torch

    torch.set_num_threads(args.threads)
    time_rows = time_epochs(args) if args.questions else []
    quality_rows = [quality(float(s), args) for s in args.scales.split(",")] if args.scales else []
    report(args, {"epochs": time_rows, "quality": quality_rows},
           f"bench pathmind: encoder {args.encoder}, {args.threads} torch thread(s), CPU; epochs: s/epoch against "
           f"training questions at scale {args.time_scale} (the load beside: wall time follows it on a shared machine, "
           f"CPU time much less); quality: {args.train} training / {args.test} test questions per scale, answer-set "
           "Hits@1/3 of the learned priority and the unlearned orders (paper: 1 call, 216 input tokens per query)")
