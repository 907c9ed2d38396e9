"""PathMind's neural Bellman-Ford priority: each step against a dense message passing written
from the edge list (add and mul messages, with and without A*Net's pruning), its gradients
against torch autograd on that dense form, the pruning's top-N against a sort, and pruning
with N at least the ball giving the unpruned scores."""

import numpy as np
import pytest
import torch

from adapath.methods.pathmind.bellman import BellmanFordNet, top_per_group
from adapath.methods.pathmind.model import BatchInputs, WholeGraph
from adapath.methods.pathmind.propagate import Places, RelationalGraph
from tests.test_pathmind import EDGES, TYPES, hand_graph, walk_steps

HIDDEN, QUERY_DIM = 4, 3


def hand_inputs(topics: list[list[int]], hops: int = 3, seed: int = 0):
    graph = hand_graph()
    relational = RelationalGraph(graph)
    n = graph.num_nodes
    places = Places(np.arange(n), n)
    gen = torch.Generator().manual_seed(seed)
    text = torch.randn(n, QUERY_DIM, generator=gen, dtype=torch.float64)  # one encoder: the same width
    whole = WholeGraph(relational, torch.as_tensor(np.array(TYPES, np.int64)), text)
    query = torch.randn(len(topics), QUERY_DIM, generator=gen, dtype=torch.float64)
    bits = relational.reach_bits(topics, hops)
    cosine = torch.stack([torch.stack([torch.dot(text[v], question) / (text[v].norm() * question.norm())
                                       for question in query]) for v in range(n)])
    return BatchInputs(relational, places, whole, cosine, query, topics,
                       [places.mask(b) for b in bits], reach_bits=bits)


def network(message: str, nodes: int = 0, degree_ratio: float = 0.0, hops: int = 3, seed: int = 0,
            entity_text: bool = False, answer_type: bool = False, answer_text: bool = False):
    torch.manual_seed(seed)
    net = BellmanFordNet(num_types=2, num_codes=2 * 3, query_dim=QUERY_DIM, text_dim=QUERY_DIM, hidden=HIDDEN, hops=hops,
                         message=message, nodes=nodes, degree_ratio=degree_ratio, entity_text=entity_text,
                         answer_type=answer_type, answer_text=answer_text).double()
    with torch.no_grad():
        if entity_text:
            net.cosine_weight.normal_()
        if answer_type:  # zero at the start of training: random here, so that it shows
            net.type_prior.weight.normal_()
            net.type_prior.bias.normal_()
        if answer_text:
            net.text_weight.weight.normal_()
            net.text_weight.bias.normal_()
    return net


def dense_forward(net: BellmanFordNet, inputs: BatchInputs, nodes: int | None = None):
    """The network written out node by node from the edge list: per step each question's
    visited entities (or the ``nodes`` of highest priority, ties by the smaller index) send
    sigma(s) x (+ or *) r along every step of the walk list; an entity reached sums them and
    its boundary and updates x <- x + ReLU(LN(W [sigma(s) x, sum])). Logits per node and question,
    with the answer-type prior's logit for the node's type and the text's weighted cosine to
    the question where the network reads them."""
    q = net.query(inputs.query)
    n, batch = len(TYPES), q.shape[0]
    steps = walk_steps()
    out = []
    for j in range(batch):
        topics = list(dict.fromkeys(inputs.topic_cols.tolist() and
                                    [int(r) for r, c in zip(inputs.topic_rows, inputs.topic_cols) if int(c) == j]))
        boundary = [q[j] if v in topics else torch.zeros(HIDDEN, dtype=q.dtype) for v in range(n)]
        x = list(boundary)
        if net.entity_text:  # each entity's evidence: (type + text) * q' + cos(text, question) * w
            text = inputs.whole.text
            for v in range(n):
                h = net.type_embedding.weight[TYPES[v]] + net.text(text[v])
                cosine = torch.dot(text[v], inputs.query[j]) / (text[v].norm() * inputs.query[j].norm())
                boundary[v] = boundary[v] + h * q[j] + cosine * net.cosine_weight
        visited = set(topics)

        def score(state, question=q[j]):
            return net.priority(state + net.future(torch.cat([state, question]))).squeeze(-1)

        for t in range(net.hops):
            s = [score(x[v]) for v in range(n)]
            senders = sorted(visited, key=lambda v: (-float(s[v].detach()), v))
            if nodes is not None:
                senders = senders[:nodes]
            rho = net.relations[t](q[j]).view(-1, HIDDEN)
            sums = {}
            for u, v, c in steps:
                if u in senders:
                    sent = torch.sigmoid(s[u]) * x[u]
                    message = sent + rho[c] if net.message == "add" else sent * rho[c]
                    sums[v] = sums.get(v, 0) + message
            new = list(x)
            for v, total in sums.items():
                x_in = torch.sigmoid(s[v]) * x[v]
                new[v] = x[v] + torch.relu(net.norm[t](net.combine[t](torch.cat([x_in, total + boundary[v]]))))
            x = new
            visited |= set(sums)
        prior = net.type_prior(q[j]) if net.answer_type else torch.zeros(2, dtype=q.dtype)
        logits = []
        for v in range(n):
            logit = score(x[v]) + prior[TYPES[v]]
            if net.answer_text:
                text, question = inputs.whole.text[v], inputs.query[j]
                logit = logit + torch.dot(text, question) / (text.norm() * question.norm()) * net.text_weight(q[j])[0]
            logits.append(logit)
        out.append(torch.stack(logits))
    return torch.stack(out, dim=1)


@pytest.mark.parametrize("message, entity_text, answer", [("add", False, ""), ("mul", False, ""), ("add", True, ""),
                                                         ("add", True, "type"), ("mul", False, "type+text")])
@pytest.mark.parametrize("pruned", [None, 1, 2])
def test_steps_match_a_dense_message_passing_and_its_gradients(message, entity_text, answer, pruned):
    inputs = hand_inputs([[0, 2], [4]])
    net = network(message, nodes=pruned or 0, entity_text=entity_text, answer_type="type" in answer,
                  answer_text="text" in answer)
    got = net(inputs).logits
    want = dense_forward(net, inputs, pruned)
    assert torch.allclose(got, want, rtol=1e-9, atol=1e-9)
    weights = torch.linspace(-1, 1, got.numel(), dtype=torch.float64).view_as(got)
    params = [p for p in net.parameters()]
    mine = torch.autograd.grad((got * weights).sum(), params, allow_unused=True)
    theirs = torch.autograd.grad((dense_forward(net, inputs, pruned) * weights).sum(), params, allow_unused=True)
    checked = 0
    for a, b in zip(mine, theirs):
        if b is None:
            continue
        assert a is not None and torch.allclose(a, b, rtol=1e-8, atol=1e-10)
        checked += 1
    assert checked >= 10


def test_some_rows_alone_give_those_rows_scores():
    inputs = hand_inputs([[0, 2], [4]])
    for nodes in (0, 2):
        net = network("add", nodes=nodes)
        whole = net(inputs).logits
        rows = torch.tensor([1, 3, 4])
        assert torch.allclose(net(inputs, rows).logits, whole[rows], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("message, answer", [("add", False), ("mul", False), ("add", True)])
def test_pruning_with_every_entity_gives_the_unpruned_scores(message, answer):
    inputs = hand_inputs([[0], [3, 4], [1]])
    unpruned = network(message, answer_type=answer, answer_text=answer)(inputs).logits
    for ratio in (0.0, 100.0):
        pruned = network(message, nodes=len(TYPES), degree_ratio=ratio, answer_type=answer,
                         answer_text=answer)(inputs).logits
        assert torch.allclose(pruned, unpruned, rtol=1e-10, atol=1e-12)
    # and fewer entities change them
    assert not torch.allclose(network(message, nodes=1)(inputs).logits, unpruned)


def test_top_per_group_against_a_sort():
    rng = np.random.default_rng(0)
    group = rng.integers(0, 4, 200)
    score = rng.integers(0, 6, 200).astype(float)  # many ties
    tie = rng.permutation(200)
    for k in (0, 1, 3, 50, 300):
        got = top_per_group(group, score, tie, k, 4)
        want = []
        for g in range(4):
            members = sorted(np.flatnonzero(group == g), key=lambda i: (-score[i], tie[i]))
            want += members[:k]
        assert got.tolist() == want


def test_the_edge_budget_is_degree_ratio_times_nodes_times_the_mean_degree():
    """14 half-edges over 5 nodes: mean degree 2.8, so 1 * 1 * 2.8 -> 3 of node 2's 4 edges
    (to 1, 3, 1 and 0); degree_ratio 0 keeps all 4."""
    inputs = hand_inputs([[2]], hops=1)
    assert len([e for e in EDGES if 2 in (e[0], e[2])]) == 4
    for ratio, edges in ((1.0, 3.0), (0.0, 4.0), (2.0, 4.0)):
        net = network("add", nodes=1, degree_ratio=ratio, hops=1)
        net(inputs)
        assert net.visits == [(1.0, edges)]


def test_a_batch_marked_by_the_union_of_its_reaches_scores_each_question_as_its_own():
    """Without per-question marks (a batch's passes over the union of its questions'
    reaches), a question's messages still come from its own visited entities only."""
    from adapath.datasets.generate import QueryGenerator
    from adapath.methods.pathmind.train import Features, make_examples
    from adapath.retrieval.dense import HashingEncoder, NodeEmbeddings
    from adapath.sources.synthetic import generate

    graph = generate(scale=0.01, seed=5)
    encoder = HashingEncoder(dim=16)
    examples = make_examples(graph, QueryGenerator(graph).generate(4, seed=2), encoder)
    features = Features(graph, NodeEmbeddings(graph, encoder), 3)
    torch.manual_seed(0)
    net = BellmanFordNet(len(graph.type_names), 2 * graph.num_relations, 16, 16, hidden=8, nodes=0)
    with torch.no_grad():
        own = net(features.batch(examples)).logits
        features.per_question = False
        union = net(features.batch(examples)).logits
    assert torch.allclose(own, union, rtol=1e-5, atol=1e-6)
