"""KGARevion's prompts (Su et al., 2025): extract the question's medical entities, generate
triplets, revise a rejected triplet, answer. The authors' prompts are zero-shot instructions
that ask for JSON; these are written for adapath in the same shape, without examples beyond
the JSON layout they ask for."""

from __future__ import annotations

from adapath.llm.prompts import answer_format


def extract_entities(question: str) -> str:
    return "\n".join([
        "List the medical entities named in the question below: diseases, genes, proteins, drugs, "
        "phenotypes, anatomical structures, exposures, pathways or other biomedical concepts. Keep each "
        "one specific; write an empty list when there is none.",
        f"Question: {question}",
        'Reply with JSON only, under the key "medical_terminologies", for example '
        '{"medical_terminologies": ["aspirin", "headache"]}.'])


def generate_triplets(question: str, entities: list[str], relations: list[str],
                      option: str | None = None) -> str:
    """The Generate action: 1 to 3 undirected triplets from the model's own knowledge (for
    multiple choice, one prompt per option)."""
    lines = ["Write knowledge triplets that help answer a biomedical question.",
             f"Question: {question}",
             f"Medical entities: {', '.join(entities) or '(none)'}"]
    if option is not None:
        lines.append(f"Option: {option}")
    lines += [
        "Each triplet is (head entity, relation, tail entity) and undirected: the order of head and tail "
        "carries no meaning. Use specific entities such as diseases, genes, proteins, drugs, phenotypes "
        "or anatomical structures.",
        f"The relation must be one of: {', '.join(relations)}.",
        "Write 1 to 3 triplets" + (" about this option" if option is not None else "") +
        ", the ones most useful to answer the question.",
        'Reply with JSON only, for example {"Triplets": [["aspirin", "target", "PTGS1"]]}.']
    return "\n".join(lines)


def revise_triplet(question: str, attempts: list[tuple[str, str, str]],
                   facts: list[tuple[str, str, str]] | None = None) -> str:
    """The Revise action: a triplet the review rejected (with any earlier rejected revisions)
    and the question. ``facts`` (not in the original) lists graph facts too, when given."""
    lines = ["Revise the head entity, the relation or the tail entity of this triplet so that it is "
             "factually correct and helps answer the question; return it unchanged if it needs no change.",
             "Triplet (earlier revisions that were also rejected follow it):",
             *(f"({h}, {r}, {t})" for h, r, t in attempts),
             f"Question: {question}"]
    if facts is not None:
        lines += ["Facts the knowledge graph holds about these entities:",
                  *([f"{i}. ({h}, {r}, {t})" for i, (h, r, t) in enumerate(facts, start=1)] or ["(none)"])]
    lines.append('Reply with JSON only, for example {"Revised_Triplets": [["aspirin", "target", "PTGS1"]]}.')
    return "\n".join(lines)


def answer(question: str, triplets: list[tuple[str, str, str]], options: tuple[str, ...] = ()) -> str:
    """The Answer action: the kept triplets and the model's own knowledge."""
    lines = ["Answer the biomedical question using the triplets below and your own knowledge "
             "(only your own knowledge if there are none).", f"Question: {question}", "Triplets:"]
    lines += [f"{i}. ({h}, {r}, {t})" for i, (h, r, t) in enumerate(triplets, start=1)] or ["(none)"]
    lines += answer_format(options)
    return "\n".join(lines)
