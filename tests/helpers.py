"""Small random graphs and generated question sets for tests."""

import json

import numpy as np

from adapath.engine.graph import KnowledgeGraph

TYPES = ("a", "b", "c")
RELS = ("r0", "r1", "r2", "r3")


def random_graph(seed, n=40, m=200, isolated=0):
    """A random typed multigraph (duplicates and self-loops in the input are merged/dropped)."""
    rng = np.random.default_rng(seed)
    head = rng.integers(0, n - isolated, m)
    tail = rng.integers(0, n - isolated, m)
    rel = rng.integers(0, len(RELS), m)
    node_type = rng.integers(0, len(TYPES), n).astype(np.int8)
    return KnowledgeGraph.from_edges(
        head, tail, rel, node_type=node_type,
        names=[f"node {i}" for i in range(n)], descriptions=[f"text {i}" for i in range(n)],
        type_names=TYPES, relation_names=RELS,
        relation_descriptions=tuple(f"about {r}" for r in RELS),
    )


def generated_world(root, graph_seed, questions, question_seed, name="q.jsonl", scale=0.01):
    """A generated graph saved in ``root/kg`` and ``questions`` generated records written to
    ``root/name``; returns (graph, records)."""
    from adapath.datasets.generate import QueryGenerator
    from adapath.sources.synthetic import generate

    generate(scale=scale, seed=graph_seed).save(root / "kg")
    graph = KnowledgeGraph.load(root / "kg")
    records = QueryGenerator(graph).generate(questions, seed=question_seed)
    (root / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    return graph, records


def ctrl_c_enabled() -> None:
    """A child's SIGINT back to the default before it starts (``preexec_fn``): a child of a
    launcher that ignores SIGINT (nohup under a shell without job control) inherits the ignore,
    and Python then installs no KeyboardInterrupt handler, so a test's Ctrl-C would go unheard."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
