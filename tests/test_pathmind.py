"""PathMind: the triple weight and cumulative cost against direct computations, learning
above degree and random baselines, checkpoints, single-call reasoning."""

import json

import networkx as nx
import pytest
import torch

from adapath.datasets.biostrat import query_from_record
from adapath.datasets.generate import QueryGenerator
from adapath.engine.synthetic import generate
from adapath.llm import ScriptedBackend
from adapath.methods.pathmind.infer import PathMind
from adapath.methods.pathmind.model import PathMindNet
from adapath.methods.pathmind.train import (
    Featurizer,
    TrainConfig,
    baseline_hits,
    hits_at,
    load_checkpoint,
    make_examples,
    save_checkpoint,
    train,
)
from adapath.retrieval.dense import HashingEncoder, NodeEmbeddings

# a hand-made graph: 0 -r0- 1 -r1- 2 -r0- 3, and 0 -r2- 3 (both directions listed)
EDGES = [(0, 0, 1), (1, 1, 2), (2, 0, 3), (0, 2, 3)]


def hand_graph():
    src = torch.tensor([a for a, _, b in EDGES] + [b for a, _, b in EDGES])
    dst = torch.tensor([b for a, _, b in EDGES] + [a for a, _, b in EDGES])
    rel = torch.tensor([r for _, r, _ in EDGES] * 2)
    return src, dst, rel


def test_triple_weight_and_cumulative_cost_by_hand():
    torch.manual_seed(0)
    model = PathMindNet(num_types=2, num_relations=3, query_dim=5, text_dim=4, hidden=6, rounds=3, tau=0.01)
    src, dst, rel = hand_graph()
    node_type, text = torch.tensor([0, 1, 1, 0]), torch.randn(4, 4)
    topics, query = torch.tensor([0]), torch.randn(5)
    with torch.no_grad():
        h, q = model.encode(node_type, text, topics, query, src, dst, rel)
        weight = model.triple_weight(h, q, src, rel, dst)
        for e in range(len(src)):
            u, v, r = int(src[e]), int(dst[e]), int(rel[e])
            direct = sum(float(q[i]) * float(h[u, i]) * sum(float(model.relation_matrix[r, i, j]) * float(h[v, j])
                                                             for j in range(6)) for i in range(6))
            assert float(weight[e]) == pytest.approx(direct, rel=1e-4, abs=1e-5)
        cost = torch.tensor([1.0, 2.0, 0.5, 4.0, 1.0, 2.0, 0.5, 4.0])
        d = model.cumulative_cost(cost, topics, src, dst, 4)
    g = nx.DiGraph()
    for e in range(len(src)):
        g.add_edge(int(src[e]), int(dst[e]), weight=float(cost[e]))
    exact = nx.single_source_dijkstra_path_length(g, 0)
    for node, value in exact.items():  # within 3 hops the soft-min approaches the exact cost
        assert float(d[node]) == pytest.approx(value, abs=0.05)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    graph = generate(scale=0.03, seed=8)
    # uncapped answer sets, the data this test was calibrated on (generate caps at 50 by default)
    records = QueryGenerator(graph).generate(150, seed=3, max_answers=10**9)
    encoder = HashingEncoder()
    examples = make_examples(graph, records, encoder, budget=100)
    featurize = Featurizer(graph, NodeEmbeddings(graph, encoder))
    config = TrainConfig(epochs=6, budget=100, hidden=16, patience=3, seed=0)
    model, history = train(graph, examples[:110], featurize, config)
    held_out = [e for e in examples[110:] if len(e.local_answers)]
    return graph, records, encoder, featurize, model, config, held_out, history


def test_training_beats_degree_and_random(trained):
    graph, _, _, featurize, model, _, held_out, history = trained
    assert len(held_out) >= 15 and history
    ours = hits_at(model, featurize, held_out, 3)
    degree = baseline_hits(graph, held_out, "degree", 3)
    random = baseline_hits(graph, held_out, "random", 3)
    # measured here: ours ~0.75 against ~0.3 for both baselines; assert half of that margin
    assert ours >= max(degree, random) + 0.2, (ours, degree, random)


def test_checkpoint_round_trip(trained, tmp_path):
    graph, _, _, featurize, model, config, held_out, history = trained
    save_checkpoint(model, config, graph, tmp_path / "m", history)
    loaded, loaded_config = load_checkpoint(tmp_path / "m")
    assert loaded_config == config
    with torch.no_grad():
        for e in held_out[:5]:
            assert torch.equal(model(*featurize(e))[0], loaded(*featurize(e))[0])
    assert json.loads((tmp_path / "m" / "config.json").read_text())["format"] == "adapath-pathmind"


def test_single_call_reasoning_and_ablations(trained):
    graph, records, encoder, _, model, config, _, _ = trained
    queries = [query_from_record(r, "explicit") for r in records[110:118]]
    backend = ScriptedBackend(default="{the answer}")
    results = PathMind(graph, model, config, encoder, backend, max_prompt_tokens=2048).answer(queries)
    results = [r.to_json() for r in results]
    assert backend.batches == [len(queries)]
    for result, prompt in zip(results, backend.seen):
        assert result["usage"]["calls"] == 1 and result["answer"] == "the answer"
        assert len(prompt.split()) * 4 / 3 <= 2048
        assert 1 <= len(result["prioritized"]) <= 3
        for path in result["paths"]:  # every step a real edge, starting at the topic
            assert path[0][0] == queries[results.index(result)].topic_ids[0]
            for h, r, t in path:
                assert graph.index_of([t])[0] in graph.neighbors(graph.index_of([h])[0], relation=r)[0]
    for mode in ("shortest", "random"):
        plain = PathMind(graph, model, config, encoder, None, mode=mode).answer(queries[:3])
        plain = [r.to_json() for r in plain]
        assert all(r["fallback"] == mode and r["usage"]["calls"] == 0 for r in plain)
    again = PathMind(graph, model, config, encoder, None, mode="random").answer(queries[:3])
    again = [r.to_json() for r in again]
    assert [r["prioritized"] for r in again] == [r["prioritized"] for r in plain]


def test_training_is_deterministic_per_seed():
    graph = generate(scale=0.01, seed=9)
    records = QueryGenerator(graph).generate(30, seed=2)
    encoder = HashingEncoder()
    examples = make_examples(graph, records, encoder, budget=40)
    featurize = Featurizer(graph, NodeEmbeddings(graph, encoder))
    config = TrainConfig(epochs=1, budget=40, hidden=8, seed=5)
    first, _ = train(graph, examples, featurize, config)
    second, _ = train(graph, examples, featurize, config)
    for name, tensor in first.state_dict().items():
        assert torch.equal(tensor, second.state_dict()[name]), name
