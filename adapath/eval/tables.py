"""Markdown tables shaped like the AdaPath paper's, from per-method summaries.

Each function takes ``{method name: summary}`` (``summary.summarize``); a single summary is
accepted too. In exact-match tables each method has two rows, its values and then each
value's 95% bootstrap interval and n; other cells read ``value n=N``. The best value of a
column is bold (the lowest for costs) when two or more methods share the column; ties are all
bold. A table of one method bolds nothing and its legend does not speak of bold.
"""

from __future__ import annotations

from adapath.eval.summary import GROUP_COLUMNS, LEVEL_ORDER


def em_legend(methods: int) -> str:
    """The exact-match tables' legend; bold is named only where two or more methods compete."""
    bold = ", best per column in bold" if methods > 1 else ""
    return f"Cells: EM %{bold}; below each method its 95% bootstrap interval and n (questions)."


def bold_note(methods: int, note: str) -> str:
    """`` NOTE`` (e.g. "Best per column in bold.") when two or more methods compete, else ''."""
    return f" {note}" if methods > 1 else ""


def _methods(metrics: dict) -> dict[str, dict]:
    return {"method": metrics} if "cells" in metrics else metrics


def _levels(methods: dict[str, dict], key: str = "cells") -> list[str]:
    present = list(dict.fromkeys(level for m in methods.values() for level in m.get(key, {})))
    return [lv for lv in LEVEL_ORDER if lv in present] + [lv for lv in present if lv not in LEVEL_ORDER]


def _hops(methods: dict[str, dict]) -> list[int]:
    return sorted({int(k[3:].split("_")[0]) for m in methods.values() for cell in m["cells"].values()
                   for k in cell if k.startswith("hop") and k.endswith("_n")})


def value_text(value: float | None, n: int | None = None, bold: bool = False, digits: int = 2) -> str:
    if value is None:
        return "-"
    main = f"{value:.{digits}f}"
    main = f"**{main}**" if bold else main
    return main if n is None else f"{main} n={n}"


def best_flags(values: list[float | None], lowest: bool = False, digits: int = 2) -> list[bool]:
    """Which entries hold the column's best value; none when fewer than two have a value."""
    present = [round(v, digits) for v in values if v is not None]
    if len(present) < 2:
        return [False] * len(values)
    best = min(present) if lowest else max(present)
    return [v is not None and round(v, digits) == best for v in values]


def _grid(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def _columns_table(names: list[str], columns: list[tuple[str, list[tuple]]], first: str = "Method",
                   lowest: bool = False) -> list[str]:
    """Rows = ``names``; each column is (heading, per-method (value, ci, n) or (value, n)).
    With exact-match columns (a ci) each method takes two rows: its values (the best bold),
    then each value's interval and n."""
    with_ci = any(len(e) == 3 for _, entries in columns for e in entries)
    main = {name: [] for name in names}
    detail = {name: [] for name in names}
    for _, entries in columns:
        flags = best_flags([e[0] for e in entries], lowest=lowest)
        for name, entry, bold in zip(names, entries, flags):
            value, n = entry[0], entry[-1]
            if not with_ci:
                main[name].append(value_text(value, n, bold=bold))
                continue
            main[name].append(value_text(value if n else None, bold=bold))
            ci = entry[1] if len(entry) == 3 else None
            detail[name].append("-" if value is None or not n else
                                (f"{ci[0]:.1f}-{ci[1]:.1f}, " if ci else "") + f"n={n}")
    rows = []
    for name in names:
        rows.append([name] + main[name])
        if with_ci:
            rows.append(["(95% CI, n)"] + detail[name])
    return _grid([first] + [heading for heading, _ in columns], rows)


# ---------------------------------------------------------------------------- Table 2
def _table2_columns(methods: dict[str, dict], kind: str) -> list[tuple[str, list[tuple]]]:
    columns = []
    hops = _hops(methods)
    for level in _levels(methods):
        cells = [m["cells"].get(level, {}) for m in methods.values()]
        for hop in (h for h in hops if any(f"hop{h}_n" in c for c in cells)):
            columns.append((f"{level.capitalize()} {hop}-hop", [
                (c.get(f"hop{hop}_{kind}"), c.get(f"hop{hop}_{kind}_ci"), c.get(f"hop{hop}_n")) for c in cells]))
        columns.append((f"{level.capitalize()} Avg", [
            (c.get(f"avg_{kind}"), c.get(f"avg_{kind}_ci"), c.get("avg_n")) for c in cells]))
    columns.append(("Overall", [((m.get("overall") or {}).get(kind), (m.get("overall") or {}).get(f"{kind}_ci"),
                                 (m.get("overall") or {}).get("n")) for m in methods.values()]))
    return columns


def _differs(columns: list[tuple[str, list[tuple]]], other: list[tuple[str, list[tuple]]], i: int) -> bool:
    return any(a[1][i][0] != b[1][i][0] for a, b in zip(columns, other))


def table2(metrics: dict, kind: str | None = None) -> str:
    """Exact match by method x level x hop, each level's Avg (mean of its hop cells) and
    Overall (every record). ``kind`` strict or lenient gives that table alone; by default the
    strict table, then the lenient one for the methods where any cell differs."""
    methods = {n: m for n, m in _methods(metrics).items() if m.get("cells")}
    if not methods:
        return ""
    names = list(methods)
    if kind is not None:
        return "\n".join([f"Table 2: exact match ({kind}), %", "", em_legend(len(names)), "",
                          *_columns_table(names, _table2_columns(methods, kind))]) + "\n"
    strict, lenient = _table2_columns(methods, "strict"), _table2_columns(methods, "lenient")
    lines = ["Table 2: exact match (strict), %", "", em_legend(len(names)), "", *_columns_table(names, strict), ""]
    lines += _lenient_part(names, strict, lenient, "Table 2")
    return "\n".join(lines) + "\n"


def _lenient_part(names, strict, lenient, title: str) -> list[str]:
    differ = [i for i in range(len(names)) if _differs(strict, lenient, i)]
    same = [names[i] for i in range(len(names)) if i not in differ]
    lines = []
    if differ:
        keep = [names[i] for i in differ]
        columns = [(heading, [entries[i] for i in differ]) for heading, entries in lenient]
        lines += [f"{title}: exact match (lenient: substring either way), %, where it differs from strict", "",
                  *_columns_table(keep, columns), ""]
    if same:
        lines.append(f"Lenient EM equals strict EM in every cell for: {', '.join(same)}.")
    return lines


# ---------------------------------------------------------------------------- Table 3
def table3(metrics: dict) -> str:
    """STaRK-Prime (synthesized, human) and MedDDx (each tier, all) per method."""
    methods = {n: m for n, m in _methods(metrics).items() if m.get("groups")}
    headings = [h for _, h in GROUP_COLUMNS if any(h in m["groups"] for m in methods.values())]
    if not headings:
        return ""
    names = list(methods)

    def columns(kind):
        return [(h, [(m["groups"].get(h, {}).get(kind), m["groups"].get(h, {}).get(f"{kind}_ci"),
                      m["groups"].get(h, {}).get("n")) for m in methods.values()]) for h in headings]

    strict, lenient = columns("strict"), columns("lenient")
    lines = ["Table 3: STaRK-Prime exact match and MedDDx accuracy, %", "", em_legend(len(names)), "",
             *_columns_table(names, strict), ""]
    lines += _lenient_part(names, strict, lenient, "Table 3")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- Table 4
def table4(metrics: dict, path_finding: list[str] | None = None) -> str:
    """Triplet recall and context relevance per level, for path-finding methods; then recall
    by question hop count and recall and hit rate by depth."""
    methods = _methods(metrics)
    names = [n for n in (path_finding if path_finding is not None else methods) if methods[n].get("recall_by_level")]
    if not names:
        return ""
    methods = {n: methods[n] for n in names}
    levels = _levels(methods, "recall_by_level")
    columns = []
    for level in levels:
        columns.append((f"{level.capitalize()} recall", [
            ((m["recall_by_level"].get(level) or {}).get("value"), (m["recall_by_level"].get(level) or {}).get("n"))
            for m in methods.values()]))
        judged = [(m.get("context_relevance") or {}).get(level) or {} for m in methods.values()]
        columns.append((f"{level.capitalize()} CR", [(j.get("value"), j.get("n")) for j in judged]))
    lines = ["Table 4: triplet recall and context relevance (CR), % (path-finding methods)", "",
             "Recall: the gold (head, relation, tail) of each depth among at most 100 sampled triplets the "
             "method retrieved at that depth (its paths, plus explored_edges when recorded), micro-averaged "
             "over question x depth pairs; CR: LLM-judged relevance 0/1/2 rescaled to 0-100 (- when not "
             f"judged: --judge-llm). n = questions.{bold_note(len(names), 'Best per column in bold.')}", "",
             *_columns_table(names, columns), ""]
    hops = sorted({int(h) for m in methods.values() for v in m.get("recall_by_level_hop", {}).values() for h in v})
    rows = []
    for level in levels:
        for name, m in methods.items():
            by_hop = m.get("recall_by_level_hop", {}).get(level, {})
            overall = m["recall_by_level"].get(level) or {}
            rows.append([level, name] + [value_text(by_hop[str(h)]["value"], by_hop[str(h)]["n"]) if str(h) in by_hop
                                         else "-" for h in hops] + [value_text(overall.get("value"), overall.get("n"))])
    lines += ["Triplet recall by question hop count, %", "",
              *_grid(["Level", "Method"] + [f"{h}-hop" for h in hops] + ["All"], rows), ""]
    depths = sorted({int(d) for m in methods.values() for key in ("recall_by_level_depth", "hit_rate_by_level_depth")
                     for v in m.get(key, {}).values() for d in v})
    rows = []
    for level in levels:
        for name, m in methods.items():
            for label, key in (("recall", "recall"), ("hit rate", "hit_rate")):
                values = m.get(f"{key}_by_level_depth", {}).get(level, {})
                counts = m.get(f"{key}_n_by_level_depth", {}).get(level, {})
                rows.append([level, name, label] + [value_text(values.get(str(d)), counts.get(str(d)))
                                                    if str(d) in values else "-" for d in depths])
    lines += ["Per-depth triplet recall and hit rate, % (n = questions reaching that depth)", "",
              *_grid(["Level", "Method", "Metric"] + [f"depth {d}" for d in depths], rows)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- Table 11
def table11(metrics: dict) -> str:
    """Meta-path retrieval per level and question hop count: R@1/3/5 and MRR of the gold
    meta-path, traversability of the other listed meta-paths."""
    methods = {n: m for n, m in _methods(metrics).items() if m.get("metapath_by_level")}
    if not methods:
        return ""
    lines = ["Table 11: meta-path retrieval, % (MRR as a fraction)", "",
             "R@k and MRR: rank of the gold meta-path in the ranked list of pooled meta-paths before filtering "
             "(ranked_metapaths; a result without it falls back to its surviving metapaths). Traversability: "
             "share of the listed meta-paths other than the gold one that a typed walk from the topic entity "
             "follows to the answer entity (needs --kg); its n counts those meta-paths.", ""]
    for name, m in methods.items():
        sources = ", ".join(f"{k} for {v}" for k, v in m.get("metapath_list", {}).items())
        lines.append(f"- {name}: lists read: {sources}")
    lines.append("")
    rows = []
    for level in _levels(methods, "metapath_by_level"):
        keys = list(dict.fromkeys(k for m in methods.values() for k in m["metapath_by_level"].get(level, {})))
        keys = sorted((k for k in keys if k != "all"), key=int) + ["all"]
        for key in keys:
            blocks = [m["metapath_by_level"].get(level, {}).get(key) for m in methods.values()]
            flags = {stat: best_flags([b[stat] if b else None for b in blocks], digits=4)
                     for stat in ("r1", "r3", "r5", "mrr", "traversability")}
            for i, (name, block) in enumerate(zip(methods, blocks)):
                if block is None:
                    continue
                rows.append([level, "all" if key == "all" else f"{key}-hop", name, str(block["n"])]
                            + [value_text(block[s], bold=flags[s][i]) for s in ("r1", "r3", "r5")]
                            + [value_text(block["mrr"], bold=flags["mrr"][i], digits=4),
                               value_text(block["traversability"], block["traversability_n"],
                                          bold=flags["traversability"][i])])
    lines += _grid(["Level", "Hops", "Method", "n", "R@1", "R@3", "R@5", "MRR", "Traversability"], rows)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- others
def table24(metrics: dict) -> str:
    """Control-signal accuracy (predicted answer type and hop count) per method and level."""
    methods = {n: m for n, m in _methods(metrics).items() if m.get("control_accuracy")}
    if not methods:
        return ""
    rows = [[name, level, str(acc.get("n", "")), value_text(acc["answer_type"]), value_text(acc["hops"])]
            for name, m in methods.items() for level, acc in m["control_accuracy"].items()]
    return "\n".join(["Control-signal accuracy, %", "",
                      *_grid(["Method", "Level", "n", "Answer type", "Hop count"], rows)]) + "\n"


def efficiency(metrics: dict) -> str:
    """LLM calls, prompt and completion tokens and LLM seconds per query, per method.

    A request that returns n samples is one call. Token counts of a method any of whose calls
    reported no usage are marked ``~`` (estimated) with the estimated share of its calls;
    attempts that failed and were retried are their own column, not calls."""
    methods = _methods(metrics)
    stats = (("LLM calls / query", "calls", 2), ("Prompt tokens / query", "prompt_tokens", 1),
             ("Completion tokens / query", "completion_tokens", 1), ("LLM seconds / query", "seconds", 3))
    flags = {key: best_flags([m["usage"][key] for m in methods.values()], lowest=True, digits=digits)
             for _, key, digits in stats}
    rows = []
    for i, (name, m) in enumerate(methods.items()):
        usage = m["usage"]
        share = usage.get("estimated_share", 0.0)
        cells = []
        for _, key, digits in stats:
            text = value_text(usage[key], bold=flags[key][i], digits=digits)
            if share and key in ("prompt_tokens", "completion_tokens"):
                text = "~" + text
            cells.append(text)
        estimated = f"{100 * share:.0f}%" if share else "0%"
        rows.append([name, str(usage["n"])] + cells + [estimated, str(usage.get("failed_attempts", 0))])
    headings = ["Method", "n"] + [heading for heading, _, _ in stats] + ["Estimated calls", "Failed attempts"]
    return "\n".join(["Efficiency: mean per query over every result line (from each result's usage; seconds are "
                      "the LLM time charged to the query). A request returning n samples is one call. ~: token "
                      "counts estimated (words x 4/3) for the share of calls whose reply reported no usage. "
                      f"Failed attempts (retried, in total) are not calls.{bold_note(len(methods), 'Lowest per column in bold.')}",
                      "",
                      *_grid(headings, rows)]) + "\n"


ANSWER_SOURCES = ("braces", "mentioned", "stated", "best-path", "extractive", "none")


def answer_sources(metrics: dict) -> str:
    """How each method's answers were read (counts of result lines)."""
    methods = _methods(metrics)
    kinds = list(ANSWER_SOURCES) + sorted({k for m in methods.values() for k in m["answer_sources"]}
                                         - set(ANSWER_SOURCES))
    rows = [[name] + [str(m["answer_sources"].get(k, 0)) for k in kinds] for name, m in methods.items()]
    return "\n".join(["Answers read from: braces ({...} in the LLM reply), mentioned (a candidate the reply "
                      "names), stated (no braces, but the reply states an answer in words), best-path (unreadable "
                      "reply: the best path's end), extractive (no LLM), none", "",
                      *_grid(["Method"] + kinds, rows)]) + "\n"


def ablation_table(metrics: dict) -> str:
    """Exact match (strict) per level and Overall for the full method and each ablation."""
    methods = {n: m for n, m in _methods(metrics).items() if m.get("cells")}
    if not methods:
        return ""
    columns = [(level.capitalize(), [(m["cells"].get(level, {}).get("overall_strict"),
                                      m["cells"].get(level, {}).get("overall_strict_ci"),
                                      m["cells"].get(level, {}).get("overall_n")) for m in methods.values()])
               for level in _levels(methods)]
    columns.append(("Overall", [((m.get("overall") or {}).get("strict"), (m.get("overall") or {}).get("strict_ci"),
                                 (m.get("overall") or {}).get("n")) for m in methods.values()]))
    return "\n".join(["Ablations: exact match (strict), % per level", "", em_legend(len(methods)), "",
                      *_columns_table(list(methods), columns, first="Variant")]) + "\n"


def compare_table(name_a: str, name_b: str, rows: list[dict], lenient: bool) -> str:
    """``compare.compare_rows`` as Markdown: per level x hop, A and B and A - B with its paired
    bootstrap interval; lenient columns when lenient differs from strict anywhere."""
    header = ["Level", "Hops", "n", f"A strict ({name_a})", f"B strict ({name_b})", "A - B strict [95% CI]"]
    if lenient:
        header += ["A lenient", "B lenient", "A - B lenient [95% CI]"]
    out = []
    for row in rows:
        cells = [row["level"], row["hops"], str(row["n"])]
        for kind in ("strict", "lenient") if lenient else ("strict",):
            d = row[kind]
            cells += [f"{d['a']:.2f}", f"{d['b']:.2f}",
                      f"{d['diff']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"]
        out.append(cells)
    return "\n".join(_grid(header, out)) + "\n"


def answer_set_hits(metrics: dict) -> str:
    """Answer-set Hits@1 and Hits@3 (strict) per method x level x hop, for the methods whose
    results carry answer sets (a new metric: the paper's depth-wise hit rate is Table 4's)."""
    methods = {n: m for n, m in _methods(metrics).items() if m.get("has_answer_sets") and m.get("set_hits")}
    if not methods:
        return ""
    rows = []
    for name, m in methods.items():
        for level in _levels(methods, "set_hits"):
            if level == "overall" or level not in m["set_hits"]:
                continue
            for hop, cell in m["set_hits"][level].items():
                rows.append([name, level, hop, str(cell["n"]), value_text(cell["1"]), value_text(cell["3"])])
        overall = m["set_hits"]["overall"]
        rows.append([name, "all", "all", str(overall["n"]), value_text(overall["1"]), value_text(overall["3"])])
    return "\n".join(["Answer-set Hits@K (strict), %: a valid answer among the first K names of the answer set, "
                      "best first (an answer set of one reads as its answer)", "",
                      *_grid(["Method", "Level", "Hop", "n", "Hits@1", "Hits@3"], rows)]) + "\n"
