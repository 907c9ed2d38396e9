"""Every prompt adapath sends, in one place. Prompts never contain gold data: they are
built from the question, the graph and the Path-Bank only."""

from __future__ import annotations


def control(question: str, answer_types: list[str], max_hop: int) -> str:
    types = ", ".join(answer_types)
    return (
        "You analyse biomedical questions over a knowledge graph.\n"
        f"Question: {question}\n"
        f"1. Which type is the answer? Choose one of: {types}.\n"
        f"2. How many relation hops separate the question's main entity from the answer (1 to {max_hop})?\n"
        'Reply with JSON only, for example {"answer_type": "drug", "hops": 2}.'
    )


def frontier(sub_query: str, groups: list[tuple[str, list[str]]], beam: int) -> str:
    lines = [
        "You choose which knowledge-graph entities to explore next.",
        f"Step: {sub_query}",
        "Candidates:",
    ]
    number = 1
    for label, names in groups:
        lines.append(f"[{label}]")
        for name in names:
            lines.append(f"  {number}. {name}")
            number += 1
    lines.append(f"Pick at most {beam} candidates most likely to lead to the answer. "
                 "Reply with their numbers in braces, for example {1, 4}.")
    return "\n".join(lines)


def sub_query(question: str, depth: int, hops: int, relation: str | None, node_type: str | None) -> str:
    if relation is None:
        return f"{question} (hop {depth} of {hops})"
    return f"{question} (hop {depth} of {hops}: follow '{relation}' to a {node_type})"


def answer(question: str, triplets: list[tuple[str, str, str]]) -> str:
    lines = ["Answer the biomedical question using the knowledge-graph paths below.",
             f"Question: {question}", "Paths:"]
    for i, (head, relation, tail) in enumerate(triplets, start=1):
        lines.append(f"{i}. ({head}, {relation}, {tail})")
    if not triplets:
        lines.append("(none found)")
    lines.append("Give the single best answer entity's name wrapped in braces, for example {aspirin}.")
    return "\n".join(lines)


def plan(question: str, topic_type: str, relations: list[str], types: list[str], max_hop: int) -> str:
    return (
        "You plan relation paths through a biomedical knowledge graph.\n"
        f"Question: {question}\n"
        f"The question starts from a {topic_type}. Node types: {', '.join(types)}. "
        f"Relations: {', '.join(relations)}.\n"
        f"Propose up to 3 meta-paths of at most {max_hop} hops, one per line, written as "
        f"{topic_type} -[relation]- type -[relation]- type."
    )
