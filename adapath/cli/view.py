"""`adapath view`: one self-contained HTML page of result files; `bank view` calls in here too."""

from __future__ import annotations

from pathlib import Path

import typer

from adapath.cli.common import say
from adapath.errors import InputError
from adapath.fsutil import check_writable


def parse_results_options(items: list[str]) -> dict[str, Path]:
    """``--results FILE`` or ``--results NAME=FILE`` -> {method name: file}; a bare file is
    named after its stem."""
    runs: dict[str, Path] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = Path(item).stem, item
        if not name or not path:
            raise InputError(f"--results {item!r}: expected FILE or NAME=FILE")
        if name in runs:
            raise InputError(f"--results: two result files named {name!r}; name them with NAME=FILE")
        runs[name] = Path(path)
    return runs


def view_cmd(
    results: list[str] = typer.Option(..., "--results", metavar="[NAME=]FILE", help="Result JSONL of a method: FILE or NAME=FILE (repeat to compare methods)."),
    queries: str = typer.Option(..., "--queries", help="The questions: biostrat:PATH, stark:PATH, medddx:PATH or questions:PATH."),
    kg: Path = typer.Option(..., "--kg", help="Graph directory (names and types of the nodes on the paths)."),
    out: Path = typer.Option(..., "--out", help="HTML file to write (self-contained, opens offline)."),
    title: str = typer.Option("adapath view", "--title", help="Page title."),
) -> None:
    """Write one HTML page: each question's answers, meta-paths, paths and explored entities."""
    check_writable(out)

    from adapath.engine.graph import KnowledgeGraph
    from adapath.eval.inputs import ResultFile, check_graph
    from adapath.eval.report import load_results
    from adapath.jsonl import read_json_object
    from adapath.methods.run import settings_path
    from adapath.view import load_questions, write_question_page

    runs, settings = {}, {}
    for name, path in parse_results_options(results).items():
        runs[name] = load_results(path)
        if not runs[name]:
            raise InputError(f"{path}: no result lines")
        sidecar = settings_path(path)
        settings[name] = read_json_object(sidecar) if sidecar.is_file() else {}
    question_set = load_questions(queries)
    graph = KnowledgeGraph.load(kg)
    check_graph([ResultFile(name, runs[name], path, settings[name])
                 for name, path in parse_results_options(results).items()], graph, kg)
    data = write_question_page(runs, question_set.items, graph, out, title=title, settings=settings)
    counts = ", ".join(f"{name} {len(lines)}" for name, lines in data["results"].items())
    say(f"wrote {out}: {len(data['questions'])} questions; results: {counts}")


def bank_view(bank: Path, out: Path, kg: Path | None, sample: int, seed: int, title: str | None = None) -> None:
    """`adapath bank view`: meta-path counts and a sample of the bank's paths as one HTML page."""
    from adapath.view import write_bank_page

    graph = None
    if kg is not None:
        from adapath.bank.store import BankStore
        from adapath.engine.graph import KnowledgeGraph

        graph = KnowledgeGraph.load(kg)
        BankStore(bank).check_graph(graph.checksum(), kg)
    data = write_bank_page(bank, out, graph, sample=sample, seed=seed, title=title)
    say(f"wrote {out}: {data['totals']['paths']:,} paths, {data['totals']['metapaths']} meta-paths, "
        f"{len(data['samples'])} sampled queries")
