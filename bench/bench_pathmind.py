"""PathMind: training seconds per epoch against the number of training questions, and per
graph scale inference ms/query, Hits@1/3 against degree and random baselines, prompt tokens.

    python bench/bench_pathmind.py [--time-scale 0.2] [--questions 250,500,1000] [--batches 1,8]
                                   [--scales 0.2,1.0] [--train 150] [--test 50] [--json FILE]

Table 1 (s/epoch): one graph at ``--time-scale``, questions generated on it, subgraphs built
once for the largest count (the smaller counts are its prefixes), then ``--epochs`` epochs per
(questions, batch) with ``--threads`` torch threads. An epoch trains on the questions whose
answer survives the subgraph bound, less the validation fifth, and scores the validation
fifth. Wall seconds and CPU seconds (this process) are both shown: on a shared machine the
wall time follows the load (printed beside it), the CPU time much less.

Before this version (per-question steps with features rebuilt each step, messages by
gather/scatter of one hidden vector per half-edge), on the same shared 2-core machine,
scale 0.2, budget 400, one torch thread, load ~6: 250 / 500 / 1,000 questions took 26.0 /
53.4 / 122.6 s per epoch (CPU 9.5 / 18.3 / 42.4 s); on its default two threads, 250
questions took 592 s at load ~11. The old code path is not kept here.

Table 2 (per scale): training on ``--train`` questions, inference and quality on ``--test``.

``--real``: PathMind on the real BioStrat-QA dev halves, per subgraph mode, beside AdaPath's
beam and walk (``bench/pathmind_real.py``):

    python bench/bench_pathmind.py --real [--scale 1.0] [--encoder hashing] [--modes ppr,question,metapath]
        [--budgets 400,1000,2000] [--budget 400] [--quality-epochs 4] [--limit N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np


def time_epochs(args) -> list[dict]:
    import torch

    from adapath.datasets.generate import QueryGenerator
    from adapath.methods.pathmind.train import Featurizer, TrainConfig, make_examples, train
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder
    from adapath.sources.synthetic import generate

    torch.set_num_threads(args.threads)
    counts = sorted(int(n) for n in args.questions.split(","))
    graph = generate(scale=args.time_scale, seed=0)
    records = QueryGenerator(graph).generate(counts[-1], seed=1)
    encoder = make_encoder(args.encoder)
    wall, cpu = time.perf_counter(), time.process_time()
    examples = make_examples(graph, records, encoder, budget=args.budget)
    build = {"build_seconds": time.perf_counter() - wall, "build_cpu_seconds": time.process_time() - cpu}
    featurize = Featurizer(graph, NodeEmbeddings(graph, encoder))
    featurize.encode_nodes(examples)  # what train does before its first epoch; not part of an epoch
    rows = []
    for n in counts:
        usable = sum(len(e.local_answers) > 0 for e in examples[:n])
        for batch in (int(b) for b in args.batches.split(",")):
            config = TrainConfig(epochs=args.epochs, patience=args.epochs, budget=args.budget, batch=batch,
                                 encoder=args.encoder)
            marks = [time.process_time()]

            def log(_, marks=marks):
                marks.append(time.process_time())

            _, history = train(graph, examples[:n], featurize, config, log=log)
            rows.append({"scale": args.time_scale, "questions": n, "usable": usable, "batch": batch,
                         "threads": args.threads, "epochs": len(history),
                         "seconds_per_epoch": float(np.mean([h["seconds"] for h in history])),
                         "cpu_seconds_per_epoch": float(np.mean(np.diff(marks))),
                         "load": os.getloadavg()[0], "val_hits3_last": history[-1]["val_hits3"], **build})
    return rows


def quality(scale, args) -> dict:
    import torch

    from adapath.datasets.biostrat import query_from_record
    from adapath.datasets.generate import QueryGenerator
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
    from adapath.sources.synthetic import generate

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    graph = generate(scale=scale, seed=0)
    records = QueryGenerator(graph).generate(args.train + args.test, seed=1)
    encoder = make_encoder(args.encoder)
    clock = time.perf_counter()
    examples = make_examples(graph, records, encoder, budget=args.budget)
    subgraph_ms = 1000 * (time.perf_counter() - clock) / len(examples)
    survive = float(np.mean([len(e.local_answers) > 0 for e in examples]))
    featurize = Featurizer(graph, NodeEmbeddings(graph, encoder))
    config = TrainConfig(epochs=args.quality_epochs, budget=args.budget, patience=args.quality_epochs,
                         encoder=args.encoder)
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


def print_time_table(rows, args) -> None:
    if not rows:
        return
    print(f"PathMind s/epoch against training questions: scale {args.time_scale}, budget {args.budget}, "
          f"encoder {args.encoder}, {args.threads} torch thread(s), CPU; subgraphs for "
          f"{rows[-1]['questions']} questions built once in {rows[0]['build_seconds']:.1f} s "
          f"(CPU {rows[0]['build_cpu_seconds']:.1f} s)")
    header = ("questions", "usable", "batch", "s/epoch", "CPU s/epoch", "CPU ms/usable q", "load")
    print("".join(f"{h:>16}" for h in header))
    for r in rows:
        print("".join(f"{v:>16}" for v in (
            r["questions"], r["usable"], r["batch"], f"{r['seconds_per_epoch']:.1f}",
            f"{r['cpu_seconds_per_epoch']:.1f}", f"{1000 * r['cpu_seconds_per_epoch'] / max(r['usable'], 1):.1f}",
            f"{r['load']:.1f}")))


def print_quality_table(rows, args) -> None:
    if not rows:
        return
    print(f"PathMind per scale: {args.train} training / {args.test} test questions, budget {args.budget}, "
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-scale", type=float, default=0.2, help="Graph scale of the s/epoch table.")
    parser.add_argument("--questions", default="250,500,1000", help="Training question counts (empty: no table).")
    parser.add_argument("--batches", default="1,8", help="Questions per step to time.")
    parser.add_argument("--epochs", type=int, default=2, help="Epochs timed per row (their mean is shown).")
    parser.add_argument("--scales", default="0.2", help="Graph scales of the quality table (empty: no table).")
    parser.add_argument("--train", type=int, default=150, help="Training questions of the quality table.")
    parser.add_argument("--test", type=int, default=50, help="Test questions of the quality table.")
    parser.add_argument("--quality-epochs", type=int, default=4, help="Epochs of the quality table's training.")
    parser.add_argument("--budget", type=int, default=400, help="Subgraph node budget.")
    parser.add_argument("--threads", type=int, default=1, help="torch threads.")
    parser.add_argument("--encoder", default="hashing", help="Query and node-text encoder.")
    parser.add_argument("--json", default=None, help="Also write the rows to this JSON file.")
    real = parser.add_argument_group("--real: the real BioStrat-QA dev halves (bench/pathmind_real.py)")
    real.add_argument("--real", action="store_true", help="Run on the real records instead of the tables above.")
    real.add_argument("--records", type=Path, default=None, help="dev.jsonl (default: ../shared/data/biostrat_qa).")
    real.add_argument("--work", type=Path, default=Path(__file__).parent / "out" / "real-records",
                      help="Graph, bank, embeddings and reports, shared with bench_real_records.py.")
    real.add_argument("--scale", type=float, default=1.0, help="Graph scale of the planted graph.")
    real.add_argument("--split", choices=("test", "inner"), default="test",
                      help="test: bank half / test half; inner: the bank half halved again (tuning).")
    real.add_argument("--modes", default="ppr,question,metapath", help="Subgraph modes measured.")
    real.add_argument("--train-modes", default="ppr,question,metapath", help="Modes PathMind is trained and scored in.")
    real.add_argument("--time-mode", default="metapath", help="Mode of the one-epoch timing per budget.")
    real.add_argument("--budgets", default="400,1000,2000", help="Budgets of the survival and timing tables.")
    real.add_argument("--batch", type=int, default=8, help="Questions per training step.")
    real.add_argument("--candidates", type=int, default=50, help="metapath: the walk scorer's candidates kept.")
    real.add_argument("--folds", type=int, default=4,
                      help="metapath: training questions guided by banks built without their fold (1: the bank).")
    real.add_argument("--select", choices=("hits1", "hits3"), default="hits1",
                      help="Validation score that picks the best epoch.")
    real.add_argument("--levels", default="explicit,implicit,bare")
    real.add_argument("--adapath", default="beam,walk", help="AdaPath variants answered beside.")
    real.add_argument("--limit", type=int, default=0, help="Test records, evenly spaced (0: all).")
    real.add_argument("--train-limit", type=int, default=0, help="Training records, evenly spaced (0: all).")
    real.add_argument("--time-records", type=int, default=90,
                      help="Training records (x levels), evenly spaced, of the one-epoch timing per budget.")
    args = parser.parse_args()
    if args.real:
        import pathmind_real

        args.json = Path(args.json) if args.json else None
        args.epochs = args.quality_epochs
        pathmind_real.print_tables(pathmind_real.run(args))
        return
    time_rows = time_epochs(args) if args.questions else []
    quality_rows = [quality(float(s), args) for s in args.scales.split(",")] if args.scales else []
    print_time_table(time_rows, args)
    print_quality_table(quality_rows, args)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"epochs": time_rows, "quality": quality_rows}, handle, indent=2)


if __name__ == "__main__":
    main()
