"""`adapath bank`: build and inspect Path-Banks."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from adapath.bank.config import BankConfig
from adapath.cli.common import (
    CACHE_DIR_HELP,
    announce_compiling,
    command_group,
    say,
    setting_option,
    use_cache_dir,
)
from adapath.errors import InputError, Interrupted, ctrl_c_between_steps
from adapath.fsutil import check_writable

bank_app = command_group("Build and inspect Path-Banks.")


def _ladder(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise InputError(f"--ladder {text!r}: give corridor sizes as integers, e.g. 150,300,500,1000") from None


def _kept_note(store, total: int) -> str:
    """What an interrupted build kept: its finished queries (each batch is committed whole)."""
    kept = len(store.finished_queries()) if store.parts_dir.is_dir() else 0
    if not kept:
        return "interrupted before any query was finished; nothing was written"
    return (f"interrupted: {kept:,} of {total:,} queries kept in {store.root}; rerun the same command to resume "
            "(--force starts over)")


@bank_app.command("build")
def bank_build(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    queries: str = typer.Option(..., "--queries", help="Training queries: biostrat:PATH."),
    out: Path = typer.Option(..., "--out", help="Bank directory (resumed if it exists)."),
    level: str = setting_option(BankConfig, "level"),
    device: str = setting_option(BankConfig, "device"),
    batch: int = setting_option(BankConfig, "batch"),
    executor_name: str = typer.Option("local", "--executor", help="Where batches run: local (this process) or ray (a Ray cluster; pip install 'adapath[distributed]')."),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Join the Ray cluster at HOST:PORT (as `ray start --head` prints it); without it --executor ray starts a local cluster."),
    workers: int = typer.Option(0, "--workers", help="local: CPU threads for PPR and the per-query path search; ray: batches running at once (0 = every core / every CPU of the cluster)."),
    threads_per_worker: int = typer.Option(1, "--threads-per-worker", help="ray: CPUs (Numba threads) each Ray task asks for."),
    pipeline: bool | None = typer.Option(None, "--pipeline/--no-pipeline", help="local: solve the next batch's PPR while this batch's corridors and paths run (default: on with --device cuda, off on the CPU)."),
    beta: float = setting_option(BankConfig, "beta"),
    eta: float = setting_option(BankConfig, "eta"),
    ladder: str = setting_option(BankConfig, "ladder"),
    alpha: float = setting_option(BankConfig, "alpha"),
    per_hop: int = setting_option(BankConfig, "per_hop"),
    max_hop: int = setting_option(BankConfig, "max_hop"),
    relation_sequences: int = setting_option(BankConfig, "relation_sequences"),
    tol: float = setting_option(BankConfig, "tol"),
    ppr: str = setting_option(BankConfig, "ppr"),
    certify_slack: float = setting_option(BankConfig, "certify_slack"),
    dense_precision: str = setting_option(BankConfig, "dense_precision"),
    search: str = setting_option(BankConfig, "search"),
    force: bool = typer.Option(False, "--force", help="Start over instead of resuming (the old bank is removed once the inputs check out)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
) -> None:
    """Build a Path-Bank: weights, bidirectional PPR, corridors, k-shortest paths."""
    check_writable(out, folder=True)
    use_cache_dir(cache_dir)
    from adapath.bank.build import build_bank
    from adapath.bank.store import BankStore
    from adapath.datasets.biostrat import LEVELS, load_training_queries
    from adapath.engine.graph import KnowledgeGraph
    from adapath.executors import make_executor
    from adapath.progress import Progress

    if level not in LEVELS:
        raise InputError(f"--level {level!r}: choose from {', '.join(LEVELS)}")
    config = BankConfig(level=level, batch=batch, device=device, tol=tol, search=search, beta=beta, eta=eta,
                        ladder=_ladder(ladder), alpha=alpha, per_hop=per_hop, max_hop=max_hop,
                        relation_sequences=relation_sequences, ppr=ppr, certify_slack=certify_slack,
                        dense_precision=dense_precision)
    config.check()
    if device not in ("cpu", "cuda"):
        raise InputError(f"--device {device!r}: choose cpu or cuda")
    executor = make_executor(executor_name, workers=workers, ray_address=ray_address,
                             threads_per_worker=threads_per_worker, pipeline=pipeline)
    training = load_training_queries(queries)
    graph = KnowledgeGraph.load(kg)
    checksum = graph.checksum()
    start = time.perf_counter()
    try:
        if not force and BankStore(out).complete_for(config.signature(), checksum, [q.id for q in training]):
            say(f"{out}: complete already ({len(training)}/{len(training)} queries, the same graph, queries and "
                "parameters); nothing written; --force rebuilds it")
            return
        announce_compiling("pair_stage", "ppr_numba")
        with Progress(None, "bank", unit="queries") as bar:
            def report(progress):
                if bar.total is None:  # sized at the first batch, counting what a resumed build had
                    bar.set_total(progress.total, done=progress.resumed_at)
                bar.update(progress.done)

            with ctrl_c_between_steps():  # Ctrl-C stops between batches, never inside a kernel
                progress = build_bank(graph, training, out, config, executor=executor, graph_dir=kg,
                                      force=force, on_progress=report, graph_checksum=checksum)
    except KeyboardInterrupt:
        raise Interrupted(_kept_note(BankStore(out), len(training))) from None
    finally:
        executor.close()
    say(f"wrote {out}: {progress.done}/{progress.total} queries in {time.perf_counter() - start:.1f} s")


@bank_app.command("info")
def bank_info_cmd(
    bank: Path = typer.Argument(..., help="Bank directory."),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON."),
) -> None:
    """Paths per hop, meta-path frequencies, pairs by corridor K and by fallback."""
    from adapath.bank.info import bank_info

    info = bank_info(bank)
    if as_json:
        print(json.dumps(info, indent=2))
        return
    state = "complete" if info["complete"] else "partial"
    # Plain lines, never wrapped by us: a long meta-path stays on its own line.
    lines = [
        f"{bank}: {info['queries_done']}/{info['queries_total']} queries ({state}), {info['paths']:,} paths, "
        f"{info['distinct_metapaths']} distinct meta-paths",
        f"queries with paths: {info['queries_with_paths']}, without: {info['queries_without_paths']}; "
        f"pairs with paths: {info['pairs_with_paths']} (a two-topic query gives a chain and a direct pair)",
        "paths per hop: " + ", ".join(f"{h}-hop {c}" for h, c in info["paths_per_hop"].items()),
        "pairs by corridor K: " + ", ".join(f"K={k} {c}" for k, c in info["pairs_by_corridor_k"].items()),
        "pairs by fallback: " + ", ".join(f"{k} {c}" for k, c in info["pairs_by_fallback"].items()),
        "most frequent meta-paths (paths holding each):",
    ]
    top = list(info["metapaths"].items())[:10]
    width = max((len(f"{c:,}") for _, c in top), default=1)
    lines += [f"  {count:>{width},}  {metapath}" for metapath, count in top]
    seconds = info["stage_seconds"]
    lines.append("stage seconds (summed over workers): " + ", ".join(f"{k} {v:.2f}" for k, v in seconds.items()))
    print("\n".join(lines))


@bank_app.command("view")
def bank_view_cmd(
    bank: Path = typer.Argument(..., help="Bank directory."),
    out: Path = typer.Option(..., "--out", help="HTML file to write (self-contained, opens offline)."),
    kg: Path | None = typer.Option(None, "--kg", help="Graph directory, for node names (else ids)."),
    sample: int = typer.Option(40, "--sample", help="Training queries whose paths are drawn."),
    seed: int = typer.Option(0, "--seed", help="Seed of the sample."),
    title: str | None = typer.Option(None, "--title", help="Page title (default: 'Path-Bank: ' and the bank's "
                                     "folder with the folder holding it, e.g. 'Path-Bank: demo/bank')."),
) -> None:
    """One HTML page: meta-paths by hop and topic type, and a sample of registered paths."""
    check_writable(out)
    from adapath.cli.view import bank_view

    bank_view(bank, out, kg, sample, seed, title)
