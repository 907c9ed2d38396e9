"""PathMind: training s/epoch against the number of training questions (after an untimed epoch),
and per graph scale inference ms/query and answer-set Hits@1/3 against the unlearned orders;
``--real``: on the real BioStrat-QA dev halves beside AdaPath (``pathmind_real.py``)."""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from adapath.bench.inputs import DEFAULT_RECORDS, add_common, inputs, parser
from adapath.bench.real_records import GRAPHS
from adapath.bench.result import report
from adapath.bench.timing import timed
from adapath.datasets.biostrat import query_from_record
from adapath.llm import ScriptedBackend


def generated_examples(scale: float, count: int, encoder_spec: str) -> tuple:
    """(graph, records, encoder, examples, features) of ``count`` questions at ``scale``."""
    from adapath.methods.pathmind.train import Features, make_examples
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder

    graph, _ = inputs().graph(scale, 0)
    records = inputs().questions(graph, count, seed=1)
    encoder = make_encoder(encoder_spec)
    features = Features(graph, NodeEmbeddings(graph, encoder), 3)
    return graph, records, encoder, make_examples(graph, records, encoder), features


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
    out = parser(__doc__)
    out.add_argument("--time-scale", type=float, default=0.2, help="Graph scale of the s/epoch table.")
    out.add_argument("--questions", default="250,500,1000", help="Training question counts (empty: no table).")
    out.add_argument("--batches", default="1,4", help="Questions per step to time.")
    out.add_argument("--epochs", type=int, default=2, help="Epochs timed per row (their mean is shown).")
    out.add_argument("--scales", default="0.2", help="Graph scales of the quality table (empty: no table).")
    out.add_argument("--train", type=int, default=150, help="Training questions of the quality table.")
    out.add_argument("--test", type=int, default=50, help="Test questions of the quality table.")
    out.add_argument("--quality-epochs", type=int, default=4, help="Epochs of the quality table's training.")
    out.add_argument("--threads", type=int, default=2, help="torch threads.")
    out.add_argument("--encoder", default=None, help="Query and node-text encoder (default: hashing; minilm "
                        "with --real).")
    real = out.add_argument_group("--real: the real BioStrat-QA dev halves (adapath/bench/pathmind_real.py)")
    real.add_argument("--real", action="store_true", help="Run on the real records instead of the tables above.")
    add_common(real, records=DEFAULT_RECORDS, work=None, competitors=20, scale=1.0, split="test",
               levels="explicit,implicit,bare", limit=0)
    real.add_argument("--graph", choices=GRAPHS, default="base+diseases+competitors", help="bench real-records' graph")
    real.add_argument("--models", default="paper,softmax,balanced,product,gate,layers,nbfnet",
                      help="training options, a model each (the first: the ablations'): names or key=value+key=value")
    real.add_argument("--variants", default="models,readout,cumulative,future,nearest,random,greedy,pathmind+walk",
                      help="PathMind runs (models: each trained model)")
    real.add_argument("--generated", default="", help="learning curve: generated question counts, e.g. 0,2000")
    real.add_argument("--curve-epochs", type=int, default=0, help="most epochs of a curve model (0: --quality-epochs)")
    real.add_argument("--curve-then-real", action="store_true", help="each curve model also fine-tuned on the real")
    real.add_argument("--curve-model", default="", help="the curve's training option (default: the first of --models)")
    real.add_argument("--batch", type=int, default=4, help="questions per training step")
    real.add_argument("--patience", type=int, default=3, help="epochs without improvement before stopping")
    real.add_argument("--adapath", default="beam,walk", help="AdaPath variants answered beside")
    real.add_argument("--train-records", type=int, default=0, help="PathMind's training records of the bank half (0: all)")
    real.add_argument("--reasoner", type=int, default=0, help="test records of the reasoner rows (0: none)")
    real.add_argument("--reasoner-train", type=int, default=500, help="reasoner training questions (records x levels)")
    real.add_argument("--reasoner-val", type=int, default=20, help="bank-half records held out to pick DPO's rate")
    real.add_argument("--reasoner-dpo-lrs", default="5e-6,5e-5", help="DPO learning rates tried (the best: Full)")
    real.add_argument("--reasoner-seed", type=int, default=0, help="seed of the reasoner data's draw")
    real.add_argument("--reasoner-epochs", type=int, default=1, help="SFT and DPO epochs of the reasoner")
    real.add_argument("--reasoner-steps", type=int, default=-1, help="most steps per reasoner stage (-1: the epochs)")
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
