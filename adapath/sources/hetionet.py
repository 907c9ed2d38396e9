"""Hetionet v1.0 JSON: nodes (kind, identifier, name), edges (source_id, target_id, kind)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.schema import DISPLAY_RELATIONS, NODE_TYPES
from adapath.errors import InputError
from adapath.sources.tables import Vocabulary, assemble

HETIONET_KINDS = {
    "Gene": "gene/protein",
    "Compound": "drug",
    "Disease": "disease",
    "Anatomy": "anatomy",
    "Symptom": "effect/phenotype",
    "Side Effect": "effect/phenotype",
    "Biological Process": "biological_process",
    "Cellular Component": "cellular_component",
    "Molecular Function": "molecular_function",
    "Pathway": "pathway",
    "Pharmacologic Class": "pharmacologic_class",
}


def load_hetionet(path: str | Path) -> KnowledgeGraph:
    """Hetionet v1.0 JSON: nodes (kind, identifier, name), edges (source_id, target_id, kind)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except UnicodeDecodeError:
        raise InputError(f"{path}: bytes are not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg} column {exc.colno})") from None
    if not isinstance(data, dict) or "nodes" not in data or "edges" not in data:
        raise InputError(f"{path}: expected a Hetionet JSON object with 'nodes' and 'edges'")
    types = Vocabulary(NODE_TYPES, "node type", growable=True)
    relations = Vocabulary(DISPLAY_RELATIONS, "relation", growable=True)
    index: dict[tuple[str, str], int] = {}
    type_codes, names, descriptions = [], {}, {}
    for i, node in enumerate(data["nodes"]):
        try:
            kind, identifier, name = node["kind"], node["identifier"], node["name"]
        except (KeyError, TypeError):
            raise InputError(f"{path}: node {i} lacks kind/identifier/name") from None
        if kind not in HETIONET_KINDS:
            raise InputError(f"{path}: node {i}: unknown node kind {kind!r}")
        key = (kind, str(identifier))
        if key in index:
            raise InputError(f"{path}: node {i}: duplicate node {kind}::{identifier}")
        index[key] = len(type_codes)
        type_codes.append(types.code(HETIONET_KINDS[kind], str(path)))
        names[index[key]] = str(name)
        descriptions[index[key]] = str((node.get("data") or {}).get("description", ""))
    heads, tails, rels = [], [], []
    for i, edge in enumerate(data["edges"]):
        try:
            (sk, sid), (tk, tid), kind = edge["source_id"], edge["target_id"], edge["kind"]
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{path}: edge {i} lacks source_id/target_id/kind") from None
        try:
            heads.append(index[(sk, str(sid))])
            tails.append(index[(tk, str(tid))])
        except KeyError as exc:
            raise InputError(f"{path}: edge {i} names an unknown node {exc.args[0]}") from None
        rels.append(relations.code(str(kind), str(path)))
    ids = np.arange(len(type_codes), dtype=np.int64)
    return assemble(ids, type_codes, np.array(heads, np.int64), np.array(tails, np.int64),
                     np.array(rels, np.int64), names, descriptions, types.names, relations.names)
