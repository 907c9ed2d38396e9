"""PathMind: the triple weight and cumulative cost against direct computations, learning
above degree and random baselines, checkpoints, single-call reasoning."""

import json

import networkx as nx
import numpy as np
import pytest
import torch

from adapath.datasets.biostrat import query_from_record
from adapath.datasets.generate import QueryGenerator
from adapath.llm import ScriptedBackend
from adapath.methods.pathmind.halfedges import HalfEdges
from adapath.methods.pathmind.infer import PathMind
from adapath.methods.pathmind.model import PathMindNet
from adapath.methods.pathmind.subgraph import SubgraphBuilder, top_by_score
from adapath.methods.pathmind.train import (
    Featurizer,
    TrainConfig,
    baseline_hits,
    batch_loss,
    hits_at,
    load_checkpoint,
    make_examples,
    save_checkpoint,
    train,
)
from adapath.retrieval.dense import HashingEncoder, NodeEmbeddings
from adapath.sources.synthetic import generate
from tests.conftest import run_cli

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


def test_metapath_cut_without_a_bank_is_one_line_and_old_models_keep_their_cut(trained, tmp_path):
    from adapath.errors import InputError
    from adapath.methods.base import MethodContext
    from adapath.methods.registry import get_method

    graph, _, _, _, model, config, _, history = trained
    save_checkpoint(model, config, graph, tmp_path / "m", history)
    spec = get_method("pathmind")
    context = MethodContext(graph, model=tmp_path / "m", params=spec.resolve_params({"subgraph": "metapath"}))
    with pytest.raises(InputError, match=r"^subgraph=metapath needs a Path-Bank \(--bank\)"):
        spec.make(context)
    # a model saved before the cut was a setting loads with the uniform-PPR cut and no prior
    meta = json.loads((tmp_path / "m" / "config.json").read_text())
    del meta["train"]["subgraph"], meta["train"]["prior"]
    (tmp_path / "m" / "config.json").write_text(json.dumps(meta))
    _, old = load_checkpoint(tmp_path / "m")
    assert old.subgraph == "ppr" and old.prior is False


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


def reference_forward(model, node_type, text, topics, query, src, dst, rel):
    """The network's formulas written directly, one hidden vector per half-edge (no sparse products)."""
    n = node_type.shape[0]
    q = model.query_proj(query)
    h0 = model.type_embedding(node_type) + model.text_proj(text)
    h0 = h0.index_add(0, topics, q.expand(len(topics), -1))
    relation_vectors = model.relation_query(q).view(-1, model.hidden)
    degree = torch.zeros(n).index_add(0, dst, torch.ones(len(dst))).clamp(min=1)
    h = h0
    for linear, norm in zip(model.layers, model.norms):
        message = h[src] * relation_vectors[rel]
        aggregated = torch.zeros(n, model.hidden).index_add(0, dst, message) / degree[:, None]
        h = norm(h + torch.relu(linear(torch.cat([aggregated, h0], dim=-1))))
    weight = ((q * h[src]) * torch.einsum("eij,ej->ei", model.relation_matrix[rel], h[dst])).sum(-1)
    cost = torch.nn.functional.softplus(-weight)
    d = model.cumulative_cost(cost, topics, src, dst, n)
    d_in = torch.clamp(d, max=50.0)[:, None]
    future = torch.nn.functional.softplus(model.future(torch.cat([h, q.expand(n, -1), d_in], dim=-1)))
    return model.priority(d_in + future).squeeze(-1), cost, d


def random_multigraph(seed, n=9, edges=25, relations=4):
    """Undirected multigraph with repeated (u, r, v) triples, both directions listed, in random order."""
    g = torch.Generator().manual_seed(seed)
    u, v = torch.randint(0, n, (edges,), generator=g), torch.randint(0, n, (edges,), generator=g)
    r = torch.randint(0, relations, (edges,), generator=g)
    u, v, r = torch.cat([u, u[:5]]), torch.cat([v, v[:5]]), torch.cat([r, r[:5]])  # exact duplicates
    src, dst, rel = torch.cat([u, v]), torch.cat([v, u]), torch.cat([r, r])
    perm = torch.randperm(len(src), generator=g)
    return src[perm], dst[perm], rel[perm]


def test_sparse_network_matches_direct_formulas_with_gradients():
    torch.manual_seed(1)
    model = PathMindNet(num_types=3, num_relations=4, query_dim=6, text_dim=5, hidden=8, rounds=3)
    src, dst, rel = random_multigraph(0)
    node_type, text = torch.randint(0, 3, (9,)), torch.randn(9, 5)
    topics, query = torch.tensor([0, 4]), torch.randn(6)
    outputs = model(node_type, text, topics, query, src, dst, rel)
    expected = reference_forward(model, node_type, text, topics, query, src, dst, rel)
    for got, want in zip(outputs, expected):
        assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)
    probe = torch.randn(9)
    grads = torch.autograd.grad((outputs[0] * probe).sum() + outputs[1].sum(), list(model.parameters()))
    want = torch.autograd.grad((expected[0] * probe).sum() + expected[1].sum(), list(model.parameters()))
    for (name, _), a, b in zip(model.named_parameters(), grads, want):
        assert torch.allclose(a, b, rtol=1e-3, atol=1e-5), name


def test_half_edges_given_in_storage_order_match_direct_formulas():
    """The layout subgraphs store (grouped by source, unsorted inside a group, with the
    (dst, rel) order given) gives what the direct formulas give."""
    torch.manual_seed(2)
    model = PathMindNet(num_types=3, num_relations=4, query_dim=6, text_dim=5, hidden=8, rounds=2)
    src, dst, rel = random_multigraph(3)
    grouped = torch.argsort(src, stable=True)
    src, dst, rel = src[grouped], dst[grouped], rel[grouped]
    in_order = np.argsort((dst * 4 + rel).numpy(), kind="stable")
    edges = HalfEdges(src, dst, rel, 9, 4, in_order)
    inputs = (torch.randint(0, 3, (9,)), torch.randn(9, 5), torch.tensor([2]), torch.randn(6), src, dst, rel)
    got = model(*inputs, edges=edges)
    want = reference_forward(model, *inputs)
    for a, b in zip(got, want):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)
    grads = torch.autograd.grad(got[0].sum() + got[1].sum(), list(model.parameters()))
    want_grads = torch.autograd.grad(want[0].sum() + want[1].sum(), list(model.parameters()))
    for (name, _), a, b in zip(model.named_parameters(), grads, want_grads):
        assert torch.allclose(a, b, rtol=1e-3, atol=1e-5), name


def test_batch_of_subgraphs_scores_each_as_alone(trained):
    """Several subgraphs as one disjoint graph: each one's logits and costs are those of the
    direct formulas on that subgraph alone, with its own query."""
    graph, _, _, featurize, model, _, held_out, _ = trained
    chunk = held_out[:3]
    batch = featurize.batch(chunk)
    with torch.no_grad():
        logits, cost, _ = model(*batch.inputs)
        for i, example in enumerate(chunk):
            want_logits, want_cost, _ = reference_forward(model, *featurize(example))
            assert torch.allclose(logits[batch.nodes_of(i)], want_logits, rtol=1e-4, atol=1e-4)
            assert torch.allclose(cost[batch.edges_of(i)], want_cost, rtol=1e-4, atol=1e-5)


def test_batch_loss_is_the_mean_of_per_question_weighted_bce(trained):
    graph, _, _, featurize, model, _, held_out, _ = trained
    chunk = held_out[:4]
    batch = featurize.batch(chunk)
    logits = torch.randn(int(batch.node_offsets[-1]))
    expected = []
    for i, example in enumerate(chunk):
        part = logits[batch.nodes_of(i)]
        target = torch.zeros_like(part)
        target[torch.as_tensor(example.local_answers)] = 1.0
        keep = torch.ones_like(part, dtype=torch.bool)
        keep[torch.as_tensor(example.subgraph.topics)] = False
        positives = target[keep].sum()
        expected.append(torch.nn.functional.binary_cross_entropy_with_logits(
            part[keep], target[keep], pos_weight=(keep.sum() - positives) / positives))
    assert float(batch_loss(logits, batch, chunk)) == pytest.approx(float(torch.stack(expected).mean()), rel=1e-5)


def test_subgraph_matches_networkx():
    """Nodes within the hop bound, the budget by PPR score (ties by index), the induced
    half-edges, the hop depths inside the subgraph and the (dst, rel) order, against networkx
    and a full sort."""
    graph = generate(scale=0.01, seed=4)
    builder = SubgraphBuilder(graph, hops=2, budget=30)
    nxg = nx.Graph()
    nxg.add_nodes_from(range(graph.num_nodes))
    row = np.repeat(np.arange(graph.num_nodes), np.diff(graph.indptr))
    nxg.add_edges_from(zip(row.tolist(), np.asarray(graph.indices).tolist()))
    topic_sets = [[5], [17, 40]]
    for topics, sub in zip(topic_sets, builder.build_many(topic_sets)):
        ball = set()
        for t in topics:
            ball |= set(nx.single_source_shortest_path_length(nxg, t, cutoff=2))
        assert set(sub.nodes.tolist()) <= ball and set(topics) <= set(sub.nodes.tolist())
        assert len(sub.nodes) <= 30 + len(topics)
        expected = {(int(u), int(graph.rel[k]), int(graph.indices[k])) for u in sub.nodes
                    for k in range(graph.indptr[u], graph.indptr[u + 1]) if graph.indices[k] in set(sub.nodes.tolist())}
        got = {(int(sub.nodes[a]), int(r), int(sub.nodes[b])) for a, r, b in zip(sub.src, sub.rel, sub.dst)}
        assert got == expected and len(sub.src) == len(expected)
        assert np.all(np.diff(sub.src) >= 0)
        induced = nx.Graph()
        induced.add_nodes_from(range(len(sub.nodes)))
        induced.add_edges_from(zip(sub.src.tolist(), sub.dst.tolist()))
        for v in range(len(sub.nodes)):
            lengths = [nx.shortest_path_length(induced, int(t), v) for t in sub.topics if nx.has_path(induced, int(t), v)]
            assert sub.depth[v] == (min(lengths) if lengths else -1)
        key = sub.dst[sub.in_order].astype(np.int64) * graph.num_relations + sub.rel[sub.in_order]
        assert np.all(np.diff(key) >= 0) and sorted(sub.in_order.tolist()) == list(range(len(sub.src)))


def test_top_by_score_keeps_the_full_sort_order_choice():
    rng = np.random.default_rng(0)
    for _ in range(50):
        candidates = np.sort(rng.choice(1000, 200, replace=False))
        score = rng.integers(0, 8, 200).astype(float)  # many ties
        k = int(rng.integers(1, 200))
        expected = np.sort(candidates[np.lexsort((candidates, -score))[:k]])
        assert np.array_equal(top_by_score(candidates, score, k), expected)


def test_training_in_batches_learns_and_is_deterministic(trained):
    """Four questions per step (one disjoint graph): fewer steps per epoch, so more epochs and
    a larger step; it still beats the baselines by the same margin, the same way twice."""
    graph, records, encoder, featurize, _, _, held_out, _ = trained
    examples = make_examples(graph, records[:110], encoder, budget=100)
    config = TrainConfig(epochs=15, budget=100, hidden=16, patience=15, seed=0, batch=4, lr=6e-3)
    model, _ = train(graph, examples, featurize, config)
    ours = hits_at(model, featurize, held_out, 3)
    # measured here: 0.60 (seeds 1, 2: 0.55, 0.60) against 0.30 / 0.20
    assert ours >= max(baseline_hits(graph, held_out, "degree", 3), baseline_hits(graph, held_out, "random", 3)) + 0.2
    again, _ = train(graph, examples, featurize, config)
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, again.state_dict()[name]), name


@pytest.fixture(scope="module")
def cli_setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("pmcli")
    graph = generate(scale=0.01, seed=9)
    graph.save(root / "kg")
    records = QueryGenerator(graph).generate(30, seed=2)
    (root / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root


def train_args(root, out, *extra):
    return ["pathmind", "train", "--kg", root / "kg", "--queries", f"biostrat:{root / 'q.jsonl'}", "--out", out,
            "--epochs", "1", "--budget", "40", "--encoder", "hashing", *extra]


@pytest.mark.parametrize("extra, message", [
    (["--level", "explict"], "--level 'explict': choose explicit, implicit, bare"),
    (["--epochs", "0"], "--epochs 0: must be at least 1"),
    (["--budget", "-3"], "--budget -3: must be at least 1 (nodes kept per subgraph besides the topics)"),
    (["--hops", "0"], "--hops 0: must be between 1 and 5"),
    (["--hops", "9"], "--hops 9: must be between 1 and 5"),
    (["--batch", "0"], "--batch 0: must be at least 1"),
    (["--select", "mrr"], "--select 'mrr': choose hits1 or hits3"),
])
def test_train_rejects_bad_options_in_one_line(cli_setup, tmp_path, capsys, extra, message):
    code, _, err = run_cli(train_args(cli_setup, tmp_path / "m", *extra), capsys)
    assert code == 2 and err.strip() == f"adapath: error: {message}"
    assert list(tmp_path.iterdir()) == []


def test_failed_training_leaves_no_model_directory(cli_setup, tmp_path, capsys):
    # a budget of 1 cut by the uniform PPR keeps almost no answer: too few questions to train on
    code, _, err = run_cli(train_args(cli_setup, tmp_path / "m", "--budget", "1", "--subgraph", "ppr"), capsys)
    assert code == 2 and err.strip().splitlines()[-1].startswith("adapath: error: too few training questions")
    assert list(tmp_path.iterdir()) == []


def test_train_writes_once_and_needs_force_to_replace(cli_setup, tmp_path, capsys):
    out = tmp_path / "m"
    code, _, err = run_cli(train_args(cli_setup, out), capsys)
    assert code == 0, err
    assert {p.name for p in out.iterdir()} == {"model.safetensors", "config.json"}
    before = (out / "model.safetensors").read_bytes()
    code, _, err = run_cli(train_args(cli_setup, out, "--seed", "3"), capsys)
    assert code == 2 and "already exists (pass --force to replace it)" in err
    assert (out / "model.safetensors").read_bytes() == before
    code, _, err = run_cli(train_args(cli_setup, out, "--seed", "3", "--force"), capsys)
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temporary folders left


def reference_cumulative_cost(cost, topics, src, dst, n, rounds, tau):
    """Soft-min relaxation written with scatter ops and autograd: min-shifted log-sum-exp over
    each node's in-edge candidates and its own cost."""
    d = torch.full((n,), 1e4, dtype=cost.dtype).index_fill(0, topics, 0.0)
    index = torch.cat([dst, torch.arange(n)])
    for _ in range(rounds):
        both = torch.cat([d[src] + cost, d])
        low = torch.full((n,), float("inf"), dtype=cost.dtype).scatter_reduce(0, index, both, "amin").detach()
        total = torch.zeros(n, dtype=cost.dtype).index_add(0, index, torch.exp(-(both - low[index]) / tau))
        d = low - tau * torch.log(total)
    return d


def test_soft_min_relaxation_and_its_gradient_match_autograd():
    model = PathMindNet(num_types=2, num_relations=4, query_dim=3, text_dim=3, hidden=4, rounds=3, tau=0.5)
    src, dst, _ = random_multigraph(5, n=12, edges=20)  # 12 nodes, some without edges
    topics = torch.tensor([1, 7])
    for dtype in (torch.float64, torch.float32):
        cost = (torch.rand(len(src), generator=torch.Generator().manual_seed(1), dtype=dtype) * 2).requires_grad_()
        got = model.cumulative_cost(cost, topics, src, dst, 12)
        want = reference_cumulative_cost(cost, topics, src, dst, 12, 3, 0.5)
        assert got.dtype == dtype and torch.allclose(got, want, rtol=1e-5, atol=1e-4)
        probe = torch.randn(12, dtype=dtype, generator=torch.Generator().manual_seed(2))
        (grad,) = torch.autograd.grad((got * probe).sum(), cost)
        (want_grad,) = torch.autograd.grad((want * probe).sum(), cost)
        assert torch.allclose(grad, want_grad, rtol=1e-4, atol=1e-6)
