"""``bench pathmind --real``: PathMind trained on the real records' bank half, answering the test
half beside AdaPath; models and answers kept and resumed (docs/benchmarks/pathmind_real.md)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from adapath.bench import pathmind_reasoner
from adapath.bench.inputs import evenly_spaced, inputs, key_of, say
from adapath.bench.pathmind_models import model_names, model_settings
from adapath.bench.real_records import LEVELS, PAPER, answer_method, answer_variant, prepare
from adapath.bench.result import report
from adapath.config import without_later
from adapath.datasets.biostrat import records_query_set
from adapath.methods.pathmind.config import TrainConfig

# TrainConfig settings added after models were kept, with their defaults: left out of the key there
LATER_SETTINGS = {"guide_paths": False, "focus": False, "negatives": "sampled"}


def model_dir(work: Path, split: str, config, generated: int = 0, train_records: int = 0, init: Path | None = None) -> Path:
    settings = without_later(asdict(config), LATER_SETTINGS)  # the models trained before them keep their folders
    del settings["rerank"]  # the reader is fitted after training, into the network's folder: one network either way
    key = key_of(settings, 6)
    more = (f"-train{train_records}" if train_records else "") + (f"-gen{generated}" if generated else "")
    if init is not None:  # fine-tuned from another model: named after it
        more += f"-from-{init.name}"
    return work / "pathmind" / f"{split}-{config.cost}-{config.entity}-{key}{more}"


def prepare_model(setup, split: str, records, config, generated: list[dict] = (), subset: int = 0,
                  init: Path | None = None) -> tuple[Path, list]:
    """The trained priority (kept in ``work``, with its reader when ``config.rerank``) and its
    history. ``generated``: records that only train (the real alone validate); ``subset``: how
    many of the bank half; ``init``: the start."""
    out = model_dir(setup.work, split, config, len(generated), subset, init)
    if not (out / "config.json").is_file():
        train_model(setup, out, records, config, generated, init)
    elif config.rerank:
        from adapath.methods.pathmind.reader import load_reader

        if load_reader(out) is None:  # a network trained before its reader was asked for
            fit_reader_into(setup, out, records, config)
    return out, json.loads((out / "config.json").read_text())["history"]


def fitted_reader(setup, model, features, examples, config):
    """The reader (``--rerank``) of ``model``, fitted on the validation fifth its training held
    out of ``examples``; what the fit measured is said."""
    from adapath.methods.pathmind.reader import evidence_for, fit_reader

    reader = fit_reader(model, features, examples, config, evidence_for(setup.graph, setup.graph_dir, features))
    say(f"  {reader.summary()}")
    return reader


def fit_reader_into(setup, out: Path, records, config) -> None:
    """The reader of the model kept in ``out``, written beside it."""
    from adapath.methods.pathmind import train as pm
    from adapath.retrieval.dense import NodeEmbeddings

    model, _ = pm.load_checkpoint(out)
    examples = [e for level in LEVELS for e in pm.make_examples(setup.graph, records, setup.encoder, level)]
    features = pm.Features(setup.graph, NodeEmbeddings(setup.graph, setup.encoder, setup.graph_dir), config.hops)
    fitted_reader(setup, model, features, examples, config).save(out)


def train_model(setup, out: Path, records, config, generated: list[dict], init: Path | None) -> None:
    from adapath.methods.pathmind import train as pm
    from adapath.retrieval.dense import NodeEmbeddings

    graph, encoder = setup.graph, setup.encoder
    kind = (f"Bellman-Ford network, {config.message} message, {config.nodes or 'all'} entities per step"
            if config.network == "bellman-ford" else f"walk network, {config.cost} cost, {config.entity} entities")
    say(f"training PathMind ({kind}, {config.loss} loss) on {len(records)} "
        f"records x {len(LEVELS)} levels" + (f" and {len(generated)} generated records" if generated else "")
        + (f", starting from {init.name}" if init is not None else ""))
    examples = [e for level in LEVELS for e in pm.make_examples(graph, records, encoder, level)]
    more = [e for level in LEVELS for e in pm.make_examples(graph, list(generated), encoder, level)]
    features = pm.Features(graph, NodeEmbeddings(graph, encoder, setup.graph_dir), config.hops)
    clock = time.perf_counter()
    model, history = pm.train(graph, examples, features, config, log=lambda h: say(f"  {pm.epoch_line(h)}"),
                              progress=True, more=more, split=lambda v, f, m: say(
        f"  training questions: {f} real, {m} generated ({100 * m / max(f + m, 1):.0f}%); validating on {v} real"),
        init=pm.load_checkpoint(init)[0] if init is not None else None)
    say(f"  trained in {time.perf_counter() - clock:.0f} s")
    reader = fitted_reader(setup, model, features, examples, config) if config.rerank else None
    pm.save_checkpoint(model, config, graph, out, history, started_from=str(init) if init is not None else "",
                       reader=reader)


def generated_records(graph, test: list[dict], count: int) -> list[dict]:
    """``count`` generated questions describing their answer, none with a test record's (topic,
    answer) pair (checked again on those read from the bench cache)."""
    from adapath.datasets.generate import topic_answer_pairs

    held = topic_answer_pairs(test)
    records = inputs().questions(graph, count, seed=7, first_id=10_000_000, phrasing="describe", exclude=held)
    if topic_answer_pairs(records) & held:
        raise SystemExit(f"generated questions: {len(topic_answer_pairs(records) & held)} (topic, answer) pairs "
                         "shared with the test records")
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


# the paper's ablations as `--param prioritize=...` of the first model, and the unlearned orders
ABLATIONS = ("readout", "cumulative", "future", "nearest", "random")

FAILURES = ("no answer within 3 hops", "an answer selected, outranked in the final K", "no answer reached by the search",
            "a rival: answer's type and depth", "answer's type, another depth", "another type")


def search_reach(setup, model: Path, records: list[dict], levels: list[str], nodes: int = 0,
                 made: dict | None = None) -> dict:
    """(id, level) -> whether the model's search reached a valid answer of the question (A*Net's
    pruning propagates from a few entities per step: an answer no message reached keeps the
    state zero and cannot be ranked); ``nodes``: entities per step, when not the model's;
    ``made``: the features and questions of earlier calls, by hop count, reused."""
    from adapath.methods.pathmind import train as pm
    from adapath.retrieval.dense import NodeEmbeddings

    net, config = pm.load_checkpoint(model)
    if nodes:
        net.nodes = nodes
    made = {} if made is None else made
    if config.hops not in made:  # the node texts and the questions' encodings, once per bench run
        features = pm.Features(setup.graph, NodeEmbeddings(setup.graph, setup.encoder, setup.graph_dir), config.hops)
        made[config.hops] = (features, {level: pm.make_examples(setup.graph, records, setup.encoder, level)
                                        for level in levels})
    features, examples = made[config.hops]
    return {(e.id, level): hit for level in levels
            for e, hit in zip(examples[level], pm.answers_reached(net, features, examples[level]))}


def reach_table(records: list[dict], reached: dict) -> dict:
    """Per hop count, % of the questions whose search reached a valid answer."""
    hops = {str(r["data_id"]): str(r["num_hops"]) for r in records}
    by_hop: dict[str, list[bool]] = {}
    for (qid, _level), hit in reached.items():
        by_hop.setdefault(hops[qid], []).append(hit)
    return {h: round(100 * float(np.mean(v)), 1) for h, v in sorted(by_hop.items())}


def failure_table(graph, records: list[dict], results: list, k: int = 3, reached: dict | None = None) -> dict:
    """Per hop count, why a question's K selected entities miss every valid answer: the first of
    ``FAILURES`` that holds (depth: hops from the nearest topic; reached: ``reached[(id,
    level)]``, from :func:`search_reach`, when given; a rival: a selected entity of an answer's
    type at the nearest answer's depth)."""
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
            masks = np.array(topic_reach(graph, relational, record, 3))  # depth 4: beyond 3 hops
            depth_of[str(result.id)] = np.where(masks.any(0), masks.argmax(0), 4).astype(np.int8)
        depth = depth_of[str(result.id)]
        near = [a for a in answers if depth[a] <= 3]
        explored = {v for vs in result.explored.values() for v in vs}
        if not near:
            cell[FAILURES[0]] += 1
        elif explored & {int(graph.node_id[a]) for a in near}:
            cell[FAILURES[1]] += 1
        elif reached is not None and not reached[(str(result.id), result.level)]:
            cell[FAILURES[2]] += 1
        else:
            types = {int(graph.node_type[a]) for a in near}
            nearest = min(int(depth[a]) for a in near)
            typed = [c for c in chosen if int(graph.node_type[c]) in types]
            if any(int(depth[c]) == nearest for c in typed):
                cell[FAILURES[3]] += 1
            elif typed:
                cell[FAILURES[4]] += 1
            else:
                cell[FAILURES[5]] += 1
    return dict(sorted(table.items()))


def agreement(a: list, b: list) -> float:
    """% of questions (id, level) both answered where the answers are the same."""
    other = {(r.id, r.level): r.answer for r in b}
    same = [r.answer == other[(r.id, r.level)] for r in a if (r.id, r.level) in other]
    return round(100 * float(np.mean(same)), 1) if same else float("nan")


def reading(name: str) -> dict:
    """The answering params of a model name: its reader only where the name asks for one (a
    network's folder is shared by its names with and without ``rerank``)."""
    return {"rerank": int(TrainConfig(**model_settings(name)).rerank)}


def run(args) -> dict:
    names = model_names(args.models)  # a bad entry: one line before the graph is built
    import torch

    from adapath.eval.report import write_report

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    bank_records, test = inputs().split(args.records, args.split)
    whole_half = test  # AdaPath answers the whole half once (bench real-records shares the file)
    test = evenly_spaced(test, args.limit)
    # the priority's training records (AdaPath's bank always holds the whole bank half)
    train_records = evenly_spaced(bank_records, args.train_records)
    subset = len(train_records) if len(train_records) < len(bank_records) else 0
    setup = prepare(args, args.graph, bank_records, args.encoder)
    graph = setup.graph
    levels = args.levels.split(",")
    query_set = records_query_set(test)
    out: dict = {"setup": {"graph": args.graph, "split": args.split, "scale": args.scale, "nodes": graph.num_nodes,
                           "edges": graph.num_edges, "encoder": setup.encoder.name,
                           "train_records": len(train_records), "test_records": len(test), "levels": args.levels,
                           "seed": 0},
                 "in_subgraph": in_subgraph(graph, test, 3), "models": {}, "methods": {}, "agreement": {},
                 "reach": {}, "failures": {}}

    def summarize(name: str, results: list) -> None:
        summary = write_report(results, query_set, graph, setup.work / "reports" / args.split / name)
        out["methods"][name] = {k: summary[k] for k in ("cells", "em_strict", "set_hits")}

    def train(name: str, epochs: int, more: list[dict] = (), init: Path | None = None) -> tuple[Path, dict]:
        config = TrainConfig(epochs=epochs, batch=args.batch, encoder=args.encoder, patience=args.patience,
                             **model_settings(name))
        path, history = prepare_model(setup, args.split, train_records, config, more, subset, init)
        return path, {"epochs": len(history), "seconds_per_epoch": float(np.mean([h["seconds"] for h in history])),
                      "val_hits1": [h["val_hits1"] for h in history], "val_hits3": [h["val_hits3"] for h in history]}

    def answer(name: str, method: str, model: Path, params: dict) -> list:
        return answer_method(setup, args.split, name, method, test, levels, params, model=model,
                             bank=method == "pathmind+walk")

    models = {}
    for name in names:
        models[name], out["models"][name] = train(name, args.epochs)
        out["models"][name]["settings"] = ", ".join(f"{k}={v}" for k, v in model_settings(name).items()) or "default"
    default = models[names[0]]
    runs = {f"pathmind {name}": ("pathmind", path, reading(name)) for name, path in models.items()}
    runs |= {name: ("pathmind", default, {"prioritize": name, "rerank": 0}) for name in ABLATIONS}
    runs |= {"greedy": ("pathmind", default, {"select": "greedy", **reading(names[0])}),
             "pathmind+walk": ("pathmind+walk", default, reading(names[0]))}
    wanted_runs = []
    for name in [v for v in args.variants.split(",") if v]:
        wanted_runs += list(runs)[:len(models)] if name == "models" else [name]
    for count in [int(c) for c in args.answer_nodes.split(",") if c]:  # the first model, answering wider
        runs[f"pathmind {names[0]} answering nodes={count}"] = ("pathmind", default, {"nodes": count, **reading(names[0])})
        wanted_runs.append(f"pathmind {names[0]} answering nodes={count}")
    answered, reach_inputs = {}, {}
    for name in wanted_runs:
        method, model, params = runs[name]
        answered[name] = answer(f"{name.replace(' ', '-')}-{model.name}", method, model, params)
        summarize(name, answered[name])
        if name.startswith("pathmind ") and name != "pathmind+walk":
            reached = search_reach(setup, model, test, levels, params.get("nodes", 0), reach_inputs)
            out["reach"][name] = reach_table(test, reached)
            out["failures"][name] = failure_table(graph, test, answered[name], reached=reached)
    if args.generated:
        curve_name = args.curve_model or names[0]
        out["curve"] = []

        def curve_row(count: int, epochs: int, more: list[dict], init: Path | None = None) -> Path:
            """One curve model trained (``init``: fine-tuned from it) and answering; its row."""
            path, record = train(curve_name, epochs, more, init)
            label = f"curve {curve_name} +{count}" + (" then real" if init is not None else "")
            results = answer(f"curve-{curve_name}-{count}-{path.name}", "pathmind", path, reading(curve_name))
            summarize(label, results)
            reached = search_reach(setup, path, test, levels, made=reach_inputs)
            out["reach"][label] = reach_table(test, reached)
            out["failures"][label] = failure_table(graph, test, results, reached=reached)
            out["curve"].append({"name": label, "generated": count, "then_real": init is not None,
                                 "shared_pairs_with_test": 0, **record})
            return path

        for count in [int(c) for c in args.generated.split(",")]:
            more = generated_records(graph, whole_half, count) if count else []
            path = curve_row(count, args.curve_epochs if count and args.curve_epochs else args.epochs, more)
            # then fine-tuned on the real records alone (for the real-only model: the control, as many more epochs)
            if args.curve_then_real:
                curve_row(count, args.epochs, [], init=path)
    for name in [v for v in args.adapath.split(",") if v]:
        wanted = {str(r["data_id"]) for r in test}
        answered[f"adapath {name}"] = [r for r in answer_variant(setup, args.split, name, whole_half, levels)
                                       if r.id in wanted]
        summarize(f"adapath {name}", answered[f"adapath {name}"])
    if "adapath walk" in answered:
        for name in (f"pathmind {names[0]}", "pathmind+walk"):
            if name in answered:
                out["agreement"][f"{name} vs adapath walk"] = agreement(answered[name], answered["adapath walk"])
    if args.reasoner:
        out["reasoner"] = pathmind_reasoner.run(args, setup, bank_records, test, default)
    return out


def tables(out: dict) -> dict:
    """The tables: per level x hop Hits@1, Hits@3, EM; ablations, training, failures, curve."""
    methods, levels = out["methods"], out["setup"]["levels"].split(",")
    rows = [(level, hop) for level in levels for hop in ("1", "2", "3")]
    got = {}
    for k in ("1", "3"):
        got[f"hits@{k}"] = {f"{lv} {h}": {n: m["set_hits"].get(lv, {}).get(h, {}).get(k) for n, m in methods.items()}
                            for lv, h in rows}
        got[f"hits@{k}"]["all"] = {n: m["set_hits"].get("overall", {}).get(k) for n, m in methods.items()}
    got["em_strict"] = {f"{lv} {h}": {**{n: m["cells"].get(lv, {}).get(f"hop{h}_strict") for n, m in methods.items()},
                                      "paper 70B": PAPER[lv][int(h)]} for lv, h in rows}
    got["em_strict"]["all"] = {**{n: m["em_strict"] for n, m in methods.items()}, "paper 70B": 65.5}
    first = next((f"pathmind {n}" for n in out["models"] if f"pathmind {n}" in methods), None)
    if first:  # without an LLM the path rows give Full's answer; w/o Alignment and w/o Training are the reasoner's
        ours = {"Full": first, "w/o Prioritization": "readout", "Random Paths": first, "Shortest Paths": first,
                "Important Paths": first, "d only (cumulative cost)": "cumulative", "f only (future cost)": "future"}
        got["ablations"] = {label: {"hits@1": got["hits@1"]["all"].get(ours.get(label)),
                                    "hits@3": got["hits@3"]["all"].get(ours.get(label)),
                                    "paper WebQSP": webqsp, "paper CWQ": cwq}
                            for label, webqsp, cwq in pathmind_reasoner.PAPER_ABLATIONS}
        got["ablations"] |= {label: {"hits@1": got["hits@1"]["all"][name], "hits@3": got["hits@3"]["all"][name]}
                             for label, name in (("nearest (unlearned)", "nearest"), ("random priorities", "random"),
                                                 ("greedy selection", "greedy")) if name in methods}
    return {"setup": out["setup"], "in_subgraph": out["in_subgraph"],
            "training": [{"model": n, **m} for n, m in out["models"].items()], **got,
            **{k: out[k] for k in ("reach", "failures", "curve", "agreement") if out.get(k)},
            **({"reasoner": pathmind_reasoner.tables(out["reasoner"])} if out.get("reasoner") else {})}


def main(args) -> None:
    s = (out := run(args))["setup"]
    report(args, tables(out), f"PathMind on real BioStrat-QA records: graph {s['graph']}, scale {s['scale']}; "
           f"trained on the bank half ({s['train_records']} records x 3 levels), {s['test_records']} test records x "
           f"{s['levels']} ({s['split']} split); encoder {s['encoder']}; no LLM; seed 0. in_subgraph: % of test "
           "records with an answer within 3 hops of a topic; reach: % of questions whose search reached a valid "
           "answer, by hop; failures: why the K = 3 selected entities miss, by hop")
