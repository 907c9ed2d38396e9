"""Evaluation reports over one or more methods: metrics.json, Markdown tables shaped like the
AdaPath paper's, PNG plots, written atomically into one folder.

- ``table2.md``: exact match by method x level x hop, level averages, Overall (BioStrat-QA);
- ``table3.md``: STaRK-Prime synthesized / human and MedDDx tiers / all;
- ``table4.md``: triplet recall and context relevance per level (path-finding methods), recall
  by question hop count, recall and hit rate by depth;
- ``table11.md``: meta-path R@1/3/5, MRR and traversability per level and hop;
- ``table24.md``: control-signal accuracy; ``efficiency.md``: LLM calls, tokens and seconds per
  query; ``answer_sources.md``: how answers were read; ``answer_sets.md``: answer-set Hits@1/3; ``ablations.md`` with ``--ablation``;
- ``hit_rate_by_depth.png``, ``recall_by_depth.png`` and ``ablations.png`` (each when there
  are values to plot);
- ``report.md``: the gold-set line, every table, and the plots written beside it (linked).

Scores come from ``scoring.record_scores`` only; these modules aggregate and lay them out.
"""

from __future__ import annotations

import json
from pathlib import Path

from adapath.contract import Result
from adapath.datasets.specs import Item, QuerySet
from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.eval import plots, tables
from adapath.eval.inputs import ResultFile, bind, load_results
from adapath.eval.scoring import (
    RECALL_CAP,
    RECALL_SEED,
    gold_answer_names,
    gold_set_line,
    record_scores,
)
from adapath.eval.summary import summarize
from adapath.eval.tables import table2, table4, table11, table24

# what the benches and the CLI import from here
__all__ = ["build_report", "gold_answer_names", "load_results", "record_scores", "render", "table2", "table4",
           "table11", "table24", "write_report", "write_reports"]


def is_path_finding(name: str, results: list[Result]) -> bool:
    """From the registry (by the given name, else the results' ``method``), else whether the
    results carry graph paths."""
    from adapath.methods.registry import all_methods

    registered = all_methods()
    for candidate in (name, *dict.fromkeys(r.method for r in results if r.method)):
        if candidate in registered:
            return registered[candidate].path_finding
    return any(r.paths for r in results)


def judge_items(results: list[Result], items: list[Item], graph: KnowledgeGraph) -> list[tuple]:
    """(question at the result's level, named triplets of its paths) per result; ``items[i]``
    is the question of ``results[i]``."""
    out = []
    for result, item in zip(results, items):
        triplets = []
        for path in result.paths:
            for triplet in graph.named_triplets(path):
                if triplet is not None and triplet not in triplets:
                    triplets.append(triplet)
        out.append((item.texts.get(result.level) or next(iter(item.texts.values())), triplets))
    return out


def _judge(judge, results: list[Result], items: list[Item], graph: KnowledgeGraph) -> dict:
    """Context relevance per level: mean judged score (0/1/2 rescaled) as %, n judged."""
    from adapath.eval.judge import context_relevance

    out = {}
    for level in dict.fromkeys(r.level for r in results):
        index = [i for i, r in enumerate(results) if r.level == level]
        judged = context_relevance(judge, judge_items([results[i] for i in index], [items[i] for i in index], graph))
        value = judged["context_relevance"]
        out[level] = {"value": None if value is None else round(100 * value, 2), "n": judged["judged"],
                      "unparsed": judged["unparsed"]}
    return out


def _files(runs) -> list[ResultFile]:
    if isinstance(runs, dict):
        return [ResultFile(name, results) for name, results in runs.items()]
    return list(runs)


def score_files(files: list[ResultFile], query_sets: list[QuerySet], graph: KnowledgeGraph | None,
                progress=None) -> tuple[dict[str, list[dict]], dict[str, list[Result]], list]:
    """Rows and results by method name (files of one name pooled), and the items answered.
    A (set, id, level) answered twice under one name is an error. ``progress`` is advanced
    per result scored."""
    rows: dict[str, list[dict]] = {}
    results: dict[str, list[Result]] = {}
    seen: dict[str, dict[tuple, object]] = {}
    answered = {}
    for f, query_set in bind(files, query_sets):
        keys = seen.setdefault(f.name, {})
        items = query_set.by_id()
        for result in f.results:
            key = (query_set.spec, result.id, result.level)
            if key in keys:
                raise InputError(f"{f.name}: question {result.id!r} of {query_set.spec} at level {result.level!r} "
                                 f"is answered twice ({keys[key]} and {f.path or 'the same results'})")
            keys[key] = f.path or "the same results"
            if result.id in items:
                answered[(query_set.spec, result.id)] = items[result.id]
        rows.setdefault(f.name, []).extend(record_scores(f.results, query_set, graph, progress=progress))
        results.setdefault(f.name, []).extend(f.results)
    return rows, results, list(answered.values())


def build_report(runs, query_sets, graph: KnowledgeGraph | None, ablations=None, judge=None,
                 resamples: int = 1000, seed: int = 42, progress=None) -> dict:
    """Every method's summary and the report's settings, as metrics.json holds them. ``runs``
    and ``ablations`` are ``ResultFile`` lists or ``{name: results}``; ``query_sets`` one
    ``QuerySet`` or a list. ``progress`` (an ``adapath.progress.Progress``) is sized to every
    result and advanced as each is scored."""
    files = _files(runs)
    if progress is not None:
        progress.set_total(sum(len(f.results) for f in files + (_files(ablations) if ablations else [])))
    if not files:
        raise InputError("no result files to evaluate")
    query_sets = [query_sets] if isinstance(query_sets, QuerySet) else list(query_sets)
    if judge is not None and graph is None:
        raise InputError("the relevance judge needs --kg (triplet names)")
    rows, results, answered = score_files(files, query_sets, graph, progress)
    items = {(qs.spec, item.id): item for qs in query_sets for item in qs.items}
    methods, path_finding = {}, []
    for name, method_rows in rows.items():
        methods[name] = summarize(method_rows, resamples, seed)
        if is_path_finding(name, results[name]):
            path_finding.append(name)
            if judge is not None:
                aligned = [items[(r["set"], r["id"])] for r in method_rows]  # rows follow the results' order
                methods[name]["context_relevance"] = _judge(judge, results[name], aligned, graph)
    report = {"gold_set": gold_set_line(answered, graph),
              "queries": [qs.spec for qs in query_sets], "graph": graph is not None, "path_finding": path_finding,
              "bootstrap": {"resamples": resamples, "seed": seed, "interval": 95},
              "recall": {"cap": RECALL_CAP, "seed": RECALL_SEED, "pool": "step d of every path + explored_edges[d]"},
              "methods": methods}
    if ablations:
        full = next(iter(methods))
        ablation_rows, _, _ = score_files(_files(ablations), query_sets, graph, progress)
        report["ablations"] = {full: methods[full]} | {
            name: summarize(r, resamples, seed) for name, r in ablation_rows.items()}
    return report


def render(report: dict, plots: dict[str, str] | None = None) -> dict[str, str]:
    """File name -> Markdown for every table the report has data for; ``plots`` (file name
    -> title) are the images written beside ``report.md``, which links them."""
    methods = report["methods"]
    docs = {"table2.md": tables.table2(methods), "table3.md": tables.table3(methods),
            "table4.md": tables.table4(methods, report["path_finding"]), "table11.md": tables.table11(methods),
            "table24.md": tables.table24(methods), "efficiency.md": tables.efficiency(methods),
            "answer_sources.md": tables.answer_sources(methods), "answer_sets.md": tables.answer_set_hits(methods)}
    if report.get("ablations"):
        docs["ablations.md"] = tables.ablation_table(report["ablations"])
    docs = {name: text for name, text in docs.items() if text}
    head = [f"# Evaluation report\n\n{report['gold_set']}\n\nQuestions: {', '.join(report['queries'])}. "
            f"Methods: {', '.join(methods)}. Intervals: {report['bootstrap']['resamples']:,} bootstrap resamples, "
            f"seed {report['bootstrap']['seed']}.\n"]
    figures = ["## Plots\n\n" + "\n\n".join(f"![{title}]({name})" for name, title in plots.items()) + "\n"
               ] if plots else []
    docs["report.md"] = "\n".join(head + list(docs.values()) + figures)
    return docs


def write_reports(runs, query_sets, graph: KnowledgeGraph | None, out: str | Path,
                  ablations: dict[str, list[Result]] | None = None, judge=None, resamples: int = 1000,
                  seed: int = 42, progress=None) -> dict:
    """Score, lay out and write the report folder atomically; returns metrics.json's content."""
    from adapath.fsutil import atomic_dir

    report = build_report(runs, query_sets, graph, ablations, judge, resamples, seed, progress)
    with atomic_dir(out, overwrite=True) as tmp:
        chosen = {n: report["methods"][n] for n in report["path_finding"]}
        drawn = {}  # file name -> title, of the plots there were values for
        if plots.depth_plot(chosen, "hit_rate", "hit rate (%)", "Per-depth hit rate", tmp / "hit_rate_by_depth.png"):
            drawn["hit_rate_by_depth.png"] = "Per-depth hit rate"
        if plots.depth_plot(chosen, "recall", "triplet recall (%)", "Per-depth triplet recall",
                            tmp / "recall_by_depth.png"):
            drawn["recall_by_depth.png"] = "Per-depth triplet recall"
        if report.get("ablations") and plots.ablation_plot(report["ablations"], tmp / "ablations.png"):
            drawn["ablations.png"] = "Ablations: full method beside each ablation"
        docs = render(report, drawn)
        (tmp / "metrics.json").write_text(json.dumps(report, indent=2))
        for name, text in docs.items():
            (tmp / name).write_text(text)
    return report


def write_report(results: list[Result], query_set, graph: KnowledgeGraph | None, out: str | Path,
                 ablations: dict[str, list[Result]] | None = None, judge=None, resamples: int = 1000,
                 seed: int = 42) -> dict:
    """One method's report (the benches' entry point); returns that method's summary."""
    methods = {r.method for r in results if r.method}
    name = methods.pop() if len(methods) == 1 else "results"
    report = write_reports({name: results}, query_set, graph, out, ablations, judge, resamples, seed)
    return report["methods"][name]
