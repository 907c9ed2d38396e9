"""`adapath eval`: metrics, tables, plots and paired comparisons of result files."""

from __future__ import annotations

from pathlib import Path

import typer

from adapath.cli.common import LLM_OPTION_HELP, llm_options, out_console, say
from adapath.errors import InputError

eval_app = typer.Typer(help="Score result files: metrics, tables, plots, comparisons.",
                        invoke_without_command=True)



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
    llm_option: list[str] = typer.Option([], "--llm-option", help="For --judge-llm: " + LLM_OPTION_HELP),
) -> None:
    """Write metrics.json, Markdown tables (Tables 2, 4, 11) and PNG plots for a result file."""
    if ctx.invoked_subcommand is not None:
        return
    if results is None or queries is None or out is None:
        raise InputError("adapath eval needs --results, --queries and --out (or: adapath eval compare A B)")
    from adapath.datasets.specs import load_query_set
    from adapath.engine.graph import KnowledgeGraph
    from adapath.eval.report import load_results, table2, write_report
    from adapath.llm import make_backend

    judge_options = llm_options(judge_llm, llm_option)
    query_set = load_query_set(queries)
    graph = KnowledgeGraph.load(kg) if kg else None
    ablations = {name: load_results(path) for name, path in _parse_ablation(ablation).items()}
    metrics = write_report(load_results(results), query_set, graph, out, ablations or None,
                           judge=make_backend(judge_llm, judge_options))
    out_console.print(table2(metrics, "strict"), markup=False)
    say(f"wrote {out}: metrics.json, table2.md, table4.md, table11.md, plots")


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
    from adapath.datasets.specs import load_query_set
    from adapath.engine.graph import KnowledgeGraph
    from adapath.eval.metrics import paired_bootstrap
    from adapath.eval.report import load_results, record_scores

    if metric not in ("em_strict", "em_lenient"):
        raise InputError(f"--metric {metric!r}: choose em_strict or em_lenient")
    items = load_query_set(queries).by_id()
    graph = KnowledgeGraph.load(kg) if kg else None
    score_a = {(r["id"], r["level"]): float(r[metric]) for r in record_scores(load_results(a), items, graph)}
    score_b = {(r["id"], r["level"]): float(r[metric]) for r in record_scores(load_results(b), items, graph)}
    shared = sorted(set(score_a) & set(score_b))
    if not shared:
        raise InputError("the two result files share no (id, level)")
    result = paired_bootstrap([score_a[k] for k in shared], [score_b[k] for k in shared], resamples=resamples)
    print(f"{metric}: A - B = {100 * result['diff']:+.2f} points, 95% CI "
          f"[{100 * result['low']:+.2f}, {100 * result['high']:+.2f}] over {len(shared)} paired records "
          f"({resamples:,} resamples)")


