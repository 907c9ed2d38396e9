"""`adapath answer`: answer questions with a method, resumably."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import typer

from adapath.cli.common import err_console, say
from adapath.errors import InputError


def _finished_ids(out: Path) -> set[tuple[str, str]]:
    """(id, level) of complete result lines; a torn last line (a crash mid-write) is cut off."""
    if not out.is_file():
        return set()
    done = set()
    good_bytes = 0
    with open(out, "rb") as handle:
        for raw in handle:
            try:
                obj = json.loads(raw.decode("utf-8"))
                if not raw.endswith(b"\n"):
                    raise ValueError
            except (ValueError, UnicodeDecodeError):
                break
            done.add((str(obj["id"]), obj.get("level", "")))
            good_bytes += len(raw)
    if good_bytes != out.stat().st_size:
        with open(out, "r+b") as handle:
            handle.truncate(good_bytes)
    return done



def answer_cmd(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    queries: str = typer.Option(..., "--queries", help="Test queries: biostrat:PATH."),
    out: Path = typer.Option(..., "--out", help="Result JSONL (resumed if it exists)."),
    bank: Path | None = typer.Option(None, "--bank", help="Path-Bank directory (AdaPath)."),
    method: str = typer.Option("adapath", "--method", help="adapath or pathmind."),
    model: Path | None = typer.Option(None, "--model", help="PathMind model directory (--method pathmind)."),
    prioritize: str = typer.Option("model", "--prioritize", help="PathMind: model, shortest or random (ablations)."),
    level: str = typer.Option("explicit", "--level", help="explicit|implicit|bare|all."),
    llm: str = typer.Option("none", "--llm", help="none | vllm:MODEL | openai:URL#MODEL | hf:PATH | gguf:PATH."),
    encoder: str = typer.Option("minilm", "--encoder", help="minilm (default), hashing, or a sentence-transformers path."),
    batch: int = typer.Option(16, "--batch", help="Queries per batch (one LLM batch per step)."),
    no_metapath: bool = typer.Option(False, "--no-metapath", help="Ablation: free BFS with the same scorer."),
    llm_plan: bool = typer.Option(False, "--llm-plan", help="Ablation: the LLM proposes meta-paths instead of the Path-Bank."),
    tensor_parallel: int = typer.Option(1, "--tensor-parallel-size", help="vLLM tensor parallel size."),
    limit: int = typer.Option(0, "--limit", help="Answer only the first N queries (0 = all)."),
    force: bool = typer.Option(False, "--force", help="Start over instead of resuming."),
) -> None:
    """Answer questions from paths; one JSON object per query and level."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from adapath.datasets.biostrat import LEVELS, load_records, parse_spec
    from adapath.engine.graph import KnowledgeGraph
    from adapath.llm import LLMError, make_backend
    from adapath.methods.adapath import AdaPath, AdaPathConfig, query_from_record
    from adapath.retrieval.bank_index import BankIndex
    from adapath.retrieval.dense import make_encoder

    levels = list(LEVELS) if level == "all" else [level]
    if any(lv not in LEVELS for lv in levels):
        raise InputError(f"--level {level!r}: choose explicit, implicit, bare or all")
    if method not in ("adapath", "pathmind"):
        raise InputError(f"--method {method!r}: choose adapath or pathmind")
    if method == "adapath" and bank is None:
        raise InputError("--bank is required for --method adapath")
    if method == "pathmind" and model is None:
        raise InputError("--model is required for --method pathmind")
    if llm_plan and llm == "none":
        raise InputError("--llm-plan needs an LLM (--llm ...)")
    records = load_records(parse_spec(queries))
    if limit:
        records = records[:limit]
    graph = KnowledgeGraph.load(kg)
    if force and out.exists():
        out.unlink()
    done = _finished_ids(out)
    todo = [(r, lv) for lv in levels for r in records if (str(r["data_id"]), lv) not in done]
    backend = make_backend(llm, tensor_parallel_size=tensor_parallel)
    if method == "pathmind":
        from adapath.methods.pathmind.infer import MODES, PathMind
        from adapath.methods.pathmind.train import load_checkpoint

        if prioritize not in MODES:
            raise InputError(f"--prioritize {prioritize!r}: choose {', '.join(MODES)}")
        net, train_config = load_checkpoint(model)
        encoder_model = make_encoder(train_config.encoder)
        pipeline = PathMind(graph, net, train_config, encoder_model, backend, graph_dir=kg, mode=prioritize)
    else:
        encoder_model = make_encoder(encoder)
        config = AdaPathConfig(use_metapath=not no_metapath, llm_plan=llm_plan)
        pipeline = AdaPath(graph, BankIndex(bank, encoder_model), encoder_model, backend, config, graph_dir=kg)
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with Progress(TextColumn("answer"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                  TimeRemainingColumn(), console=err_console, transient=True) as bar, \
            open(out, "a", encoding="utf-8") as handle:
        task = bar.add_task("answer", total=len(todo), rate="")
        for lo in range(0, len(todo), batch):
            chunk = todo[lo:lo + batch]
            try:
                results = pipeline.answer([query_from_record(r, lv) for r, lv in chunk])
            except LLMError as exc:
                raise InputError(f"LLM backend failed: {exc}; {lo + len(done)} finished results kept in {out}") from None
            handle.write("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in results))
            handle.flush()
            os.fsync(handle.fileno())
            elapsed = time.perf_counter() - start
            bar.update(task, completed=lo + len(chunk), rate=f"{(lo + len(chunk)) / max(elapsed, 1e-9):.1f} q/s")
    say(f"wrote {out}: {len(todo)} new results ({len(done)} already there) in "
         f"{time.perf_counter() - start:.1f} s")


