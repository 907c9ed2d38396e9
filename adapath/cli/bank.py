"""`adapath bank`: build and inspect Path-Banks."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from adapath.cli.common import err_console, out_console, say
from adapath.errors import InputError

bank_app = typer.Typer(help="Build and inspect Path-Banks.", no_args_is_help=True)



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
    say(f"wrote {out}: {progress.done}/{progress.total} queries in "
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


@bank_app.command("view")
def bank_view_cmd(
    bank: Path = typer.Argument(..., help="Bank directory."),
    out: Path = typer.Option(..., "--out", help="HTML file to write (self-contained, opens offline)."),
    kg: Path | None = typer.Option(None, "--kg", help="Graph directory, for node names (else ids)."),
    sample: int = typer.Option(40, "--sample", help="Training queries whose paths are drawn."),
    seed: int = typer.Option(0, "--seed", help="Seed of the sample."),
) -> None:
    """One HTML page: meta-paths by hop and topic type, and a sample of registered paths."""
    from adapath.cli.view import bank_view

    bank_view(bank, out, kg, sample, seed)
