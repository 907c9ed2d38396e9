"""PathMind's priority networks side by side on a small generated graph: what `pathmind train`
with no options learns, against its named variants.

    python bench/bench_pathmind_default.py [--scale 0.02] [--train 320] [--test 80] [--hops 1,2]
        [--models default,unpruned,mul,walk] [--encoder minilm] [--threads 1] [--json FILE]
    python bench/bench_pathmind_default.py --walk-model DIR    # the walk algebra's diagnosis

The graph is `kg synth --scale S` (seed 0); the questions `dataset generate --hops 1,2` (seed
0), the first ``--train`` for training (a fifth of them validating, as `pathmind train`
splits), the next ``--test`` answered at the explicit level without an LLM. Each model trains
with the default epochs and early stopping from the same seed. Columns: the strict extractive
exact match of the answered questions (the answer set's first entity), the answer set's
Hits@1 / Hits@3, the best validation Hits@1, training questions per second (the epochs'
mean), answering questions per second (selection and paths included; after an untimed warm-up
on 8 of them that reads the node texts), and per question and
step the entities propagated from and the edges propagated along (A*Net's count; without
pruning: every visited entity and its edges).

Models: ``default`` (no options: the neural Bellman-Ford, additive message, BCE, pruned to
``TrainConfig.nodes`` entities per step), ``unpruned`` (``--nodes 0``), ``mul`` (``--message
mul``), ``walk`` (``--network walk``: the paper's formula as literal walk algebra, the
default before), ``nbfnet`` (the walk variant that learned: ``--cost product --entity gate
--readout layers --loss softmax``).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)

MODELS = {"default": {}, "unpruned": {"nodes": 0}, "mul": {"message": "mul"}, "walk": {"network": "walk"},
          "nbfnet": {"cost": "product", "entity": "gate", "readout": "layers", "loss": "softmax"},
          "text": {"entity_text": True}, "nodes8": {"nodes": 8}, "nodes64": {"nodes": 64}, "nodes128": {"nodes": 128}}


def run(args) -> list[dict]:
    import numba
    import torch

    from adapath.datasets.biostrat import query_from_record
    from adapath.datasets.generate import QueryGenerator
    from adapath.eval.metrics import em_strict
    from adapath.methods.pathmind.config import TrainConfig
    from adapath.methods.pathmind.infer import PathMind
    from adapath.methods.pathmind.train import Features, make_examples, train
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder
    from adapath.sources.synthetic import generate

    torch.set_num_threads(args.threads)
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    graph = generate(scale=args.scale, seed=0)
    hops = tuple(int(h) for h in args.hops.split(","))
    records = QueryGenerator(graph).generate(args.train + args.test, seed=0, hops=hops)
    fit, test = records[:args.train], records[args.train:]
    encoder = make_encoder(args.encoder)
    examples = make_examples(graph, fit, encoder)
    nodes = NodeEmbeddings(graph, encoder)
    features = Features(graph, nodes, 3)
    queries = [query_from_record(r, "explicit") for r in test]
    rows = []
    for name in args.models.split(","):
        config = TrainConfig(encoder=args.encoder, **MODELS[name])
        clock = time.perf_counter()
        model, history = train(graph, examples, features, config)
        trained = time.perf_counter() - clock
        fitted = int(round(len(examples) * (1 - config.val_fraction)))
        method = PathMind(graph, model, config, encoder)
        method.answer(queries[:8])  # untimed: the node texts read, the kernels compiled
        visits = []
        if hasattr(model, "visits"):  # the Bellman-Ford network counts its steps' work
            forward = model.forward

            def counted(*a, forward=forward, model=model, visits=visits, **k):
                out = forward(*a, **k)
                visits.append(list(model.visits))
                return out

            model.forward = counted
        clock = time.perf_counter()
        results = method.answer(queries)
        answered = time.perf_counter() - clock
        gold = [set(r["valid_answer_names"]) for r in test]
        em = np.mean([em_strict(r.answer, g) for r, g in zip(results, gold)])
        hits = [np.mean([bool(set(r.extra["answer_set"][:k]) & g) for r, g in zip(results, gold)]) for k in (1, 3)]
        steps = np.mean(np.array(visits), axis=0).tolist() if visits else []
        rows.append({"model": name, "settings": MODELS[name], "em": float(em), "hits1": float(hits[0]),
                     "hits3": float(hits[1]), "val_hits1": max(h["val_hits1"] for h in history),
                     "epochs": len(history), "train_seconds": trained,
                     "train_qps": fitted / float(np.mean([h["seconds"] for h in history])),
                     "answer_qps": len(queries) / answered, "visits": steps})
        print(table([rows[-1]], header=not rows[:-1]), flush=True)
    return rows


def walk_volume(args) -> None:
    """Why the literal walk algebra does not learn: over each answered question's 3-hop ball
    (topics left out; for the Bellman-Ford network, the entities its search reached), how much of its d~ = sign(d) log(1 + |d|), channel by channel, the log
    of the number of walks from the topics (1 to 3 steps) explains (R^2 of a least-squares
    line), for the model ``args.walk_model`` (trained by `pathmind train --network walk`, or by
    default, on this bench's graph and questions)."""
    import scipy.sparse as sp
    import torch

    from adapath.datasets.generate import QueryGenerator
    from adapath.methods.pathmind.model import signed_log
    from adapath.methods.pathmind.train import Features, load_checkpoint, make_examples
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder
    from adapath.sources.synthetic import generate

    model, config = load_checkpoint(args.walk_model)
    graph = generate(scale=args.scale, seed=0)
    hops = tuple(int(h) for h in args.hops.split(","))
    records = QueryGenerator(graph).generate(args.train + args.test, seed=0, hops=hops)[args.train:]
    encoder = make_encoder(config.encoder)
    examples = make_examples(graph, records, encoder)
    features = Features(graph, NodeEmbeddings(graph, encoder), config.hops)
    n = graph.num_nodes
    rows = np.repeat(np.arange(n), np.diff(graph.indptr))
    adjacency = sp.csr_matrix((np.ones(len(rows)), (rows, np.asarray(graph.indices))), shape=(n, n))
    r2 = []
    with torch.no_grad():
        for e in examples:
            inputs = features.batch([e])
            if config.network == "walk":
                d = signed_log(model(inputs).d[:, 0]).numpy()  # places x channels
            else:  # the Bellman-Ford state itself, where the search reached
                d = model(inputs, probes=("cumulative",)).d[:, 0].numpy()
            walks = np.zeros(n)
            step = np.zeros(n)
            step[list(e.topics)] = 1.0
            for _ in range(config.hops):
                step = adjacency @ step
                walks += step
            inside = walks[inputs.places.nodes] > 0
            inside[inputs.places.local_of[list(e.topics)]] = False
            inside &= np.abs(d).sum(1) > 0
            x = np.log(walks[inputs.places.nodes][inside])
            for channel in d[inside].T:
                if np.var(channel) > 0 and np.var(x) > 0:
                    r2.append(np.corrcoef(x, channel)[0, 1] ** 2)
    print(f"{config.network} model {args.walk_model}: R^2 of d~ (per channel) against log(walks), over {len(examples)} questions' "
          f"balls: median {np.median(r2):.2f}, quartiles {np.quantile(r2, 0.25):.2f} / {np.quantile(r2, 0.75):.2f}")


def table(rows: list[dict], header: bool = True) -> str:
    lines = []
    if header:
        lines += ["| model | EM % | Hits@1 % | Hits@3 % | val Hits@1 | epochs | train q/s | answer q/s | "
                  "entities / edges per question, step 1..3 |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        visits = ", ".join(f"{n:.0f} / {e:.0f}" for n, e in r["visits"]) or "-"
        lines.append(f"| {r['model']} | {100 * r['em']:.1f} | {100 * r['hits1']:.1f} | {100 * r['hits3']:.1f} | "
                     f"{r['val_hits1']:.3f} | {r['epochs']} | {r['train_qps']:.1f} | {r['answer_qps']:.1f} | "
                     f"{visits} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.02)
    parser.add_argument("--train", type=int, default=320)
    parser.add_argument("--test", type=int, default=80)
    parser.add_argument("--hops", default="1,2")
    parser.add_argument("--models", default="default,unpruned,mul,walk", help=f"Of {', '.join(MODELS)}.")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default="")
    parser.add_argument("--walk-model", default="", help="A model of `pathmind train --network walk` on this "
                        "graph and questions: print how much of its d~ the log of the walk count explains, only.")
    args = parser.parse_args()
    if args.walk_model:
        walk_volume(args)
        return
    for name in args.models.split(","):
        if name not in MODELS:
            parser.error(f"--models: {name!r} is not one of {', '.join(MODELS)}")
    rows = run(args)
    print(f"\ngraph: kg synth --scale {args.scale} (seed 0); {args.train} training / {args.test} answered questions "
          f"of {args.hops} hops; encoder {args.encoder}; {args.threads} thread(s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
