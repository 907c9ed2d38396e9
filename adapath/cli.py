"""The ``adapath`` command line: one Typer app with sub-commands per room."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from adapath.errors import InputError

app = typer.Typer(
    help="adapath: multi-hop biomedical QA over knowledge graphs by path-finding.",
    no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False,
)
kg_app = typer.Typer(help="Build, import and inspect knowledge graphs.", no_args_is_help=True)
import_app = typer.Typer(help="Import a graph from a real format.", no_args_is_help=True)
dataset_app = typer.Typer(help="Generate and load question sets.", no_args_is_help=True)
bank_app = typer.Typer(help="Build and inspect Path-Banks.", no_args_is_help=True)
app.add_typer(kg_app, name="kg")
kg_app.add_typer(import_app, name="import")
app.add_typer(dataset_app, name="dataset")
app.add_typer(bank_app, name="bank")
eval_app = typer.Typer(help="Score result files: metrics, tables, plots, comparisons.",
                       invoke_without_command=True)
app.add_typer(eval_app, name="eval")
pathmind_app = typer.Typer(help="PathMind: train the path-priority model, build reasoner data, fine-tune.",
                           no_args_is_help=True)
app.add_typer(pathmind_app, name="pathmind")

out_console = Console()
err_console = Console(stderr=True)


def _say(message: str) -> None:
    """Status and errors go to stderr as plain single lines (no wrapping)."""
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- kg


@kg_app.command("synth")
def kg_synth(
    out: Path = typer.Option(..., "--out", help="Output graph directory."),
    scale: float = typer.Option(1.0, "--scale", help="1.0 = PrimeKG's size; node and edge counts scale alike."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same graph."),
    evidence: list[Path] = typer.Option([], "--evidence", help="BioStrat-QA JSONL whose real nodes and triplets are planted."),
    descriptions: list[Path] = typer.Option([], "--descriptions", help="BioStrat-QA JSONL whose descriptions feed distractor text (not planted)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
) -> None:
    """Generate the PrimeKG-shaped default graph."""
    from adapath.engine.synthetic import generate

    start = time.perf_counter()
    graph = generate(scale=scale, seed=seed, evidence=evidence, description_sources=descriptions)
    graph.save(out, overwrite=force)
    _say(f"wrote {out}: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges "
         f"in {time.perf_counter() - start:.1f} s")


@kg_app.command("info")
def kg_info(
    graph_dir: Path = typer.Argument(..., help="Graph directory."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """Counts per node type and relation, and the degree profile."""
    from adapath.engine.graph import KnowledgeGraph

    info = KnowledgeGraph.load(graph_dir).info()
    if as_json:
        print(json.dumps(info, indent=2))
        return
    out_console.print(f"[bold]{graph_dir}[/]: {info['nodes']:,} nodes, {info['edges']:,} edges "
                      f"({info['half_edges']:,} half-edges)")
    for title, key in (("node type", "node_types"), ("relation", "relations")):
        table = Table(title=None)
        table.add_column(title)
        table.add_column("count", justify="right")
        for name, count in sorted(info[key].items(), key=lambda kv: -kv[1]):
            table.add_row(name, f"{count:,}")
        out_console.print(table)
    d = info["degree"]
    out_console.print(f"degree: mean {d['mean']:.1f}, p50 {d['p50']:.0f}, p90 {d['p90']:.0f}, "
                      f"p99 {d['p99']:.0f}, max {d['max']:,}")


def _save_imported(graph, out: Path, force: bool, start: float) -> None:
    graph.save(out, overwrite=force)
    _say(f"wrote {out}: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges "
         f"in {time.perf_counter() - start:.1f} s")


@import_app.command("primekg")
def import_primekg(
    kg_csv: Path = typer.Argument(..., help="PrimeKG kg.csv."),
    out: Path = typer.Option(..., "--out", help="Output graph directory."),
    nodes: Path | None = typer.Option(None, "--nodes", help="Nodes table (node_index, name, type, description); CSV or Parquet."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
) -> None:
    """Import PrimeKG's kg.csv (streamed; x_index/y_index stay the node ids)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from adapath.engine.loaders import load_primekg

    start = time.perf_counter()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=err_console, transient=True) as progress:
        task = progress.add_task("reading kg.csv")
        graph = load_primekg(kg_csv, nodes=nodes, progress=lambda rows: progress.update(
            task, description=f"reading kg.csv: {rows:,} rows"))
    _save_imported(graph, out, force, start)


@import_app.command("hetionet")
def import_hetionet(
    json_file: Path = typer.Argument(..., help="Hetionet v1.0 JSON."),
    out: Path = typer.Option(..., "--out"),
    force: bool = typer.Option(False, "--force"),
) -> None:
    """Import Hetionet v1.0 JSON."""
    from adapath.engine.loaders import load_hetionet

    start = time.perf_counter()
    _save_imported(load_hetionet(json_file), out, force, start)


@import_app.command("edges")
def import_edges(
    edges: Path = typer.Argument(..., help="Edges table: head, relation, tail (CSV or Parquet)."),
    nodes: Path = typer.Option(..., "--nodes", help="Nodes table: id, name, type, description."),
    out: Path = typer.Option(..., "--out"),
    allow_new_types: bool = typer.Option(False, "--allow-new-types", help="Accept node types outside PrimeKG's ten."),
    force: bool = typer.Option(False, "--force"),
) -> None:
    """Import a generic edges table and nodes table."""
    from adapath.engine.loaders import load_edges

    start = time.perf_counter()
    _save_imported(load_edges(edges, nodes, allow_new_types=allow_new_types), out, force, start)


@import_app.command("biostrat")
def import_biostrat(
    records: list[Path] = typer.Argument(..., help="BioStrat-QA JSONL files."),
    out: Path = typer.Option(..., "--out"),
    force: bool = typer.Option(False, "--force"),
) -> None:
    """Import the evidence graph of BioStrat-QA records (their nodes and triplets only)."""
    from adapath.engine.loaders import load_biostrat

    start = time.perf_counter()
    _save_imported(load_biostrat(records), out, force, start)


# ---------------------------------------------------------------------------- dataset


def _parse_hops(text: str) -> tuple[int, ...]:
    try:
        hops = tuple(sorted({int(h) for h in text.split(",") if h.strip()}))
    except ValueError:
        raise InputError(f"--hops {text!r}: expected a comma-separated list such as 1,2,3") from None
    if not hops or any(h < 1 for h in hops):
        raise InputError(f"--hops {text!r}: hop counts start at 1")
    return hops


@dataset_app.command("generate")
def dataset_generate(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    n: int = typer.Option(..., "--n", help="Number of questions."),
    out: Path = typer.Option(..., "--out", help="Output JSONL (BioStrat-QA format)."),
    seed: int = typer.Option(0, "--seed"),
    hops: str = typer.Option("1,2,3", "--hops", help="Hop counts to draw templates from."),
    first_id: int = typer.Option(0, "--first-id", help="data_id of the first record."),
) -> None:
    """Generate BioStrat-QA-format questions on a graph by walking the 60 templates."""
    from adapath.datasets.generate import QueryGenerator
    from adapath.engine.graph import KnowledgeGraph
    from adapath.fsutil import atomic_file

    if n < 1:
        raise InputError("--n must be at least 1")
    graph = KnowledgeGraph.load(kg)
    records = QueryGenerator(graph).generate(n, seed=seed, hops=_parse_hops(hops), first_id=first_id)
    with atomic_file(out) as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    _say(f"wrote {out}: {len(records)} questions")


@dataset_app.command("build")
def dataset_build(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    out: Path = typer.Option(..., "--out", help="Output directory: train/dev/test JSONL + stats.json."),
    per_template: int = typer.Option(40, "--per-template", help="Walks drawn per template."),
    min_grounding: int = typer.Option(5, "--min-grounding", help="Distinct walks a template needs."),
    max_answers: int = typer.Option(50, "--max-answers", help="Drop records with more valid answers."),
    seed: int = typer.Option(0, "--seed"),
    llm: str = typer.Option("none", "--llm", help="Surface forms by an LLM (none: templated forms)."),
    force: bool = typer.Option(False, "--force"),
) -> None:
    """Build a BioStrat-QA-format dataset from a graph and the 60 templates (5:2:3 split)."""
    from adapath.datasets.construct import BuildConfig, build_dataset
    from adapath.engine.graph import KnowledgeGraph
    from adapath.fsutil import atomic_dir
    from adapath.llm import make_backend

    graph = KnowledgeGraph.load(kg)
    config = BuildConfig(per_template=per_template, min_grounding=min_grounding,
                         max_answers=max_answers, seed=seed)
    splits, stats = build_dataset(graph, config, make_backend(llm))
    with atomic_dir(out, overwrite=force) as tmp:
        for name, records in splits.items():
            (tmp / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        (tmp / "stats.json").write_text(json.dumps(stats, indent=2))
    _say(f"wrote {out}: " + ", ".join(f"{n} {len(r)}" for n, r in splits.items()) +
         f" records from {stats['templates_kept']} templates")


@dataset_app.command("topics")
def dataset_topics(
    kg: Path = typer.Option(..., "--kg", help="Graph directory (PrimeKG ids for STaRK-Prime)."),
    out: Path = typer.Option(..., "--out", help="Output JSONL: one topic choice per question."),
    stark: Path | None = typer.Option(None, "--stark", help="STaRK-Prime CSV (id, query, answer_ids)."),
    medddx: Path | None = typer.Option(None, "--medddx", help="MedDDx JSONL (see adapath.datasets.medddx)."),
    llm: str = typer.Option("none", "--llm"),
    encoder: str = typer.Option("minilm", "--encoder"),
    limit: int = typer.Option(0, "--limit"),
) -> None:
    """Extract topic entities for questions that come with answers only (Appendix C)."""
    from adapath.datasets import medddx as medddx_module
    from adapath.datasets import stark_prime
    from adapath.datasets.topics import TopicExtractor
    from adapath.engine.graph import KnowledgeGraph
    from adapath.fsutil import atomic_file
    from adapath.llm import make_backend
    from adapath.retrieval.bm25 import GraphText
    from adapath.retrieval.dense import make_encoder

    if (stark is None) == (medddx is None):
        raise InputError("give exactly one of --stark or --medddx")
    graph = KnowledgeGraph.load(kg)
    if stark is not None:
        items = [(str(q.id), q.query, list(q.answer_ids)) for q in stark_prime.load_questions(stark)]
        resolve = lambda ids: [int(i) for i in graph.index_of(ids, missing="ignore") if i >= 0]  # noqa: E731
    else:
        names = {}
        for i, name in enumerate(graph.names.to_pylist()):
            names.setdefault(name.lower(), []).append(i)
        items = [(q.id, q.question, [q.options[q.answer]]) for q in medddx_module.load_questions(medddx)]
        resolve = lambda opts: [i for o in opts for i in names.get(o.lower(), [])]  # noqa: E731
    if limit:
        items = items[:limit]
    extractor = TopicExtractor(graph, GraphText.for_graph(graph, kg, b=0.0), make_encoder(encoder),
                               make_backend(llm))
    found = 0
    with atomic_file(out) as handle:
        for qid, text, answers in items:
            answer_nodes = resolve(answers)
            choice = extractor.extract(text, answer_nodes) if answer_nodes else None
            if choice is None:
                row = {"id": qid, "error": "answers not in the graph" if not answer_nodes else "no template grounds"}
            else:
                found += 1
                row = {"id": qid, "template_id": choice.template_id,
                       "topic_ids": [int(graph.node_id[t]) for t in choice.topics],
                       "topic_names": [graph.name(t) for t in choice.topics], "fallback": choice.fallback}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    _say(f"wrote {out}: topics for {found} of {len(items)} questions")


# ---------------------------------------------------------------------------- bank


@bank_app.command("build")
def bank_build(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    queries: str = typer.Option(..., "--queries", help="Training queries: biostrat:PATH."),
    out: Path = typer.Option(..., "--out", help="Bank directory (resumed if it exists)."),
    level: str = typer.Option("explicit", "--level", help="Query text: explicit|implicit|bare."),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda."),
    batch: int = typer.Option(32, "--batch", help="Queries per batch (one PPR run)."),
    workers: int = typer.Option(0, "--workers", help="CPU threads for PPR and for the per-query corridor and path search (0 = all cores)."),
    tol: float = typer.Option(1e-8, "--tol", help="PPR L1 tolerance."),
    search: str = typer.Option("yen", "--search", help="yen (k-shortest pool, binned by hop) or hop-bounded (best paths of each hop count)."),
    force: bool = typer.Option(False, "--force", help="Start over instead of resuming."),
) -> None:
    """Build a Path-Bank: weights, bidirectional PPR, corridors, k-shortest paths."""
    import shutil

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from adapath.datasets.biostrat import LEVELS, load_records, parse_spec
    from adapath.engine.graph import KnowledgeGraph
    from adapath.engine.pathbank import BankConfig, PathBankBuilder

    if level not in LEVELS:
        raise InputError(f"--level {level!r}: choose from {', '.join(LEVELS)}")
    if batch < 1:
        raise InputError("--batch must be at least 1")
    if search not in ("yen", "hop-bounded"):
        raise InputError(f"--search {search!r}: choose yen or hop-bounded")
    import numba

    if workers:
        numba.set_num_threads(max(1, min(workers, numba.config.NUMBA_NUM_THREADS)))
    threads = workers or (os.cpu_count() or 1)
    records = load_records(parse_spec(queries))
    if not records:
        raise InputError(f"{queries}: no records")
    graph = KnowledgeGraph.load(kg)
    if force and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    config = BankConfig(level=level, batch=batch, device=device, tol=tol, search=search)
    builder = PathBankBuilder(graph, config, graph_dir=kg, workers=threads)
    start = time.perf_counter()
    with Progress(TextColumn("bank"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                  console=err_console, transient=True) as bar:
        task = bar.add_task("bank", total=len(records), rate="")

        def report(progress):
            elapsed = time.perf_counter() - start
            bar.update(task, completed=progress.done, rate=f"{progress.done / max(elapsed, 1e-9):.1f} q/s")

        progress = builder.build(records, out, on_progress=report)
    _say(f"wrote {out}: {progress.done}/{progress.total} queries in "
         f"{time.perf_counter() - start:.1f} s")


@bank_app.command("info")
def bank_info_cmd(
    bank: Path = typer.Argument(..., help="Bank directory."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Paths per hop, meta-path frequencies, fallbacks, corridor-K histogram."""
    from adapath.engine.pathbank import bank_info

    info = bank_info(bank)
    if as_json:
        print(json.dumps(info, indent=2))
        return
    state = "complete" if info["complete"] else "partial"
    out_console.print(f"[bold]{bank}[/]: {info['queries_done']}/{info['queries_total']} queries "
                      f"({state}), {info['paths']:,} paths, {info['distinct_metapaths']} meta-paths")
    out_console.print("paths per hop: " + ", ".join(f"{h}: {c}" for h, c in info["paths_per_hop"].items()))
    out_console.print("corridor K: " + ", ".join(f"{k}: {c}" for k, c in info["corridor_k"].items()))
    out_console.print("fallbacks: " + ", ".join(f"{k}: {c}" for k, c in info["fallbacks"].items()))
    table = Table(title="most frequent meta-paths")
    table.add_column("meta-path")
    table.add_column("paths", justify="right")
    for metapath, count in list(info["metapaths"].items())[:10]:
        table.add_row(escape(metapath), str(count))
    out_console.print(table)
    seconds = info["stage_seconds"]
    out_console.print("stage seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in seconds.items()))


# ---------------------------------------------------------------------------- answer


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


@app.command("answer")
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
    _say(f"wrote {out}: {len(todo)} new results ({len(done)} already there) in "
         f"{time.perf_counter() - start:.1f} s")


# ---------------------------------------------------------------------------- eval


def _parse_ablation(items: list[str]) -> dict[str, Path]:
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--ablation {item!r}: expected NAME=FILE")
        out[name] = Path(path)
    return out


@eval_app.callback()
def eval_report(
    ctx: typer.Context,
    results: Path | None = typer.Option(None, "--results", help="Result JSONL of `adapath answer`."),
    queries: str | None = typer.Option(None, "--queries", help="The records with gold: biostrat:PATH."),
    out: Path | None = typer.Option(None, "--out", help="Report directory."),
    kg: Path | None = typer.Option(None, "--kg", help="Graph (names of all valid answers, triplet recall, traversability)."),
    ablation: list[str] = typer.Option([], "--ablation", help="NAME=FILE result files for the ablation plot."),
    judge_llm: str = typer.Option("none", "--judge-llm", help="LLM for context relevance (none: skip)."),
) -> None:
    """Write metrics.json, Markdown tables (Tables 2, 4, 11) and PNG plots for a result file."""
    if ctx.invoked_subcommand is not None:
        return
    if results is None or queries is None or out is None:
        raise InputError("adapath eval needs --results, --queries and --out (or: adapath eval compare A B)")
    from adapath.datasets.biostrat import load_records, parse_spec
    from adapath.engine.graph import KnowledgeGraph
    from adapath.eval.report import load_results, table2, write_report

    records = load_records(parse_spec(queries))
    graph = KnowledgeGraph.load(kg) if kg else None
    ablations = {name: load_results(path) for name, path in _parse_ablation(ablation).items()}
    from adapath.llm import make_backend

    metrics = write_report(load_results(results), records, graph, out, ablations or None,
                           judge=make_backend(judge_llm))
    out_console.print(table2(metrics, "strict"), markup=False)
    _say(f"wrote {out}: metrics.json, table2.md, table4.md, table11.md, plots")


@eval_app.command("compare")
def eval_compare(
    a: Path = typer.Argument(..., help="Result JSONL A."),
    b: Path = typer.Argument(..., help="Result JSONL B."),
    queries: str = typer.Option(..., "--queries", help="biostrat:PATH."),
    kg: Path | None = typer.Option(None, "--kg"),
    metric: str = typer.Option("em_strict", "--metric", help="em_strict or em_lenient."),
    resamples: int = typer.Option(10_000, "--resamples"),
) -> None:
    """Paired bootstrap of A - B over the records both answered."""
    from adapath.datasets.biostrat import load_records, parse_spec
    from adapath.engine.graph import KnowledgeGraph
    from adapath.eval.metrics import paired_bootstrap
    from adapath.eval.report import load_results, record_scores

    if metric not in ("em_strict", "em_lenient"):
        raise InputError(f"--metric {metric!r}: choose em_strict or em_lenient")
    records = load_records(parse_spec(queries))
    graph = KnowledgeGraph.load(kg) if kg else None
    score_a = {(r["id"], r["level"]): float(r[metric]) for r in record_scores(load_results(a), records, graph)}
    score_b = {(r["id"], r["level"]): float(r[metric]) for r in record_scores(load_results(b), records, graph)}
    shared = sorted(set(score_a) & set(score_b))
    if not shared:
        raise InputError("the two result files share no (id, level)")
    result = paired_bootstrap([score_a[k] for k in shared], [score_b[k] for k in shared], resamples=resamples)
    print(f"{metric}: A - B = {100 * result['diff']:+.2f} points, 95% CI "
          f"[{100 * result['low']:+.2f}, {100 * result['high']:+.2f}] over {len(shared)} paired records "
          f"({resamples:,} resamples)")


# ---------------------------------------------------------------------------- pathmind


@pathmind_app.command("train")
def pathmind_train(
    kg: Path = typer.Option(..., "--kg"),
    queries: str = typer.Option(..., "--queries", help="Training questions: biostrat:PATH."),
    out: Path = typer.Option(..., "--out", help="Model directory (safetensors + config.json)."),
    level: str = typer.Option("explicit", "--level"),
    encoder: str = typer.Option("hashing", "--encoder", help="Query and node-text encoder."),
    epochs: int = typer.Option(20, "--epochs"),
    budget: int = typer.Option(400, "--budget", help="Subgraph node budget."),
    hops: int = typer.Option(3, "--hops", help="k of the k-hop subgraph, and rounds T."),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Train the path-priority network with early stopping on a validation split."""
    from adapath.datasets.biostrat import load_records, parse_spec
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.pathmind.train import (
        Featurizer,
        TrainConfig,
        make_examples,
        save_checkpoint,
        train,
    )
    from adapath.retrieval.dense import NodeEmbeddings, make_encoder

    graph = KnowledgeGraph.load(kg)
    records = load_records(parse_spec(queries))
    config = TrainConfig(epochs=epochs, budget=budget, hops=hops, seed=seed, encoder=encoder)
    encoder_model = make_encoder(encoder)
    examples = make_examples(graph, records, encoder_model, level, hops=hops, budget=budget)
    survive = sum(bool(len(e.local_answers)) for e in examples) / len(examples)
    _say(f"{len(examples)} questions; the answer survives the subgraph bound in {100 * survive:.1f}%")
    nodes = NodeEmbeddings(graph, encoder_model, kg)
    model, history = train(graph, examples, Featurizer(graph, nodes), config, log=lambda h: _say(
        f"epoch {h['epoch']}: loss {h['loss']:.4f}, val Hits@3 {h['val_hits3']:.3f}, {h['seconds']:.1f} s"))
    nodes.flush()
    save_checkpoint(model, config, graph, out, history)
    _say(f"wrote {out}")


@pathmind_app.command("reasoner-data")
def pathmind_reasoner_data(
    kg: Path = typer.Option(..., "--kg"),
    model: Path = typer.Option(..., "--model", help="Trained PathMind model directory."),
    queries: str = typer.Option(..., "--queries", help="Training questions with answers: biostrat:PATH."),
    stage: str = typer.Option(..., "--stage", help="sft or dpo."),
    out: Path = typer.Option(..., "--out", help="JSONL in trl's conversational format."),
    level: str = typer.Option("explicit", "--level"),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Reasoner training data from prioritized paths (SFT: answer sets; DPO: path preferences)."""
    from adapath.datasets.biostrat import load_records, parse_spec
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.adapath import query_from_record
    from adapath.methods.pathmind.infer import PathMind
    from adapath.methods.pathmind.sft_dpo import reasoner_examples, write_jsonl
    from adapath.methods.pathmind.train import load_checkpoint
    from adapath.retrieval.dense import make_encoder

    if stage not in ("sft", "dpo"):
        raise InputError(f"--stage {stage!r}: choose sft or dpo")
    graph = KnowledgeGraph.load(kg)
    records = load_records(parse_spec(queries))
    net, config = load_checkpoint(model)
    pipeline = PathMind(graph, net, config, make_encoder(config.encoder), None, graph_dir=kg)
    results = []
    for lo in range(0, len(records), 32):
        results += pipeline.answer([query_from_record(r, level) for r in records[lo:lo + 32]])
    rows = reasoner_examples(graph, records, results, stage, seed=seed)
    write_jsonl(rows, out)
    _say(f"wrote {out}: {len(rows)} {stage} examples")


@pathmind_app.command("finetune")
def pathmind_finetune(
    base: Path = typer.Option(..., "--base", help="Base causal LM directory (transformers format)."),
    stage: str = typer.Option(..., "--stage", help="sft or dpo."),
    data: Path = typer.Option(..., "--data", help="JSONL from `pathmind reasoner-data`."),
    out: Path = typer.Option(..., "--out", help="Output directory (LoRA adapter)."),
    epochs: int = typer.Option(3, "--epochs"),
    lr: float = typer.Option(0.0, "--lr", help="0 = the paper's (2e-5 SFT, 5e-6 DPO)."),
    max_steps: int = typer.Option(-1, "--max-steps"),
) -> None:
    """LoRA fine-tuning of the reasoner with trl (SFT, then path-level DPO with beta 0.1)."""
    from adapath.methods.pathmind.sft_dpo import finetune

    if not data.is_file():
        raise InputError(f"{data}: no such file")
    if not base.is_dir():
        raise InputError(f"{base}: not a model directory")
    history = finetune(base, stage, data, out, epochs=epochs, lr=lr or None, max_steps=max_steps)
    losses = [h["loss"] for h in history if "loss" in h]
    _say(f"wrote {out}: {len(losses)} logged steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}" if losses
         else f"wrote {out}")


# ---------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> None:
    try:
        app(args=argv, standalone_mode=True)
    except InputError as exc:
        _say(f"adapath: error: {exc}")
        sys.exit(2)
    except KeyboardInterrupt:
        _say("adapath: interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
