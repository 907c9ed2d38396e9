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


def path_chain(path) -> str:
    """One path as the reasoning prompt prints it, from the topic: ``a -[r]-> b`` for a step
    along its stored edge (a r b), ``b <-[r]- c`` for one walked against it (the graph states
    c r b). Steps are (head, relation, tail) in walked order, with an optional fourth item:
    whether the edge is stored head -> tail (True when absent)."""
    text = str(path[0][0]) if path else ""
    for step in path:
        relation, tail = step[1], step[2]
        forward = step[3] if len(step) > 3 else True
        text += f" -[{relation}]-> {tail}" if forward else f" <-[{relation}]- {tail}"
    return text


def answer_set(question: str, paths: list[list[tuple]], options: tuple[str, ...] = ()) -> str:
    """PathMind's single reasoning call: the question and its prioritized paths, each path a
    chain from the topic (:func:`path_chain`); the reply is an answer set, best first (an
    option letter for multiple choice)."""
    lines = ["Answer the biomedical question using the prioritized knowledge-graph paths below.",
             f"Question: {question}", "Paths (x -[r]-> y: x r y; x <-[r]- y: y r x):"]
    for i, path in enumerate(paths, start=1):
        lines.append(f"{i}. {path_chain(path)}")
    if not paths:
        lines.append("(none found)")
    if options:
        lines += answer_format(options)
    else:
        lines.append("Give every answer entity's name, each wrapped in braces, best first, for example "
                     "{aspirin} {ibuprofen}.")
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


# ---- path-finding baselines: StructGPT, Think-on-Graph (ToG), ToG-2, Plan-on-Graph (PoG).
# Our own wording of each paper's steps. ToG, ToG-2 and PoG prompt with worked examples, so
# these carry one short biomedical example each (two for yes/no judgements); StructGPT's
# prompts are zero-shot, as its KGQA prompts are. Final answers from triplets use ``answer``.

_CML = "chronic myeloid leukemia"


def _triplet_lines(triplets: list[tuple[str, str, str]]) -> list[str]:
    return [f"({h}, {r}, {t})" for h, r, t in triplets] or ["(none)"]


def structgpt_relation(question: str, start: list[str], followed: list[str], relations: list[str]) -> str:
    """StructGPT's relation choice (zero-shot, as its KGQA prompts): one relation to follow."""
    lines = [f"Candidate relations: {', '.join(relations)}.",
             f'Question: "{question}". You start from: {"; ".join(start)}.']
    if followed:
        lines.append(f"Relations already chosen: {', '.join(followed)}.")
    lines.append("Answering the question needs the relations that match its meaning. Pick the one candidate "
                 "relation to follow next towards the answer, exactly as listed, and start your reply with "
                 "'The relevant relation:'.")
    return "\n".join(lines)


def structgpt_read(question: str, triplets: list[tuple[str, str, str]], options: tuple[str, ...] = ()) -> str:
    """StructGPT's reading step (zero-shot): answer from the triples, or ask for more."""
    lines = ["Read the knowledge-graph triples below.", "Triples:", *_triplet_lines(triplets),
             f'If they give you enough to answer "{question}", start your reply with \'The final answers:\' and '
             "give only one answer.", *answer_format(options),
             "If they are not enough, reply 'Need further information'."]
    return "\n".join(lines)


def structgpt_knowledge(question: str, options: tuple[str, ...] = ()) -> str:
    """StructGPT's answer when the graph gives nothing to read: the model's own knowledge."""
    return "\n".join([f"From what you know: {question}",
                      "Start your reply with 'The final answers:' and give only one answer.",
                      *answer_format(options)])


def tog_relations(question: str, entity: str, relations: list[str], width: int) -> str:
    return "\n".join([
        f"Choose the {width} relations of the topic entity most likely to lead to the answer and rate "
        f"how much each helps, from 0 to 1, the {width} scores summing to 1. Write one per line as "
        "{relation (Score: 0.5)}, then a short reason.",
        "Example",
        f"Question: Which genes are targeted by the drugs indicated for {_CML}?",
        f"Topic entity: {_CML}",
        "Its relations: associated with; indication; off-label use; parent-child; phenotype present",
        "Reply:",
        "{indication (Score: 0.6)}: the drugs indicated for the disease are reached through it.",
        "{off-label use (Score: 0.3)}: drugs also used for it outside their label.",
        "{associated with (Score: 0.1)}: genes linked to the disease, a weaker route.",
        "Now",
        f"Question: {question}",
        f"Topic entity: {entity}",
        f"Its relations: {'; '.join(relations)}",
        "Reply:"])


def tog_entities(question: str, relation: str, names: list[str]) -> str:
    return "\n".join([
        "Rate how much each candidate entity helps answer the question, from 0 to 1, the scores "
        "summing to 1. Reply with one decimal score per candidate, in the order given, separated by "
        "commas.",
        "Example",
        f"Question: Which drug indicated for {_CML} targets ABL1?",
        "Relation followed: indication",
        "Candidates: Hydroxyurea; Imatinib; Interferon alfa",
        "Reply: 0.1, 0.8, 0.1",
        "Now",
        f"Question: {question}",
        f"Relation followed: {relation}",
        f"Candidates: {'; '.join(names)}",
        "Reply:"])


# Five worked examples shared by ToG's sufficiency check and final answer and by PoG's
# evaluation (the originals share one set of five too): (question, triplets, enough?, reply).
_FIVE = (
    (f"Which gene is targeted by the drug indicated for {_CML}?",
     [(_CML, "indication", "Imatinib")], False, "",
     "The triplets give the drug, Imatinib, but not the gene it acts on; its target is still needed."),
    ("The drug indicated for atrial fibrillation that causes bleeding targets which gene?",
     [("atrial fibrillation", "indication", "Warfarin"), ("Warfarin", "side effect", "bleeding"),
      ("Warfarin", "target", "VKORC1")], True, "VKORC1",
     "Warfarin is indicated for atrial fibrillation, causes bleeding and targets VKORC1."),
    ("Which drugs treat the disease associated with the gene HTT?",
     [("HTT", "associated with", "Huntington disease"), ("HTT", "interacts with", "HAP1")], False, "",
     "HTT is linked to Huntington disease, but no triplet names a drug indicated for it."),
    ("Which phenotype is present in the disease associated with the gene FBN1?",
     [("FBN1", "associated with", "Marfan syndrome"), ("Marfan syndrome", "phenotype present", "Ectopia lentis"),
      ("FBN1", "expression present", "aorta")], True, "Ectopia lentis",
     "FBN1 is associated with Marfan syndrome, which presents ectopia lentis."),
    ("Which drug interacts with the drug indicated for hypothyroidism?",
     [("hypothyroidism", "indication", "Levothyroxine"), ("hypothyroidism", "phenotype present", "fatigue"),
      ("Levothyroxine", "target", "THRA")], False, "",
     "Levothyroxine is the drug indicated for hypothyroidism, but no triplet gives a drug it interacts with."),
)


def _comma_triplets(triplets: list[tuple[str, str, str]]) -> list[str]:
    """ToG's and PoG's way of listing triplets: one ``head, relation, tail`` per line."""
    return [f"{h}, {r}, {t}" for h, r, t in triplets] or ["(none)"]


def tog_sufficient(question: str, triplets: list[tuple[str, str, str]], options: tuple[str, ...] = ()) -> str:
    """ToG's sufficiency check (5-shot): {Yes} or {No}; after {Yes} the reply also holds the
    answer in braces, and ToG takes its answer from this reply."""
    lines = ["Given a question and knowledge-graph triplets (entity, relation, entity) retrieved for it, "
             "say whether the triplets together with your own knowledge are enough to answer the question "
             "({Yes} or {No}). After {Yes}, give the answer."]
    for q, facts, enough, answer, why in _FIVE:
        lines += [f"Q: {q}", "Knowledge Triplets: " + "\n".join(_comma_triplets(facts)),
                  f"A: {{{'Yes' if enough else 'No'}}}. {why}" + (f" So the answer is {{{answer}}}." if enough else ""),
                  ""]
    lines += [f"Q: {question}", "Knowledge Triplets: " + "\n".join(_comma_triplets(triplets)),
              "After {Yes}, give the answer:", *answer_format(options), "A:"]
    return "\n".join(lines)


def tog_answer(question: str, triplets: list[tuple[str, str, str]], options: tuple[str, ...] = ()) -> str:
    """ToG's (and PoG's) answer from the triplets and the model's knowledge (5-shot)."""
    lines = ["Given a question and knowledge-graph triplets (entity, relation, entity) retrieved for it, "
             "answer the question with these triplets and your own knowledge."]
    fill = {0: "With my own knowledge, Imatinib inhibits the kinase encoded by ABL1. So the answer is {ABL1}.",
            2: "With my own knowledge, tetrabenazine is used for Huntington disease. So the answer is "
               "{Tetrabenazine}.",
            4: "With my own knowledge, calcium carbonate reduces the absorption of Levothyroxine. So the answer "
               "is {Calcium carbonate}."}
    for i, (q, facts, enough, answer, why) in enumerate(_FIVE):
        reply = f"{why} So the answer is {{{answer}}}." if enough else f"{why} {fill[i]}"
        lines += [f"Q: {q}", "Knowledge Triplets: " + "\n".join(_comma_triplets(facts)), f"A: {reply}", ""]
    lines += [f"Q: {question}", "Knowledge Triplets: " + "\n".join(_comma_triplets(triplets)),
              *answer_format(options), "A:"]
    return "\n".join(lines)


# Six chain-of-thought exemplars in the "Q: ... A: First, ... The answer is {...}." shape: ToG's
# answer without the graph is 6-shot, and self-consistency samples few-shot chains of thought
# (Wang et al. use Wei et al.'s exemplars: six for multi-step StrategyQA).
_SIX = (
    (f"Which gene is targeted by the drug indicated for {_CML}?",
     f"First, the drug indicated for {_CML} is Imatinib. Second, Imatinib targets ABL1.", "ABL1"),
    ("Which gene does the oral anticoagulant that needs INR monitoring inhibit?",
     "First, the oral anticoagulant monitored by INR is Warfarin. Second, Warfarin inhibits VKORC1.", "VKORC1"),
    ("Which phenotype is present in the disease associated with the gene FBN1?",
     "First, FBN1 is associated with Marfan syndrome. Second, Marfan syndrome presents ectopia lentis.",
     "Ectopia lentis"),
    ("Which disease is treated by the drug that the brain converts into dopamine?",
     "First, the drug converted into dopamine in the brain is Levodopa. Second, Levodopa is indicated for "
     "Parkinson disease.", "Parkinson disease"),
    ("Which gene encodes the receptor targeted by the antibody indicated for HER2-positive breast cancer?",
     "First, the antibody indicated for HER2-positive breast cancer is Trastuzumab. Second, Trastuzumab "
     "targets the receptor encoded by ERBB2.", "ERBB2"),
    ("Which organ is damaged most by the disease associated with the gene CFTR?",
     "First, CFTR is associated with cystic fibrosis. Second, cystic fibrosis damages the lung most.", "lung"),
)


def few_shot_cot(question: str, options: tuple[str, ...] = ()) -> str:
    """Six worked chains of thought, then the question (ToG's answer without the graph; each
    self-consistency sample)."""
    lines = []
    for q, chain, answer in _SIX:
        lines += [f"Q: {q}", f"A: {chain} The answer is {{{answer}}}.", ""]
    lines += [f"Q: {question}"]
    if options:
        lines += [*answer_format(options)]
    lines.append("A:")
    return "\n".join(lines)


def tog2_topics(question: str, names: list[str]) -> str:
    return "\n".join([
        "Which of these entities from the question matter for answering it?",
        f"Question: {question}", f"Entities: {'; '.join(names)}",
        "Reply with the entities to keep in braces, separated by semicolons, for example {aspirin; fever}."])


def tog2_relations(question: str, entities: list[tuple[str, list[str]]], width: int) -> str:
    lines = [f"For each entity, choose up to {width} of its relations most likely to lead to "
             "information that answers the question, and score each from 0 to 10 (10: most useful). "
             "Reply entity by entity: a line 'Entity N: name', then one line per chosen relation "
             "written as {relation (Score: 8)}.",
             "Example",
             f"Question: Which genes do drugs indicated for {_CML} target?",
             f"Entity 1: {_CML}",
             "Relations: associated with; indication; parent-child",
             "Reply:",
             f"Entity 1: {_CML}",
             "{indication (Score: 9)}",
             "{associated with (Score: 3)}",
             "Now",
             f"Question: {question}"]
    for i, (name, relations) in enumerate(entities, start=1):
        lines.append(f"Entity {i}: {name}")
        lines.append(f"Relations: {'; '.join(relations)}")
    lines.append("Reply:")
    return "\n".join(lines)


def tog2_reason(question: str, clue: str, triplets: list[tuple[str, str, str]],
                references: list[str], options: tuple[str, ...] = ()) -> str:
    lines = ["Decide whether the knowledge-graph triplets and the reference sentences below, with your "
             "own knowledge, are enough to answer the question. Start your reply with {Yes} or {No}. "
             "After {Yes}, give the answer. After {No}, say in braces what is still missing, as a short "
             "search query.",
             "Example 1",
             f"Question: Which gene does the drug indicated for {_CML} target?",
             "Triplets:", f"({_CML}, indication, Imatinib)",
             "References:", "Imatinib: Imatinib is a tyrosine kinase inhibitor.",
             "Reply: {No}. The drug is Imatinib, but its target is not given. {target gene of Imatinib}",
             "Example 2",
             f"Question: Which gene does the drug indicated for {_CML} target?",
             "Clue from the previous round: target gene of Imatinib",
             "Triplets:", f"({_CML}, indication, Imatinib)", "(Imatinib, target, ABL1)",
             "References:", "ABL1: ABL1 encodes a tyrosine kinase fused to BCR in the disease.",
             "Reply: {Yes}. Imatinib targets ABL1. {ABL1}",
             "Now",
             f"Question: {question}"]
    if clue:
        lines.append(f"Clue from the previous round: {clue}")
    lines += ["Triplets:", *_triplet_lines(triplets), "References:", *(references or ["(none)"]),
              "After {Yes}, give the answer:", *answer_format(options), "Reply:"]
    return "\n".join(lines)


def pog_decompose(question: str) -> str:
    return "\n".join([
        "Break answering this biomedical question into as few sub-objectives as possible. Reply with "
        "the list only.",
        "Example",
        f"Question: Which genes are targeted by the drugs indicated for {_CML}?",
        f'Reply: ["Find the drugs indicated for {_CML}", "Find the genes those drugs target"]',
        "Now", f"Question: {question}", "Reply:"])


def pog_relations(question: str, subobjectives: list[str], entity: str, relations: list[str]) -> str:
    return "\n".join([
        "Choose as few relations as possible that are highly relevant to the question and its "
        "sub-objectives. Reply with the list only.",
        "Example",
        f"Question: Which genes are targeted by the drugs indicated for {_CML}?",
        f"Sub-objectives: ['Find the drugs indicated for {_CML}', 'Find the genes those drugs target']",
        f"Entity: {_CML}",
        "Relations: associated with; indication; off-label use; parent-child",
        "Reply: ['indication']",
        "Now",
        f"Question: {question}", f"Sub-objectives: {subobjectives}", f"Entity: {entity}",
        f"Relations: {'; '.join(relations)}", "Reply:"])


def pog_entities(question: str, head: str, relation: str, names: list[str]) -> str:
    return "\n".join([
        "Which entities in the list can help answer the question? Keep as few as possible and respect "
        "every constraint the question states. Reply with the list only.",
        "Example",
        f"Question: Which kinase inhibitor indicated for {_CML} targets ABL1?",
        f"Triples: {_CML} indication ['Hydroxyurea', 'Imatinib', 'Interferon alfa']",
        "Reply: ['Imatinib']",
        "Now",
        f"Question: {question}", f"Triples: {head} {relation} {names}", "Reply:"])


def _grouped(groups: list[tuple[str, str, list[str]]]) -> list[str]:
    return [f"{head}, {relation}, {names}" for head, relation, names in groups] or ["(none)"]


def pog_memory(question: str, subobjectives: list[str], memory: str,
               groups: list[tuple[str, str, list[str]]]) -> str:
    return "\n".join([
        "From the information below (it may be incomplete) and your own knowledge, write down what is "
        "now known towards each sub-objective. Reply with JSON only, one entry per sub-objective.",
        "Example",
        f"Question: Which genes are targeted by the drugs indicated for {_CML}?",
        f"Sub-objectives: ['Find the drugs indicated for {_CML}', 'Find the genes those drugs target']",
        "Memory: (empty)",
        "Knowledge triplets:", f"{_CML}, indication, ['Imatinib']",
        'Reply: {"1": "Imatinib is indicated for the disease.", "2": "Not found yet."}',
        "Now",
        f"Question: {question}", f"Sub-objectives: {subobjectives}", f"Memory: {memory or '(empty)'}",
        "Knowledge triplets:", *_grouped(groups), "Reply:"])


def _pog_memory_of(i: int) -> str:
    """What PoG's memory would hold for worked example ``i`` of ``_FIVE``."""
    q, facts, enough, answer, why = _FIVE[i]
    first = f"{facts[0][0]} {facts[0][1]} {facts[0][2]}."
    return '{"1": "' + first + '", "2": "' + ("Found." if enough else "Not found yet.") + '"}'


def pog_reason(question: str, memory: str, groups: list[tuple[str, str, list[str]]],
               options: tuple[str, ...] = ()) -> str:
    """PoG's evaluation (5-shot): JSON with whether the memory and triplets suffice and the
    answer ("Null" when they do not)."""
    lines = ["Answer the question from the memory, the knowledge triplets and your own knowledge. Say whether "
             "this is sufficient and, if it is, give the answer.", "", "Here are five examples:"]
    for i, (q, facts, enough, answer, why) in enumerate(_FIVE):
        grouped = [f"{h}, {r}, [{t}]" for h, r, t in facts]
        lines += [f"Q: {q}", f"Memory: {_pog_memory_of(i)}", "Knowledge Triplets: " + "\n".join(grouped),
                  "Output:",
                  '{"A": {"Sufficient": "' + ("Yes" if enough else "No") + '", "Answer": "'
                  + (answer if enough else "Null") + '"}, "R": "' + why + '"}', ""]
    lines += ["Now output the result for the question below as JSON only (with \"A\" and \"R\"). "
              + ("When sufficient, the Answer is the single best answer entity's name." if not options else ""),
              *_json_options(options), f"Q: {question}", f"Memory: {memory or '(empty)'}",
              "Knowledge Triplets: " + "\n".join(_grouped(groups)), "Output:"]
    return "\n".join(lines)


def pog_reflect(question: str, frontier: list[str], memory: str,
                triplets: list[tuple[str, str, str]]) -> str:
    """PoG's reflection (2-shot): should entities already seen be added to those the search
    explores next? JSON {"Add": "Yes"|"No", "Reason": ...}."""
    return "\n".join([
        "From the entities the search will explore next and what is known (memory and triplets), decide "
        "whether further entities must be added to answer the question.",
        "Here are two examples:",
        "Q: Which drugs are indicated for the diseases associated with the gene BRCA1?",
        "Entities set to be retrieved: ['breast cancer']",
        "Memory: BRCA1 is associated with breast cancer and ovarian cancer.",
        "Knowledge Triplets: BRCA1, associated with, ['breast cancer', 'ovarian cancer']",
        'Output: {"Add": "Yes", "Reason": "The entities leave out ovarian cancer, also associated with BRCA1."}',
        "",
        f"Q: Which gene is targeted by the drug indicated for {_CML}?",
        "Entities set to be retrieved: ['Imatinib']",
        "Memory: Imatinib is indicated for the disease.",
        f"Knowledge Triplets: {_CML}, indication, ['Imatinib']",
        'Output: {"Add": "No", "Reason": "Next, search the genes Imatinib targets."}',
        "",
        "Now output the result for the question below as JSON only (with \"Add\" and \"Reason\").",
        f"Q: {question}", f"Entities set to be retrieved: {frontier}", f"Memory: {memory or '(empty)'}",
        "Knowledge Triplets: " + "\n".join(_comma_triplets(triplets)), "Output:"])


def pog_pick(question: str, reason: str, candidates: list[str], memory: str) -> str:
    """PoG's choice of the entities to add (1-shot): a list."""
    return "\n".join([
        "Choose the fewest entities, from the candidate entities, that must be added to the search to answer "
        "the question, given what is known (memory), the reason for adding and your own knowledge.",
        "Here is an example:",
        "Q: Which drugs are indicated for the diseases associated with the gene BRCA1?",
        "Reason: The entities leave out ovarian cancer, also associated with BRCA1.",
        "Candidate Entities: ['BRCA1', 'BARD1', 'ovarian cancer', 'RAD51']",
        "Memory: BRCA1 is associated with breast cancer and ovarian cancer.",
        "Output: ['ovarian cancer']",
        "",
        "Now output the list for the question below, without other text.",
        f"Q: {question}", f"Reason: {reason}", f"Candidate Entities: {candidates}",
        f"Memory: {memory or '(empty)'}", "Output:"])


def pog_knowledge(question: str, options: tuple[str, ...] = ()) -> str:
    """PoG's answer without the graph (1-shot): JSON with whether the model knows and its answer."""
    closing = "" if options else "The Answer is the single best answer entity's name."
    return "\n".join([
        "Answer the question step by step from your own knowledge. Here is an example:",
        f"Q: Which gene is targeted by the drug indicated for {_CML}?",
        "The output is:",
        '{"A": {"Known": "Yes", "Answer": "ABL1"}, "R": "First, the drug indicated for the disease is Imatinib. '
        'Second, Imatinib targets ABL1."}',
        "",
        "Output the answer as JSON only (with \"A\" and \"R\"). " + closing, *_json_options(options),
        f"Q: {question}"])


def _json_options(options: tuple[str, ...]) -> list[str]:
    """Multiple choice in a JSON reply: the options, and the letter as the Answer."""
    if not options:
        return []
    return ["Options:", *(f"{letter}. {text}" for letter, text in zip("ABCDEFGH", options)),
            'Reply with the letter of the best option as the Answer, for example "Answer": "B".']


# ---- LLM-only and fact-retrieval baselines: IO, chain-of-thought, self-consistency
# (Wang et al. 2023) and the single-call Chain-of-Knowledge variant (cok-facts). CoK's own
# stages are in ``rationale_prompts``, KGARevion's in ``kgarevion_prompts``. Written for adapath;
# every one closes with ``answer_format`` so replies parse alike.

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
