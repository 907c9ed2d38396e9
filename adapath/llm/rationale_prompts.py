"""Prompts of the two-rationale chain of thought that Chain-of-Knowledge (Li et al., ICLR
2024) is built on, and that ToG-2 samples for its self-consistency gate: "First, ... Second,
... The answer is X." Also CoK's domain selection, query generation and editing prompts.

Written for adapath on biomedical examples, in the shape and number of the authors' worked
examples (6 for the chain of thought, 4 for domain selection, 3 for query generation, 2 for
editing); none of their text is reused.
"""

from __future__ import annotations

from dataclasses import dataclass

LETTERS = "ABCDEFGH"


@dataclass(frozen=True)
class Shot:
    question: str
    options: tuple[str, ...]
    answer: int  # index into options
    first: str
    second: str


SHOTS = (
    Shot("Which gene encodes the enzyme that aspirin irreversibly inhibits to lower thromboxane production?",
         ("PTGS1", "VKORC1", "HMGCR", "ACE"), 0,
         "aspirin acetylates a serine in cyclooxygenase-1 and so blocks thromboxane synthesis in platelets.",
         "cyclooxygenase-1 is the product of the PTGS1 gene."),
    Shot("Which disease is treated by the drug that binds the BCR-ABL1 fusion kinase?",
         ("Hodgkin lymphoma", "chronic myeloid leukemia", "multiple myeloma", "psoriasis"), 1,
         "imatinib is a tyrosine kinase inhibitor that binds the BCR-ABL1 fusion protein.",
         "imatinib is indicated for chronic myeloid leukemia, which that fusion protein drives."),
    Shot("Which phenotype is a side effect of the drug that lowers cholesterol by inhibiting HMGCR?",
         ("myalgia", "hirsutism", "gingival overgrowth", "hearing loss"), 0,
         "atorvastatin is a statin that lowers cholesterol by inhibiting HMG-CoA reductase, encoded by HMGCR.",
         "statins such as atorvastatin commonly cause muscle pain, myalgia."),
    Shot("In which anatomical structure is the gene mutated in cystic fibrosis strongly expressed?",
         ("skeletal muscle", "lung", "cerebellum", "retina"), 1,
         "cystic fibrosis is caused by mutations in the CFTR chloride channel gene.",
         "CFTR is strongly expressed in the epithelium lining the airways of the lung."),
    Shot("Which gene is targeted by the oral anticoagulant whose dose is adjusted by INR monitoring?",
         ("F2", "VKORC1", "SERPINC1", "PTGS2"), 1,
         "warfarin is the oral anticoagulant dosed by monitoring the INR.",
         "warfarin inhibits vitamin K epoxide reductase, encoded by VKORC1."),
    Shot("Which disease is associated with the gene whose CAG repeat expansion causes chorea?",
         ("Parkinson disease", "Huntington disease", "Wilson disease", "Friedreich ataxia"), 1,
         "a CAG repeat expansion that causes chorea points to the HTT gene.",
         "expansions in HTT cause Huntington disease."),
)


def _question_line(question: str, options: tuple[str, ...]) -> str:
    if not options:
        return question.strip()
    return question.strip() + " " + " ".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))


def _answer_word(shot: Shot, multiple_choice: bool) -> str:
    return LETTERS[shot.answer] if multiple_choice else shot.options[shot.answer]


def rationale_demonstration(multiple_choice: bool, count: int = 6) -> str:
    """The instruction and ``count`` worked examples (options shown for multiple choice)."""
    head = ("Strictly follow the format of the examples below: give two rationales, then the answer."
            + (" The answer must be one of the option letters." if multiple_choice else
               " The answer is the name of one biomedical entity."))
    lines = [head]
    for shot in SHOTS[:count]:
        lines.append("Q: " + _question_line(shot.question, shot.options if multiple_choice else ()))
        lines.append(f"A: First, {shot.first} Second, {shot.second} "
                     f"The answer is {_answer_word(shot, multiple_choice)}.")
        lines.append("")
    return "\n".join(lines) + "\n"


def rationale_cot(question: str, options: tuple[str, ...] = (), shots: int = 6) -> str:
    """Stage 1 of CoK (and ToG-2's gate): a two-rationale chain of thought."""
    return rationale_demonstration(bool(options), shots) + "Q: " + _question_line(question, options) + "\nA: "


def rationale_continue(question: str, options: tuple[str, ...], first: str, second: str | None = None,
                       shots: int = 6) -> str:
    """The chain of thought with its first rationale (and second, when given) already written:
    CoK writes the next rationale, or the answer, after the edited ones."""
    text = rationale_cot(question, options, shots) + "First, " + first.strip() + " Second, "
    if second is not None:
        text += second.strip() + " The answer is "
    return text


DOMAINS = ("factual", "medical", "physical", "biology")


def select_domains(question: str) -> str:
    """CoK's domain selection: which knowledge domains the question needs."""
    return "\n".join([
        "Follow the examples below: choose the knowledge domains relevant to the Q from the Available Domains.",
        f"Available Domains: {', '.join(DOMAINS)}",
        "",
        "Q: In which city was insulin first given to a patient with diabetes?",
        "Relevant domains: factual",
        "",
        "Q: Which antibiotic should be avoided in a patient with severe kidney failure?",
        "Relevant domains: medical",
        "",
        "Q: Why does a metal spoon left in hot tea feel hotter than a wooden one?",
        "Relevant domains: physical",
        "",
        "Q: Which organelle produces most of a cell's ATP?",
        "Relevant domains: biology",
        "",
        f"Q: {question.strip()}",
        "Relevant domains: "])


def generate_query(question: str, rationale: str) -> str:
    """CoK's query generation for one rationale: a question whose answer checks it, and the
    entity it is about in braces (the entity is looked up in the knowledge graph)."""
    return "\n".join([
        "Write a question that asks about the answer to the overall question, then the entity it "
        "asks about in braces.",
        "",
        "Overall Question: Which gene is targeted by the drug indicated for chronic myeloid leukemia?",
        "Answer: imatinib is indicated for chronic myeloid leukemia.",
        "Question: Which drug is indicated for chronic myeloid leukemia? {chronic myeloid leukemia}",
        "",
        "Overall Question: Which phenotype is a side effect of the drug that inhibits HMGCR?",
        "Answer: atorvastatin inhibits HMGCR.",
        "Question: Which drug targets HMGCR? {HMGCR}",
        "",
        "Overall Question: In which tissue is the gene behind cystic fibrosis expressed?",
        "Answer: CFTR is expressed in the airway epithelium of the lung.",
        "Question: Where is CFTR expressed? {CFTR}",
        "",
        f"Overall Question: {question.strip()}",
        f"Answer: {rationale.strip()}",
        "Question: "])


def edit_rationale(rationale: str, knowledge: list[tuple[str, str, str]]) -> str:
    """CoK's editing: the rationale corrected by the retrieved knowledge."""
    facts = " ".join(f"{h} {r} {t}." for h, r, t in knowledge) or "(none found)"
    return "\n".join([
        "Strictly follow the format of the examples below. The sentence may contain factual errors; "
        "correct them using the knowledge given.",
        "Sentence: imatinib is indicated for chronic myeloid leukemia.",
        "Knowledge: imatinib indication chronic myeloid leukemia.",
        "Edited sentence: imatinib is indicated for chronic myeloid leukemia.",
        "",
        "Sentence: warfarin inhibits the enzyme encoded by PTGS2.",
        "Knowledge: warfarin target VKORC1.",
        "Edited sentence: warfarin inhibits the enzyme encoded by VKORC1.",
        "",
        f"Sentence: {rationale.strip()}",
        f"Knowledge: {facts}",
        "Edited sentence: "])
