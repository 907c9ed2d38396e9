"""PathMind's training, validation and answering questions/s and page faults per question, setting
against setting (``before``, ``after``, ``cuda``), each in a process of its own from the same seeded
weights; ``--sources``: each source tree's package; ``--kg``: the records' test half."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)

SETTINGS = ("before", "after", "cuda")


def prepare(args, folder: Path) -> tuple[str, str]:
    """The graph folder and the questions' JSONL (``--kg``: the records' test half)."""
    from adapath.bench.inputs import inputs

    if args.kg:
        graph_dir, records = args.kg, inputs().split(args.records, "test")[1]
    else:
        graph, graph_dir = inputs().graph(args.scale, 0)
        records = inputs().questions(graph, args.train + args.validate + args.answer + 24, seed=1)
    path = folder / "questions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(graph_dir), str(path)


def child(args) -> dict:
    """One (model, setting): the three phases timed, faults counted, answers hashed, on the graph
    and questions its parent prepared (``args.inputs``: read by any tree's package)."""
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
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.pathmind.config import TrainConfig
    from adapath.methods.pathmind.model import PROBES
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder

    torch.set_num_threads(args.threads)
    graph = KnowledgeGraph.load(args.inputs[0], mmap=args.kg is not None)
    records = [json.loads(line) for line in Path(args.inputs[1]).read_text(encoding="utf-8").splitlines()]
    encoder, graph_dir = make_encoder(args.encoder), args.kg and Path(args.kg)
    # the questions answered encoded as `answer --method pathmind` encodes them (a source tree from
    # before its backend param: the training's encoder), converted before any kernel runs
    answering = infer.question_encoder(args.encoder) if hasattr(infer, "question_encoder") else encoder
    device = "cuda" if args.setting == "cuda" else "cpu"
    examples = [e for e in train.make_examples(graph, records, encoder) if e.answers]
    features = train.Features(graph, NodeEmbeddings(graph, encoder, graph_dir), 3, device=device)
    features.per_question = args.setting != "before"
    config = TrainConfig(encoder=args.encoder, **args.settings)
    torch.manual_seed(0)
    model = train.new_model(graph, features, examples[0].query.shape[0], config, 1e-4).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    def step(chunk):
        if hasattr(train, "training_loss"):  # the loss training runs (--negatives: sampled or every entity)
            loss, probe_loss = train.training_loss(model, features, chunk, config, rng)
            optimizer.zero_grad()
            (loss + probe_loss).backward()
            optimizer.step()
            return
        # a source tree from before it: the sampled loss inline
        rows, target, weight = train.sampled_targets(features, chunk, features.cosine(chunk), rng)
        inputs = features.batch(chunk, rows)
        output = model(inputs, torch.as_tensor(inputs.places.local_of[rows]).to(device), PROBES)
        target, weight = target.to(device), weight.to(device)
        loss = train.subgraph_loss(output.logits, target, weight, config.loss)
        loss = loss + sum(train.subgraph_loss(p, target, weight, config.loss) for p in output.probes.values())
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
    train.hits_at_many(model, features, warm, (1,))
    pathmind = infer.PathMind(graph, model.eval(), config, answering, graph_dir=graph_dir, device=device)
    pathmind._features = features
    if getattr(config, "rerank", False):  # the reader's cost: its weights do not change its work (those fitted on the bench graph)
        from adapath.methods.pathmind.reader import Reader

        pathmind.reader = Reader([0.8, -1.2, 3.7, 5.6])
    pathmind.answer([query_from_record(r, "explicit") for r in records[:8]])
    model.train()
    out = {"model": args.model, "setting": args.setting, "device": device, "threads": args.threads}
    _, out["train"] = timed(lambda: [step(fit[lo:lo + 4]) for lo in range(0, len(fit), 4)], len(fit))
    model.eval()
    _, out["validate"] = timed(lambda: train.hits_at_many(model, features, held, (1, 3)), len(held))
    pathmind._entities = None  # the entity representations of the trained weights, computed in the timing
    try:  # the Bellman-Ford network counts each step's work; a source tree from before it has neither
        from adapath.bench.pathmind_default import counting_visits
    except ImportError:
        def counting_visits(model):
            return []
    visits = counting_visits(model)
    results, out["answer"] = timed(lambda: pathmind.answer(queries), len(queries))
    # entities / edges a question propagates from / along at each step (A*Net's visited counts)
    out["visits"] = " ; ".join(f"{n:,.0f} / {e:,.0f}" for n, e in np.mean(np.array(visits), axis=0)) if visits else ""
    picks = json.dumps([r.extra["prioritized"] for r in results])
    out["answers"] = hashlib.blake2b(picks.encode(), digest_size=8).hexdigest()
    return out


def arguments():
    from adapath.bench.inputs import parser  # not at the top: a setting may run another tree

    return parser(__doc__, {
        "kg": (None, "Graph directory (its node-text store is read).", Path),
        "models": ("default,walk", "pathmind --real's training options (names or "
                   "key=value+key=value)"),
        "settings": ("before,after", f"Of {', '.join(SETTINGS)}."),
        "train": (64, "Training questions timed (batches of 4)."),
        "validate": (64, "Validation questions timed (batches of 8)."),
        "answer": (96, "Questions answered without an LLM, timed."),
        "threads": (2, "torch and Numba threads of each setting's process."),
        "sources": ("", "source trees to compare, comma-separated (each a folder holding an "
                    "adapath package, e.g. a `git archive` of an earlier commit; default: this "
                    "tree)"),
    }, scale=0.2, encoder="hashing", records=None)


def main(argv: list[str] | None = None) -> None:
    parser = arguments()
    args = parser.parse_args(argv)
    if args.kg and not args.records:
        parser.error("--kg needs --records")
    sources = [Path(v) for v in args.sources.split(",") if v]
    for source in sources:
        if not (source / "adapath" / "__init__.py").is_file():
            parser.error(f"--sources: {source} holds no adapath package")
    from adapath.bench.pathmind_models import model_names, model_settings
    from adapath.bench.result import report
    from adapath.bench.timing import Line

    rows, line = [], Line("pathmind-speed")
    folder = tempfile.TemporaryDirectory(prefix="bench_pathmind_speed_")
    models = model_names(args.models)
    prepared = prepare(args, Path(folder.name))
    for model in models:
        for source in sources or [None]:
            for setting in args.settings.split(","):
                job = {k: getattr(args, k) for k in ("encoder", "train", "validate", "answer", "threads")}
                job.update(model=model, settings=model_settings(model), setting=setting, inputs=prepared,
                           kg=str(args.kg) if args.kg else None)
                command = [sys.executable, __file__, "--child", json.dumps(job)]
                env = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads))
                if source is not None:
                    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(source.resolve()), env.get("PYTHONPATH")) if p)
                label = f"{model} {setting}" + (f" ({source.name})" if source is not None else "")
                line.step(label)
                done = subprocess.run(command, capture_output=True, text=True, env=env)
                if done.returncode != 0:
                    print(f"{label}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
                    continue
                rows.append({**json.loads(done.stdout.strip().splitlines()[-1]),
                             "source": source.name if source is not None else ""})
    where = f"graph {args.kg}" if args.kg else f"generated graph, scale {args.scale}"
    report(args, rows, f"PathMind speed: {where}, encoder {args.encoder}, {args.threads} threads; {args.train} "
                       f"training, {args.validate} validation, {args.answer} answered questions")
    first = {}
    print("same answers as the model's first row: " + ", ".join(
        f"{r['model']} {r['setting']}{' ' + r['source'] if r['source'] else ''} "
        f"{'yes' if first.setdefault(r['model'], r['answers']) == r['answers'] else 'NO'}" for r in rows))


if __name__ == "__main__":  # a setting's process: python pathmind_speed.py --child JOB
    print(json.dumps(child(argparse.Namespace(**json.loads(sys.argv[2])))))
