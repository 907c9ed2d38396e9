"""BioStrat-QA construction on any graph (AdaPath paper, Appendix A).

1. Typed walks of each of the 60 templates from random topics (``QueryGenerator``);
   templates with fewer than ``min_grounding`` distinct walks are dropped.
2. Answer ambiguity: ``valid_answer_ids`` is every entity the template reaches from the
   topic(s); records with more than ``max_answers`` valid answers are dropped.
3. A 5:2:3 train/dev/test split per template in which no entity-level path (the record's
   sequence of node ids) appears in two splits.
4. Surface forms: through the llm/ layer with the Appendix A.3 prompts (a pathway summary
   for 2-3-hop paths; explicit, implicit, bare), or offline the generator's templated forms.
   A leakage check drops any question that contains the answer's name.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adapath.datasets.generate import QueryGenerator
from adapath.engine.graph import KnowledgeGraph

SPLIT_SHARES = (("train", 0.5), ("dev", 0.2), ("test", 0.3))


@dataclass
class BuildConfig:
    per_template: int = 40  # walks drawn per template
    min_grounding: int = 5  # distinct walks a template needs to be kept
    max_answers: int = 50
    seed: int = 0


def leaks(record: dict) -> bool:
    name = record["answer_entity"]["name"].lower()
    return any(name and name in record[f"{level}_query"].lower() for level in ("explicit", "implicit", "bare"))


def build_dataset(graph: KnowledgeGraph, config: BuildConfig, llm=None) -> tuple[dict[str, list[dict]], dict]:
    """Records per split and statistics."""
    rng = np.random.default_rng(config.seed)
    generator = QueryGenerator(graph)
    kept: dict[str, list[dict]] = {}
    stats = {"templates_total": len(generator.templates), "dropped_templates": [], "leaks": 0,
             "too_ambiguous": 0}
    for template in generator.templates:
        seen, records = set(), []
        for _ in range(config.per_template * 4):
            if len(records) >= config.per_template:
                break
            record = generator.sample(template, rng)
            if record is None or tuple(record["path_node_ids"]) in seen:
                continue
            seen.add(tuple(record["path_node_ids"]))
            if len(record["valid_answer_ids"]) > config.max_answers:
                stats["too_ambiguous"] += 1
                continue
            record["answer_ambiguity"] = len(record["valid_answer_ids"])
            records.append(record)
        if len(records) < config.min_grounding:
            stats["dropped_templates"].append(template.id)
            continue
        kept[template.id] = records
    if llm is not None:
        _rewrite(graph, [r for rs in kept.values() for r in rs], llm)
    splits: dict[str, list[dict]] = {name: [] for name, _ in SPLIT_SHARES}
    for template_id in sorted(kept):
        records = [r for r in kept[template_id] if not leaks(r)]
        stats["leaks"] += len(kept[template_id]) - len(records)
        order = rng.permutation(len(records))
        cut1 = int(round(len(records) * SPLIT_SHARES[0][1]))
        cut2 = cut1 + int(round(len(records) * SPLIT_SHARES[1][1]))
        for position, index in enumerate(order):
            name = "train" if position < cut1 else ("dev" if position < cut2 else "test")
            splits[name].append(records[index])
    next_id = 0
    for name, _ in SPLIT_SHARES:
        for record in splits[name]:
            record["data_id"] = next_id
            next_id += 1
    stats.update({f"{name}_records": len(records) for name, records in splits.items()})
    stats["templates_kept"] = len(kept)
    return splits, stats


def _rewrite(graph: KnowledgeGraph, records: list[dict], llm) -> None:
    """LLM surface forms (Appendix A.3); a reply that leaks or is empty keeps the templated form."""
    from adapath.llm import GenerationParams, prompts

    params = GenerationParams(max_tokens=120)
    summaries = {}
    summary_prompts, owners = [], []
    for i, record in enumerate(records):
        if record["num_hops"] >= 2:
            meta = {m["id"]: m for m in record["node_metadata"]}
            path = record["path_node_ids"][: record["num_hops"] + 1]
            hops = [(meta[a]["name"], rel, _masked(meta[b]), meta[b]["type"])
                    for a, b, (_, rel, _) in zip(path[:-1], path[1:], record["triplets"])]
            summary_prompts.append(prompts.pathway_summary(meta[path[0]]["name"], hops))
            owners.append(i)
    for i, generation in zip(owners, llm.generate(summary_prompts, params)):
        summaries[i] = generation.text.strip()
        records[i]["pathway_summary"] = summaries[i]
    batches = {"explicit": [], "implicit": [], "bare": []}
    for i, record in enumerate(records):
        meta = {m["id"]: m for m in record["node_metadata"]}
        path = record["path_node_ids"][: record["num_hops"] + 1]
        topic = meta[path[0]]["name"]
        answer_type = record["answer_entity"]["type"]
        steps = [(rel, meta[b]["name"]) for b, (_, rel, _) in zip(path[1:-1], record["triplets"])]
        batches["explicit"].append(prompts.explicit_question(topic, steps, answer_type))
        batches["implicit"].append(prompts.implicit_question(topic, summaries.get(i, ""), answer_type))
        batches["bare"].append(prompts.bare_question(topic, answer_type))
    for level, prompt_list in batches.items():
        for record, generation in zip(records, llm.generate(prompt_list, params)):
            text = generation.text.strip().splitlines()[0].strip() if generation.text.strip() else ""
            if text and record["answer_entity"]["name"].lower() not in text.lower():
                record[f"{level}_query"] = text


def _masked(meta: dict, limit: int = 300) -> str:
    """A node's description with its own name replaced, so a summary never names a target."""
    import re

    text = meta["description"] or ""
    if meta["name"]:
        text = re.sub(re.escape(meta["name"]), f"this {meta['type']}", text, flags=re.IGNORECASE)
    return text[:limit]
