"""PrimeKG's vocabulary: node types, relations and what each relation means.

A graph stores relation ids that index *display* relations (the 18 names BioStrat-QA
and the meta-path templates use). PrimeKG's 30 fine relation names (``drug_protein``,
``disease_disease`` ...) are recoverable from a display relation and the endpoint types,
so they are kept only here, for import and generation.
"""

from __future__ import annotations

from dataclasses import dataclass

NODE_TYPES: tuple[str, ...] = (
    "biological_process",
    "gene/protein",
    "disease",
    "effect/phenotype",
    "anatomy",
    "molecular_function",
    "drug",
    "cellular_component",
    "pathway",
    "exposure",
)

# PrimeKG's node counts per type (scale 1.0 of the generator).
PRIMEKG_NODE_COUNTS: dict[str, int] = {
    "biological_process": 28_642,
    "gene/protein": 27_671,
    "disease": 17_080,
    "effect/phenotype": 15_311,
    "anatomy": 14_035,
    "molecular_function": 11_169,
    "drug": 7_957,
    "cellular_component": 4_176,
    "pathway": 2_516,
    "exposure": 818,
}

# The 18 display relations, each with a paragraph that BM25 and encoders read.
RELATION_DESCRIPTIONS: dict[str, str] = {
    "ppi": (
        "Protein-protein interaction: two genes or proteins physically bind or functionally "
        "interact, forming complexes or signalling partnerships inside the cell."
    ),
    "carrier": (
        "Drug carrier: a protein, often a plasma protein, binds a drug and carries it through "
        "the blood or across compartments, shaping its distribution and availability."
    ),
    "enzyme": (
        "Drug-metabolising enzyme: an enzyme such as a cytochrome P450 chemically transforms "
        "a drug, activating or inactivating it and controlling its clearance."
    ),
    "target": (
        "Drug target: the gene or protein a drug binds to produce its therapeutic or "
        "pharmacological effect, such as a receptor, channel or enzyme it inhibits."
    ),
    "transporter": (
        "Drug transporter: a membrane transport protein moves a drug into or out of cells, "
        "governing absorption, excretion and tissue penetration."
    ),
    "contraindication": (
        "Contraindication: a disease or condition in which a drug should not be used because "
        "the risk of harm outweighs the expected benefit."
    ),
    "indication": (
        "Indication: a disease or condition that a drug is approved or used to treat, "
        "prevent or manage; the drug is a therapy for the disease."
    ),
    "off-label use": (
        "Off-label use: a drug is prescribed for a disease outside its approved labelling, "
        "based on clinical evidence or practice."
    ),
    "synergistic interaction": (
        "Drug-drug interaction: two drugs taken together interact, changing each other's "
        "effect, toxicity or metabolism, sometimes synergistically."
    ),
    "associated with": (
        "Association: a gene or protein is genetically or functionally associated with a "
        "disease or phenotype, for example through mutations, expression or risk loci."
    ),
    "parent-child": (
        "Hierarchy: one concept is a broader parent or a more specific child of another in "
        "an ontology of diseases, phenotypes, processes, anatomy or pathways."
    ),
    "phenotype absent": (
        "Phenotype absent: a clinical feature or symptom is characteristically not present "
        "in a disease."
    ),
    "phenotype present": (
        "Phenotype present: a disease shows a clinical feature, sign or symptom; the "
        "phenotype is part of the disease's presentation."
    ),
    "side effect": (
        "Side effect: an adverse effect or phenotype observed in patients taking a drug."
    ),
    "interacts with": (
        "Functional involvement: a gene or protein takes part in a biological process, "
        "molecular function, cellular component or pathway, or an exposure acts on it."
    ),
    "linked to": (
        "Exposure link: an environmental exposure, chemical or lifestyle factor is linked to "
        "the risk or course of a disease."
    ),
    "expression present": (
        "Expression present: a gene or protein is expressed in an anatomical tissue or organ."
    ),
    "expression absent": (
        "Expression absent: a gene or protein is not expressed in an anatomical tissue or "
        "organ."
    ),
}

DISPLAY_RELATIONS: tuple[str, ...] = tuple(RELATION_DESCRIPTIONS)

# Relations some real sources add where none of PrimeKG's fits (not display relations: graphs
# without them keep PrimeKG's 18).
EXTRA_RELATION_DESCRIPTIONS: dict[str, str] = {
    "grouped with": (
        "Disease group: two diseases belong to one group of closely related disorders, such "
        "as the numbered types of one syndrome, in PrimeKG's grouping of its disease nodes."
    ),
}


@dataclass(frozen=True)
class PrimeKGRelation:
    """One PrimeKG relation split by display name, with endpoint types and size."""

    relation: str
    display: str
    x_type: str
    y_type: str
    kg_rows: int  # rows in kg.csv (both directions)


# PrimeKG's relation mix as kg.csv rows. drug_protein (50,936 rows) is split over its four
# display relations in roughly PrimeKG's proportions.
PRIMEKG_RELATIONS: tuple[PrimeKGRelation, ...] = (
    PrimeKGRelation("anatomy_protein_present", "expression present", "anatomy", "gene/protein", 3_033_804),
    PrimeKGRelation("drug_drug", "synergistic interaction", "drug", "drug", 2_672_628),
    PrimeKGRelation("protein_protein", "ppi", "gene/protein", "gene/protein", 642_150),
    PrimeKGRelation("disease_phenotype_positive", "phenotype present", "disease", "effect/phenotype", 300_629),
    PrimeKGRelation("bioprocess_protein", "interacts with", "biological_process", "gene/protein", 289_599),
    PrimeKGRelation("cellcomp_protein", "interacts with", "cellular_component", "gene/protein", 166_782),
    PrimeKGRelation("disease_protein", "associated with", "disease", "gene/protein", 160_813),
    PrimeKGRelation("molfunc_protein", "interacts with", "molecular_function", "gene/protein", 139_053),
    PrimeKGRelation("drug_effect", "side effect", "drug", "effect/phenotype", 129_568),
    PrimeKGRelation("bioprocess_bioprocess", "parent-child", "biological_process", "biological_process", 105_772),
    PrimeKGRelation("pathway_protein", "interacts with", "pathway", "gene/protein", 85_292),
    PrimeKGRelation("disease_disease", "parent-child", "disease", "disease", 64_388),
    PrimeKGRelation("contraindication", "contraindication", "drug", "disease", 61_350),
    PrimeKGRelation("drug_protein", "target", "drug", "gene/protein", 32_560),
    PrimeKGRelation("drug_protein", "enzyme", "drug", "gene/protein", 10_634),
    PrimeKGRelation("drug_protein", "transporter", "drug", "gene/protein", 6_184),
    PrimeKGRelation("drug_protein", "carrier", "drug", "gene/protein", 1_558),
    PrimeKGRelation("anatomy_protein_absent", "expression absent", "anatomy", "gene/protein", 39_774),
    PrimeKGRelation("phenotype_phenotype", "parent-child", "effect/phenotype", "effect/phenotype", 37_472),
    PrimeKGRelation("anatomy_anatomy", "parent-child", "anatomy", "anatomy", 28_064),
    PrimeKGRelation("molfunc_molfunc", "parent-child", "molecular_function", "molecular_function", 27_148),
    PrimeKGRelation("indication", "indication", "drug", "disease", 18_776),
    PrimeKGRelation("cellcomp_cellcomp", "parent-child", "cellular_component", "cellular_component", 9_690),
    PrimeKGRelation("phenotype_protein", "associated with", "effect/phenotype", "gene/protein", 6_660),
    PrimeKGRelation("off-label use", "off-label use", "drug", "disease", 5_136),
    PrimeKGRelation("pathway_pathway", "parent-child", "pathway", "pathway", 5_070),
    PrimeKGRelation("exposure_disease", "linked to", "exposure", "disease", 4_608),
    PrimeKGRelation("exposure_exposure", "parent-child", "exposure", "exposure", 4_140),
    PrimeKGRelation("exposure_bioprocess", "interacts with", "exposure", "biological_process", 3_250),
    PrimeKGRelation("exposure_protein", "interacts with", "exposure", "gene/protein", 2_424),
    PrimeKGRelation("disease_phenotype_negative", "phenotype absent", "disease", "effect/phenotype", 2_386),
    PrimeKGRelation("exposure_molfunc", "interacts with", "exposure", "molecular_function", 90),
    PrimeKGRelation("exposure_cellcomp", "interacts with", "exposure", "cellular_component", 20),
)


def relation_description(name: str) -> str:
    """Description of a relation; relations outside PrimeKG get a sentence from their name."""
    if name in RELATION_DESCRIPTIONS:
        return RELATION_DESCRIPTIONS[name]
    if name in EXTRA_RELATION_DESCRIPTIONS:
        return EXTRA_RELATION_DESCRIPTIONS[name]
    words = name.replace("_", " ").replace("-", " ").strip()
    return f"Relation '{words}': the head entity {words} the tail entity."
