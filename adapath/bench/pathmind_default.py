"""PathMind's priority networks side by side on a small generated graph: what `pathmind train`
with no options learns, against its named variants (``--models``: names of ``pathmind_models``).
Each trains from the same seed after an untimed epoch on 16 questions and answering of 8 (kernels
compiled). Figures: strict EM, answer-set Hits@1/3, best validation Hits@1, training and answering
questions/s, entities and edges per step. ``--walk-model DIR`` prints instead how much of a model's
priority input the log of the walk count explains (docs/benchmarks/bench_pathmind_default.md)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)
from adapath.bench.inputs import inputs, parser
from adapath.bench.pathmind import training_inputs
from adapath.bench.pathmind_models import MODELS, model_names, model_settings
from adapath.bench.result import report
from adapath.datasets.biostrat import query_from_record
from adapath.eval.metrics import em_strict
from adapath.methods.pathmind.config import TrainConfig


def questions(args):
    """The bench's graph (from the shared cache) and its training and answered records."""
    graph, _ = inputs().graph(args.scale, 0)
    records = inputs().questions(graph, args.train + args.test, seed=0, hops=[int(h) for h in args.hops.split(",")])
    return graph, records[:args.train], records[args.train:]


def counting_visits(model) -> list:
    """Each forward pass's per-step (entities, edges) of the Bellman-Ford network, appended."""
    visits = []
    if hasattr(model, "visits"):
        forward = model.forward

        def counted(*a, **k):
            out = forward(*a, **k)
            visits.append(list(model.visits))
            return out

        model.forward = counted
    return visits


def run(args) -> list[dict]:
    import numba
    import torch

    from adapath.methods.pathmind.infer import PathMind
    from adapath.methods.pathmind.reader import evidence_for, fit_reader
    from adapath.methods.pathmind.train import train

    torch.set_num_threads(args.threads)
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    graph, fit, test = questions(args)
    encoder, examples, features = training_inputs(graph, fit, args.encoder)
    queries = [query_from_record(r, "explicit") for r in test]
    gold = [set(r["valid_answer_names"]) for r in test]
    rows = []
    for name in model_names(args.models):
        config = TrainConfig(encoder=args.encoder, **model_settings(name))
        train(graph, examples[:16], features, replace(config, epochs=1))  # untimed: this network's kernels compiled
        clock = time.perf_counter()
        model, history = train(graph, examples, features, config)
        reader = None
        if config.rerank:  # fitted as `pathmind train --rerank` fits it, timed with the training
            reader = fit_reader(model, features, examples, config, evidence_for(graph, None, features), encoder)
        trained = time.perf_counter() - clock
        fitted = int(round(len(examples) * (1 - config.val_fraction)))
        method = PathMind(graph, model, config, encoder, reader=reader)
        method.answer(queries[:8])  # untimed: the node texts read, the kernels compiled
        visits = counting_visits(model)
        clock = time.perf_counter()
        results = method.answer(queries)
        answered = time.perf_counter() - clock
        hits = [np.mean([bool(set(r.extra["answer_set"][:k]) & g) for r, g in zip(results, gold)]) for k in (1, 3)]
        steps = np.mean(np.array(visits), axis=0) if visits else []
        rows.append({"model": name, "em_pct": round(100 * float(np.mean([em_strict(r.answer, g)
                                                                          for r, g in zip(results, gold)])), 1),
                     "hits1_pct": round(100 * float(hits[0]), 1), "hits3_pct": round(100 * float(hits[1]), 1),
                     "val_hits1": round(max(h["val_hits1"] for h in history), 3), "epochs": len(history),
                     "train_seconds": round(trained, 1),
                     "train_qps": round(fitted / float(np.mean([h["seconds"] for h in history])), 1),
                     "answer_qps": round(len(queries) / answered, 1),
                     "entities_edges_per_step": " ; ".join(f"{n:,.0f} / {e:,.0f}" for n, e in steps) or "-"})
    return rows


def walk_volume(args) -> dict:
    """R^2 per channel over each question's 3-hop ball (topics left out) of the priority's input
    against the log of the number of walks of 1 to 3 steps from the topics."""
    import scipy.sparse as sp
    import torch

    from adapath.methods.pathmind.model import signed_log
    from adapath.methods.pathmind.train import load_checkpoint

    model, config = load_checkpoint(args.walk_model)
    graph, _, records = questions(args)
    _, examples, features = training_inputs(graph, records, config.encoder, config.hops)
    n = graph.num_nodes
    rows = np.repeat(np.arange(n), np.diff(graph.indptr))
    adjacency = sp.csr_matrix((np.ones(len(rows)), (rows, np.asarray(graph.indices))), shape=(n, n))
    r2 = []
    with torch.no_grad():
        for e in examples:
            inputs = features.batch([e])
            if config.network == "walk":
                d = signed_log(model(inputs).d[:, 0]).numpy()  # places x channels
            else:
                d = model(inputs, probes=("cumulative",)).d[:, 0].numpy()
            walks, step = np.zeros(n), np.zeros(n)
            step[list(e.topics)] = 1.0
            for _ in range(config.hops):
                step = adjacency @ step
                walks += step
            inside = walks[inputs.places.nodes] > 0
            inside[inputs.places.local_of[list(e.topics)]] = False
            inside &= np.abs(d).sum(1) > 0
            x = np.log(walks[inputs.places.nodes][inside])
            r2 += [np.corrcoef(x, c)[0, 1] ** 2 for c in d[inside].T if np.var(c) > 0 and np.var(x) > 0]
    return {"network": config.network, "questions": len(examples), "r2_median": round(float(np.median(r2)), 2),
            "r2_q1": round(float(np.quantile(r2, 0.25)), 2), "r2_q3": round(float(np.quantile(r2, 0.75)), 2)}


def arguments():
    return parser(__doc__, {
        "train": (320, "generated training questions"),
        "test": (80, "generated questions answered"),
        "hops": ("1,2", "the questions' hop counts"),
        "models": ("default,network,paper-recipe,nodes=0,message=mul,walk", f"Of {', '.join(MODELS)}, or "
                   "key=value+key=value training settings against the default, or a name then settings "
                   "(network+nodes=0), as bench pathmind --real reads them."),
        "encoder": ("minilm", "query and node-text encoder"),
        "threads": (1, "torch and Numba threads"),
        "walk-model": (None, "a `pathmind train` model on this graph and questions: print only how "
                       "much of its priority input the walk count explains", Path),
    }, scale=0.02)


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    where = (f"kg synth --scale {args.scale} (seed 0); {args.train} training / {args.test} answered questions of "
             f"{args.hops} hops; encoder {args.encoder}; {args.threads} thread(s)")
    if args.walk_model:
        report(args, walk_volume(args), f"walk count against the priority's input: {where}")
        return
    model_names(args.models)
    report(args, run(args), f"PathMind's priority networks: {where}")
