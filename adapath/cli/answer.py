"""`adapath answer` (any registered method, resumably) and `adapath methods` (what there is)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import typer

from adapath.cli.common import (
    CACHE_DIR_HELP,
    DEFAULT_ENCODER,
    ENCODER_HELP,
    LLM_OPTION_HELP,
    announce_compiling,
    encoder_option,
    llm_options,
    out_console,
    parse_pairs,
    say,
    use_cache_dir,
)
from adapath.errors import InputError
from adapath.fsutil import check_writable


def answer_cmd(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    queries: str = typer.Option(..., "--queries", help="Questions: biostrat:PATH, stark:PATH[#split], medddx:PATH or questions:PATH."),
    out: Path = typer.Option(..., "--out", help="Result JSONL (resumed if it exists; settings kept beside it)."),
    method: str = typer.Option("adapath", "--method", help="A registered method (see `adapath methods`)."),
    topics: Path | None = typer.Option(None, "--topics", help="Topic links from `adapath dataset topics` (STaRK-Prime, MedDDx)."),
    bank: Path | None = typer.Option(None, "--bank", help="Path-Bank directory (adapath)."),
    model: Path | None = typer.Option(None, "--model", help="PathMind model directory (pathmind)."),
    level: str | None = typer.Option(None, "--level", help="Question level: explicit|implicit|bare|all for BioStrat-QA (default: the first level of the set)."),
    llm: str = typer.Option("none", "--llm", help="none | vllm:MODEL | openai:URL#MODEL | hf:PATH | gguf:PATH."),
    llm_option: list[str] = typer.Option([], "--llm-option", metavar="KEY=VALUE", help=LLM_OPTION_HELP),
    device: str | None = typer.Option(None, "--device", help="Device of the hf: LLM backend (cpu by default, cuda, cuda:N or mps) and of PathMind's priority network (cpu or cuda)."),
    encoder: str = typer.Option(DEFAULT_ENCODER, "--encoder", help=ENCODER_HELP, callback=encoder_option),
    param: list[str] = typer.Option([], "--param", metavar="NAME=VALUE", help="A method parameter NAME=VALUE (repeatable; see `adapath methods`)."),
    batch: int = typer.Option(16, "--batch", help="Queries per batch (one LLM batch per step)."),
    no_metapath: bool = typer.Option(False, "--no-metapath", help="adapath ablation: free BFS (same as --param metapath=false)."),
    llm_plan: bool = typer.Option(False, "--llm-plan", help="adapath ablation: the LLM plans meta-paths (same as --param plan=llm)."),
    prioritize: str | None = typer.Option(None, "--prioritize", help="pathmind: model, readout, cumulative, future, nearest or random (same as --param prioritize=...)."),
    scorer: str | None = typer.Option(None, "--scorer", help="adapath: walk (every walk weighed; the default without an LLM) or beam (the paper's frontier beam; the default with one); same as --param scorer=..."),
    tensor_parallel: int = typer.Option(1, "--tensor-parallel-size", help="vLLM tensor parallel size."),
    executor_name: str = typer.Option("local", "--executor", help="Where batches run: local (this process) or ray (a Ray cluster; pip install 'adapath[distributed]')."),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Join the Ray cluster at HOST:PORT; without it --executor ray starts a local cluster."),
    workers: int = typer.Option(0, "--workers", help="ray: batches answered at once (0 = one per CPU of the cluster)."),
    threads_per_worker: int = typer.Option(1, "--threads-per-worker", help="ray: CPUs each task asks for."),
    limit: int = typer.Option(0, "--limit", help="Answer only the first N questions of each level (0 = all)."),
    force: bool = typer.Option(False, "--force", help="Start over: delete the results and their settings first."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
) -> None:
    """Answer questions with a method; one JSON line per question and level."""
    check_writable(out)
    use_cache_dir(cache_dir)
    from adapath.executors import make_executor
    from adapath.llm import LLMError
    from adapath.methods.registry import get_method
    from adapath.methods.run import prepare_answer_run, run_queries
    from adapath.progress import Progress

    executor = make_executor(executor_name, workers=workers, ray_address=ray_address,
                             threads_per_worker=threads_per_worker)
    spec = get_method(method)
    # pathmind reads --device for its network; the LLM backend takes it where it is hf:
    network_device = method.startswith("pathmind") and device is not None
    backend_options = llm_options(llm, llm_option, None if network_device and not llm.startswith("hf:") else device)
    given = parse_pairs(param, "--param")
    if no_metapath:
        given["metapath"] = "false"
    if llm_plan:
        given["plan"] = "llm"
    if prioritize is not None:
        given["prioritize"] = prioritize
    if device is not None and method.startswith("pathmind"):
        given["device"] = device
    if scorer is not None:
        given["scorer"] = scorer
    steps = 0

    def on_step(prompts: int, seconds: float) -> None:  # each LLM step of this process (not Ray's)
        nonlocal steps
        steps += 1
        bar.note(f"LLM call {steps}: {prompts} prompts in {seconds:.1f} s")

    run = prepare_answer_run(spec, kg=kg, queries=queries, given=given, topics=topics, bank=bank, model=model,
                             level=level, limit=limit, llm=llm, llm_options=backend_options,
                             tensor_parallel=tensor_parallel, encoder=encoder, note=say, observe=on_step)
    announce_compiling(*(("relational",) if spec.name.startswith("pathmind") else ("walk_step",) if "bank" in spec.needs
                         else ()))
    # made after every check: on a terminal it starts a live display that only `with bar` ends
    bar = Progress(None, "answer", unit="questions")
    with bar:
        try:
            summary = run_queries(run.worker_spec(), run.queries, out, settings=run.settings, batch=batch,
                                  force=force, executor=executor, progress=bar)
        except LLMError as exc:
            raise InputError(f"LLM backend failed: {exc}{kept_note(out)}") from None
        finally:
            executor.close()
    if not summary.new:
        say(f"{out}: complete already ({summary.already} results, the same settings); nothing written; "
            "--force starts over")
        return
    say(f"wrote {out}: {summary.new} new results ({summary.already} already there) in {summary.seconds:.1f} s")
    if llm != "none" and summary.new:
        say(f"answers read from the LLM reply: {summary.answer_sources.get('braces', 0)} in braces, "
            f"{summary.answer_sources.get('mentioned', 0)} by a candidate the reply names, "
            f"{summary.answer_sources.get('stated', 0)} stated in words without braces, "
            f"{summary.answer_sources.get('best-path', 0)} unreadable (best path's end used), "
            f"{summary.answer_sources.get('none', 0)} empty")


def kept_note(out: Path) -> str:
    """"; N finished results are kept in OUT" when OUT holds results, else nothing to say."""
    try:
        with open(out, "rb") as handle:
            kept = sum(1 for line in handle if line.strip())
    except OSError:
        return ""
    return f"; {kept} finished results are kept in {out}" if kept else ""


def methods_cmd(
    name: str | None = typer.Argument(None, help="One method: print its parameters, official code and deviations."),
    long: bool = typer.Option(False, "--long", help="Every method in full: parameters, official code, deviations."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """The registered methods: a compact table (name, what it is, paper, LLM calls per question);
    `adapath methods NAME` or --long prints the parameters, official code and deviations."""
    from adapath.methods.registry import all_methods, get_method

    methods = {name: get_method(name, given_as="NAME")} if name else all_methods()
    if as_json:
        print(json.dumps({key: {"summary": s.summary, "paper": s.paper, "repository": s.repository,
                                "calls": s.calls, "deviations": list(s.deviations), "llm": s.llm,
                                "needs": list(s.needs),
                                "params": {p.name: {"default": p.default, "help": p.help} for p in s.params}}
                          for key, s in methods.items()}, indent=2))
        return
    if name or long:
        print("\n\n".join(method_text(spec, out_console.width) for spec in methods.values()))
        return
    print("\n".join(methods_table(list(methods.values()), out_console.width)))


def methods_table(specs: list, width: int) -> list[str]:
    """One line per method within ``width`` columns: name, what it is, paper, LLM calls per
    question; the two texts share what the other columns leave, cut with an ellipsis."""
    if width < 120:
        return narrow_methods_table(specs, width)
    rows = [(s.name, " ".join(s.summary.split()), " ".join(s.paper.split()), s.calls or "-") for s in specs]
    head = ("method", "what it is", "paper", "LLM calls")
    name_w = max(len(r[0]) for r in [head, *rows])
    calls_w = max(len(r[3]) for r in [head, *rows])
    room = max(width - name_w - calls_w - 6, 20)  # three gaps of two spaces
    what_w = room * 3 // 5

    def cut(text: str, size: int) -> str:
        return text if len(text) <= size else text[: size - 1].rstrip() + "…"

    def line(row) -> str:
        return "  ".join([row[0].ljust(name_w), cut(row[1], what_w).ljust(what_w),
                          cut(row[2], room - what_w).ljust(room - what_w), row[3]]).rstrip()

    rule = "  ".join("-" * w for w in (name_w, what_w, room - what_w, calls_w))
    note = ("LLM calls per question: D = max_depth, N = width. `adapath methods NAME` (or --long): parameters, "
            "official code and deviations.")
    return [line(head), rule, *(line(r) for r in rows), "", *textwrap.wrap(note, max(width, 40))]


def narrow_methods_table(specs: list, width: int) -> list[str]:
    """The table for a narrow terminal: name, what it is (wrapped onto a second line, cut
    after it), LLM calls; the papers are left to `adapath methods NAME`."""
    rows = [(s.name, " ".join(s.summary.split()), s.calls or "-") for s in specs]
    head = ("method", "what it is", "LLM calls")
    name_w = max(len(r[0]) for r in [head, *rows])
    calls_w = max(len(r[2]) for r in [head, *rows])
    what_w = max(width - name_w - calls_w - 4, 20)  # two gaps of two spaces
    out = ["  ".join([head[0].ljust(name_w), head[1].ljust(what_w), head[2]]),
           "  ".join("-" * w for w in (name_w, what_w, calls_w))]
    for name, what, calls in rows:
        lines = textwrap.wrap(what, what_w, break_on_hyphens=False) or [""]
        if len(lines) > 2:
            lines = [lines[0], textwrap.shorten(" ".join(lines[1:]), what_w, placeholder="…")]
        out.append("  ".join([name.ljust(name_w), lines[0].ljust(what_w), calls]).rstrip())
        out += [" " * (name_w + 2) + line for line in lines[1:]]
    note = ("LLM calls per question: D = max_depth, N = width. `adapath methods NAME` (or --long): paper, "
            "parameters, official code and deviations.")
    return [*out, "", *textwrap.wrap(note, max(width, 40))]


def method_text(spec, width: int) -> str:
    """One method as plain text: what it is, paper, code, calls, parameters and deviations,
    wrapped to ``width`` columns."""
    width = max(width, 40)

    def wrap(text: str, first: str, rest: str) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, initial_indent=first, subsequent_indent=rest,
                             break_on_hyphens=False) or [first.rstrip()]

    needs = {"required": "--llm", "optional": "--llm (optional)", "none": "no LLM"}[spec.llm]
    lines = wrap(spec.summary, f"{spec.name}: ", "  ")
    lines += wrap(spec.paper, "  paper: ", "    ")
    code = f"{spec.repository} (https://github.com/{spec.repository})" if spec.repository else "none"
    lines += wrap(code, "  official code: ", "    ")
    lines += wrap(f"{needs}{''.join(f', --{n}' for n in spec.needs)}; LLM calls per question: "
                  f"{spec.calls or 'not stated'}", "  takes: ", "    ")
    if spec.params:
        lines.append("  parameters (--param NAME=VALUE):")
        for p in spec.params:
            lines += wrap(p.help, f"    {p.name}={p.default}: ", "      ")
    if spec.deviations:
        lines.append("  deviations from the official code:")
        for text in spec.deviations:
            lines += wrap(text, "    - ", "      ")
    return "\n".join(lines)
