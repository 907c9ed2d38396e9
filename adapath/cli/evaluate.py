"""`adapath eval`: metrics, tables, plots and paired comparisons of result files."""

from __future__ import annotations

from pathlib import Path

import typer

from adapath.cli.common import LLM_OPTION_HELP, command_group, llm_options, out_console, say
from adapath.errors import InputError
from adapath.fsutil import check_writable

eval_app = command_group("Score result files: metrics, tables, plots, comparisons.", invoke_without_command=True, no_args_is_help=False)

RESULTS_HELP = ("Result JSONL of `adapath answer`, as NAME=FILE or FILE; repeat for each method. A bare FILE is "
                "named by its lines' method field (plus non-default parameters from its settings file), else "
                "its file stem; files given the same NAME are pooled (one method over several benchmarks).")
QUERIES_HELP = ("The questions with gold answers, one spec per question set (repeat): biostrat:PATH, "
                "stark:PATH#SPLIT, medddx:PATH. A result file is scored against the set its settings file "
                "names, else the one set that holds all its question ids.")
ALLOW_OTHER_HELP = ("Score a result file against --queries even where its settings file records another "
                    "questions file (another path or content checksum); refused otherwise.")
KG_HELP = ("Graph folder. Names the valid answers the records leave unnamed (required when they do: "
           "STaRK-Prime, real BioStrat-QA records), and is needed for meta-path traversability and the judge.")


def _load_questions(queries: list[str]):
    from adapath.datasets.specs import load_query_set

    if not queries:
        raise InputError("--queries is required: the question set(s) with gold answers")
    return [load_query_set(spec) for spec in dict.fromkeys(queries)]


def _load_graph(kg: Path | None):
    if kg is None:
        return None
    from adapath.engine.graph import KnowledgeGraph

    return KnowledgeGraph.load(kg)


@eval_app.callback()
def eval_report(
    ctx: typer.Context,
    results: list[str] = typer.Option([], "--results", metavar="[NAME=]FILE", help=RESULTS_HELP),
    queries: list[str] = typer.Option([], "--queries", metavar="SPEC", help=QUERIES_HELP),
    out: Path | None = typer.Option(None, "--out", help="Report folder (replaced atomically)."),
    kg: Path | None = typer.Option(None, "--kg", help=KG_HELP),
    ablation: list[str] = typer.Option([], "--ablation", metavar="NAME=FILE", help="NAME=FILE: an ablation of the first --results "
                                       "method, shown beside it in ablations.md and ablations.png (repeat)."),
    judge_llm: str = typer.Option("none", "--judge-llm", help="LLM for context relevance of path-finding "
                                  "methods (none: skip)."),
    llm_option: list[str] = typer.Option([], "--llm-option", metavar="KEY=VALUE", help="For --judge-llm: " + LLM_OPTION_HELP),
    resamples: int = typer.Option(1000, "--resamples", help="Bootstrap resamples for each EM cell's 95% interval."),
    seed: int = typer.Option(42, "--seed", help="Seed of the bootstrap resampling."),
    allow_other_queries: bool = typer.Option(False, "--allow-other-queries", help=ALLOW_OTHER_HELP),
) -> None:
    """Write metrics.json, Markdown tables (Tables 2, 3, 4, 11, efficiency) and PNG plots."""
    if ctx.invoked_subcommand is not None:
        return
    if not results or not queries or out is None:
        raise InputError("adapath eval needs --results, --queries and --out (or: adapath eval compare A B)")
    check_writable(out, folder=True)
    if resamples < 1:
        raise InputError(f"--resamples {resamples}: must be at least 1")
    from adapath.eval.inputs import check_graph, check_provenance, load_result_files
    from adapath.eval.report import write_reports
    from adapath.eval.tables import table2, table3
    from adapath.llm import make_backend
    from adapath.progress import Progress

    judge_options = llm_options(judge_llm, llm_option)
    questions = _load_questions(queries)
    graph = _load_graph(kg)
    runs = load_result_files(results)
    ablations = load_result_files(ablation, "--ablation") if ablation else None
    if not allow_other_queries:
        check_provenance(runs + (ablations or []), questions)
    check_graph(runs + (ablations or []), graph, kg)
    judge = make_backend(judge_llm, judge_options)
    with Progress(None, "eval", unit="results") as bar:  # made after every input check
        report = write_reports(runs, questions, graph, out, ablations, judge=judge, resamples=resamples, seed=seed,
                               progress=bar)
    say(report["gold_set"])
    for name, summary in report["methods"].items():
        counts = ", ".join(f"{k} {v}" for k, v in summary["answer_sources"].items())
        say(f"{name}: {summary['records']} results; answers read from: {counts}")
    for text in (table2(report["methods"], "strict"), table3(report["methods"])):
        if text:
            out_console.print(text, markup=False, highlight=False, soft_wrap=True)
    written = sorted(p.name for p in Path(out).iterdir())
    say(f"wrote {out}: {', '.join(written)}")


@eval_app.command("compare")
def eval_compare(
    a: str = typer.Argument(..., help="Result JSONL A, as FILE or NAME=FILE."),
    b: str = typer.Argument(..., help="Result JSONL B, as FILE or NAME=FILE."),
    queries: list[str] = typer.Option([], "--queries", metavar="SPEC", help=QUERIES_HELP),
    kg: Path | None = typer.Option(None, "--kg", help=KG_HELP),
    resamples: int = typer.Option(10_000, "--resamples", help="Bootstrap resamples."),
    seed: int = typer.Option(42, "--seed", help="Seed of the bootstrap resampling."),
    allow_other_queries: bool = typer.Option(False, "--allow-other-queries", help=ALLOW_OTHER_HELP),
) -> None:
    """Paired bootstrap of A - B over the questions both answered: per level x hop, each level,
    and overall; strict EM, and lenient where it differs."""
    from adapath.eval.compare import compare_rows, lenient_differs
    from adapath.eval.inputs import check_graph, check_provenance, load_result_files
    from adapath.eval.report import score_files
    from adapath.eval.scoring import gold_set_line
    from adapath.eval.tables import compare_table

    if resamples < 1:
        raise InputError(f"--resamples {resamples}: must be at least 1")
    questions = _load_questions(queries)
    graph = _load_graph(kg)
    (file_a,), (file_b,) = load_result_files([a], "A"), load_result_files([b], "B")
    if file_a.name == file_b.name:
        file_a.name, file_b.name = f"A: {file_a.name}", f"B: {file_b.name}"
    if not allow_other_queries:
        check_provenance([file_a, file_b], questions)
    check_graph([file_a, file_b], graph, kg)
    rows, _, answered = score_files([file_a, file_b], questions, graph)
    rows_a, rows_b = rows[file_a.name], rows[file_b.name]
    table = compare_rows(rows_a, rows_b, resamples=resamples, seed=seed)
    say(gold_set_line(answered, graph))
    name_a, name_b = file_a.name, file_b.name
    print(f"A = {name_a}, B = {name_b}: EM %, A - B in points with its paired-bootstrap 95% interval "
          f"({resamples:,} resamples, seed {seed})\n")
    print(compare_table(name_a, name_b, table, lenient_differs(rows_a, rows_b)))
