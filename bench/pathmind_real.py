"""PathMind on real BioStrat-QA records (``bench_pathmind.py --real``): the dev records split
into the bank half and the test half exactly as ``bench_real_records.py`` splits them, every
record planted in one generated graph, the Path-Bank built on the bank half.

For each subgraph mode (``ppr``, ``question``, ``metapath``) and budget: the share of test
questions whose answer survives the subgraph, per level x hop. For each mode at the training
budget: PathMind trained on the bank half (every level), then the test half answered
extractively (the best prioritized entity, no LLM): EM per level x hop, Hits@1/3, training
seconds per epoch. Then one timed epoch per budget of ``--time-mode``. AdaPath's beam and walk
(``bench_real_records.py`` variants, same graph, bank and encoder) are printed beside.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import replace

import numpy as np

LEVELS = ("explicit", "implicit", "bare")
BEAM_ROW = {"explicit": {1: 89.5, 2: 66.7, 3: 60.8}, "bare": {2: 50.0, 3: 30.0}}  # targets quoted by the task


def build_examples(graph, records, level, encoder, builders: dict, guide, keep_edges=None) -> dict:
    """{budget: [Example]} for one level: the question PPR and the Path-Bank guide computed
    once, each budget cut from them. ``keep_edges``: the budgets whose subgraphs keep their
    half-edges (None: all); the others keep their nodes alone (:func:`nodes_only`)."""
    from adapath.datasets.biostrat import query_from_record, query_text
    from adapath.methods.pathmind.train import Example

    texts = [query_text(r, level) for r in records]
    topics = [graph.index_of([int(k) for k in r["topic_entities"]]).tolist() for r in records]
    vectors = encoder.encode(texts)
    answers = []
    for r, t in zip(records, topics):
        index = graph.index_of([int(v) for v in r["valid_answer_ids"]], missing="ignore")
        answers.append([int(i) for i in index if i >= 0 and i not in t])
    out, seconds = defaultdict(list), defaultdict(float)
    for lo in range(0, len(records), 64):
        part = slice(lo, lo + 64)
        clock = time.perf_counter()
        guides = guide.guides([query_from_record(r, level) for r in records[part]]) if guide else None
        score = next(iter(builders.values())).scores(topics[part], texts[part])  # the same for every budget
        guide_seconds = time.perf_counter() - clock
        for budget, builder in builders.items():
            clock = time.perf_counter()
            subs = builder.build_many(topics[part], texts[part], guides, score)
            seconds[budget] += time.perf_counter() - clock + guide_seconds
            if keep_edges is not None and budget not in keep_edges:
                subs = [nodes_only(sub) for sub in subs]
            out[budget] += [Example(str(r["data_id"]), text, t, a, s, v) for r, text, t, a, s, v in
                            zip(records[part], texts[part], topics[part], answers[part], subs, vectors[part])]
    return out, seconds


def out_of_fold_guide(work, graph, records, split: str, encoder, folds: int, candidates: int):
    """The guide of the training questions: ``folds`` Path-Banks, each built on the records
    outside one fold (seeded), each guiding its fold's questions (see OutOfFoldGuide)."""
    from bench_real_records import prepare_bank

    from adapath.methods.pathmind.guide import MetaPathGuide, OutOfFoldGuide

    fold = np.random.default_rng(0).permutation(len(records)) % folds
    fold_of = {str(r["data_id"]): int(f) for r, f in zip(records, fold)}
    guides = []
    for k in range(folds):
        bank = prepare_bank(work, graph, [r for r, f in zip(records, fold) if f != k], f"{split}-fold{k}of{folds}")
        guides.append(MetaPathGuide(graph, bank, encoder, work / "kg", candidates=candidates))
    return OutOfFoldGuide(fold_of, guides)


def nodes_only(sub):
    """A subgraph's nodes without its half-edges (what the survival table reads), to keep
    thousands of large cuts in memory."""
    empty = np.zeros(0, dtype=np.int32)
    return replace(sub, src=empty, dst=empty, rel=empty, in_order=empty)


def survival(examples_by_level: dict, records) -> dict:
    """% of questions whose answer is in the subgraph, per level x hop."""
    hops = [int(r["num_hops"]) for r in records]
    table = {}
    for level, examples in examples_by_level.items():
        row = {}
        for h in (1, 2, 3):
            kept = [len(e.local_answers) > 0 for e, hop in zip(examples, hops) if hop == h]
            row[str(h)] = 100 * float(np.mean(kept)) if kept else float("nan")
        row["all"] = 100 * float(np.mean([len(e.local_answers) > 0 for e in examples]))
        table[level] = row
    return table


def answer_extractively(graph, model, config, encoder, examples, level):
    """Results (the best prioritized entity) and per example whether an answer is in the top 1 / 3."""
    from adapath.methods.base import Result
    from adapath.methods.pathmind.infer import PathMind

    # the examples carry their subgraphs already: the reader's own cut is never used
    reader = PathMind(graph, model, replace(config, subgraph="ppr"), encoder, None)
    results, hits = [], []
    for ex, (priority, _) in zip(examples, reader.prioritize_many(examples)):
        chosen, _ = reader.select(ex, priority)
        best = graph.name(ex.subgraph.nodes[chosen[0]]) if chosen else ""
        results.append(Result(ex.id, level, best, method="pathmind", answer_source="extractive" if best else "none"))
        scores = priority.astype(float).copy()
        scores[ex.subgraph.topics] = -np.inf
        order = np.lexsort((np.arange(len(scores)), -scores))
        gold = set(ex.local_answers.tolist())
        hits.append((bool(gold & set(order[:1].tolist())), bool(gold & set(order[:3].tolist()))))
    return results, hits


def run(args) -> dict:
    import json
    import sys

    import torch

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from bench_real_records import (
        DEFAULT_RECORDS,
        answer_variant,
        prepare_bank,
        prepare_embeddings,
        prepare_graph,
        split_records,
    )

    from adapath.datasets.biostrat import load_records, records_query_set
    from adapath.eval.report import write_report
    from adapath.methods.pathmind.config import TrainConfig
    from adapath.methods.pathmind.guide import MetaPathGuide
    from adapath.methods.pathmind.train import Featurizer, make_builder, train
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    records_path = args.records or DEFAULT_RECORDS
    work = args.work / f"scale-{args.scale:g}"
    work.mkdir(parents=True, exist_ok=True)
    bank_records, test = split_records(load_records(records_path), args.split)
    if args.limit:
        test = [test[i] for i in np.linspace(0, len(test) - 1, min(args.limit, len(test))).round().astype(int)]
    train_records = bank_records
    if args.train_limit:
        train_records = [bank_records[i] for i in np.linspace(0, len(bank_records) - 1,
                                                               min(args.train_limit, len(bank_records))).round().astype(int)]
    time_records = [train_records[i] for i in np.linspace(0, len(train_records) - 1,
                                                          min(args.time_records, len(train_records))).round().astype(int)]
    graph = prepare_graph(work, records_path, args.scale)
    bank = prepare_bank(work, graph, bank_records, args.split)
    encoder = make_encoder(args.encoder)
    if args.encoder != "hashing":
        prepare_embeddings(work, graph, encoder)
    levels = args.levels.split(",")
    budgets = [int(b) for b in args.budgets.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    query_set = records_query_set(test)
    out = {"setup": {"split": args.split, "scale": args.scale, "nodes": graph.num_nodes, "edges": graph.num_edges, "encoder": encoder.name,
                     "bank_records": len(bank_records), "train_records": len(train_records), "test_records": len(test),
                     "levels": levels, "epochs": args.epochs, "batch": args.batch, "seed": 0,
                     "candidates": args.candidates, "folds": args.folds, "select": args.select},
           "survival": {}, "build_seconds": {}, "pathmind": {}, "epoch_by_budget": {}, "adapath": {}}

    def save():
        if args.json:
            args.json.write_text(json.dumps(out, indent=2))

    guide = train_guide = None
    kept = {}
    for mode in modes:
        builders = {b: make_builder(graph, 3, b, mode, work / "kg") for b in budgets}
        if mode == "metapath" and guide is None:
            guide = MetaPathGuide(graph, bank, encoder, work / "kg", candidates=args.candidates)
            train_guide = guide if args.folds < 2 else out_of_fold_guide(work, graph, bank_records, args.split,
                                                                           encoder, args.folds, args.candidates)
        use = guide if mode == "metapath" else None
        test_examples, train_examples, time_examples = {}, {}, {}
        seconds = defaultdict(float)
        for level in levels:
            # only the survival table reads the other budgets' cuts: they keep their nodes alone
            by_budget, secs = build_examples(graph, test, level, encoder, builders, use, keep_edges={args.budget})
            for b in budgets:
                test_examples.setdefault(b, {})[level] = by_budget[b]
                seconds[b] += secs[b]
            if mode in args.train_modes.split(","):
                by_budget, _ = build_examples(graph, train_records, level, encoder, {args.budget: builders[args.budget]},
                                              train_guide if mode == "metapath" else None)
                train_examples.setdefault(args.budget, []).extend(by_budget[args.budget])
            if mode == args.time_mode:  # the same few training records cut at every budget
                by_budget, _ = build_examples(graph, time_records, level, encoder, builders,
                                              train_guide if mode == "metapath" else None)
                for b in budgets:
                    time_examples.setdefault(b, []).extend(by_budget[b])
        n_test = len(test) * len(levels)
        for b in budgets:
            out["survival"][f"{mode}@{b}"] = survival(test_examples[b], test)
            out["build_seconds"][f"{mode}@{b}"] = 1000 * seconds[b] / n_test
        say(f"{mode}: survival {json.dumps({b: out['survival'][f'{mode}@{b}'] for b in budgets})}")
        save()
        kept[mode] = (test_examples, train_examples, time_examples)
        featurize = Featurizer(graph, NodeEmbeddings(graph, encoder, work / "kg"))
        if mode in args.train_modes.split(","):
            config = TrainConfig(epochs=args.epochs, patience=args.epochs, budget=args.budget, batch=args.batch,
                                 encoder=args.encoder, subgraph=mode, select=args.select)
            clock = time.perf_counter()
            model, history = train(graph, train_examples[args.budget], featurize, config)
            results, hits, hops = [], [], []
            for level in levels:
                got, h = answer_extractively(graph, model, config, encoder, test_examples[args.budget][level], level)
                results += got
                hits += h
                hops += [int(r["num_hops"]) for r in test]
            report = write_report(results, query_set, graph,
                                  work / "reports" / "pathmind" / f"{args.split}-{mode}-{args.budget}")
            out["pathmind"][mode] = {
                "cells": report["cells"], "em_strict": report["em_strict"],
                "hits1": 100 * float(np.mean([a for a, _ in hits])), "hits3": 100 * float(np.mean([b for _, b in hits])),
                "hits1_by_hop": {str(k): 100 * float(np.mean([a for (a, _), h in zip(hits, hops) if h == k]))
                                 for k in sorted(set(hops))},
                "gains": {"candidate": model.candidate_gain.item() if model.candidate_gain is not None else None,
                          "prior": model.prior_gain.item() if model.prior_gain is not None else None},
                "epochs": len(history), "seconds_per_epoch": float(np.mean([h["seconds"] for h in history])),
                "train_seconds": time.perf_counter() - clock, "val_hits3": [h["val_hits3"] for h in history],
                "val_hits1": [h["val_hits1"] for h in history],
                "train_questions": len(train_examples[args.budget])}
            say(f"{mode}: EM {report['em_strict']:.1f}, {out['pathmind'][mode]['seconds_per_epoch']:.1f} s/epoch")
            save()
        if mode == args.time_mode:
            for b in budgets:
                config = TrainConfig(epochs=1, patience=1, budget=b, batch=args.batch, encoder=args.encoder, subgraph=mode)
                _, history = train(graph, time_examples[b], featurize, config)
                out["epoch_by_budget"][str(b)] = {"seconds": history[0]["seconds"], "mode": mode,
                                                  "questions": len(time_examples[b]),
                                                  "nodes": float(np.mean([len(e.subgraph.nodes) for e in time_examples[b]])),
                                                  "half_edges": float(np.mean([len(e.subgraph.src) for e in time_examples[b]]))}
                save()
        featurize.nodes.flush()
        del kept[mode]
    for name in [v for v in args.adapath.split(",") if v]:
        results = answer_variant(work, args.split, name, graph, bank, args.encoder, test, levels, 16, encoder)
        report = write_report(results, query_set, graph, work / "reports" / args.split / name)
        out["adapath"][name] = {"cells": report["cells"], "em_strict": report["em_strict"]}
        save()
    return out


def say(text: str) -> None:
    import sys

    print(text, file=sys.stderr, flush=True)


def print_tables(out: dict) -> None:
    s = out["setup"]
    print(f"PathMind on real BioStrat-QA records: {s['bank_records']} in the bank half ({s['train_records']} train "
          f"PathMind at every level), {s['test_records']} test x {len(s['levels'])} levels; graph scale {s['scale']} "
          f"({s['nodes']:,} nodes); encoder {s['encoder']}; no LLM; seed 0; split {s.get('split', 'test')}; "
          f"guide candidates {s.get('candidates', 5)}, training guides out of {s.get('folds', 1)} fold(s), "
          f"epoch picked by {s.get('select', 'hits3')}")
    print("\nAnswer in the subgraph, % of test questions (all levels) per hop; subgraph ms/question\n")
    print("| mode @ budget | 1-hop | 2-hop | 3-hop | all | ms/q |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, table in out["survival"].items():
        hop = {h: np.nanmean([table[lv][h] for lv in table]) for h in ("1", "2", "3", "all")}
        print(f"| {key} | {hop['1']:.1f} | {hop['2']:.1f} | {hop['3']:.1f} | {hop['all']:.1f} | "
              f"{out['build_seconds'][key]:.0f} |")
    rows = {f"pathmind {m}": v for m, v in out["pathmind"].items()}
    rows.update({f"adapath {m}": v for m, v in out["adapath"].items()})
    if rows:
        print("\nExtractive EM (strict), % — level x hop; target: the paper's beam without an LLM\n")
        print("| level | hop | " + " | ".join(rows) + " | target |")
        print("|---|---|" + "---:|" * (len(rows) + 1))
        for level in s["levels"]:
            for hop in (1, 2, 3):
                cells = [f"{v['cells'].get(level, {}).get(f'hop{hop}_strict', float('nan')):.1f}" for v in rows.values()]
                target = BEAM_ROW.get(level, {}).get(hop, "")
                print(f"| {level} | {hop} | " + " | ".join(cells) + f" | {target} |")
        print("| all | all | " + " | ".join(f"{v['em_strict']:.1f}" for v in rows.values()) + " | |")
    if out["pathmind"]:
        print("\n| PathMind mode | Hits@1 | Hits@1 by hop | Hits@3 | epochs | s/epoch | train s | train questions | "
              "vote / prior gain |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for m, v in out["pathmind"].items():
            by_hop = " / ".join(f"{x:.1f}" for x in v.get("hits1_by_hop", {}).values())
            gains = " / ".join("-" if g is None else f"{g:.2f}" for g in v.get("gains", {}).values())
            print(f"| {m} | {v['hits1']:.1f} | {by_hop} | {v['hits3']:.1f} | {v['epochs']} | "
                  f"{v['seconds_per_epoch']:.1f} | {v['train_seconds']:.0f} | {v['train_questions']} | {gains} |")
    if out["epoch_by_budget"]:
        print("\n| budget | mode | questions | mean nodes | mean half-edges | s/epoch |")
        print("|---:|---|---:|---:|---:|---:|")
        for b, v in out["epoch_by_budget"].items():
            print(f"| {b} | {v['mode']} | {v.get('questions', '')} | {v['nodes']:.0f} | {v['half_edges']:.0f} | "
                  f"{v['seconds']:.1f} |")
