"""PathMind: training time per epoch, inference ms/query, Hits@1/3 against degree and
random baselines, and prompt tokens per query (one call each), per graph scale.

    python bench/bench_pathmind.py --scales 0.2,1.0 [--train 150] [--test 50] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def run(scale, args):
    import torch

    from adapath.datasets.biostrat import query_from_record
    from adapath.datasets.generate import QueryGenerator
    from adapath.engine.synthetic import generate
    from adapath.llm import ScriptedBackend
    from adapath.methods.pathmind.infer import PathMind
    from adapath.methods.pathmind.train import (
        Featurizer,
        TrainConfig,
        baseline_hits,
        hits_at,
        make_examples,
        train,
    )
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder

    torch.manual_seed(0)
    graph = generate(scale=scale, seed=0)
    records = QueryGenerator(graph).generate(args.train + args.test, seed=1)
    encoder = make_encoder(args.encoder)
    clock = time.perf_counter()
    examples = make_examples(graph, records, encoder, budget=args.budget)
    subgraph_ms = 1000 * (time.perf_counter() - clock) / len(examples)
    survive = float(np.mean([len(e.local_answers) > 0 for e in examples]))
    featurize = Featurizer(graph, NodeEmbeddings(graph, encoder))
    config = TrainConfig(epochs=args.epochs, budget=args.budget, patience=args.epochs, encoder=args.encoder)
    model, history = train(graph, examples[: args.train], featurize, config)
    held_out = [e for e in examples[args.train:] if len(e.local_answers)]
    queries = [query_from_record(r, "explicit") for r in records[args.train:]]
    pathmind = PathMind(graph, model, config, encoder, None)
    pathmind.answer(queries[:2])
    clock = time.perf_counter()
    pathmind.answer(queries)
    infer_ms = 1000 * (time.perf_counter() - clock) / len(queries)
    backend = ScriptedBackend(default="{x}")
    results = PathMind(graph, model, config, encoder, backend).answer(queries)
    return {
        "scale": scale, "nodes": graph.num_nodes, "budget": args.budget, "answer_survives": survive,
        "subgraph_ms_per_query": subgraph_ms,
        "epoch_seconds": float(np.mean([h["seconds"] for h in history])), "epochs": len(history),
        "infer_ms_per_query": infer_ms,
        "hits1": hits_at(model, featurize, held_out, 1), "hits3": hits_at(model, featurize, held_out, 3),
        "degree_hits1": baseline_hits(graph, held_out, "degree", 1), "degree_hits3": baseline_hits(graph, held_out, "degree", 3),
        "random_hits1": baseline_hits(graph, held_out, "random", 1), "random_hits3": baseline_hits(graph, held_out, "random", 3),
        "calls_per_query": float(np.mean([r.usage["calls"] for r in results])),
        "prompt_tokens_per_query": float(np.mean([r.usage["prompt_tokens"] for r in results])),
        "held_out": len(held_out),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="0.2,1.0")
    parser.add_argument("--train", type=int, default=150)
    parser.add_argument("--test", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--encoder", default="hashing")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = [run(float(s), args) for s in args.scales.split(",")]
    print(f"bench_pathmind: {args.train} training / {args.test} test questions, budget {args.budget}, "
          f"encoder {args.encoder}, CPU")
    header = ("scale", "s/epoch", "infer ms/q", "Hits@1", "Hits@3", "deg @1/@3", "rand @1/@3", "calls/q",
              "tokens/q", "survive")
    print("".join(f"{h:>12}" for h in header))
    for r in rows:
        print("".join(f"{v:>12}" for v in (
            r["scale"], f"{r['epoch_seconds']:.1f}", f"{r['infer_ms_per_query']:.1f}", f"{r['hits1']:.3f}",
            f"{r['hits3']:.3f}", f"{r['degree_hits1']:.2f}/{r['degree_hits3']:.2f}",
            f"{r['random_hits1']:.2f}/{r['random_hits3']:.2f}", f"{r['calls_per_query']:.1f}",
            f"{r['prompt_tokens_per_query']:.0f}", f"{r['answer_survives']:.2f}")))
    print("paper: 1 call, 216 input tokens per query")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
