"""`adapath kg`: generate, import and inspect knowledge graphs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.table import Table

from adapath.cli.common import err_console, out_console, say

kg_app = typer.Typer(help="Build, import and inspect knowledge graphs.", no_args_is_help=True)
import_app = typer.Typer(help="Import a graph from a real format.", no_args_is_help=True)
kg_app.add_typer(import_app, name="import")



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
    say(f"wrote {out}: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges "
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
    say(f"wrote {out}: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges "
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


