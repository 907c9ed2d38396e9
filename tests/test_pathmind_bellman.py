"""PathMind's neural Bellman-Ford priority: each step against a dense message passing written
from the edge list (add and mul messages, with and without A*Net's pruning), its gradients
against torch autograd on that dense form, the pruning's top-N against a sort, and pruning
with N at least the ball giving the unpruned scores."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from adapath.methods.pathmind.bellman import BellmanFordNet, in_tie_order, top_per_group
from adapath.methods.pathmind.model import BatchInputs, WholeGraph
from adapath.methods.pathmind.propagate import Places, RelationalGraph
from tests.test_pathmind import EDGES, TYPES, hand_graph, walk_steps

HIDDEN, QUERY_DIM = 4, 3


def hand_inputs(topics: list[list[int]], hops: int = 3, seed: int = 0, query: torch.Tensor | None = None,
                focus: bool = False):
    graph = hand_graph()
    relational = RelationalGraph(graph)
    n = graph.num_nodes
    places = Places(np.arange(n), n)
    gen = torch.Generator().manual_seed(seed)
    text = torch.randn(n, QUERY_DIM, generator=gen, dtype=torch.float64)  # one encoder: the same width
    whole = WholeGraph(relational, torch.as_tensor(np.array(TYPES, np.int64)), text)
    if query is None:
        query = torch.randn(len(topics), QUERY_DIM, generator=gen, dtype=torch.float64)
    bits = relational.reach_bits(topics, hops)
    cosine = torch.stack([torch.stack([torch.dot(text[v], question) / (text[v].norm() * question.norm())
                                       for question in query]) for v in range(n)])
    wh = torch.randn(len(topics), QUERY_DIM, generator=gen, dtype=torch.float64) if focus else None
    return BatchInputs(relational, places, whole, cosine, query, topics,
                       [places.mask(b) for b in bits], reach_bits=bits, focus=wh)


def network(message: str, nodes: int = 0, degree_ratio: float = 0.0, hops: int = 3, seed: int = 0,
            entity_text: bool = False, answer_type: bool = False, answer_text: bool = False, focus: bool = False):
    torch.manual_seed(seed)
    net = BellmanFordNet(num_types=2, num_codes=2 * 3, query_dim=QUERY_DIM, text_dim=QUERY_DIM, hidden=HIDDEN, hops=hops,
                         message=message, nodes=nodes, degree_ratio=degree_ratio, entity_text=entity_text,
                         answer_type=answer_type, answer_text=answer_text, focus=focus).double()
    with torch.no_grad():
        if entity_text:
            net.cosine_weight.normal_()
        if focus:
            net.focus_weight.normal_()
        if answer_type:  # zero at the start of training: random here, so that it shows
            net.type_prior.weight.normal_()
            net.type_prior.bias.normal_()
        if answer_text:
            net.text_weight.weight.normal_()
            net.text_weight.bias.normal_()
            if focus:
                net.focus_text_weight.weight.normal_()
                net.focus_text_weight.bias.normal_()
    return net


def dense_forward(net: BellmanFordNet, inputs: BatchInputs, nodes: int | None = None, visits: list | None = None,
                  forced: list | None = None, selection: dict | None = None):
    """The network written out node by node from the edge list: per step each question's
    visited entities (or the ``nodes`` of highest priority, ties by the smaller index) send
    sigma(s) x (+ or *) r along every step of the walk list; an entity reached sums them and
    its boundary and updates x <- x + ReLU(LN(W [sigma(s) x, sum])). Logits per node and question,
    with the answer-type prior's logit for the node's type and the text's weighted cosine to
    the question where the network reads them. ``visits``: gets each question's visited set
    (its topics and every entity a message reached). ``forced``: per question, per step, entities
    that send besides the top ``nodes`` where visited (the gold paths of training);
    ``selection``: gets per step t >= 1 the list over questions of log sum exp of s over the
    visited entities minus the mean of s over the forced ones visited."""
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
                if net.focus:  # + cos(text, wh-phrase) * w'
                    wh = inputs.focus[j]
                    boundary[v] = boundary[v] + torch.dot(text[v], wh) / (text[v].norm() * wh.norm()) * net.focus_weight
        visited = set(topics)

        def score(state, question=q[j]):
            return net.priority(state + net.future(torch.cat([state, question]))).squeeze(-1)

        for t in range(net.hops):
            s = [score(x[v]) for v in range(n)]
            gold = sorted(forced[j][t] & visited) if forced is not None and t > 0 else []
            if selection is not None and gold:
                spread = torch.logsumexp(torch.stack([s[v] for v in sorted(visited)]), 0)
                selection.setdefault(t, []).append(spread - torch.stack([s[v] for v in gold]).mean())
            senders = sorted(visited, key=lambda v: (-float(s[v].detach()), v))
            if nodes is not None:
                senders = senders[:nodes]
                if forced is not None:
                    senders = senders + sorted((forced[j][t] & visited) - set(senders))
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
        if visits is not None:
            visits.append(visited)
        prior = net.type_prior(q[j]) if net.answer_type else torch.zeros(2, dtype=q.dtype)
        logits = []
        for v in range(n):
            logit = score(x[v]) + prior[TYPES[v]]
            if net.answer_text:
                text, question = inputs.whole.text[v], inputs.query[j]
                logit = logit + torch.dot(text, question) / (text.norm() * question.norm()) * net.text_weight(q[j])[0]
                if net.focus:
                    wh = inputs.focus[j]
                    logit = logit + torch.dot(text, wh) / (text.norm() * wh.norm()) * net.focus_text_weight(q[j])[0]
            logits.append(logit)
        out.append(torch.stack(logits))
    return torch.stack(out, dim=1)


@pytest.mark.parametrize("message, entity_text, answer", [("add", False, ""), ("mul", False, ""), ("add", True, ""),
                                                         ("add", True, "type"), ("mul", False, "type+text"),
                                                         ("add", True, "focus"), ("mul", True, "focus+text")])
@pytest.mark.parametrize("pruned", [None, 1, 2])
def test_steps_match_a_dense_message_passing_and_its_gradients(message, entity_text, answer, pruned):
    inputs = hand_inputs([[0, 2], [4]], focus="focus" in answer)
    net = network(message, nodes=pruned or 0, entity_text=entity_text, answer_type="type" in answer,
                  answer_text="text" in answer, focus="focus" in answer)
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


@pytest.mark.parametrize("answer", ["", "focus", "focus+text+type"])
@pytest.mark.parametrize("pruned", [None, 1, 2])
def test_answering_s_tables_give_the_dense_scores(answer, pruned):
    """Answering reads the entity table made once and the batch's one product of cosines (no
    text row gathered per entity): the same scores as the dense message passing."""
    inputs = hand_inputs([[0, 2], [4], [1]], focus="focus" in answer)
    net = network("add", nodes=pruned or 0, entity_text=True, answer_type="type" in answer,
                  answer_text="text" in answer, focus="focus" in answer)
    with torch.no_grad():
        inputs.entities = net.entities(inputs.whole)
        got = net(inputs).logits
        want = dense_forward(net, inputs, pruned)
    assert inputs.entities.shape == (len(TYPES), HIDDEN)
    assert torch.allclose(got, want, rtol=1e-9, atol=1e-9)
    assert network("add").entities(inputs.whole) is None  # a network without the evidence reads no table


def test_some_rows_alone_give_those_rows_scores():
    inputs = hand_inputs([[0, 2], [4]])
    for nodes in (0, 2):
        net = network("add", nodes=nodes)
        whole = net(inputs).logits
        rows = torch.tensor([1, 3, 4])
        assert torch.allclose(net(inputs, rows).logits, whole[rows], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("nodes", [2, 0])
def test_every_place_s_logits_beside_the_rows_probes(nodes):
    """Pruned or not, ``every`` reads out every place (the exact loss's logits) and keeps the
    probes of the rows alone."""
    inputs = hand_inputs([[0, 2], [4]])
    net = network("add", nodes=nodes, entity_text=True)
    whole = net(inputs, probes=("cumulative",))
    rows = torch.tensor([1, 3, 4])
    both = net(inputs, rows, ("cumulative",), every=True)
    assert both.logits.shape == whole.logits.shape
    assert torch.allclose(both.logits, whole.logits, rtol=1e-10, atol=1e-12)
    assert torch.allclose(both.probes["cumulative"], whole.probes["cumulative"][rows], rtol=1e-10, atol=1e-12)


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


@pytest.mark.parametrize("hops, nodes", [(1, 1), (2, 1), (2, 2), (3, 1)])
def test_reached_is_the_topics_and_every_entity_a_message_reached(hops, nodes):
    inputs = hand_inputs([[0, 2], [4], [1]], hops=hops)
    net = network("add", nodes=nodes, hops=hops)
    visits = []
    dense_forward(net, inputs, nodes, visits)
    reached = net(inputs).reached
    assert [set(np.flatnonzero(reached[:, j].numpy()).tolist()) for j in range(3)] == visits
    rows = torch.tensor([0, 4])
    assert torch.equal(net(inputs, rows).reached, reached[rows])
    assert network("add", hops=hops)(inputs).reached is None  # unpruned: every entity of the ball


def test_answers_reached_reads_each_question_s_visited_entities():
    """Every (topic, answer) pair of the hand graph, in batches of 3: whether the pruned search
    reached the answer, against the dense form's visited sets, one question at a time."""
    from adapath.methods.pathmind.train import Example, Features, answers_reached
    from adapath.retrieval.dense import HashingEncoder, NodeEmbeddings
    from tests.test_pathmind import hand_graph

    graph = hand_graph()
    features = Features(graph, NodeEmbeddings(graph, HashingEncoder(dim=QUERY_DIM)), 2)
    net = network("add", nodes=1, hops=2)
    rng = np.random.default_rng(0)
    examples = [Example(f"{t}-{a}", "", [t], [a], rng.normal(size=QUERY_DIM).astype(np.float32))
                for t in range(5) for a in range(5) if a != t]
    got = answers_reached(net.float(), features, examples, size=3)
    net.double()
    want = []
    for e in examples:
        visits = []
        dense_forward(net, hand_inputs([e.topics], hops=2, query=torch.as_tensor(e.query[None], dtype=torch.float64)),
                      1, visits)
        want.append(e.answers[0] in visits[0])
    assert got == want
    assert 0 < sum(want) < len(want)


def keys_of(per_question: list[list[set]], n: int) -> list[np.ndarray]:
    """Per step, the sorted keys j * n + v of question j's entities."""
    steps = len(per_question[0])
    return [np.array(sorted(j * n + v for j, q in enumerate(per_question) for v in q[t]), dtype=np.int64)
            for t in range(steps)]


@pytest.mark.parametrize("message", ["add", "mul"])
def test_training_sends_from_the_gold_paths_besides_the_top_entities(message):
    """With --guide-paths a training forward's senders are the top N and the guide's entities
    at that depth once visited, against the dense form (every edge of a sender); its gradients
    too; its selection loss (per step, a softmax of the priorities over the visited entities
    against the gold ones) and that loss's gradients; in evaluation the guide is not read."""
    inputs = hand_inputs([[4], [0, 2]])
    forced = [[{4}, {3}, {0, 2}, {1}], [{0}, {1, 3}, set(), set()]]
    inputs.guide = keys_of(forced, len(TYPES))
    net = network(message, nodes=1)
    net.train()
    params = list(net.parameters())
    got = net(inputs).logits
    selection = {}
    want = dense_forward(net, inputs, 1, forced=forced, selection=selection)
    assert torch.allclose(got, want, rtol=1e-9, atol=1e-9)
    assert not torch.allclose(got, dense_forward(net, inputs, 1))  # the guide changed them
    want_loss = sum(torch.stack(values).mean() for values in selection.values())
    assert set(selection) == {1, 2} and torch.allclose(net.search_loss, want_loss, rtol=1e-9, atol=1e-12)
    weights = torch.linspace(-1, 1, got.numel(), dtype=torch.float64).view_as(got)
    for mine, theirs in (((got * weights).sum(), (want * weights).sum()), (net.search_loss, want_loss)):
        a_grads = torch.autograd.grad(mine, params, allow_unused=True, retain_graph=True)
        b_grads = torch.autograd.grad(theirs, params, allow_unused=True, retain_graph=True)
        assert all(b is None or torch.allclose(a, b, rtol=1e-8, atol=1e-10) for a, b in zip(a_grads, b_grads))
        assert sum(b is not None for b in b_grads) >= 4
    net.eval()
    assert torch.allclose(net(inputs).logits, dense_forward(net, inputs, 1), rtol=1e-9, atol=1e-9)


def test_the_gold_paths_edges_survive_the_edge_budget():
    """From the pendant 4 to node 1 (4-3-0-1 and 4-3-2-1, three steps) with one entity and one
    edge per step (degree ratio 0.3 of the mean degree 2.8): the guide's edges are kept besides
    the budget, so the answer is reached in training; without the guide, one edge per step
    from the top entity reaches at most one new entity per step, 1 not among them."""
    inputs = hand_inputs([[4]])
    net = network("add", nodes=1, degree_ratio=0.3)
    net.train()
    alone = net(inputs).reached[:, 0]
    assert [v for v in range(5) if alone[v]] != [0, 1, 2, 3, 4] and not alone[1]
    inputs.guide = keys_of([[{4}, {3}, {0, 2}, {1}]], len(TYPES))
    guided = net(inputs).reached[:, 0]
    assert guided.all()


def generated_world():
    """A small generated graph, the same graph in networkx (undirected), and its features
    (hashing encoder, 3 hops)."""
    import networkx as nx

    from adapath.methods.pathmind.train import Features
    from adapath.retrieval.dense import HashingEncoder, NodeEmbeddings
    from adapath.sources.synthetic import generate

    graph = generate(scale=0.01, seed=5)
    g = nx.Graph()
    g.add_nodes_from(range(graph.num_nodes))
    indptr, indices = np.asarray(graph.indptr), np.asarray(graph.indices)
    for u in range(graph.num_nodes):
        g.add_edges_from((u, int(v)) for v in indices[indptr[u]:indptr[u + 1]])
    return graph, g, Features(graph, NodeEmbeddings(graph, HashingEncoder(dim=8)), 3)


def test_gold_paths_are_the_shortest_paths_entities_by_depth():
    """Against networkx's shortest paths on a generated graph: per question, the entities at
    position t of a shortest path from a topic to an answer, the paths of the nearest answer."""
    import networkx as nx

    from adapath.methods.pathmind.train import Example, gold_paths

    graph, g, features = generated_world()
    n = graph.num_nodes
    rng = np.random.default_rng(1)
    examples = [Example(str(i), "", [int(t) for t in rng.choice(n, size=int(rng.integers(1, 3)), replace=False)],
                        [int(a) for a in rng.choice(n, size=int(rng.integers(1, 3)), replace=False)],
                        np.zeros(8, np.float32)) for i in range(12)]
    got = gold_paths(features, examples)
    want: list[set] = [set() for _ in range(4)]
    for j, e in enumerate(examples):
        lengths = {(s, a): nx.shortest_path_length(g, s, a) for s in e.topics for a in e.answers if nx.has_path(g, s, a)}
        if not lengths or min(lengths.values()) > 3:
            continue
        length = min(lengths.values())
        for (s, a), d in lengths.items():
            if d == length:
                for path in nx.all_shortest_paths(g, s, a):
                    for t, v in enumerate(path):
                        want[t].add(j * n + v)
    assert [set(k.tolist()) for k in got] == want
    assert all(np.array_equal(k, np.sort(k)) for k in got) and len(got[2]) > 0  # paths of two steps and more


@pytest.mark.parametrize("ordered", [False, True])
def test_top_per_group_against_a_sort(ordered):
    """Entries in any order, and (``ordered``, the pruned search's case, read by a partition per
    group) group by group in increasing tie, with an empty group and many ties."""
    rng = np.random.default_rng(0)
    group = rng.choice([0, 1, 3, 4], 200)
    score = rng.integers(0, 6, 200).astype(float)  # many ties
    tie = rng.permutation(200)
    if ordered:
        order = np.lexsort((tie, group))
        group, score, tie = group[order], score[order], tie[order]
        assert in_tie_order(group, tie)
    for k in (0, 1, 3, 50, 300):
        got = top_per_group(group, score, tie, k, 5)
        want = []
        for g in range(5):
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


def test_answering_takes_another_entity_count_from_its_param(tmp_path):
    """`--param nodes=N` answers with N entities per step (A*Net's test ratio); 0 keeps the
    model's; below 0 is a one-line error. With N at least the ball, the answers' priorities are
    the unpruned network's (the same weights with --nodes 0)."""
    from adapath.errors import InputError
    from adapath.methods.base import MethodContext
    from adapath.methods.pathmind.config import TrainConfig
    from adapath.methods.pathmind.train import Example, save_checkpoint
    from adapath.methods.registry import get_method
    from tests.test_pathmind import hand_graph

    graph = hand_graph()
    net = network("add", nodes=1, degree_ratio=1.0).float()
    config = TrainConfig(hops=3, hidden=HIDDEN, nodes=1, encoder="hashing")
    save_checkpoint(net, config, graph, tmp_path / "pm")
    spec = get_method("pathmind")

    def built(nodes: str):
        return spec.make(MethodContext(graph, model=tmp_path / "pm", params=spec.resolve_params({"nodes": nodes})))

    assert built("0").model.nodes == 1 and built("7").model.nodes == 7
    # the caller's encoder answers where it is the model's (a bench's, already built); another is not taken
    from adapath.retrieval.dense import make_encoder

    mine = make_encoder("hashing")
    made = spec.make(MethodContext(graph, model=tmp_path / "pm", params=spec.resolve_params({}), _encoder=mine))
    assert made.encoder is mine
    other = make_encoder("hashing")
    other.spec = "minilm"
    made = spec.make(MethodContext(graph, model=tmp_path / "pm", params=spec.resolve_params({}), _encoder=other))
    assert made.encoder is not other and made.encoder.spec == "hashing"
    with pytest.raises(InputError) as error:
        built("-1")
    assert "\n" not in str(error.value) and "nodes" in str(error.value)
    wide, whole = built("7"), built("7")
    whole.model.nodes = 0
    examples = [Example("q", "", [4], [], np.ones(QUERY_DIM, np.float32))]
    got = wide.prioritize(examples)[0].priority
    want = whole.prioritize(examples)[0].priority
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(built("0").prioritize(examples)[0].priority, want, rtol=1e-5, atol=1e-6)


def test_a_focus_model_without_wh_phrases_says_so():
    net = network("add", entity_text=True, focus=True)
    with pytest.raises(ValueError, match="wh-phrase"):
        net(hand_inputs([[0]]))
    inputs = hand_inputs([[0]])
    inputs.entities = net.entities(inputs.whole)  # answering's tables: the same line
    with pytest.raises(ValueError, match="wh-phrase"):
        net(inputs)
    with pytest.raises(ValueError, match="entity_text"):
        network("add", focus=True)


def test_the_exact_loss_is_the_softmax_over_every_entity_of_each_subgraph():
    """``--negatives all``: the priority's loss is each question's softmax cross-entropy over
    every entity within three steps of its topics (networkx's balls, the topics included),
    from the logits of the unpruned network with the same weights (the pruning keeps every
    entity here), averaged over the questions; the probes keep their sampled rows."""
    import networkx as nx

    from adapath.methods.pathmind.config import TrainConfig
    from adapath.methods.pathmind.train import Example, training_loss

    graph, g, features = generated_world()
    n = graph.num_nodes
    rng = np.random.default_rng(3)
    examples = [Example(str(i), "", [int(t) for t in rng.choice(n, size=int(rng.integers(1, 3)), replace=False)],
                        [int(a) for a in rng.choice(n, size=2, replace=False)],
                        rng.normal(size=8).astype(np.float32)) for i in range(6)]
    config = TrainConfig(nodes=n, degree_ratio=0.0, negatives="all", hidden=8)
    torch.manual_seed(0)
    pruned = BellmanFordNet(len(graph.type_names), 2 * graph.num_relations, 8, 8, hidden=8, nodes=n,
                            degree_ratio=0.0, entity_text=True)
    whole = BellmanFordNet(len(graph.type_names), 2 * graph.num_relations, 8, 8, hidden=8, nodes=0,
                           entity_text=True)
    whole.load_state_dict(pruned.state_dict())
    loss, probe_loss = training_loss(pruned, features, examples, config, np.random.default_rng(0))
    inputs = features.batch(examples)
    with torch.no_grad():
        logits = whole(inputs).logits
    want = []
    for j, e in enumerate(examples):
        ball = set()
        for t in e.topics:
            ball |= set(nx.single_source_shortest_path_length(g, t, cutoff=3))
        rows = torch.as_tensor(inputs.places.local_of[sorted(ball)])
        answers = [a for a in e.answers if a in ball]
        mean = logits[inputs.places.local_of[answers], j].mean() if answers else torch.zeros(())
        want.append(torch.logsumexp(logits[rows, j], 0) - mean)
    assert torch.allclose(loss.detach(), torch.stack(want).mean(), rtol=1e-5, atol=1e-5)
    assert float(probe_loss.detach()) > 0  # the probes' sampled loss
    # unpruned (--nodes 0), the same sum from the whole propagation's read-out
    unpruned, _ = training_loss(whole, features, examples, replace(config, nodes=0), np.random.default_rng(0))
    assert torch.allclose(unpruned.detach(), torch.stack(want).mean(), rtol=1e-5, atol=1e-5)


def test_examples_carry_their_wh_phrase_s_embedding(tmp_path):
    """make_examples and a --focus model's answering both give each question the encoder's
    vector of its wh-phrase; a model without --focus encodes none."""
    from adapath.contract import Query
    from adapath.datasets.generate import QueryGenerator
    from adapath.methods.answer_type import wh_phrase
    from adapath.methods.base import MethodContext
    from adapath.methods.pathmind.config import TrainConfig
    from adapath.methods.pathmind.train import make_examples, save_checkpoint
    from adapath.methods.registry import get_method
    from adapath.retrieval.dense import HashingEncoder
    from adapath.sources.synthetic import generate

    graph = generate(scale=0.01, seed=5)
    encoder = HashingEncoder(dim=16)
    examples = make_examples(graph, QueryGenerator(graph).generate(3, seed=2), encoder)
    want = np.asarray(encoder.encode([wh_phrase(e.text) for e in examples]), np.float32)
    np.testing.assert_allclose(np.stack([e.focus for e in examples]), want)
    assert any(wh_phrase(e.text) != e.text for e in examples)
    spec = get_method("pathmind")
    queries = [Query(e.id, "explicit", e.text, tuple(int(graph.node_id[t]) for t in e.topics)) for e in examples]
    for focus in (True, False):
        torch.manual_seed(0)
        net = BellmanFordNet(len(graph.type_names), 2 * graph.num_relations, 512, 512, hidden=8, nodes=4,
                             entity_text=True, answer_text=True, focus=focus)
        save_checkpoint(net, TrainConfig(hidden=8, nodes=4, answer_text=True, focus=focus, encoder="hashing"),
                        graph, tmp_path / str(focus))
        method = spec.make(MethodContext(graph, model=tmp_path / str(focus), params=spec.resolve_params({})))
        got = method.examples(queries)
        if focus:
            wh = np.asarray(method.encoder.encode([wh_phrase(q.text) for q in queries]), np.float32)
            np.testing.assert_allclose(np.stack([e.focus for e in got]), wh)
            assert np.isfinite(method.prioritize(got)[0].priority[graph.index_of(queries[0].topic_ids)]).all()
        else:
            assert all(e.focus is None for e in got)


def test_examples_without_focus_carry_no_wh_phrase():
    from adapath.datasets.generate import QueryGenerator
    from adapath.methods.pathmind.train import make_examples
    from adapath.retrieval.dense import HashingEncoder
    from adapath.sources.synthetic import generate

    graph = generate(scale=0.01, seed=5)
    records = QueryGenerator(graph).generate(3, seed=2)
    plain = make_examples(graph, records, HashingEncoder(dim=16), focus=False)
    full = make_examples(graph, records, HashingEncoder(dim=16))
    assert all(e.focus is None for e in plain) and all(e.focus is not None for e in full)
    np.testing.assert_array_equal(np.stack([e.query for e in plain]), np.stack([e.query for e in full]))
