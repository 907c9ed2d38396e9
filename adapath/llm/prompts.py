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


def answer(question: str, triplets: list[tuple[str, str, str]], options: tuple[str, ...] = ()) -> str:
    lines = ["Answer the biomedical question using the knowledge-graph paths below.",
             f"Question: {question}", "Paths:"]
    for i, (head, relation, tail) in enumerate(triplets, start=1):
        lines.append(f"{i}. ({head}, {relation}, {tail})")
    if not triplets:
        lines.append("(none found)")
    lines += answer_format(options)
    return "\n".join(lines)


def answer_format(options: tuple[str, ...] = ()) -> list[str]:
    """The closing lines of every answer prompt: free text in braces, or an option letter."""
    if options:
        return ["Options:", *(f"{letter}. {text}" for letter, text in zip("ABCDEFGH", options)),
                "Reply with the letter of the best option in braces, for example {B}."]
    return ["Give the single best answer entity's name wrapped in braces, for example {aspirin}."]


def plan(question: str, topic_type: str, relations: list[str], types: list[str], max_hop: int) -> str:
    return (
        "You plan relation paths through a biomedical knowledge graph.\n"
        f"Question: {question}\n"
        f"The question starts from a {topic_type}. Node types: {', '.join(types)}. "
        f"Relations: {', '.join(relations)}.\n"
        f"Propose up to 3 meta-paths of at most {max_hop} hops, one per line, written as "
        f"{topic_type} -[relation]- type -[relation]- type."
    )


# ---- BioStrat-QA construction (the paper's Appendix A.3). Target names never appear in a
# summary; the answer's name never appears in a question.

def pathway_summary(topic: str, hops: list[tuple[str, str, str, str]]) -> str:
    """hops: (source name, relation, target description, target type) for each step."""
    lines = ["Summarise this biomedical pathway in two or three sentences. Describe each target "
             "by its description and type only; never name a target.", f"Start: {topic}"]
    for i, (source, relation, description, node_type) in enumerate(hops, start=1):
        lines.append(f"Hop {i}: {source} -[{relation}]-> a {node_type}: {description}")
    return "\n".join(lines)


def explicit_question(topic: str, steps: list[tuple[str, str]], answer_type: str) -> str:
    route = "; ".join(f"'{relation}' to {name}" for relation, name in steps)
    return ("Write one natural question whose answer is a single " + answer_type + ". "
            f"It starts from {topic}, names every intermediate entity and relation on the route "
            f"({route}), then asks for the {answer_type} at the end. Never name the answer. "
            "Reply with the question only.")


def implicit_question(topic: str, summary: str, answer_type: str) -> str:
    return ("Write one natural question whose answer is a single " + answer_type + ". "
            f"It starts from {topic} and paraphrases the intermediate entities from this summary "
            f"without naming them: {summary} Never name the answer. Reply with the question only.")


def bare_question(topic: str, answer_type: str) -> str:
    return (f"Write one short question asking which {answer_type} is related to {topic}, with a "
            "generic linking phrase and no other detail. Reply with the question only.")


# ---- topic-entity extraction (the paper's Appendix C) and the context-relevance judge

def pick_template(question: str, templates: list[str]) -> str:
    lines = ["Which question pattern fits this biomedical question best?", f"Question: {question}"]
    lines += [f"{i}. {t}" for i, t in enumerate(templates, start=1)]
    lines.append("Reply with the pattern's number in braces, for example {2}.")
    return "\n".join(lines)


def pick_entity(question: str, slot_type: str, candidates: list[tuple[str, str]]) -> str:
    lines = [f"Which {slot_type} does this question start from?", f"Question: {question}"]
    lines += [f"{i}. {name}: {chunk}" for i, (name, chunk) in enumerate(candidates, start=1)]
    lines.append("Reply with the candidate's number in braces, for example {1}.")
    return "\n".join(lines)


def judge_relevance(question: str, triplets: list[tuple[str, str, str]]) -> str:
    lines = ["Rate how relevant the retrieved knowledge-graph context is to the question.",
             f"Question: {question}", "Context:"]
    lines += [f"- ({h}, {r}, {t})" for h, r, t in triplets] or ["- (none)"]
    lines.append("Score 0 (irrelevant), 1 (partly relevant) or 2 (relevant). Reply with the score in braces, "
                 "for example {1}.")
    return "\n".join(lines)


# ---- LLM-only and fact-retrieval baselines: IO, chain-of-thought, self-consistency
# (Wang et al. 2023), Chain-of-Knowledge (Li et al. 2024, KG triplets as its knowledge
# source) and KGARevion (Su et al. 2025: generate, review against the KG, revise, answer).
# Written for adapath; every one closes with ``answer_format`` so replies parse alike.

def direct_answer(question: str, options: tuple[str, ...] = ()) -> str:
    """IO: the question alone, the answer at once."""
    return "\n".join(["Answer the biomedical question from what you know.", f"Question: {question}",
                      *answer_format(options)])


def chain_of_thought(question: str, options: tuple[str, ...] = ()) -> str:
    """CoT (and each self-consistency sample): reasoning first, the answer last."""
    return "\n".join([
        "Answer the biomedical question from what you know.",
        f"Question: {question}",
        "Let's think step by step: name each entity and relation that leads from the question "
        "to its answer, one short sentence per step, then give the answer.",
        *answer_format(options)])


def knowledge_answer(question: str, triplets: list[tuple[str, str, str]], options: tuple[str, ...] = ()) -> str:
    """Chain-of-Knowledge: reason with knowledge-graph facts about the question's entities,
    correcting any step they contradict, then answer."""
    lines = ["Answer the biomedical question. Facts from a biomedical knowledge graph about the "
             "question's entities are listed below.", f"Question: {question}", "Knowledge:"]
    lines += [f"{i}. ({h}, {r}, {t})" for i, (h, r, t) in enumerate(triplets, start=1)] or ["(none found)"]
    lines += ["Let's think step by step: reason from the question to the answer, ground each step in "
              "the knowledge where it applies and correct any step the knowledge contradicts, then "
              "give the answer.", *answer_format(options)]
    return "\n".join(lines)


def propose_triplets(question: str, entities: list[str], relations: list[str], count: int,
                     option: str | None = None) -> str:
    """KGARevion's Generate action: undirected triplets, from the model's own knowledge, that
    help answer the question (for multiple choice, one prompt per option)."""
    lines = ["Write knowledge triplets that help answer a biomedical question.",
             f"Question: {question}",
             f"Medical entities in the question: {', '.join(entities) or '(none)'}"]
    if option is not None:
        lines.append(f"Candidate answer: {option}")
    lines += [
        f"Write 1 to {count} undirected triplets (head entity, relation, tail entity) about these "
        "entities" + (" and the candidate answer" if option is not None else "") +
        " that are most useful to answer the question. Use specific entity names.",
        f"The relation must be one of: {', '.join(relations)}.",
        'Reply with JSON only, for example {"Triplets": [["aspirin", "target", "PTGS2"]]}.']
    return "\n".join(lines)


def revise_triplet(question: str, attempts: list[tuple[str, str, str]], facts: list[tuple[str, str, str]]) -> str:
    """KGARevion's Revise action: a triplet the knowledge graph does not hold, corrected with
    the facts the graph holds around its entities."""
    lines = ["This triplet was checked against a biomedical knowledge graph and is not in it:",
             *(f"({h}, {r}, {t})" for h, r, t in attempts),
             f"Question: {question}",
             "Facts the knowledge graph holds about these entities:"]
    lines += [f"{i}. ({h}, {r}, {t})" for i, (h, r, t) in enumerate(facts, start=1)] or ["(none)"]
    lines += ["Revise the head entity, the relation or the tail entity so that the triplet is correct "
              "and helps answer the question.",
              'Reply with JSON only, for example {"Revised_Triplets": [["aspirin", "target", "PTGS2"]]}.']
    return "\n".join(lines)


def triplets_answer(question: str, triplets: list[tuple[str, str, str]], options: tuple[str, ...] = ()) -> str:
    """KGARevion's Answer action: the reviewed triplets and the model's own knowledge."""
    lines = ["Answer the biomedical question using the triplets below and your own knowledge "
             "(only your own knowledge if there are none).", f"Question: {question}", "Triplets:"]
    lines += [f"{i}. ({h}, {r}, {t})" for i, (h, r, t) in enumerate(triplets, start=1)] or ["(none)"]
    lines += answer_format(options)
    return "\n".join(lines)
