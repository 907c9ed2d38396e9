"""PathMind on real BioStrat-QA records (``bench_pathmind.py --real``): the dev records split
into the bank half and the test half exactly as ``bench_real_records.py`` splits them, on one
of its graphs (default: the HPO base merged with PrimeKG's diseases, every record planted,
related competitors).

PathMind as its authors built it: trained on the bank half's questions (every level) from
the graph and the questions alone, then the test half answered without an LLM (the answer
set is the K = 3 selected entities in priority order). Printed:

- the training options side by side (``--models``: ``paper`` is the paper's model, the
  others name one option each, or ``key=value+key=value`` settings of ``TrainConfig``):
  answer-set Hits@1 (the extractive answer) and Hits@3 (the K entities an LLM reads) per
  level x hop, beside the targets (the paper's 70B EM row for Hits@3, AdaPath's beam without
  an LLM on the same graph for Hits@1);
- the paper's ablation table, in its order, for the first model: w/o prioritization
  (``prioritize=readout``), d only and f only (``cumulative``, ``future``), the path rows
  (important, shortest, random: the same extractive answer without an LLM), the unlearned
  orders ``nearest`` and ``random`` and ``select=greedy``, with the paper's figures beside;
- the answer in the query subgraph per hop (the union of the topics' 3-hop balls);
- training seconds per epoch and the validation curve of each model;
- why the first model's K entities miss (the failure table);
- ``pathmind+walk`` (the blend with AdaPath's walk-scorer vote) beside AdaPath's walk and beam,
  with how often it gives the walk's answer;
- the reasoner rows (``--reasoner N``, ``bench/pathmind_reasoner.py``): the paper's reasoner
  ablation with SmolLM2-135M-Instruct (extractive, w/o Training, w/o Alignment, Full, Shortest
  Paths, Random Paths) on N test-half records x every wording, on the CPU.

Everything lands in ``--work`` (shared with ``bench_real_records.py``): a rerun trains,
answers and fine-tunes only what is missing.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)

LEVELS = ("explicit", "implicit", "bare")


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# named training options: each one setting changed from the paper's model, and the model that
# landed before it (NBFNet's product cost over question-read gates, softmax loss)
MODELS = {"paper": {}, "softmax": {"loss": "softmax"}, "balanced": {"loss": "balanced"},
          "product": {"cost": "product"}, "gate": {"entity": "gate"}, "layers": {"readout": "layers"},
          "scalar": {"reading": "scalar"},
          "nbfnet": {"cost": "product", "entity": "gate", "readout": "layers", "loss": "softmax"},
          "unpruned": {"nodes": 0}, "mul": {"message": "mul"}, "walk": {"network": "walk"}, "text": {"entity_text": True}}


def model_settings(name: str) -> dict:
    """A ``--models`` entry: a name of ``MODELS`` or ``key=value+key=value`` settings."""
    if name in MODELS:
        return dict(MODELS[name])
    out = {}
    for pair in name.split("+"):
        key, _, value = pair.partition("=")
        out[key] = int(value) if value.isdigit() else value
    return out


def model_dir(work: Path, split: str, config, generated: int = 0, train_records: int = 0, init: Path | None = None) -> Path:
    key = hashlib.blake2b(json.dumps(asdict(config), sort_keys=True).encode(), digest_size=6).hexdigest()
    more = (f"-train{train_records}" if train_records else "") + (f"-gen{generated}" if generated else "")
    if init is not None:  # fine-tuned from another model: named after it
        more += f"-from-{init.name}"
    return work / "pathmind" / f"{split}-{config.cost}-{config.entity}-{key}{more}"


def prepare_model(work: Path, split: str, graph, records, encoder, config, threads: int,
                  generated: list[dict] = (), subset: int = 0, init: Path | None = None) -> tuple[Path, dict]:
    """The trained priority (kept in ``work``), and its training record (epochs, s/epoch).
    ``generated``: records that only train, beside the real ones (which alone validate);
    ``subset``: ``records`` is that many of the bank half (named in the folder); ``init``: a
    trained model to start from (the folder is named after it)."""
    from adapath.methods.pathmind.train import (
        Features,
        epoch_line,
        load_checkpoint,
        make_examples,
        save_checkpoint,
        train,
    )
    from adapath.retrieval.dense import NodeEmbeddings

    out = model_dir(work, split, config, len(generated), subset, init)
    if (out / "config.json").is_file():
        meta = json.loads((out / "config.json").read_text())
        return out, {"history": meta["history"]}
    kind = (f"Bellman-Ford network, {config.message} message, {config.nodes or 'all'} entities per step"
            if config.network == "bellman-ford" else f"walk network, {config.cost} cost, {config.entity} entities")
    say(f"training PathMind ({kind}, {config.loss} loss) on {len(records)} "
        f"records x {len(LEVELS)} levels" + (f" and {len(generated)} generated records" if generated else "")
        + (f", starting from {init.name}" if init is not None else ""))
    examples = [e for level in LEVELS for e in make_examples(graph, records, encoder, level)]
    more = [e for level in LEVELS for e in make_examples(graph, list(generated), encoder, level)]
    nodes = NodeEmbeddings(graph, encoder, work / "kg")
    features = Features(graph, nodes, config.hops)
    clock = time.perf_counter()
    model, history = train(graph, examples, features, config, log=lambda h: say(f"  {epoch_line(h)}"),
                           progress=True, more=more, split=lambda v, f, m: say(
        f"  training questions: {f} real, {m} generated ({100 * m / max(f + m, 1):.0f}%); validating on {v} real"),
        init=load_checkpoint(init)[0] if init is not None else None)
    say(f"  trained in {time.perf_counter() - clock:.0f} s")
    save_checkpoint(model, config, graph, out, history, started_from=str(init) if init is not None else "")
    return out, {"history": history}


def generated_records(work: Path, graph, test: list[dict], count: int, seed: int = 7) -> list[dict]:
    """``count`` questions generated on the graph (describing their answer, as BioStrat-QA's
    do; every template, 1 to 3 hops), none sharing a (topic, answer) pair with a test record
    (checked again on the file read back); kept in ``work``."""
    from adapath.datasets.generate import QueryGenerator, topic_answer_pairs

    path = work / "generated" / f"describe-{count}-seed{seed}.jsonl"
    held = topic_answer_pairs(test)
    if not path.is_file():
        say(f"generating {count} questions (describe phrasing, no test record's topic-answer pair)")
        records = QueryGenerator(graph).generate(count, seed=seed, phrasing="describe", first_id=10_000_000,
                                                 exclude=frozenset(held))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in records))
        tmp.replace(path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    shared = topic_answer_pairs(records) & held
    if shared:
        raise SystemExit(f"{path}: {len(shared)} (topic, answer) pairs shared with the test records")
    return records


def nodes_of(graph, ids) -> np.ndarray:
    """The graph's places of the external ``ids`` it holds (the others dropped)."""
    nodes = graph.index_of([int(v) for v in ids], missing="ignore")
    return nodes[nodes >= 0]


def topic_reach(graph, relational, record: dict, hops: int) -> list[np.ndarray]:
    """Masks of the nodes within 0..hops steps of the record's topics."""
    seeds = np.zeros(graph.num_nodes, dtype=np.bool_)
    seeds[graph.index_of([int(t) for t in record["topic_entities"]])] = True
    return relational.reach(seeds, hops)


def in_subgraph(graph, records: list[dict], hops: int) -> dict:
    """% of records with a valid answer within ``hops`` steps of a topic, per hop count."""
    from adapath.methods.pathmind.propagate import RelationalGraph

    relational = RelationalGraph(graph)
    kept: dict[int, list[bool]] = {}
    for r in records:
        inside = topic_reach(graph, relational, r, hops)[-1]
        answers = nodes_of(graph, r["valid_answer_ids"])
        kept.setdefault(int(r["num_hops"]), []).append(bool(len(answers)) and bool(inside[answers].any()))
    return {str(h): round(100 * float(np.mean(v)), 1) for h, v in sorted(kept.items())}


# the paper's ablations answered as `--param prioritize=...` of the first model, and the
# unlearned orders
ABLATIONS = ("readout", "cumulative", "future", "nearest", "random")
# the paper's ablation table (WebQSP Hits@1, CWQ Hits@1) and its finding 6 (WebQSP Hits@1)
PAPER_ABLATIONS = (("Full", 0.895, 0.707), ("w/o Prioritization", 0.840, 0.643), ("w/o Alignment", 0.871, 0.672),
                   ("w/o Training", 0.668, 0.413), ("Random Paths", 0.356, 0.268), ("Shortest Paths", 0.854, 0.662),
                   ("Important Paths", 0.895, 0.707), ("d only (cumulative cost)", 0.878, None),
                   ("f only (future cost)", 0.831, None))

FAILURES = ("no answer within 3 hops", "an answer selected, outranked in the final K", "a rival: answer's type and depth",
            "answer's type, another depth", "another type")


def failure_table(graph, records: list[dict], results: list, k: int = 3) -> dict:
    """Why a question's K selected entities miss every valid answer (by node id), per hop count:
    counts of misses in each of ``FAILURES``, checked in that order. Depth is the hop distance
    from the nearest topic; a rival is a selected entity of an answer's type at the nearest
    answer's depth."""
    from adapath.methods.pathmind.propagate import RelationalGraph

    relational = RelationalGraph(graph)
    by_id = {str(r["data_id"]): r for r in records}
    depth_of: dict[str, np.ndarray] = {}
    table: dict[str, dict[str, int]] = {}
    for result in results:
        record = by_id[str(result.id)]
        answers = nodes_of(graph, record["valid_answer_ids"])
        chosen = nodes_of(graph, result.extra.get("prioritized", [])[:k])
        cell = table.setdefault(str(record["num_hops"]), {"questions": 0, "misses": 0} | dict.fromkeys(FAILURES, 0))
        cell["questions"] += 1
        if set(chosen.tolist()) & set(answers.tolist()):
            continue
        cell["misses"] += 1
        if str(result.id) not in depth_of:
            masks = topic_reach(graph, relational, record, 3)
            depth = np.full(graph.num_nodes, 4, dtype=np.int8)  # 4: beyond three hops
            for d in range(3, -1, -1):
                depth[masks[d]] = d
            depth_of[str(result.id)] = depth
        depth = depth_of[str(result.id)]
        near = [a for a in answers if depth[a] <= 3]
        explored = {v for vs in result.explored.values() for v in vs}
        if not near:
            cell[FAILURES[0]] += 1
        elif explored & {int(graph.node_id[a]) for a in near}:
            cell[FAILURES[1]] += 1
        else:
            types = {int(graph.node_type[a]) for a in near}
            nearest = min(int(depth[a]) for a in near)
            typed = [c for c in chosen if int(graph.node_type[c]) in types]
            if any(int(depth[c]) == nearest for c in typed):
                cell[FAILURES[2]] += 1
            elif typed:
                cell[FAILURES[3]] += 1
            else:
                cell[FAILURES[4]] += 1
    return dict(sorted(table.items()))


def agreement(a: list, b: list) -> float:
    """% of questions (id, level) both answered where the answers are the same."""
    other = {(r.id, r.level): r.answer for r in b}
    same = [r.answer == other[(r.id, r.level)] for r in a if (r.id, r.level) in other]
    return round(100 * float(np.mean(same)), 1) if same else float("nan")


def run(args) -> dict:
    import torch

    from adapath.bench.real_records import (
        DEFAULT_RECORDS,
        answer_pathmind,
        answer_variant,
        evenly_spaced,
        prepare_bank,
        prepare_base,
        prepare_embeddings,
        prepare_graph,
        split_records,
    )
    from adapath.datasets.biostrat import load_records, records_query_set
    from adapath.eval.report import write_report
    from adapath.methods.pathmind.config import TrainConfig
    from adapath.retrieval.dense import make_encoder, resolve_backend

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    records_path = args.records or DEFAULT_RECORDS
    setting = args.graph
    work = args.work / (f"scale-{args.scale:g}" if setting == "planted" else f"scale-{args.scale:g}-{setting}")
    work.mkdir(parents=True, exist_ok=True)
    bank_records, test = split_records(load_records(records_path), args.split)
    whole_half = test  # AdaPath answers the whole half once (bench_real_records shares the file)
    test = evenly_spaced(test, args.limit)
    # the priority's training records (AdaPath's bank always holds the whole bank half)
    train_records = evenly_spaced(bank_records, args.train_records)
    subset = len(train_records) if len(train_records) < len(bank_records) else 0
    base = prepare_base(args.work, None, "diseases" in setting) if setting != "planted" else None
    graph = prepare_graph(work, records_path, args.scale, setting, base,
                          args.competitors if setting.endswith("+competitors") else 0)
    bank = prepare_bank(work, graph, bank_records, args.split)
    encoder = make_encoder(args.encoder, backend=resolve_backend("auto", "cpu"))
    prepare_embeddings(work, graph, encoder)
    levels = args.levels.split(",")
    query_set = records_query_set(test)
    out: dict = {"setup": {"graph": setting, "split": args.split, "scale": args.scale, "nodes": graph.num_nodes,
                           "edges": graph.num_edges, "encoder": encoder.name, "train_records": len(train_records),
                           "test_records": len(test), "levels": levels, "seed": 0},
                 "in_subgraph": in_subgraph(graph, test, 3), "models": {}, "methods": {}, "agreement": {},
                 "failures": {}}

    def save():
        if args.json:
            args.json.write_text(json.dumps(out, indent=2))

    def report(name: str, results: list) -> None:
        summary = write_report(results, query_set, graph, work / "reports" / args.split / name)
        out["methods"][name] = {"cells": summary["cells"], "em_strict": summary["em_strict"],
                                "set_hits": summary["set_hits"]}
        save()

    models = {}
    names = [m for m in args.models.split(",") if m]
    for name in names:
        config = TrainConfig(epochs=args.epochs, batch=args.batch, encoder=args.encoder, patience=args.patience,
                             **model_settings(name))
        models[name], record = prepare_model(work, args.split, graph, train_records, encoder, config, args.threads,
                                             subset=subset)
        history = record["history"]
        out["models"][name] = {"settings": model_settings(name), "epochs": len(history),
                               "seconds_per_epoch": float(np.mean([h["seconds"] for h in history])),
                               "val_hits1": [h["val_hits1"] for h in history],
                               "val_hits3": [h["val_hits3"] for h in history]}
        save()
    default = models[names[0]]
    runs = {f"pathmind {name}": ("pathmind", path, {}) for name, path in models.items()}
    runs |= {name: ("pathmind", default, {"prioritize": name}) for name in ABLATIONS}
    runs |= {"greedy": ("pathmind", default, {"select": "greedy"}), "pathmind+walk": ("pathmind+walk", default, {})}
    wanted_runs = []
    for name in [v for v in args.variants.split(",") if v]:
        wanted_runs += list(runs)[:len(models)] if name == "models" else [name]
    answered = {}
    for name in wanted_runs:
        method, model, params = runs[name]
        answered[name] = answer_pathmind(work, args.split, f"{name.replace(' ', '-')}-{model.name}", method, graph,
                                         model, bank if method == "pathmind+walk" else None, args.encoder, encoder,
                                         test, levels, params)
        report(name, answered[name])
        if name.startswith("pathmind ") and name != "pathmind+walk":
            out["failures"][name] = failure_table(graph, test, answered[name])
            save()
    if args.generated:
        curve_name = args.curve_model or names[0]
        out["curve"] = {"model": curve_name, "rows": []}

        def curve_row(count: int, epochs: int, more: list[dict], init: Path | None = None) -> Path:
            """Trains (or reads back) one model of the curve, answers the test questions with
            it and adds its row; ``init``: the model it is fine-tuned from."""
            config = TrainConfig(epochs=epochs, batch=args.batch, encoder=args.encoder, patience=args.patience,
                                 **model_settings(curve_name))
            path, record = prepare_model(work, args.split, graph, train_records, encoder, config, args.threads, more,
                                         subset, init=init)
            label = f"curve {curve_name} +{count}" + (" then real" if init is not None else "")
            results = answer_pathmind(work, args.split, f"curve-{curve_name}-{count}-{path.name}", "pathmind", graph,
                                      path, None, args.encoder, encoder, test, levels, {})
            report(label, results)
            history = record["history"]
            out["curve"]["rows"].append({"generated": count, "name": label, "epochs": len(history),
                                         "seconds_per_epoch": float(np.mean([h["seconds"] for h in history])),
                                         "val_hits1": [h["val_hits1"] for h in history],
                                         "shared_pairs_with_test": 0, **({"then_real": True} if init else {})})
            save()
            return path

        for count in [int(c) for c in args.generated.split(",")]:
            more = generated_records(work, graph, whole_half, count) if count else []
            path = curve_row(count, args.curve_epochs if count and args.curve_epochs else args.epochs, more)
            # the same model fine-tuned on the real records alone; for the real-only model, trained further
            # the same way (the control: as many more epochs on the real records, without generated ones)
            if args.curve_then_real:
                curve_row(count, args.epochs, [], init=path)
    for name in [v for v in args.adapath.split(",") if v]:
        wanted = {str(r["data_id"]) for r in test}
        answered[f"adapath {name}"] = [r for r in answer_variant(work, args.split, name, graph, bank, args.encoder,
                                                                 whole_half, levels, 16, encoder) if r.id in wanted]
        report(f"adapath {name}", answered[f"adapath {name}"])
    if "adapath walk" in answered:
        for name in (f"pathmind {names[0]}", "pathmind+walk"):
            if name in answered:
                out["agreement"][f"{name} vs adapath walk"] = agreement(answered[name], answered["adapath walk"])
        save()
    if args.reasoner:
        from adapath.bench import pathmind_reasoner

        out["reasoner"] = pathmind_reasoner.run(args, work, graph, bank_records, test, default, encoder)
        save()
    return out


PAPER = {"explicit": {1: 87.9, 2: 61.3, 3: 62.2}, "implicit": {1: 83.1, 2: 62.5, 3: 53.9},
         "bare": {1: 69.8, 2: 50.5, 3: 44.2}}


def hits_cell(methods: dict, name: str, level: str, hop: str) -> str:
    cell = methods.get(name, {}).get("set_hits", {}).get(level, {}).get(hop)
    return f"{cell['1']:.1f} / {cell['3']:.1f}" if cell else "-"


def overall(methods: dict, name: str) -> str:
    cell = methods.get(name, {}).get("set_hits", {}).get("overall")
    return f"{cell['1']:.1f} / {cell['3']:.1f}" if cell else "-"


def print_tables(out: dict) -> None:
    s = out["setup"]
    print(f"PathMind on real BioStrat-QA records: graph {s['graph']}, scale {s['scale']} ({s['nodes']:,} nodes, "
          f"{s['edges']:,} edges); trained on the bank half ({s['train_records']} records x 3 levels), "
          f"{s['test_records']} test records x {len(s['levels'])} levels ({s['split']} split); encoder "
          f"{s['encoder']}; no LLM; seed 0")
    print("\nAnswer in the query subgraph (union of the topics' 3-hop balls), % of test records per hop: "
          + ", ".join(f"{h}-hop {v}" for h, v in out["in_subgraph"].items()))
    for name, m in out["models"].items():
        settings = ", ".join(f"{k}={v}" for k, v in m["settings"].items()) or "the paper's model"
        print(f"\nTraining {name} ({settings}): {m['epochs']} epochs, {m['seconds_per_epoch']:.0f} s/epoch; "
              f"validation Hits@1 {' '.join(f'{v:.3f}' for v in m['val_hits1'])}")
    methods = out["methods"]
    beam = methods.get("adapath beam")
    names = [f"pathmind {n}" for n in out["models"] if f"pathmind {n}" in methods]
    if names:
        print("\nAnswer-set Hits@1 / Hits@3 (strict), % per level x hop, each training option; targets: Hits@1 >= "
              "AdaPath's beam (no LLM, same graph), Hits@3 >= the paper's 70B EM\n")
        print("| level | hop | " + " | ".join(n.removeprefix("pathmind ") for n in names) + " | beam EM | paper 70B |")
        print("|---|---|" + "---:|" * (len(names) + 2))
        for level in s["levels"]:
            for hop in ("1", "2", "3"):
                target = beam["cells"].get(level, {}).get(f"hop{hop}_strict") if beam else None
                print(f"| {level} | {hop} | " + " | ".join(hits_cell(methods, n, level, hop) for n in names)
                      + f" | {'-' if target is None else f'{target:.1f}'} | {PAPER[level][int(hop)]} |")
        print("| all | all | " + " | ".join(overall(methods, n) for n in names)
              + (f" | {beam['em_strict']:.1f} | 65.5 |" if beam else " | - | 65.5 |"))
    if names:
        full = names[0]
        rows = [("Full", full), ("w/o Prioritization", "readout"), ("w/o Alignment", None), ("w/o Training", None),
                ("Random Paths", full), ("Shortest Paths", full), ("Important Paths", full),
                ("d only (cumulative cost)", "cumulative"), ("f only (future cost)", "future")]
        print(f"\nThe paper's ablations on {full.removeprefix('pathmind ')}: answer-set Hits@1 / Hits@3 %, all levels "
              "and hops; the paper's Hits@1 (WebQSP, CWQ) beside. Without an LLM the three path rows give Full's "
              "answer (the selected entities; the paths only change what an LLM reads); w/o Alignment and w/o "
              "Training are the reasoner's rows\n")
        print("| row | ours | paper WebQSP | paper CWQ |")
        print("|---|---:|---:|---:|")
        for (label, name), (_, webqsp, cwq) in zip(rows, PAPER_ABLATIONS):
            ours = overall(methods, name) if name else "reasoner"
            print(f"| {label} | {ours} | {webqsp:.3f} | {'-' if cwq is None else f'{cwq:.3f}'} |")
        for label, name in (("nearest (hop distance, unlearned)", "nearest"), ("random priorities", "random"),
                            ("greedy selection", "greedy")):
            if name in methods:
                print(f"| {label} | {overall(methods, name)} | - | - |")
    em = [n for n in methods if n.startswith("adapath") or n == "pathmind+walk"]
    if em:
        em = names[:1] + em  # PathMind alone (its extractive answer) beside the blend and AdaPath
        print("\nStrict EM, % per level x hop: the blend (the walk's vote on PathMind's ranks, "
              "adapath methods pathmind+walk) beside PathMind alone and AdaPath\n")
        print("| level | hop | " + " | ".join(em) + " |")
        print("|---|---|" + "---:|" * len(em))
        for level in s["levels"]:
            for hop in (1, 2, 3):
                print(f"| {level} | {hop} | " + " | ".join(
                    f"{methods[n]['cells'].get(level, {}).get(f'hop{hop}_strict', float('nan')):.1f}" for n in em) + " |")
        print("| all | all | " + " | ".join(f"{methods[n]['em_strict']:.1f}" for n in em) + " |")
    for name, failures in out.get("failures", {}).items():
        print(f"\nWhy {name}'s K = 3 selected entities miss every valid answer (by node id, all levels), "
              "% of the misses per hop\n")
        print("| hop | questions | misses | " + " | ".join(FAILURES) + " |")
        print("|---|---:|---:|" + "---:|" * len(FAILURES))
        for hop, cell in failures.items():
            shares = [100 * cell[f] / cell["misses"] if cell["misses"] else 0.0 for f in FAILURES]
            print(f"| {hop} | {cell['questions']} | {cell['misses']} | " + " | ".join(f"{v:.1f}" for v in shares) + " |")
    curve = out.get("curve")
    if curve and curve["rows"]:
        print(f"\nLearning curve of {curve['model']}: the bank half's real records, then generated questions added "
              "(describe phrasing, all three wordings; none shares a (topic, answer) pair with a test record, "
              "checked on the files); answer-set Hits@1 / Hits@3 %\n")
        cells = [(level, hop) for level in s["levels"] for hop in ("1", "2", "3")]
        print("| generated | s/epoch | epochs | " + " | ".join(f"{lv[:3]} {h}" for lv, h in cells) + " | all |")
        print("|---:|---:|---:|" + "---:|" * (len(cells) + 1))
        for row in curve["rows"]:
            then = ", then real" if row.get("then_real") else ""
            print(f"| {row['generated']:,}{then} | {row['seconds_per_epoch']:.0f} | {row['epochs']} | "
                  + " | ".join(hits_cell(methods, row["name"], lv, h) for lv, h in cells)
                  + f" | {overall(methods, row['name'])} |")
    for key, value in out.get("agreement", {}).items():
        print(f"\nAgreement, {key}: {value}% of questions answered alike")
    if out.get("reasoner"):
        from adapath.bench import pathmind_reasoner

        pathmind_reasoner.print_table(out["reasoner"])
