"""PathMind's speed on one graph: questions per second for training, validation and
answering, and minor page faults per question, for each setting side by side, with a check
that the settings give the same answers.

    python bench/bench_pathmind_speed.py [--kg DIR --records dev.jsonl | --scale 1.0] [--encoder minilm]
        [--models paper,nbfnet] [--settings before,after] [--train 64] [--validate 64] [--answer 96]
        [--sources TREE,TREE] [--threads 2] [--json FILE]

Settings, each run in a process of its own (the memory setting is process-wide):

- ``before``: every question of a batch runs over the union of the batch's reaches (one mask
  for the batch), and freed memory goes back to the system (glibc's default);
- ``after``: each question's passes skip the sources its walks have not reached (a bit per
  question), and freed memory is kept for the next batch (``adapath.memory``);
- ``cuda``: the network and its relational passes on the GPU (torch's ops), beside the CPU.

Every setting starts from the same seeded weights (an untrained network: the cost of a pass
does not depend on its weights), compiles the kernels on one untimed batch of each phase
first, then times ``--train`` training questions (batches of 4, optimizer steps included),
``--validate`` validation questions (batches of 8, every entity scored) and ``--answer``
questions answered without an LLM (batches of 8, selection and paths included). "same" says
whether a setting's answers (the K selected entities of every question) equal the first
setting's.

``--sources`` compares code as well: each source tree (a folder with an ``adapath`` package,
such as ``git archive REV | tar -x -C DIR``) runs every setting with its package first on
``PYTHONPATH``, side by side in the same run; "same" then also says whether the trees answer
alike.

With ``--kg`` the questions are the records' test half (``--records``, split as
``bench_real_records.py`` splits them) and the node texts come from the graph's store; with
``--scale`` a generated graph and generated questions (the GPU suite's case).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"paper": {}, "nbfnet": {"cost": "product", "entity": "gate", "readout": "layers", "loss": "softmax"},
          "product": {"cost": "product"}, "gate": {"entity": "gate"}, "unpruned": {"nodes": 0},
          "walk": {"network": "walk"}}
SETTINGS = ("before", "after", "cuda")


def load(args):
    """(graph, records, encoder, graph dir or None)."""
    from adapath.retrieval.dense import make_encoder

    if args.kg:
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_real_records import split_records

        from adapath.datasets.biostrat import load_records
        from adapath.engine.graph import KnowledgeGraph

        graph = KnowledgeGraph.load(args.kg)
        records = split_records(load_records(args.records), "test")[1]
        return graph, records, make_encoder(args.encoder), args.kg
    from adapath.datasets.generate import QueryGenerator
    from adapath.sources.synthetic import generate

    graph = generate(scale=args.scale, seed=0)
    records = QueryGenerator(graph).generate(args.train + args.validate + args.answer + 24, seed=1)
    return graph, records, make_encoder(args.encoder), None


def child(args) -> dict:
    """One (model, setting): the three phases timed, faults counted, answers hashed."""
    import resource

    import numpy as np
    import torch

    from adapath.methods.pathmind import infer, train

    if args.setting == "before":  # the system's default memory handling
        train.keep_freed_memory = infer.keep_freed_memory = lambda: False
    else:
        from adapath.memory import keep_freed_memory

        keep_freed_memory()
    from adapath.datasets.biostrat import query_from_record
    from adapath.methods.pathmind.config import TrainConfig
    from adapath.methods.pathmind.model import PROBES
    from adapath.methods.pathmind.train import (
        Features,
        hits_at_many,
        make_examples,
        new_model,
        sampled_targets,
        subgraph_loss,
    )
    from adapath.retrieval.dense import NodeEmbeddings

    torch.set_num_threads(args.threads)
    graph, records, encoder, graph_dir = load(args)
    device = "cuda" if args.setting == "cuda" else "cpu"
    examples = [e for e in make_examples(graph, records, encoder) if e.answers]
    features = Features(graph, NodeEmbeddings(graph, encoder, graph_dir), 3, device=device)
    features.per_question = args.setting != "before"
    config = TrainConfig(encoder=args.encoder, **MODELS[args.model])
    torch.manual_seed(0)
    model = new_model(graph, features, examples[0].query.shape[0], config, 1e-4).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    def step(chunk):
        rows, target, weight = sampled_targets(features, chunk, features.cosine(chunk), rng)
        inputs = features.batch(chunk, rows)
        output = model(inputs, torch.as_tensor(inputs.places.local_of[rows]).to(device), PROBES)
        target, weight = target.to(device), weight.to(device)
        loss = subgraph_loss(output.logits, target, weight, config.loss)
        loss = loss + sum(subgraph_loss(p, target, weight, config.loss) for p in output.probes.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    def timed(work, count):
        sync()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        clock = time.perf_counter()
        result = work()
        sync()
        seconds = time.perf_counter() - clock
        return result, {"questions_per_s": count / seconds, "seconds": seconds,
                        "faults_per_question": (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / count}

    warm, fit = examples[:8], examples[8:8 + args.train]
    held = examples[8 + args.train:8 + args.train + args.validate]
    queries = [query_from_record(r, "explicit") for r in records[-args.answer:]]
    # untimed: every kernel compiled (and cached) before the first clock
    step(warm[:4])
    hits_at_many(model, features, warm, (1,))
    pathmind = infer.PathMind(graph, model.eval(), config, encoder, graph_dir=graph_dir, device=device)
    pathmind._features = features
    pathmind.answer([query_from_record(r, "explicit") for r in records[:8]])
    model.train()
    out = {"model": args.model, "setting": args.setting, "device": device, "threads": args.threads}
    _, out["train"] = timed(lambda: [step(fit[lo:lo + 4]) for lo in range(0, len(fit), 4)], len(fit))
    model.eval()
    _, out["validate"] = timed(lambda: hits_at_many(model, features, held, (1, 3)), len(held))
    pathmind._entities = None  # the entity representations of the trained weights, computed in the timing
    visits = []
    if hasattr(model, "visits"):  # the Bellman-Ford network counts each step's work
        forward = model.forward

        def counted(*a, **k):
            result = forward(*a, **k)
            visits.append(list(model.visits))
            return result

        model.forward = counted
    results, out["answer"] = timed(lambda: pathmind.answer(queries), len(queries))
    out["visits"] = np.mean(np.array(visits), axis=0).tolist() if visits else []
    picks = json.dumps([r.extra["prioritized"] for r in results])
    out["answers"] = hashlib.blake2b(picks.encode(), digest_size=8).hexdigest()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kg", type=Path, default=None, help="Graph directory (its node-text store is read).")
    parser.add_argument("--records", type=Path, default=None, help="BioStrat-QA records with --kg (test half used).")
    parser.add_argument("--scale", type=float, default=0.2, help="Generated graph scale (without --kg).")
    parser.add_argument("--encoder", default="hashing")
    parser.add_argument("--models", default="paper,nbfnet", help=f"Of {', '.join(MODELS)}.")
    parser.add_argument("--settings", default="before,after", help=f"Of {', '.join(SETTINGS)}.")
    parser.add_argument("--train", type=int, default=64)
    parser.add_argument("--validate", type=int, default=64)
    parser.add_argument("--answer", type=int, default=96)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sources", default="", help="Source trees to compare, comma-separated (each a folder "
                        "holding an adapath package, e.g. a `git archive` of an earlier commit); each runs every "
                        "model and setting with that package first on PYTHONPATH (default: this tree).")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "SETTING"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.model, args.setting = args.child
        print(json.dumps(child(args)))
        return
    if args.kg and not args.records:
        parser.error("--kg needs --records")
    sources = [Path(v) for v in args.sources.split(",") if v]
    for source in sources:
        if not (source / "adapath" / "__init__.py").is_file():
            parser.error(f"--sources: {source} holds no adapath package")
    rows = []
    for model in args.models.split(","):
        for source in sources or [None]:
            for setting in args.settings.split(","):
                command = [sys.executable, __file__, "--child", model, setting, "--scale", str(args.scale),
                           "--encoder", args.encoder, "--train", str(args.train), "--validate", str(args.validate),
                           "--answer", str(args.answer), "--threads", str(args.threads)]
                if args.kg:
                    command += ["--kg", str(args.kg), "--records", str(args.records)]
                env = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads))
                if source is not None:
                    env["PYTHONPATH"] = os.pathsep.join([str(source.resolve()), env.get("PYTHONPATH", "")]).rstrip(
                        os.pathsep)
                label = f"{model} {setting}" + (f" ({source.name})" if source is not None else "")
                done = subprocess.run(command, capture_output=True, text=True, env=env)
                if done.returncode != 0:
                    print(f"{label}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
                    continue
                row = json.loads(done.stdout.strip().splitlines()[-1])
                row["source"] = source.name if source is not None else ""
                rows.append(row)
                print(f"  {label}: done", file=sys.stderr, flush=True)
    print_table(rows, args)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


def print_table(rows: list[dict], args) -> None:
    where = f"graph {args.kg}" if args.kg else f"generated graph, scale {args.scale}"
    print(f"PathMind speed: {where}, encoder {args.encoder}, {args.threads} threads; {args.train} training, "
          f"{args.validate} validation, {args.answer} answered questions; untrained seeded weights\n")
    sources = any(r.get("source") for r in rows)
    print("| model |" + (" source |" if sources else "") + " setting | train q/s | validate q/s | answer q/s | "
          "faults/q train | faults/q validate | faults/q answer | same answers | entities / edges per question, "
          "step 1..3 |")
    print("|---|" + ("---|" if sources else "") + "---|---:|---:|---:|---:|---:|---:|---|---|")
    first = {}
    for r in rows:
        same = first.setdefault(r["model"], r["answers"]) == r["answers"]
        source = f" {r['source']} |" if sources else ""
        print(f"| {r['model']} |{source} {r['setting']} | {r['train']['questions_per_s']:.2f} | "
              f"{r['validate']['questions_per_s']:.2f} | {r['answer']['questions_per_s']:.2f} | "
              f"{r['train']['faults_per_question']:,.0f} | {r['validate']['faults_per_question']:,.0f} | "
              f"{r['answer']['faults_per_question']:,.0f} | {'yes' if same else 'NO'} | "
              f"{', '.join(f'{n:,.0f} / {e:,.0f}' for n, e in r.get('visits', [])) or '-'} |")


if __name__ == "__main__":
    main()
