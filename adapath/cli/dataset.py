"""`adapath dataset`: generate, build and link question sets."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from adapath.cli.common import (
    CACHE_DIR_HELP,
    DEFAULT_ENCODER,
    ENCODER_HELP,
    LLM_OPTION_HELP,
    command_group,
    encoder_option,
    llm_options,
    say,
    use_cache_dir,
)
from adapath.errors import InputError
from adapath.fsutil import check_writable

dataset_app = command_group("Generate and load question sets.")



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
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same questions."),
    hops: str = typer.Option("1,2,3", "--hops", help="Hop counts to draw templates from."),
    first_id: int = typer.Option(0, "--first-id", help="data_id of the first record."),
    max_answers: int = typer.Option(50, "--max-answers", help="Draw again a walk with more valid answers than this."),
    phrasing: str = typer.Option("templated", "--phrasing", help="templated (every node the template reaches is valid) or describe (each form also carries the answer's definition, name hidden; only the answer is valid)."),
    exclude: list[str] = typer.Option([], "--exclude", help="Questions (biostrat:PATH; repeatable) whose (topic, answer) pairs no generated question may hold: training data that asks nothing a test set asks."),
) -> None:
    """Generate BioStrat-QA-format questions on a graph by walking the 60 templates."""
    check_writable(out)
    from adapath.datasets.biostrat import load_records, parse_spec
    from adapath.datasets.generate import QueryGenerator, topic_answer_pairs
    from adapath.engine.graph import KnowledgeGraph
    from adapath.fsutil import atomic_file

    if n < 1:
        raise InputError("--n must be at least 1")
    if max_answers < 1:
        raise InputError("--max-answers must be at least 1")
    pairs = set()
    for spec in exclude:
        pairs |= topic_answer_pairs(load_records(parse_spec(spec)))
    graph = KnowledgeGraph.load(kg)
    records = QueryGenerator(graph).generate(n, seed=seed, hops=_parse_hops(hops), first_id=first_id,
                                                max_answers=max_answers, phrasing=phrasing, exclude=frozenset(pairs))
    with atomic_file(out) as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    say(f"wrote {out}: {len(records)} questions" + (f", none with one of the {len(pairs)} excluded (topic, answer) "
                                                     "pairs" if pairs else ""))


@dataset_app.command("build")
def dataset_build(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    out: Path = typer.Option(..., "--out", help="Output directory: train/dev/test JSONL + stats.json."),
    per_template: int = typer.Option(40, "--per-template", help="Walks drawn per template."),
    min_grounding: int = typer.Option(5, "--min-grounding", help="Distinct walks a template needs."),
    max_answers: int = typer.Option(50, "--max-answers", help="Drop records with more valid answers."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same questions."),
    llm: str = typer.Option("none", "--llm", help="Surface forms by an LLM (none: templated forms)."),
    llm_option: list[str] = typer.Option([], "--llm-option", metavar="KEY=VALUE", help=LLM_OPTION_HELP),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
) -> None:
    """Build a BioStrat-QA-format dataset from a graph and the 60 templates (5:2:3 split)."""
    check_writable(out, folder=True)
    from adapath.datasets.construct import BuildConfig, build_dataset
    from adapath.engine.graph import KnowledgeGraph
    from adapath.fsutil import atomic_dir
    from adapath.llm import make_backend

    options = llm_options(llm, llm_option)
    graph = KnowledgeGraph.load(kg)
    config = BuildConfig(per_template=per_template, min_grounding=min_grounding,
                         max_answers=max_answers, seed=seed)
    splits, stats = build_dataset(graph, config, make_backend(llm, options))
    with atomic_dir(out, overwrite=force) as tmp:
        for name, records in splits.items():
            (tmp / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        (tmp / "stats.json").write_text(json.dumps(stats, indent=2))
    say(f"wrote {out}: " + ", ".join(f"{n} {len(r)}" for n, r in splits.items()) +
         f" records from {stats['templates_kept']} templates")


@dataset_app.command("topics")
def dataset_topics(
    kg: Path = typer.Option(..., "--kg", help="Graph directory (PrimeKG ids for STaRK-Prime)."),
    out: Path = typer.Option(..., "--out", help="Output JSONL: one topic choice per question."),
    stark: Path | None = typer.Option(None, "--stark", help="STaRK-Prime CSV (id, query, answer_ids)."),
    medddx: Path | None = typer.Option(None, "--medddx", help="MedDDx JSONL (see adapath.datasets.medddx)."),
    llm: str = typer.Option("none", "--llm", help="LLM that picks the template and entity (none: BM25 and embeddings)."),
    llm_option: list[str] = typer.Option([], "--llm-option", metavar="KEY=VALUE", help=LLM_OPTION_HELP),
    encoder: str = typer.Option(DEFAULT_ENCODER, "--encoder", help=ENCODER_HELP, callback=encoder_option),
    limit: int = typer.Option(0, "--limit", help="Link only the first N questions (0 = all)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
) -> None:
    """Extract topic entities for questions that come with answers only (Appendix C)."""
    check_writable(out)
    use_cache_dir(cache_dir)
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
    options = llm_options(llm, llm_option)
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
                               make_backend(llm, options))
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
    say(f"wrote {out}: topics for {found} of {len(items)} questions")


